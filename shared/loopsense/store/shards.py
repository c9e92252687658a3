"""How a tenant's hot counters are split (docs/tenant-throughput.md): the shares of a limit, and
where a charge of a period goes.

On DynamoDB an item in a transaction in flight refuses every other write to it, so one counter
that every caller of a tenant writes holds the tenant to about one transaction per hold time.
Split over shards, each caller writes one of them. Shard i of a limit split n ways takes
``limit // n`` (+1 for the first ``limit % n``): the shares add up to the limit exactly, so the
shards together never admit or charge more than it, each by its own conditional write.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

# A rate shard admits about this many requests a second (so 500/s is 20 shards, 5/s one): each
# item stays far below the ~80 transactions a second one item takes (docs/tenant-throughput.md).
RATE_SHARD_HITS = 25
RATE_SHARDS_MAX = 32
# The month's credits are split over this many items for every tenant and plan: fixed, so a plan
# changed mid-month splits the new quota over the same items (their shares add up to it).
CREDIT_SHARDS = 32


def share(index: int, total: int, count: int) -> int:
    """Shard ``index``'s part of ``total`` split over ``count`` shards: ``total // count``, one
    more for the first ``total % count``; the parts add up to ``total`` exactly."""
    return total // count + (1 if index < total % count else 0)


def rate_shards(limit: int) -> int:
    """How many counters one second of a plan's ``limit`` requests is split over."""
    return max(1, min(RATE_SHARDS_MAX, -(-limit // RATE_SHARD_HITS)))


def another(tried: int, count: int) -> int | None:
    """A shard other than ``tried`` at random (None: there is only one)."""
    if count <= 1:
        return None
    other = random.randrange(count - 1)  # noqa: S311 - a spread of load, not a secret
    return other + (other >= tried)


def any_shard(count: int) -> int:
    return random.randrange(count)  # noqa: S311 - a spread of load, not a secret


def period_sk(period: str, shard: int | None = None) -> str:
    """A period's credits item: ``PERIOD#<yyyy-mm>#<shard>``, or the period's one item
    ``PERIOD#<yyyy-mm>`` of the months charged before the credits were sharded."""
    return f"PERIOD#{period}" if shard is None else f"PERIOD#{period}#{shard}"


@dataclass(frozen=True, slots=True)
class Credits:
    """Where a charge of ``period`` goes and what it held when read: shard ``shard`` of its
    credits, or (``shard`` None) the period's one item, for a month that was charged the old
    way (it stays on that path for the rest of the month, so its quota holds).

    A shard holds ``used`` and ``room``, the credits it may still take; the rooms were split
    from the month's ``quota`` (the plan's when the shards were written), so that the used
    and the rooms of all shards add up to it. None: the shard does not exist (yet).

    The one item's ``others``: what the month's shards hold beside it (a function of the old
    version charged the old item while the new one had already sharded the month, as in a
    deploy), which counts against the quota too; None: not read yet (``Metering.move`` reads
    it)."""

    period: str
    shard: int | None
    used: int = 0
    room: int | None = None
    quota: int | None = None
    others: int | None = 0

    @property
    def sk(self) -> str:
        return period_sk(self.period, self.shard)

    def takes(self, quota: int, cost: int) -> bool:
        """Whether a charge of ``cost`` under the plan's ``quota`` fits here as read."""
        if self.shard is None:
            return self.others is not None and self.used + self.others + cost <= quota
        return self.quota == quota and self.room is not None and self.room >= cost


def rooms(quota: int, used: int) -> list[int]:
    """Each shard's room when the month's ``quota`` is (re)split with ``used`` already charged:
    what is left, in shares that add up to it (none when the quota is already used)."""
    left = max(0, quota - used)
    return [share(i, left, CREDIT_SHARDS) for i in range(CREDIT_SHARDS)]
