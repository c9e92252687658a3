"""Faults through the real execute pipeline (docs/faults.md): the authorizer's and the router's
code as deployed, the embedded DynamoDB in this process behind a client that fails on demand,
and each skill's real Lambda handler behind a boto3 Lambda client whose service answers
Lambda's own refusals (tests/faults.py).

Each fault answers its documented code (Retry-After when retryable), charges nothing, leaves
nothing half-written (the usage and idempotency tables read afterwards are as before; a refused
call's rate-counter hit is the only trace, as for any request), and once it ends the same
request, with the same Idempotency-Key, succeeds and is charged once.
"""

from __future__ import annotations

import json
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from loopsense.platform.access.catalog import CATALOG
from loopsense.platform.access.retry import ATTEMPTS
from loopsense.platform.execute.files import FILE_LIFE_S
from loopsense.platform.execute.invoke import InProcessInvoker, LambdaInvoker, function_env_name
from loopsense.platform.execute.pipeline import Execute
from loopsense.platform.execute.skill_handler import skill_lambda_handler
from loopsense.platform.http.auth import authorizer_context
from loopsense.platform.http.request import Request
from loopsense.platform.wiring import build_execute
from loopsense.settings import Settings
from loopsense.store.dynamo import make_client, serve_in_process, unavailable
from loopsense.store.files import Files, make_s3_client
from loopsense.store.metering import period_of
from loopsense_local.dynamodb.client import InProcessClient
from loopsense_local.dynamodb.engine import Engine
from loopsense_local.s3 import BUCKET, EmbeddedS3
from loopsense_local.tables import create_tables
from loopsense_local.test_skills import CRASH, LARGE, SLEEP
from tests.faults import (
    CONFLICT,
    FUNCTION_ERROR,
    FUNCTION_TIMEOUT,
    LAMBDA_THROTTLED,
    LAMBDA_TOO_LARGE,
    OUTAGE,
    THROTTLING,
    FaultyDynamoDB,
    LambdaService,
)

ENDPOINT = "http://faults.invalid:4566"  # answered in this process only (serve_in_process)
LOOP = {"skillKey": "agent.loop_detect",
        "input": {"events": [{"action": "search"}, {"action": "click"}] * 3}}
# The store calls of one execute with an Idempotency-Key, in order: the authorizer's key and
# tenant, the in-progress idempotency record, the plan and the period's credits (one read), the
# rate counter, the charge (credits, usage record, key claim and the stored response in one
# transaction).
CALLS = ["get_item", "get_item", "put_item", "batch_get_item", "update_item",
         "transact_write_items"]
CHARGE = CALLS.index("transact_write_items")


@dataclass
class Stack:
    execute: Execute
    store: FaultyDynamoDB
    plain: InProcessClient  # the same tables, never failing: what the checks read
    lambdas: LambdaService
    config: Settings
    tenant: str = ""
    key: str = ""

    def call(self, body: dict[str, Any], idempotency_key: str | None = None
             ) -> tuple[int, dict[str, Any], dict[str, str]]:
        """One request as API Gateway hands it over: the authorizer, then the router."""
        context = authorizer_context(f"Bearer {self.key}", self.execute.accounts)
        headers = {"idempotency-key": idempotency_key} if idempotency_key else {}
        request = Request("POST", "/v1/execute", headers,
                          json.dumps(body, ensure_ascii=False).encode(),
                          "req-" + uuid.uuid4().hex[:8], context)
        response = self.execute.execute(request)
        return response["statusCode"], json.loads(response["body"]), response["headers"]

    def written(self) -> dict[str, list[Any]]:
        """Everything a call may leave but its rate-counter hit: credits, usage records and
        key claims; the idempotency records."""
        return {table: sorted(json.dumps(item, sort_keys=True, default=str) for item in
                              self.plain.scan(TableName=table)["Items"])
                for table in (self.config.usage_table, self.config.idempotency_table)}

    def used(self) -> tuple[int, int]:
        """(credits used, usage records) of the tenant, each as the store has it."""
        metering = self.execute.metering
        return (metering.used(self.tenant, period_of(datetime.now(UTC))),
                len(metering.records(self.tenant)))


