"""What one execute costs in DynamoDB requests, counted on the embedded engine (deterministic;
benchmarks/bench_route_costs.py counts every route, docs/costs.md prices them): the authorizer
reads the key and the tenant; the execute function reads the plan row and a shard of the month's
credits in one BatchGetItem, counts the request in the second's rate
counter and charges in one transaction: three; an Idempotency-Key adds the in-progress record
(four: the stored response is written by the charge's transaction), and a replay is that record
alone. One more request on this path fails here."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from cfnlint.decode import cfn_yaml

from loopsense.platform.access.idempotency import Idempotency
from loopsense.platform.execute.pipeline import Execute
from loopsense.platform.execute.skill_handler import call_skill
from loopsense.platform.http.auth import authorizer_context
from loopsense.platform.http.request import Request
from loopsense.settings import Settings
from loopsense.store.accounts import Accounts
from loopsense.store.dynamo import Dynamo
from loopsense.store.metering import Metering, period_of
from loopsense_local.embedded import EmbeddedDynamoDB
from loopsense_local.tables import TABLES, create_tables, local_table_name
from tests.infra.test_template import TEMPLATE

BODY = json.dumps({"skillKey": "agent.loop_detect",
                   "input": {"events": [{"action": "a"}, {"action": "b"}] * 3}}).encode()


class Counting:
    def __init__(self, client: Any) -> None:
        self.client, self.calls = client, []
        self.actions: set[tuple[str, str]] = set()  # (IAM action, table name) ever called

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.client, name)

        def call(**kwargs: Any) -> Any:
            self.calls.append(name)
            self.actions |= iam_actions(name, kwargs)
            return method(**kwargs)

        return call


TRANSACT = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem",
            "ConditionCheck": "ConditionCheckItem"}


def iam_actions(operation: str, kwargs: dict[str, Any]) -> set[tuple[str, str]]:
    """What IAM must allow for one call: a transaction needs each of its actions on its table."""
    if operation == "transact_write_items":
        return {(f"dynamodb:{TRANSACT[kind]}", body["TableName"])
                for item in kwargs["TransactItems"] for kind, body in item.items()}
    action = "dynamodb:" + "".join(part.title() for part in operation.split("_"))
    if operation.startswith("batch_"):
        return {(action, table) for table in kwargs["RequestItems"]}
    return {(action, kwargs["TableName"])} if "TableName" in kwargs else set()  # list_tables


class InThread:
    def invoke(self, skill: Any, raw: Any, request_id: str, thresholds: Any = None) -> Any:
        return call_skill(skill, raw, request_id, thresholds)


@pytest.fixture(scope="module")
def first() -> Iterator[tuple[Execute, Accounts, Counting, str]]:
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


@pytest.fixture
def world(first: tuple[Execute, Accounts, Counting, str]
          ) -> tuple[Execute, Accounts, Counting, str]:
    """A month under way: its credits shards were written by its first charge."""
    execute, _, counting, _ = first
    execute.metering.move("acme", period_of(datetime.now(UTC)), 100_000, 1)
    return first


def requests(world: tuple[Execute, Accounts, Counting, str], key: str | None
             ) -> tuple[list[str], list[str]]:
    execute, accounts, counting, secret = world
    counting.calls.clear()
    context = authorizer_context(f"Bearer {secret}", accounts)
    authorizer = list(counting.calls)
    counting.calls.clear()
    counting.actions.clear()  # from here on, the execute function's own
    answer = execute.execute(Request("POST", "/v1/execute",
                                     {"idempotency-key": key} if key else {}, BODY, "r", context))
    assert answer["statusCode"] == 200, answer["body"]
    return authorizer, list(counting.calls)


def test_the_months_first_charge_writes_its_shards_first(first):
    """Once a month a tenant's first charge finds no shard: it reads the period, writes every
    shard's room (one transaction) and reads it again."""
    execute, accounts, counting, _ = first
    accounts.create_tenant("fresh", "team", "2026-11-30T00:00:00.000Z")
    secret, _ = accounts.issue_key("fresh", ("*",), "2026-11-30T00:00:00.000Z")
    _, function = requests((execute, accounts, counting, secret), None)
    assert function == ["batch_get_item", "update_item", "query", "transact_write_items",
                        "query", "transact_write_items"]
    _, function = requests((execute, accounts, counting, secret), None)
    assert function == ["batch_get_item", "update_item", "transact_write_items"]


def test_an_execute_is_three_dynamodb_requests(world):
    authorizer, function = requests(world, None)
    assert authorizer == ["get_item", "get_item"]  # the key, the tenant
    assert function == ["batch_get_item", "update_item", "transact_write_items"]


def test_an_idempotency_key_adds_its_record_and_a_replay_is_that_record(world):
    """Four: the response is stored by the charge's own transaction, not after it."""
    _, function = requests(world, "once")
    assert function == ["put_item", "batch_get_item", "update_item", "transact_write_items"]
    _, replay = requests(world, "once")
    assert replay == ["put_item"]  # refused on condition, the stored response returned with it


def test_the_template_lets_the_execute_function_make_every_request_it_makes(world):
    """Deployed, IAM refuses a DynamoDB action the function's policy does not grant (the
    embedded engine has no IAM): every action the two tests above made, on every table, is
    granted to ExecuteFunction by template.yaml."""
    execute, accounts, counting, _ = world
    actions = set()
    for key in (None, "granted", "granted"):  # a call, a keyed call, its replay
        requests(world, key)
        actions |= counting.actions
    accounts.create_tenant("iam-fresh", "team", "2026-11-30T00:00:00.000Z")
    secret, _ = accounts.issue_key("iam-fresh", ("*",), "2026-11-30T00:00:00.000Z")
    requests((execute, accounts, counting, secret), None)  # a month's first: its shards
    actions |= counting.actions
    template = cfn_yaml.load(str(TEMPLATE))
    names = {local_table_name(field): logical for logical, field in TABLES.items()}
    granted = set()
    for policy in template["Resources"]["ExecuteFunction"]["Properties"]["Policies"]:
        for statement in policy["Statement"]:
            listed = statement["Action"]
            for action in [listed] if isinstance(listed, str) else listed:
                granted.add((action, str(statement["Resource"])))
    made = {(action, str({"Fn::GetAtt": [names[table], "Arn"]}))
            for action, table in actions}
    assert made and made <= granted, sorted(made - granted)
