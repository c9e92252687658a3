"""DynamoDB's TTL, in the embedded engine and in the code that reads TTL'd tables.

The engine's sweeper deletes an item once its TTL attribute (a Number of epoch seconds) is in
the past, in the background, as DynamoDB does; the clock is injected and the sweeper polled for
a bounded time, so no test waits on the wall clock. Until the sweep, DynamoDB (and moto, which
never sweeps) still returns an expired item, so every reader of a TTL'd table must ignore an
expired item itself: proven here for the once-per-Idempotency-Key charge claim, Powertools'
idempotency records and the rate-limit counters, on moto and on the engine before its sweep.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from loopsense.platform.access.idempotency import Idempotency
from loopsense.settings import Settings
from loopsense.store.dynamo import Dynamo
from loopsense.store.metering import Metering, Once, UsageRecord
from loopsense_local.dynamodb.client import InProcessClient
from loopsense_local.dynamodb.engine import Engine
from loopsense_local.dynamodb.storage import DATABASE_FILE
from loopsense_local.tables import create_tables

T0 = 1_800_000_000  # the injected clock's start, epoch seconds
POLL_S = 30.0  # how long a test waits at most for the sweeper (it runs every few ms)


class Clock:
    def __init__(self) -> None:
        self.now = float(T0)

    def __call__(self) -> float:
        return self.now


def _engine(where: str, tmp_path: Path, clock: Clock) -> Engine:
    return Engine(tmp_path / DATABASE_FILE if where == "durable" else ":memory:", clock=clock)


def _ttl_table(engine: Engine, name: str = "t", enable: bool = True) -> None:
    engine.execute("CreateTable", {
        "TableName": name, "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
        "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
        "BillingMode": "PAY_PER_REQUEST"})
    if enable:
        engine.execute("UpdateTimeToLive", {"TableName": name, "TimeToLiveSpecification": {
            "AttributeName": "expiresAt", "Enabled": True}})


def _put(engine: Engine, id_: str, expires: dict[str, str] | None, table: str = "t") -> None:
    item = {"id": {"S": id_}, **({"expiresAt": expires} if expires else {})}
    engine.execute("PutItem", {"TableName": table, "Item": item})


def _ids(engine: Engine, table: str = "t") -> set[str]:
    return {item["id"]["S"] for item in engine.execute("Scan", {"TableName": table})["Items"]}


def _until(condition: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + POLL_S
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


@pytest.fixture(params=["in-memory", "durable"])
def where(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_the_sweeper_deletes_what_expired_and_nothing_else(where: str, tmp_path: Path) -> None:
    clock = Clock()
    engine = _engine(where, tmp_path, clock)
    try:
        _ttl_table(engine)
        _ttl_table(engine, "no-ttl", enable=False)
        _put(engine, "expired", {"N": str(T0 - 1)})
        _put(engine, "later", {"N": str(T0 + 100)})
        _put(engine, "now", {"N": str(T0)})  # expires once the clock is past it
        _put(engine, "no-attribute", None)
        _put(engine, "a-string", {"S": str(T0 - 1)})  # not a Number: TTL ignores it
        _put(engine, "expired", {"N": str(T0 - 1)}, table="no-ttl")
        # Before a sweep, an expired item is still there, as in DynamoDB.
        assert engine.execute("GetItem", {"TableName": "t", "Key": {"id": {"S": "expired"}}})
        engine.start_sweeper(0.005)
        assert _until(lambda: "expired" not in _ids(engine))
        assert _ids(engine) == {"later", "now", "no-attribute", "a-string"}
        clock.now = T0 + 101
        assert _until(lambda: _ids(engine) == {"no-attribute", "a-string"})
        assert _ids(engine, "no-ttl") == {"expired"}  # TTL off: nothing is deleted
        engine.stop_sweeper()
    finally:
        engine.close()


def test_an_update_moves_an_items_expiry(where: str, tmp_path: Path) -> None:
    clock = Clock()
    engine = _engine(where, tmp_path, clock)
    try:
        _ttl_table(engine)
        _put(engine, "a", {"N": str(T0 - 1)})
        _put(engine, "b", {"N": str(T0 - 1)})
        engine.execute("UpdateItem", {"TableName": "t", "Key": {"id": {"S": "a"}},
                                      "UpdateExpression": "SET expiresAt = :later",
                                      "ExpressionAttributeValues": {":later": {"N": str(T0 + 9)}}})
        engine.execute("UpdateItem", {"TableName": "t", "Key": {"id": {"S": "b"}},
                                      "UpdateExpression": "REMOVE expiresAt"})
        assert engine.sweep() == 0
        assert _ids(engine) == {"a", "b"}
    finally:
        engine.close()


def test_turning_ttl_on_applies_to_items_already_stored(where: str, tmp_path: Path) -> None:
    engine = _engine(where, tmp_path, Clock())
    try:
        _ttl_table(engine, enable=False)
        _put(engine, "old", {"N": str(T0 - 1)})
        assert engine.sweep() == 0
        engine.execute("UpdateTimeToLive", {"TableName": "t", "TimeToLiveSpecification": {
            "AttributeName": "expiresAt", "Enabled": True}})
        assert engine.sweep() == 1
        assert _ids(engine) == set()
    finally:
        engine.close()


def test_sweeps_and_ttl_settings_are_durable(tmp_path: Path) -> None:
    clock = Clock()
    engine = _engine("durable", tmp_path, clock)
    _ttl_table(engine)
    _put(engine, "expired", {"N": str(T0 - 1)})
    _put(engine, "later", {"N": str(T0 + 100)})
    assert engine.sweep() == 1
    engine.close()
    again = _engine("durable", tmp_path, clock)
    try:
        assert _ids(again) == {"later"}
        assert again.execute("DescribeTimeToLive", {"TableName": "t"}) == {
            "TimeToLiveDescription": {"TimeToLiveStatus": "ENABLED",
                                      "AttributeName": "expiresAt"}}
        clock.now = T0 + 101
        assert again.sweep() == 1
    finally:
        again.close()


def test_stopping_the_sweeper_ends_its_thread(tmp_path: Path) -> None:
    engine = _engine("durable", tmp_path, Clock())
    engine.start_sweeper(3600)  # asleep: stopping must not wait for the interval
    thread = engine._sweeper
    assert thread is not None and thread.is_alive()
    engine.close()
    assert not thread.is_alive()


# --- the readers of TTL'd tables, with an expired item not yet swept --------------------------

@pytest.fixture(params=["moto", "engine"])
def client(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The project's tables on moto (which never sweeps) or on the engine, sweeper not started."""
    if request.param == "moto":
        with mock_aws():
            made = boto3.client("dynamodb", region_name="us-east-1")
            create_tables(made, Settings())
            yield made
    else:
        engine = Engine()
        made = InProcessClient(engine)
        create_tables(made, Settings())
        yield made
        engine.close()