@pytest.fixture(scope="module")
def built() -> Iterator[Stack]:
    """One stack for the module (tables, handlers and clients cost ~0.3 s to build)."""
    with pytest.MonkeyPatch.context() as patch:
        for skill in (SLEEP, CRASH, LARGE):  # the local server's --test-skills, for this module
            patch.setitem(CATALOG, skill.key, skill)
        functions = {}
        for skill in CATALOG.values():
            patch.setenv(function_env_name(skill), skill.function)
            functions[skill.function] = skill_lambda_handler(skill)
        engine = Engine()
        files = EmbeddedS3().start()
        plain = InProcessClient(engine)
        store = FaultyDynamoDB(plain)
        serve_in_process(ENDPOINT, store)
        try:
            config = Settings(dynamodb_endpoint=ENDPOINT, skill_invoker="lambda",
                              files_bucket=BUCKET, s3_endpoint=files.endpoint)
            create_tables(make_client(config), config)
            lambdas = LambdaService(functions)
            execute = build_execute(config, invoker=LambdaInvoker(lambdas.client))
            yield Stack(execute, store, plain, lambdas, config)
        finally:
            serve_in_process(ENDPOINT, None)
            engine.close()
            files.stop()


@pytest.fixture
def stack(built: Stack) -> Stack:
    """The module's stack, healed, for a tenant of this test's own."""
    built.store.heal()
    built.lambdas.fault, built.lambdas.invoked = None, 0
    built.execute.invoker = LambdaInvoker(built.lambdas.client)
    built.execute.files = Files(make_s3_client(built.config), BUCKET)
    tenant = "t-" + uuid.uuid4().hex[:12]
    built.execute.accounts.create_tenant(tenant, "team", "2026-12-02T00:00:00+00:00")
    key, _ = built.execute.accounts.issue_key(tenant, ("*",), "2026-12-02T00:00:00+00:00")
    # The month's credits shards are written by its first charge (once a month): done here, so
    # that every call below is one of a month under way.
    assert built.execute.metering.move(tenant, period_of(datetime.now(UTC)), 100_000, 1)
    return replace(built, tenant=tenant, key=key)


def assert_refused(answer: tuple[int, dict[str, Any], dict[str, str]], status: int, code: str,
                   retryable: bool) -> None:
    got, body, headers = answer
    assert (got, body["error"]["code"], body["error"]["retryable"]) == (
        status, code, retryable), body
    if retryable:
        assert int(headers["Retry-After"]) >= 1
    else:
        assert "Retry-After" not in headers


def assert_recovers(stack: Stack, key: str, before: dict[str, list[Any]]) -> None:
    """Nothing of the refused call was kept; the same request succeeds, charged once."""
    assert stack.written() == before
    status, body, _ = stack.call(LOOP, key)
    assert status == 200, body
    assert stack.used() == (1, 1)
    assert stack.call(LOOP, key)[1] == body  # and a replay is the stored answer, free
    assert stack.used() == (1, 1)


def test_one_keyed_execute_makes_the_store_calls_the_faults_are_aimed_at(stack: Stack) -> None:
    del stack.store.calls[:]
    status, _, _ = stack.call(LOOP, "calls-" + uuid.uuid4().hex)
    assert status == 200
    assert stack.store.calls == CALLS, " ".join(stack.store.calls)


# The store throttling or unreachable at each of its calls up to the charge: 503, retryable,
# nothing charged, and the same request succeeds once the store is back.
@pytest.mark.parametrize("position", range(CHARGE + 1), ids=lambda p: f"{p}-{CALLS[p]}")
@pytest.mark.parametrize("fault", [*THROTTLING, OUTAGE])
def test_the_store_failing_at_any_call_is_503_and_charges_nothing(stack: Stack, fault: str,
                                                                  position: int) -> None:
    before = stack.written()
    key = "store-" + uuid.uuid4().hex
    operation = CALLS[position]
    stack.store.fail(fault, operation, skip=CALLS[:position].count(operation))
    assert_refused(stack.call(LOOP, key), 503, "PLAN_ELIGIBILITY_UNAVAILABLE", True)
    assert stack.store.failed
    stack.store.heal()
    assert_recovers(stack, key, before)


