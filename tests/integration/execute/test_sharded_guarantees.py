"""The four guarantees of a charge with the credits and the rate counter sharded
(docs/tenant-throughput.md), through the real execute pipeline, on the embedded engine in its
conflict mode (a transaction holds its items a while; what meets them is refused with
TransactionConflict and sent again), with many callers at once: the quota is never exceeded
(a plan changed mid-month included), a revoked key is refused at once, the charges are exact
(the shards' sum is the charged calls' credits, one usage record each), and a retry with the
same Idempotency-Key is charged once. A month charged the old way stays on its one item."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from loopsense.platform.access.idempotency import Idempotency
from loopsense.platform.execute.pipeline import Execute
from loopsense.platform.execute.skill_handler import call_skill
from loopsense.platform.http.auth import authorizer_context
from loopsense.platform.http.request import Request
from loopsense.settings import Settings
from loopsense.store.accounts import Accounts, Plan
from loopsense.store.dynamo import Dynamo
from loopsense.store.metering import Metering, period_of
from loopsense.store.shards import CREDIT_SHARDS
from loopsense_local.embedded import EmbeddedDynamoDB
from loopsense_local.tables import create_tables
from tests.concurrency import all_at_once

HOLD_S = 0.002
CALLERS = 48
BODY = json.dumps({"skillKey": "agent.loop_detect",
                   "input": {"events": [{"action": "a"}, {"action": "b"}] * 3}}).encode()
STAMP = "2026-12-01T00:00:00.000Z"


class InThread:
    def invoke(self, skill: Any, raw: Any, request_id: str, thresholds: Any = None) -> Any:
        return call_skill(skill, raw, request_id, thresholds)


@pytest.fixture(scope="module")
def world() -> Iterator[tuple[Execute, Accounts, Any, Settings]]:
    engine = EmbeddedDynamoDB("127.0.0.1", 0, transaction_hold_s=HOLD_S)
    config = Settings(dynamodb_endpoint="http://guarantees.invalid")
    client = engine.client()
    create_tables(client, config)
    db = Dynamo(client)
    accounts = Accounts(db, config)
    yield (Execute(accounts, Metering(db, config), InThread(),
                   Idempotency(client, config.idempotency_table)), accounts, client, config)
    assert engine.engine.conflicts > 0  # the mode did refuse writes: they were sent again


def tenant(world: Any, quota: int) -> tuple[str, str, str]:
    """A tenant on a plan of its own (``quota`` credits, a rate no test reaches)."""
    _, accounts, _, _ = world
    name = "t" + uuid.uuid4().hex[:10]
    accounts.set_plan(Plan(name, quota, 100_000, ("*",), 600_000))
    accounts.create_tenant(name, name, STAMP)
    secret, key = accounts.issue_key(name, ("*",), STAMP)
    return name, secret, key.key_id


def call(world: Any, secret: str, key: str | None = None) -> tuple[int, dict[str, Any]]:
    execute, accounts, _, _ = world
    context = authorizer_context(f"Bearer {secret}", accounts)
    answer = execute.execute(Request("POST", "/v1/execute",
                                     {"idempotency-key": key} if key else {}, BODY,
                                     uuid.uuid4().hex, context))
    return answer["statusCode"], json.loads(answer["body"])


def ledger(world: Any, name: str) -> tuple[int, int, int]:
    """The shards' sum, the usage records, the sum of the shards' used and rooms."""
    execute, _, client, config = world
    period = period_of(datetime.now(UTC))
    items = client.query(TableName=config.usage_table, ConsistentRead=True,
                         KeyConditionExpression="tenantId = :t AND begins_with(sk, :p)",
                         ExpressionAttributeValues={":t": {"S": name},
                                                    ":p": {"S": f"PERIOD#{period}"}})["Items"]
    used = sum(int(i["used"]["N"]) for i in items)
    assert used == execute.metering.used(name, period)
    room = sum(int(i.get("room", {"N": "0"})["N"]) for i in items)
    return used, len(execute.metering.records(name, period)), used + room


def codes(answers: list[tuple[int, dict[str, Any]]]) -> dict[str, int]:
    found: dict[str, int] = {}
    for status, body in answers:
        code = "OK" if status == 200 else body["error"]["code"]
        found[code] = found.get(code, 0) + 1
    return found


def test_many_callers_never_pass_the_quota_and_are_charged_exactly(world) -> None:
    name, secret, _ = tenant(world, 40)
    answers = all_at_once([lambda: call(world, secret) for _ in range(CALLERS)])
    answers += all_at_once([lambda: call(world, secret) for _ in range(CALLERS)])
    assert codes(answers) == {"OK": 40, "QUOTA_EXCEEDED": 2 * CALLERS - 40}
    assert ledger(world, name) == (40, 40, 40)  # each charged call: 1 credit, 1 record


def test_a_plan_changed_mid_month_holds_the_new_quota(world) -> None:
    _, accounts, _, _ = world
    name, secret, _ = tenant(world, 100)
    assert codes(all_at_once([lambda: call(world, secret) for _ in range(30)])) == {"OK": 30}
    accounts.set_plan(Plan(name, 45, 100_000, ("*",), 600_000))  # down: 15 left
    answers = all_at_once([lambda: call(world, secret) for _ in range(CALLERS)])
    assert codes(answers) == {"OK": 15, "QUOTA_EXCEEDED": CALLERS - 15}
    assert ledger(world, name) == (45, 45, 45)
    accounts.set_plan(Plan(name, 50, 100_000, ("*",), 600_000))  # up: 5 more
    answers = all_at_once([lambda: call(world, secret) for _ in range(16)])
    assert codes(answers) == {"OK": 5, "QUOTA_EXCEEDED": 11}
    assert ledger(world, name) == (50, 50, 50)


def test_a_retry_with_the_same_key_is_charged_once(world) -> None:
    name, secret, _ = tenant(world, 1_000)
    answers = all_at_once([lambda: call(world, secret, "retry") for _ in range(16)])
    # On a loaded machine a caller can meet the others' writes past its retries: a retryable
    # 503 its client sends again, as the one more call below does; never a second charge.
    assert set(codes(answers)) <= {"OK", "IDEMPOTENCY_IN_PROGRESS",
                                   "PLAN_ELIGIBILITY_UNAVAILABLE"}
    for _ in range(20):
        status, again = call(world, secret, "retry")
        answers.append((status, again))
        if status == 200:
            break
    assert status == 200
    assert len({body["executionId"] for status, body in answers if status == 200}) == 1
    assert ledger(world, name)[:2] == (1, 1)


def test_a_revoked_key_is_refused_at_once(world) -> None:
    _, accounts, _, _ = world
    name, secret, key_id = tenant(world, 100_000)
    revoked = threading.Event()
    after: list[int] = []

    def caller() -> None:
        for _ in range(12):
            was_revoked = revoked.is_set()
            status, _ = call(world, secret)
            if was_revoked:
                after.append(status)

    threads = [threading.Thread(target=caller) for _ in range(8)]
    for thread in threads:
        thread.start()
    execute = world[0]
    while execute.metering.used(name, period_of(datetime.now(UTC))) < 8:  # being charged
        threading.Event().wait(0.005)
    assert accounts.revoke_key(name, key_id, STAMP)
    revoked.set()
    for thread in threads:
        thread.join()
    assert after and set(after) == {401}  # every call begun after the revocation
    used, records, _ = ledger(world, name)
    assert used == records  # what was charged before it, exactly


def test_a_month_charged_the_old_way_stays_on_its_one_item(world) -> None:
    execute, _, client, config = world
    name, secret, _ = tenant(world, 10)
    period = period_of(datetime.now(UTC))
    client.put_item(TableName=config.usage_table, Item={  # as charged before the shards
        "tenantId": {"S": name}, "sk": {"S": f"PERIOD#{period}"}, "used": {"N": "6"}})
    answers = all_at_once([lambda: call(world, secret) for _ in range(16)])
    assert codes(answers) == {"OK": 4, "QUOTA_EXCEEDED": 12}
    assert execute.metering.used(name, period) == 10
    items = client.query(TableName=config.usage_table, ConsistentRead=True,
                         KeyConditionExpression="tenantId = :t AND begins_with(sk, :p)",
                         ExpressionAttributeValues={":t": {"S": name},
                                                    ":p": {"S": "PERIOD#"}})["Items"]
    assert [i["sk"]["S"] for i in items] == [f"PERIOD#{period}"]  # no shard written
    assert CREDIT_SHARDS == 32


def test_a_month_sharded_then_charged_the_old_way_counts_both(world) -> None:
    # a function of the old version, still running in a deploy, charges the month's one item
    # after the new code sharded it: the quota counts the shards and the one item together
    execute, _, client, config = world
    name, secret, _ = tenant(world, 10)
    assert codes([call(world, secret) for _ in range(8)]) == {"OK": 8}
    period = period_of(datetime.now(UTC))
    client.update_item(TableName=config.usage_table, Key={  # as the old version charges
        "tenantId": {"S": name}, "sk": {"S": f"PERIOD#{period}"}},
        UpdateExpression="ADD used :one", ExpressionAttributeValues={":one": {"N": "1"}})
    answers = all_at_once([lambda: call(world, secret) for _ in range(16)])
    assert codes(answers) == {"OK": 1, "QUOTA_EXCEEDED": 15}
    assert execute.metering.used(name, period) == 10


def test_every_shard_expires_even_one_never_charged(world) -> None:
    _, _, client, config = world
    name, secret, _ = tenant(world, 100)
    assert codes([call(world, secret) for _ in range(3)]) == {"OK": 3}
    items = client.query(TableName=config.usage_table, ConsistentRead=True,
                         KeyConditionExpression="tenantId = :t AND begins_with(sk, :p)",
                         ExpressionAttributeValues={":t": {"S": name},
                                                    ":p": {"S": "PERIOD#"}})["Items"]
    assert len(items) == CREDIT_SHARDS
    assert all("expiresAt" in item for item in items)
