"""What one execute costs in DynamoDB requests, counted on the embedded engine (deterministic;
benchmarks/bench_route_costs.py counts every route, docs/costs.md prices them): the authorizer
reads the key and the tenant; the execute function reads the plan row and the month's credits
in one BatchGetItem, counts the request in the second's rate counter and charges in one
transaction: three; an Idempotency-Key adds the in-progress record and the stored response
(five), and a replay is that record alone. One more request on this path fails here."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from loopsense.platform.access.idempotency import Idempotency
from loopsense.platform.execute.pipeline import Execute
from loopsense.platform.execute.skill_handler import call_skill
from loopsense.platform.http.auth import authorizer_context
from loopsense.platform.http.request import Request
from loopsense.settings import Settings
from loopsense.store.accounts import Accounts
from loopsense.store.dynamo import Dynamo
from loopsense.store.metering import Metering
from loopsense_local.embedded import EmbeddedDynamoDB
from loopsense_local.tables import create_tables

BODY = json.dumps({"skillKey": "agent.loop_detect",
                   "input": {"events": [{"action": "a"}, {"action": "b"}] * 3}}).encode()


class Counting:
    def __init__(self, client: Any) -> None:
        self.client, self.calls = client, []

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.client, name)

        def call(**kwargs: Any) -> Any:
            self.calls.append(name)
            return method(**kwargs)

        return call


class InThread:
    def invoke(self, skill: Any, raw: Any, request_id: str, thresholds: Any = None) -> Any:
        return call_skill(skill, raw, request_id, thresholds)


@pytest.fixture(scope="module")
def world() -> Iterator[tuple[Execute, Accounts, Counting, str]]:
    config = Settings(dynamodb_endpoint="http://counted.invalid")
    client = Counting(EmbeddedDynamoDB("127.0.0.1", 0).client())
    create_tables(client, config)
    db = Dynamo(client)
    accounts = Accounts(db, config)
    accounts.create_tenant("acme", "team", "2026-11-30T00:00:00.000Z")
    secret, _ = accounts.issue_key("acme", ("*",), "2026-11-30T00:00:00.000Z")
    execute = Execute(accounts, Metering(db, config), InThread(),
                      Idempotency(client, config.idempotency_table))
    yield execute, accounts, client, secret


def requests(world: tuple[Execute, Accounts, Counting, str], key: str | None
             ) -> tuple[list[str], list[str]]:
    execute, accounts, counting, secret = world
    counting.calls.clear()
    context = authorizer_context(f"Bearer {secret}", accounts)
    authorizer = list(counting.calls)
    counting.calls.clear()
    answer = execute.execute(Request("POST", "/v1/execute",
                                     {"idempotency-key": key} if key else {}, BODY, "r", context))
    assert answer["statusCode"] == 200, answer["body"]
    return authorizer, list(counting.calls)


def test_an_execute_is_three_dynamodb_requests(world):
    authorizer, function = requests(world, None)
    assert authorizer == ["get_item", "get_item"]  # the key, the tenant
    assert function == ["batch_get_item", "update_item", "transact_write_items"]


def test_an_idempotency_key_adds_its_record_and_a_replay_is_that_record(world):
    _, function = requests(world, "once")
    assert function == ["put_item", "batch_get_item", "update_item",
                        "transact_write_items", "update_item"]
    _, replay = requests(world, "once")
    assert replay == ["put_item"]  # refused on condition, the stored response returned with it