@pytest.mark.parametrize("fault", [*THROTTLING, OUTAGE])
def test_a_charge_applied_whose_answer_is_lost_is_charged_once_on_retry(
        stack: Stack, fault: str) -> None:
    """The charge's transaction (credits, record, key claim, stored response) applied, but the
    function never heard so: 503, retryable. The retry with its key runs again and finds its
    claim held: the same execution, not a second charge, then replayed as stored."""
    key = "lost-" + uuid.uuid4().hex
    stack.store.fail(fault, "transact_write_items", times=1, applied=True)
    assert_refused(stack.call(LOOP, key), 503, "PLAN_ELIGIBILITY_UNAVAILABLE", True)
    assert stack.store.failed == 1
    stack.store.heal()
    assert stack.used() == (1, 1)  # it was charged
    again = stack.call(LOOP, key)
    assert again[0] == 200, again
    [charged] = stack.execute.metering.records(stack.tenant)
    assert again[1]["executionId"] == charged.execution_id
    assert stack.call(LOOP, key)[1] == again[1]  # replayed as stored
    assert stack.used() == (1, 1)


@pytest.mark.parametrize("operation", ["transact_write_items", "update_item"],
                         ids=["charge", "rate-counter"])
def test_a_charge_cancelled_for_a_conflict_is_sent_again_and_charged_once(
        stack: Stack, operation: str) -> None:
    stack.store.fail(CONFLICT, operation, times=2)
    status, body, _ = stack.call(LOOP, "conflict-" + uuid.uuid4().hex)
    assert status == 200, body
    assert stack.store.failed == 2
    assert stack.used() == (1, 1)


@pytest.mark.parametrize("operation", ["transact_write_items", "update_item"],
                         ids=["charge", "rate-counter"])
def test_a_write_that_keeps_conflicting_is_503_and_charges_nothing(stack: Stack,
                                                                   operation: str) -> None:
    before = stack.written()
    key = "conflicts-" + uuid.uuid4().hex
    stack.store.fail(CONFLICT, operation, skip=0)
    assert_refused(stack.call(LOOP, key), 503, "PLAN_ELIGIBILITY_UNAVAILABLE", True)
    assert stack.store.failed == ATTEMPTS
    stack.store.heal()
    assert_recovers(stack, key, before)


# Lambda refusing the invoke, and the function failing.
@pytest.mark.parametrize(("fault", "status", "code", "retryable"), [
    (LAMBDA_THROTTLED, 503, "SERVER_BUSY", True),
    (LAMBDA_TOO_LARGE, 400, "VALIDATION_ERROR", False),
    (FUNCTION_ERROR, 500, "INTERNAL_ERROR", True),
    (FUNCTION_TIMEOUT, 504, "EXECUTION_TIMEOUT", True),
])
def test_lambda_refusing_the_invoke_answers_its_code_and_charges_nothing(
        stack: Stack, fault: str, status: int, code: str, retryable: bool) -> None:
    before = stack.written()
    key = "lambda-" + uuid.uuid4().hex
    stack.lambdas.fault = fault
    refused = stack.call(LOOP, key)
    assert_refused(refused, status, code, retryable)
    assert stack.lambdas.invoked == 1
    if code == "VALIDATION_ERROR":
        assert refused[1]["error"]["details"][0]["path"] == "input"
        assert "6 MB" in refused[1]["error"]["details"][0]["issue"]
    stack.lambdas.fault = None
    assert_recovers(stack, key, before)


