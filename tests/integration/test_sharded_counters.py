"""A tenant's sharded counters (docs/tenant-throughput.md) on the embedded engine in its conflict
mode, with many callers at once: the shards' shares add up to the limit, so together they never
admit more than the plan's requests per second, and a full shard tries another first."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest

from loopsense.platform.access.retry import until_settled
from loopsense.settings import Settings
from loopsense.store.dynamo import Dynamo, unavailable
from loopsense.store.metering import Metering
from loopsense.store.shards import rate_shards, share
from loopsense_local.embedded import EmbeddedDynamoDB
from loopsense_local.tables import create_tables
from tests.concurrency import all_at_once

HOLD_S = 0.002  # a transaction in flight holds its items this long (conflict mode)
SECOND = 1_800_000_000


@pytest.fixture(scope="module")
def world() -> Iterator[tuple[Metering, Any, Settings]]:
    embedded = EmbeddedDynamoDB("127.0.0.1", 0, transaction_hold_s=HOLD_S)
    config = Settings(dynamodb_endpoint="http://sharded.invalid")
    client = embedded.client()
    create_tables(client, config)
    yield Metering(Dynamo(client), config), client, config


def hits(client: Any, config: Settings, tenant: str, second: int) -> list[int]:
    """Each rate shard's count of the second."""
    found = []
    for shard in range(32):
        item = client.get_item(TableName=config.rate_limits_table, ConsistentRead=True,
                               Key={"counterId": {"S": f"{tenant}#{second}#{shard}"}})
        found.append(int(item["Item"]["hits"]["N"]) if "Item" in item else 0)
    return found


def test_the_shares_add_up_to_the_limit() -> None:
    for limit in [*range(0, 130), 499, 500, 501, 5_000]:
        count = rate_shards(limit)
        assert sum(share(i, limit, count) for i in range(count)) == limit
    assert [rate_shards(n) for n in (1, 5, 25, 26, 50, 500, 10_000)] == [1, 1, 1, 2, 2, 20, 32]


def test_a_full_shard_tries_the_other_so_two_shards_admit_exactly_the_limit(world) -> None:
    metering, client, config = world
    tenant = "t_" + uuid.uuid4().hex[:8]
    answers = all_at_once([partial(metering.admit, tenant, SECOND, 50) for _ in range(70)])
    assert answers.count(True) == 50  # 2 shards of 25: the other one is every other shard
    assert hits(client, config, tenant, SECOND)[:3] == [25, 25, 0]


def test_many_callers_never_pass_the_plans_rate(world) -> None:
    """640 requests in one second of a 500/s plan (20 shards): at most 500 admitted, each
    counted once; a shard refuses only when it and one other are full, so few are lost."""
    metering, client, config = world
    tenant = "t_" + uuid.uuid4().hex[:8]

    def caller() -> int:
        return sum(until_settled(lambda: metering.admit(tenant, SECOND, 500), unavailable)
                   for _ in range(10))

    admitted = sum(all_at_once([caller for _ in range(64)]))
    counted = hits(client, config, tenant, SECOND)
    assert sum(counted) == admitted <= 500
    assert admitted >= 450  # random choice with one retry under-admits a little, not much
    assert max(counted) <= 25
