"""The embedded store's conditional writes are atomic under concurrent requests: the quota holds.

DynamoDB makes each conditional write and each transaction atomic; plain moto does not (two
concurrent requests can both pass one condition: benchmarks/atomicity_demo.py counts it), which
is one reason `loopsense serve` has its own embedded engine (loopsense_local.dynamodb), where one
lock serves every operation. These tests prove it deterministically: many threads charging at
once through the real ``Metering.charge`` never exceed the quota, never lose an update, and one
logical call (one Idempotency-Key) is charged once, whether the calls go in-process (the
server's own path), over the store's HTTP endpoint (the operator's path), or both at once.

They run again in the engine's conflict mode ("conflicts": each transaction holds its items a
while and what meets it is refused with TransactionConflict, as on DynamoDB), where the charges
go through the platform's retry (``until_settled``): the same guarantees hold.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

import boto3
import pytest
from botocore.config import Config

from loopsense.platform.access.retry import until_settled
from loopsense.settings import Settings
from loopsense.store.dynamo import Dynamo, unavailable
from loopsense.store.metering import Metering, Once, UsageRecord
from loopsense_local.embedded import EmbeddedDynamoDB
from loopsense_local.tables import create_tables
from tests.concurrency import all_at_once

PERIOD = "2026-11"
QUOTA = 10
THREADS = 40
# Generous: under the lock, 40 waiting requests on a loaded CI machine must not time out.
TIMEOUT_S = 30.0
HOLD_S = 0.002  # a transaction in flight in the conflict mode (DynamoDB's take longer)


@dataclass
class Store:
    embedded: EmbeddedDynamoDB
    in_process: Metering  # the engine's in-process client (the server's own path)
    over_http: Metering  # boto3 -> the embedded endpoint (the operator's and other shells' path)


@pytest.fixture(scope="module", params=["in-memory", "durable", "conflicts"])
def store(request: pytest.FixtureRequest,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """The engine with its tables in memory, in a SQLite file (``loopsense serve``'s), and in
    memory with conflicts as DynamoDB has them."""
    data_dir = tmp_path_factory.mktemp("store") if request.param == "durable" else None
    hold = HOLD_S if request.param == "conflicts" else None
    embedded = EmbeddedDynamoDB("127.0.0.1", 0, data_dir, transaction_hold_s=hold).start()
    try:
        config = Settings(dynamodb_endpoint=embedded.endpoint, store_timeout_s=TIMEOUT_S)
        http = boto3.client("dynamodb", endpoint_url=embedded.endpoint, region_name="us-east-1",
                            aws_access_key_id="local", aws_secret_access_key="local",
                            config=Config(read_timeout=TIMEOUT_S, max_pool_connections=THREADS))
        create_tables(embedded.client(), config)
        yield Store(embedded, Metering(Dynamo(embedded.client()), config),
                    Metering(Dynamo(http), config))
    finally:
        embedded.stop()


def record(execution_id: str) -> UsageRecord:
    return UsageRecord(execution_id=execution_id, skill_key="agent.loop_detect",
                       skill_version="1.0.0", credits=1,
                       at=datetime.now(UTC).isoformat(timespec="milliseconds"), duration_ms=1,
                       status="succeeded")


def meterings(store: Store, paths: str, count: int) -> list[Metering]:
    """``count`` meterings for the threads: all in-process, all over HTTP, or alternating."""
    if paths == "in-process":
        return [store.in_process] * count
    if paths == "http":
        return [store.over_http] * count
    return [store.in_process if i % 2 else store.over_http for i in range(count)]


def charge(metering: Metering, *args: Any) -> str | None:
    """``Metering.charge`` as the platform calls it: sent again while it meets a transaction in
    flight."""
    return until_settled(lambda: metering.charge(*args), unavailable)


def fresh_tenant() -> str:
    return "t_" + uuid.uuid4().hex[:12]


@pytest.mark.parametrize("paths", ["in-process", "http", "both"])
def test_concurrent_charges_stop_exactly_at_the_quota(store: Store, paths: str) -> None:
    tenant = fresh_tenant()
    ids = [str(uuid.uuid4()) for _ in range(THREADS)]
    meters = meterings(store, paths, THREADS)
    answers = all_at_once([
        partial(charge, m, tenant, PERIOD, QUOTA, record(i))
        for m, i in zip(meters, ids, strict=True)
    ])

    assert [a for a in answers if a is not None] == [
        i for i, a in zip(ids, answers, strict=True) if a == i]  # each winner charged as itself
    assert answers.count(None) == THREADS - QUOTA
    assert store.in_process.used(tenant, PERIOD) == QUOTA
    assert store.over_http.used(tenant, PERIOD) == QUOTA  # both paths see one store
    recorded = {r.execution_id for r in store.in_process.records(tenant, PERIOD)}
    assert recorded == {a for a in answers if a is not None}
    if store.embedded.engine.transaction_hold_s is not None:
        assert store.embedded.engine.conflicts > 0  # the mode did refuse some: they were retried


def once(key: str) -> Once:
    return Once(key, now=1_000, until=1_000 + 86_400)


@pytest.mark.parametrize("paths", ["in-process", "http", "both"])
def test_one_logical_call_charged_concurrently_counts_once(store: Store, paths: str) -> None:
    """8 executions of one logical call (one Idempotency-Key) racing: one is paid for."""
    tenant = fresh_tenant()
    meters = meterings(store, paths, 8)
    answers = all_at_once([
        partial(charge, m, tenant, PERIOD, QUOTA, record(str(uuid.uuid4())), once("k"))
        for m in meters
    ])

    [winner] = set(answers)  # every duplicate is told the one execution it is paid under
    assert winner is not None
    assert store.in_process.used(tenant, PERIOD) == 1
    [only] = store.in_process.records(tenant, PERIOD)
    assert only.execution_id == winner


def test_duplicates_racing_for_the_last_credits(store: Store) -> None:
    """20 executions, each charged twice at once (a retry racing its original), quota 10.

    Exactly 10 executions are paid, each once; both charges of one execution get the same
    answer; nothing is counted that has no record.
    """
    tenant = fresh_tenant()
    calls = [str(uuid.uuid4()) for _ in range(THREADS // 2)]
    twice = calls + calls
    meters = meterings(store, "both", len(twice))
    answers = all_at_once([
        partial(charge, m, tenant, PERIOD, QUOTA, record(str(uuid.uuid4())), once(call))
        for m, call in zip(meters, twice, strict=True)
    ])

    by_call: dict[str, set[str | None]] = {}
    for call, answer in zip(twice, answers, strict=True):
        by_call.setdefault(call, set()).add(answer)
    assert all(len(seen) == 1 for seen in by_call.values()), by_call
    paid = {seen.pop() for seen in by_call.values()} - {None}
    assert len(paid) == QUOTA
    assert store.in_process.used(tenant, PERIOD) == QUOTA
    assert {r.execution_id for r in store.in_process.records(tenant, PERIOD)} == paid


def test_a_full_quota_refuses_even_one_more(store: Store) -> None:
    tenant = fresh_tenant()
    for _ in range(QUOTA):
        assert charge(store.in_process, tenant, PERIOD, QUOTA, record(str(uuid.uuid4())))
    answers = all_at_once([
        partial(charge, m, tenant, PERIOD, QUOTA, record(str(uuid.uuid4())))
        for m in meterings(store, "both", 10)
    ])
    assert answers == [None] * 10
    assert store.over_http.used(tenant, PERIOD) == QUOTA
    assert len(store.over_http.records(tenant, PERIOD)) == QUOTA