def test_non_ascii_input_travels_to_lambda_as_utf8_not_sixfold_escapes(stack: Stack) -> None:
    """Lambda's 6 MB counts the payload's bytes: \\u escapes would make 2 MB of non-ASCII
    text a 6 MB payload (refused as above), so the router sends UTF-8."""
    text = {"skillKey": "agent.loop_detect",
            "input": {"events": [{"action": "\u00e9" * 100}, {"action": "\u00e8" * 100}] * 50}}
    status, body, _ = stack.call(text)
    assert status == 200, body
    body_bytes = len(json.dumps(text["input"], ensure_ascii=False).encode())
    assert stack.lambdas.payload_bytes[-1] < body_bytes * 1.1


# A skill that crashes or runs past its budget: as deployed (its Lambda) and locally (a thread).
@pytest.mark.parametrize("where", ["lambda", "in-process"])
def test_a_skill_crash_is_a_free_500_and_the_next_call_succeeds(stack: Stack,
                                                                where: str) -> None:
    if where == "in-process":
        stack.execute.invoker = InProcessInvoker(workers=2)
    before = stack.written()
    key = "crash-" + uuid.uuid4().hex
    assert_refused(stack.call({"skillKey": CRASH.key, "input": {}}, key), 500,
                   "INTERNAL_ERROR", True)
    assert_recovers(stack, key.replace("crash", "after"), before)


@pytest.mark.parametrize("where", ["lambda", "in-process"])
def test_a_skill_past_its_budget_is_a_free_504_and_its_key_is_free(stack: Stack,
                                                                   where: str) -> None:
    if where == "in-process":
        stack.execute.invoker = InProcessInvoker(workers=2)
        late = {"skillKey": SLEEP.key, "input": {"ms": 600}}  # its budget: 300 ms
    else:
        stack.lambdas.fault = FUNCTION_TIMEOUT
        late = LOOP
    before = stack.written()
    key = "late-" + uuid.uuid4().hex
    assert_refused(stack.call(late, key), 504, "EXECUTION_TIMEOUT", True)
    stack.lambdas.fault = None
    assert stack.written() == before
    status, body, _ = stack.call(LOOP, key.replace("late", "next"))
    assert status == 200, body
    assert stack.used() == (1, 1)


# File inputs (docs/files.md) through the same pipeline: the router reads the file, the skill's
# Lambda gets its events.
def upload(stack: Stack, events: list[Any]) -> str:
    context = authorizer_context(f"Bearer {stack.key}", stack.execute.accounts)
    made = stack.execute.execute(Request("POST", "/v1/files", {}, b"", "req-file", context))
    assert made["statusCode"] == 200, made
    answer = json.loads(made["body"])
    put = urllib.request.Request(answer["uploadUrl"], data=json.dumps(events).encode(),
                                 method="PUT")
    with urllib.request.urlopen(put, timeout=10) as done:
        assert done.status == 200
    return str(answer["fileRef"])


def test_an_input_by_file_ref_is_the_inline_answer_and_the_file_is_gone_after(
        stack: Stack) -> None:
    ref = upload(stack, LOOP["input"]["events"])
    status, by_ref, _ = stack.call({"skillKey": "agent.loop_detect", "input": {"fileRef": ref}})
    assert status == 200, by_ref
    assert by_ref["output"] == stack.call(LOOP)[1]["output"]
    assert stack.execute.files is not None
    assert stack.execute.files.read(stack.tenant, ref, 1024) is None  # deleted once used


def test_the_file_store_unreachable_is_503_charges_nothing_and_keeps_the_file(
        stack: Stack) -> None:
    ref = upload(stack, LOOP["input"]["events"])
    by_ref = {"skillKey": "agent.loop_detect", "input": {"fileRef": ref}}
    working = stack.execute.files
    stack.execute.files = Files(make_s3_client(replace(  # nothing listens there
        stack.config, s3_endpoint="http://127.0.0.1:9", store_timeout_s=0.2)), BUCKET)
    assert_refused(stack.call(by_ref, "file-down"), 503, "PLAN_ELIGIBILITY_UNAVAILABLE", True)
    assert stack.used() == (0, 0)
    stack.execute.files = working
    status, body, _ = stack.call(by_ref, "file-down")  # the file was kept for the retry
    assert status == 200, body
    assert stack.used() == (1, 1)


