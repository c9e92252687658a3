"""The embedded engine answers TelemetryStore's request shapes as moto does: the same scenario
(batches, a retried batch, a seq gap, an end, the sweeper, groups listed page by page with
filters, routing and retention) run against both, with one fixed clock, gives the same answer to
every call and leaves the same table behind. The request shapes are the contract the embedded
engine (being rewritten on SQLite) must keep: number-set ADD with a NOT contains condition,
transactions cancelled on one item's condition, sparse and descending index queries resumed
from a cursor with a filter."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from boto3.dynamodb.types import TypeDeserializer
from moto import mock_aws

from loopsense.errors import LoopsenseError
from loopsense.platform.telemetry.failure_groups import FailureGroups
from loopsense.platform.telemetry.ingest import Ingestion
from loopsense.platform.telemetry.store import TelemetryStore
from loopsense.settings import Settings
from loopsense.store.dynamo import Dynamo
from loopsense_local.embedded import EmbeddedDynamoDB
from loopsense_local.tables import create_tables

NOW_MS = 1_900_000_000_000


def _scenario(client: Any) -> list[Any]:
    """Every answer (or error code) of a scenario, in order."""
    config = Settings()
    create_tables(client, config)
    clock = [NOW_MS]
    store = TelemetryStore(Dynamo(client), config.telemetry_table)
    ingestion = Ingestion(store, lambda plan: 3_600_000, clock=lambda: clock[0])
    groups = FailureGroups(store, clock=lambda: clock[0] / 1000)
    answers: list[Any] = []

    def record(call: Callable[[], Any]) -> None:
        try:
            answers.append(call())
        except LoopsenseError as error:
            answers.append(error.code)

    loop = [{"type": "llm_call", "model": "m", "user_message": "again", "timestamp": 0},
            {"type": "checkpoint", "name": "p", "metadata": {"k": [1, 2.5, "X "]}},
            {"type": "tool_call", "timestamp": 90_000}]
    for n in range(4):
        execution = f"e{n % 2}"
        record(lambda e=execution, k=f"k{n}": ingestion.add("t", "team", {}, e,
                                                             {"events": loop * 2}, k))
        clock[0] += 7
    record(lambda: ingestion.add("t", "team", {}, "e0", {"events": loop * 2}, "k0"))  # retry
    record(lambda: ingestion.add("t", "team", {}, "e0", {"events": loop}, "k0"))  # reused
    record(lambda: ingestion.add("t", "team", {}, "e2", {"events": loop, "seq": 1}, None))
    record(lambda: ingestion.add("t", "team", {}, "e2", {"events": loop, "seq": 0}, None))
    record(lambda: ingestion.add("u", "team", {}, "e0", {"events": loop * 3}, None))
    record(lambda: ingestion.end("t", "e0", {"durationMs": 61_000}))
    record(lambda: ingestion.end("t", "e0", None))
    record(lambda: ingestion.add("t", "team", {}, "e0", {"events": loop}, None))
    clock[0] += 3_600_001
    record(ingestion.sweep)
    record(lambda: groups.set_routing("t", {"semantic_loop": "critical"}))
    record(lambda: groups.set_retention("t", {"group_retention_days": 30}))
    for query in ({"limit": "2"}, {"limit": "3", "class": "loops"}, {"severity": "critical"},
                  {"severity": "info"}):
        # Pages are compared joined: a page that ends exactly at the last item has a cursor on
        # DynamoDB and on the engine (Limit reached), none on moto (it looks ahead), so the
        # engine then answers one more, empty, page.
        page = groups.list("t", query)
        listed = list(page["items"])
        while page["nextCursor"]:
            page = groups.list("t", {**query, "cursor": page["nextCursor"]})
            assert len(page["items"]) <= int(query.get("limit", "50"))
            listed += page["items"]
        answers.append(listed)
    signature = next(g["signature"] for g in groups.list("t", {})["items"]
                     if g["class"] == "semantic_loop")
    record(lambda: groups.detail("t", signature))
    record(lambda: groups.detail("u", "loops/step_count_100+"))
    record(lambda: groups.list("u", {}))
    return answers


def _contents(client: Any) -> list[dict[str, Any]]:
    deserializer = TypeDeserializer()
    items = client.scan(TableName=Settings().telemetry_table)["Items"]
    plain = [{k: deserializer.deserialize(v) for k, v in item.items()} for item in items]
    return sorted(plain, key=lambda item: (item["pk"], item["sk"]))


@pytest.fixture
def embedded() -> Iterator[Any]:
    store = EmbeddedDynamoDB("127.0.0.1", 0).start()
    yield store
    store.stop()


def test_embedded_engine_matches_moto_on_the_telemetry_scenario(embedded):
    with mock_aws():
        moto = boto3.client("dynamodb", region_name="us-east-1")
        expected = _scenario(moto)
        expected_contents = _contents(moto)
    for client in (embedded.client(),
                   boto3.client("dynamodb", endpoint_url=embedded.endpoint,
                                region_name="us-east-1", aws_access_key_id="x",
                                aws_secret_access_key="x")):
        if client is not embedded.client():  # the same engine over HTTP: a fresh table
            client.delete_table(TableName=Settings().telemetry_table)
        assert _scenario(client) == expected
        assert _contents(client) == expected_contents
    assert any(a == "IDEMPOTENCY_KEY_REUSED" for a in expected)
    assert any(a == "EXECUTION_BATCH_OUT_OF_ORDER" for a in expected)
    assert any(a == "EXECUTION_ENDED" for a in expected)
