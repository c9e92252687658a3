"""Rate-limit counters and the credit meter: each decision is one conditional atomic write.

A tenant's counters are sharded (docs/tenant-throughput.md): every caller of a tenant writes
one of several items, not all the same one, so one hot item does not hold a tenant to about
one transaction per hold time on DynamoDB. The shards' shares add up to the limit exactly,
so together they never admit more than it (``share``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from loopsense.settings import Settings
from loopsense.store.accounts import Plan
from loopsense.store.dynamo import ConditionFailed, Dynamo, from_item, to_item

RATE_COUNTER_TTL_S = 120
# A rate shard admits about this many requests a second (so 500/s is 20 shards, 5/s one): each
# item stays far below the ~80 transactions a second one item takes (docs/tenant-throughput.md).
RATE_SHARD_HITS = 25
RATE_SHARDS_MAX = 32


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


@dataclass(frozen=True, slots=True)
class UsageRecord:
    execution_id: str
    skill_key: str
    skill_version: str
    credits: int
    at: str  # RFC 3339 UTC, milliseconds, Z (core.instants.stamp); older records: +00:00
    duration_ms: int
    status: str

    def as_item(self) -> dict[str, Any]:
        """The record's fields as stored and as the operator's `usage` shows them."""
        return {"executionId": self.execution_id, "skillKey": self.skill_key,
                "skillVersion": self.skill_version, "credits": self.credits, "at": self.at,
                "durationMs": self.duration_ms, "status": self.status}

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> UsageRecord:
        return cls(item["executionId"], item["skillKey"], item["skillVersion"], item["credits"],
                   item["at"], item["durationMs"], item["status"])


class Metering:
    def __init__(self, db: Dynamo, settings: Settings) -> None:
        self.db = db
        self.s = settings

    def admit(self, tenant_id: str, epoch_second: int, limit: int) -> bool:
        """Count one request in this second; False (nothing counted) once ``limit`` is reached:
        a full shard tries one other first. Conflicted when the counter is in an in-flight
        transaction (a step batch's)."""
        if limit <= 0:  # a plan with 0 requests/second admits nothing (not one per second)
            return False
        first = self.admission(tenant_id, epoch_second, limit)
        for update in (first, self.other_admission(first, limit)):
            if update is None:
                break
            try:
                self.db.settled("update_item", **update)
            except ConditionFailed:
                continue
            return True
        return False

    def admission(self, tenant_id: str, epoch_second: int, limit: int,
                  shard: int | None = None) -> dict[str, Any]:
        """The conditional UpdateItem that counts one request on one shard of the second
        (``admit``'s, or a transaction's Update action: the runs API counts a step batch in
        the batch's own write); a random shard unless ``shard`` is given."""
        count = rate_shards(limit)
        if shard is None:
            shard = random.randrange(count)  # noqa: S311 - a spread of load, not a secret
        return {
            "TableName": self.s.rate_limits_table,
            "Key": {"counterId": {"S": f"{tenant_id}#{epoch_second}#{shard}"}},
            "UpdateExpression": "ADD hits :one SET expiresAt = :ttl",
            "ConditionExpression": "attribute_not_exists(hits) OR hits < :limit",
            "ExpressionAttributeValues": {
                ":one": {"N": "1"}, ":limit": {"N": str(share(shard, limit, count))},
                ":ttl": {"N": str(epoch_second + RATE_COUNTER_TTL_S)}},
        }

    def other_admission(self, refused: dict[str, Any], limit: int) -> dict[str, Any] | None:
        """The same request on another shard of its second, for when its own shard refused
        it (tried once: then TENANT_RATE_LIMITED); None when the second has one shard."""
        tenant_id, epoch, shard = refused["Key"]["counterId"]["S"].rsplit("#", 2)
        other = another(int(shard), rate_shards(limit))
        return None if other is None else self.admission(tenant_id, int(epoch), limit, other)

    def used(self, tenant_id: str, period: str) -> int:
        item = self.db.get(self.s.usage_table, {"tenantId": tenant_id, "sk": _period(period)})
        return int(item["used"]) if item else 0

    def used_and_plan(self, tenant_id: str, period: str, plan: str) -> tuple[int, Plan | None]:
        """``used`` and the stored row of ``plan`` (None: none stored), in one BatchGetItem."""
        request = {
            self.s.usage_table: {"Keys": [to_item({"tenantId": tenant_id,
                                                   "sk": _period(period)})],
                                 "ConsistentRead": True},
            self.s.plans_table: {"Keys": [to_item(Plan.key(plan))], "ConsistentRead": True}}
        found: dict[str, list[dict[str, Any]]] = {}
        for page in self.db.batch("batch_get_item", request, "UnprocessedKeys"):
            for table, items in page.get("Responses", {}).items():
                found.setdefault(table, []).extend(from_item(i) for i in items)
        usage, rows = found.get(self.s.usage_table, []), found.get(self.s.plans_table, [])
        return (int(usage[0]["used"]) if usage else 0,
                Plan.from_item(rows[0]) if rows else None)

    def charge(self, tenant_id: str, period: str, quota: int, record: UsageRecord,
               once: Once | None = None) -> str | None:
        """Add the record's credits to the period if they fit in ``quota``, and write the record.

        One transaction: all or nothing. With ``once``, the charge also claims ``once.key`` until
        ``once.until``; if that claim is held, this call was charged before and nothing changes.
        Returns the execution id the call is charged under (the earlier one for a held claim),
        or None when the credits do not fit; Conflicted (nothing charged) when it met another
        transaction in flight on one of its items: sent again, it is decided afresh.
        """
        items = self.charge_items(tenant_id, period, quota, record, once)
        try:
            self.db.settled("transact_write_items", TransactItems=items)
        except ConditionFailed as failed:
            if once is not None and failed.reasons[2:3] == ["ConditionalCheckFailed"]:
                return self._claimed_by(tenant_id, once)
            return None
        return record.execution_id

    def charge_items(self, tenant_id: str, period: str, quota: int, record: UsageRecord,
                     once: Once | None = None) -> list[dict[str, Any]]:
        """``charge``'s transaction actions: the conditional credit ADD, the usage record and
        the optional claim (in this order), for a caller that adds its own write to them."""
        items: list[dict[str, Any]] = [
            {"Update": {
                "TableName": self.s.usage_table,
                "Key": to_item({"tenantId": tenant_id, "sk": _period(period)}),
                # and one more call of the record's skill on its day (GET /v1/usage reads them
                # with the period: no query of the records)
                "UpdateExpression": "ADD used :cost, #calls :one",
                "ConditionExpression": "attribute_not_exists(used) OR used <= :max",
                "ExpressionAttributeNames": {"#calls": calls_name(record.at, record.skill_key)},
                "ExpressionAttributeValues": {":cost": {"N": str(record.credits)},
                                              ":max": {"N": str(quota - record.credits)},
                                              ":one": {"N": "1"}},
            }},
            {"Put": {
                "TableName": self.s.usage_table,
                "Item": to_item({"tenantId": tenant_id, "sk": _record(record.execution_id),
                                 "period": period, **record.as_item()}),
                "ConditionExpression": "attribute_not_exists(sk)",
            }},
        ]
        if once is not None:
            items.append({"Put": {
                "TableName": self.s.usage_table,
                "Item": to_item({"tenantId": tenant_id, "sk": _once(once.key),
                                 "executionId": record.execution_id, "expiresAt": once.until}),
                # An expired claim may linger until TTL removes it: it no longer counts.
                "ConditionExpression": "attribute_not_exists(sk) OR expiresAt < :now",
                "ExpressionAttributeValues": {":now": {"N": str(once.now)}},
            }})
        return items

    def _claimed_by(self, tenant_id: str, once: Once) -> str | None:
        item = self.db.get(self.s.usage_table, {"tenantId": tenant_id, "sk": _once(once.key)})
        return str(item["executionId"]) if item else None

    def periods(self, tenant_id: str, periods: list[str]) -> dict[str, dict[str, Any]]:
        """The period items of ``periods`` (one BatchGetItem): what was used, and the calls of
        each day and skill (``calls_of``); an absent period is {}."""
        keys = [to_item({"tenantId": tenant_id, "sk": _period(p)}) for p in periods]
        request = {self.s.usage_table: {"Keys": keys, "ConsistentRead": True}}
        found = {str(item["sk"]).removeprefix("PERIOD#"): item
                 for page in self.db.batch("batch_get_item", request, "UnprocessedKeys")
                 for item in map(from_item, page.get("Responses", {}).get(self.s.usage_table,
                                                                           []))}
        return {p: found.get(p, {}) for p in periods}

    def records(self, tenant_id: str, period: str | None = None) -> list[UsageRecord]:
        items = self.db.query(
            self.s.usage_table,
            KeyConditionExpression="tenantId = :t AND begins_with(sk, :r)",
            ExpressionAttributeValues={":t": {"S": tenant_id}, ":r": {"S": "EXEC#"}},
        )
        found = [UsageRecord.from_item(i) for i in items
                 if period is None or i.get("period") == period]
        return sorted(found, key=lambda r: (r.at, r.execution_id))


@dataclass(frozen=True, slots=True)
class Once:
    """One logical call (a tenant's Idempotency-Key): charged at most once until ``until``."""

    key: str  # a digest, never the caller's key itself
    now: int  # epoch seconds
    until: int  # epoch seconds; after it the same key is a new call


def _once(key: str) -> str:
    return f"ONCE#{key}"


def period_of(moment: datetime) -> str:
    """The quota period a moment falls in: its calendar month, UTC ("2026-11")."""
    return moment.astimezone(UTC).strftime("%Y-%m")


def calls_name(at: str, skill_key: str) -> str:
    """The period item's counter of one day's calls of one skill: ``calls#<DD>#<skill>``
    (``at`` is the record's ISO-8601 UTC time; a month has at most 31 such days)."""
    return f"calls#{at[8:10]}#{skill_key}"


def calls_of(item: dict[str, Any]) -> dict[tuple[str, str], int]:
    """A period item's counters: {(day of month "DD", skill key): calls}."""
    found = {}
    for name, value in item.items():
        if name.startswith("calls#"):
            _, day, skill = name.split("#", 2)
            found[(day, skill)] = int(value)
    return found


def _period(period: str) -> str:
    return f"PERIOD#{period}"


def _record(execution_id: str) -> str:
    return f"EXEC#{execution_id}"