def _expire(client: Any, table: str, attribute: str, key: dict[str, Any]) -> None:
    """Put an item's TTL attribute an hour in the past, as if its time had run out."""
    client.update_item(TableName=table, Key=key, UpdateExpression="SET #ttl = :past",
                       ExpressionAttributeNames={"#ttl": attribute},
                       ExpressionAttributeValues={":past": {"N": str(int(time.time()) - 3600)}})


def _record(execution_id: str) -> UsageRecord:
    return UsageRecord(execution_id, "agent.loop_detect", "1.0.0", 1,
                       datetime.now(UTC).isoformat(timespec="milliseconds"), 1, "succeeded")


def test_an_expired_charge_claim_no_longer_holds_the_key(client: Any) -> None:
    config = Settings()
    metering = Metering(Dynamo(client), config)
    tenant, now = "t_" + uuid.uuid4().hex[:8], int(time.time())
    once = Once("digest", now, now + 3600)
    assert metering.charge(tenant, "2026-11", 10, _record("e1"), once) == "e1"
    assert metering.charge(tenant, "2026-11", 10, _record("e2"), once) == "e1"  # held
    _expire(client, config.usage_table, "expiresAt",
            {"tenantId": {"S": tenant}, "sk": {"S": "ONCE#digest"}})
    assert metering.charge(tenant, "2026-11", 10, _record("e3"), once) == "e3"  # a new call
    assert metering.used(tenant, "2026-11") == 2


def test_an_expired_idempotency_record_is_not_replayed(client: Any) -> None:
    table = Settings().idempotency_table
    idempotency = Idempotency(client, table)
    runs: list[int] = []

    def call(_complete: Any) -> dict[str, Any]:  # stored by Powertools after it
        runs.append(1)
        return {"statusCode": 200, "body": f"run {len(runs)}"}

    first = idempotency.run("acme", "key-1", b"{}", call)
    assert idempotency.run("acme", "key-1", b"{}", call) == first  # replayed
    assert len(runs) == 1
    [record] = client.scan(TableName=table)["Items"]
    _expire(client, table, "expiration", {"id": record["id"]})
    # Powertools reads the record's expiry itself (DataRecord.is_expired) and may overwrite an
    # expired record (its put's condition has "expiration < :now"): the call runs again.
    assert idempotency.run("acme", "key-1", b"{}", call) == {"statusCode": 200, "body": "run 2"}
    assert len(runs) == 2


def test_a_rate_counter_is_only_read_within_its_own_second(client: Any) -> None:
    """A counter's key holds its second and it expires 120 s after it, so ``admit`` reads it
    only while it is live; an expired counter left behind never counts for a later second."""
    config = Settings()
    metering = Metering(Dynamo(client), config)
    tenant, second = "t_" + uuid.uuid4().hex[:8], int(time.time())
    assert metering.admit(tenant, second, 1)
    assert not metering.admit(tenant, second, 1)
    counter = client.get_item(TableName=config.rate_limits_table,
                              Key={"counterId": {"S": f"{tenant}#{second}#0"}})["Item"]
    assert int(counter["expiresAt"]["N"]) > second  # live through the second it counts
    _expire(client, config.rate_limits_table, "expiresAt",
            {"counterId": {"S": f"{tenant}#{second}#0"}})
    assert metering.admit(tenant, second + 200, 1)  # the expired one, still stored, is not read


def test_a_kept_table_gets_the_ttl_the_template_gives_it() -> None:
    """A data dir from an earlier run whose table has TTL off: the next start turns it on."""
    engine = Engine()
    try:
        client = InProcessClient(engine)
        config = Settings()
        client.create_table(TableName=config.rate_limits_table, BillingMode="PAY_PER_REQUEST",
                            KeySchema=[{"AttributeName": "counterId", "KeyType": "HASH"}],
                            AttributeDefinitions=[{"AttributeName": "counterId",
                                                   "AttributeType": "S"}])
        create_tables(client, config)
        create_tables(client, config)  # again: nothing to change
        for table in (config.rate_limits_table, config.idempotency_table, config.usage_table):
            assert client.describe_time_to_live(TableName=table)["TimeToLiveDescription"][
                "TimeToLiveStatus"] == "ENABLED"
        assert client.describe_time_to_live(TableName=config.tenants_table)[
            "TimeToLiveDescription"]["TimeToLiveStatus"] == "DISABLED"
    finally:
        engine.close()