def test_a_file_past_its_life_is_refused_as_expired_though_the_store_still_holds_it(
        stack: Stack) -> None:
    """S3 removes an object some time after its lifecycle day; the router refuses it from the
    end of that day on (its clock moved on, the store's is today's)."""
    ref = upload(stack, LOOP["input"]["events"])
    by_ref = {"skillKey": "agent.loop_detect", "input": {"fileRef": ref}}
    later = datetime.now(UTC) + timedelta(seconds=FILE_LIFE_S + 60)
    stack.execute.clock = lambda: later
    try:
        status, body, _ = stack.call(by_ref)
    finally:
        stack.execute.clock = lambda: datetime.now(UTC)
    assert status == 400, body
    assert (body["error"]["code"], body["error"]["details"][0]["path"]) == (
        "LOOP_EVENTS_INVALID", "input.fileRef")
    assert "expired" in body["error"]["details"][0]["issue"]
    assert stack.used() == (0, 0)
    assert stack.call(by_ref)[0] == 200  # within its day it was good


def test_the_file_store_unreachable_for_a_large_output_is_503_and_charges_nothing(
        stack: Stack) -> None:
    stack.execute.invoker = InProcessInvoker()  # test.large's 7 MB answer, past Lambda's 6 MB
    large = {"skillKey": "test.large", "input": {"count": 900_000}}
    working = stack.execute.files
    stack.execute.files = Files(make_s3_client(replace(
        stack.config, s3_endpoint="http://127.0.0.1:9", store_timeout_s=0.2)), BUCKET)
    assert_refused(stack.call(large, "output-down"), 503, "PLAN_ELIGIBILITY_UNAVAILABLE", True)
    assert stack.used() == (0, 0)
    stack.execute.files = working
    status, body, _ = stack.call(large, "output-down")
    assert status == 200 and set(body["output"]) >= {"fileRef", "downloadUrl"}, body
    assert stack.used() == (1, 1)


def test_a_refusal_whose_key_cannot_be_released_is_still_that_refusal(stack: Stack) -> None:
    """A call refused for good (its input invalid) releases its Idempotency-Key; should that
    delete fail, the caller still gets the refusal, not a 503 that says to retry what cannot
    succeed."""
    key = "refused-" + uuid.uuid4().hex
    stack.store.fail(OUTAGE, "delete_item")
    status, body, headers = stack.call({"skillKey": "agent.loop_detect",
                                        "input": {"events": "not a list"}}, key)
    stack.store.heal()
    assert stack.store.failed
    assert status == 400 and not body["error"]["retryable"], body
    assert "Retry-After" not in headers
    assert stack.used() == (0, 0)


@pytest.mark.parametrize("charge", ["lost the last credits", "store down"])
def test_a_large_output_whose_charge_fails_leaves_no_file(stack: Stack, charge: str,
                                                          monkeypatch: Any) -> None:
    stack.execute.invoker = InProcessInvoker()  # test.large's 7 MB answer, past Lambda's 6 MB
    files = stack.execute.files
    assert files is not None
    written: list[str] = []
    write = files.write
    monkeypatch.setattr(files, "write", lambda tenant, ref, body, kind: (
        written.append(ref), write(tenant, ref, body, kind))[1])

    def failing(*args: Any, **kwargs: Any) -> None:
        if charge == "store down":
            raise unavailable()
        return None  # lost the race for the month's last credits

    monkeypatch.setattr(stack.execute.metering, "charge", failing)
    status, body, _ = stack.call({"skillKey": "test.large", "input": {"count": 900_000}})
    assert (status, body["error"]["code"]) == (
        (503, "PLAN_ELIGIBILITY_UNAVAILABLE") if charge == "store down" else
        (429, "QUOTA_EXCEEDED")), body
    assert len(written) == 1 and written[0].startswith("out_")
    assert files.read(stack.tenant, written[0], 1024) is None  # deleted: no answer names it
    assert stack.used() == (0, 0)
