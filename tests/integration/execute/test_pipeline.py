"""The execute pipeline in-process, on moto tables created from template.yaml's definitions."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime

import pytest
from moto import mock_aws

from loopsense.errors import LoopsenseError
from loopsense.platform.access.plans import next_month_in_seconds
from loopsense.platform.execute.invoke import LambdaInvoker
from loopsense.platform.http.auth import authenticate, authorizer_context
from loopsense.platform.http.request import Request
from loopsense.platform.wiring import build_execute
from loopsense.settings import Settings
from loopsense.store.dynamo import make_client
from loopsense.store.metering import Once, UsageRecord
from loopsense_local.tables import create_tables

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
LOOP = {"events": [{"action": "a"}] * 3}


class FixedInvoker:
    """Runs the real skill in the calling thread (the thread pool is tested end to end)."""

    def invoke(self, skill, raw_input, request_id, tenant_thresholds=None):
        from loopsense.platform.execute.skill_handler import call_skill

        return call_skill(skill, raw_input, request_id, tenant_thresholds)


@pytest.fixture
def platform():
    with mock_aws():
        config = Settings(skill_invoker="inprocess")
        create_tables(make_client(config), config)
        built = build_execute(config, invoker=FixedInvoker())
        built.clock = lambda: NOW
        now = NOW.isoformat()
        built.accounts.create_tenant("acme", "hobby", now)
        secret, _ = built.accounts.issue_key("acme", ("*",), now)
        built.secret = secret  # type: ignore[attr-defined]
        yield built


def call(platform, body, headers=None):
    context = authorizer_context(f"Bearer {platform.secret}", platform.accounts)
    request = Request("POST", "/v1/execute", {k.lower(): v for k, v in (headers or {}).items()},
                      json.dumps(body).encode(), "req-1", context)
    response = platform.execute(request)
    return response["statusCode"], json.loads(response["body"]), response["headers"]


def test_success_is_charged_once_and_recorded(platform):
    status, body, _ = call(platform, {"skillKey": "agent.loop_detect", "input": LOOP})
    assert status == 200 and body["output"]["loopDetected"] is True
    assert platform.metering.used("acme", "2026-11") == 1
    [record] = platform.metering.records("acme", "2026-11")
    assert (record.execution_id, record.skill_key, record.credits) == (
        body["executionId"], "agent.loop_detect", 1)


def test_skill_error_is_not_charged(platform):
    status, body, _ = call(platform, {"skillKey": "agent.loop_detect",
                                      "input": {"events": [{"action": "a"}]}})
    assert (status, body["error"]["code"]) == (400, "LOOP_EVENTS_INVALID")
    assert platform.metering.used("acme", "2026-11") == 0


def usage_record(execution_id: str) -> UsageRecord:
    return UsageRecord(execution_id, "agent.loop_detect", "1.0.0", 1, NOW.isoformat(), 3, "ok")


def test_one_logical_call_is_charged_once_within_its_window(platform):
    once = Once("digest-1", now=1000, until=1000 + 86400)
    metering = platform.metering
    assert metering.charge("acme", "2026-11", 5, usage_record("first"), once) == "first"
    # A retry (a new execution of the same call) is told the first one's id; nothing changes.
    assert metering.charge("acme", "2026-11", 5, usage_record("retry"), once) == "first"
    assert metering.used("acme", "2026-11") == 1
    assert [r.execution_id for r in metering.records("acme")] == ["first"]


def test_after_the_window_the_same_key_is_a_new_charged_call(platform):
    metering = platform.metering
    assert metering.charge("acme", "2026-11", 5, usage_record("day-1"),
                           Once("digest-2", now=1000, until=2000)) == "day-1"
    assert metering.charge("acme", "2026-11", 5, usage_record("day-2"),
                           Once("digest-2", now=2001, until=3001)) == "day-2"
    assert metering.used("acme", "2026-11") == 2
    assert sorted(r.execution_id for r in metering.records("acme")) == ["day-1", "day-2"]


def test_charge_refuses_past_the_quota(platform):
    for i in range(2):
        assert platform.metering.charge("acme", "2026-11", 2, usage_record(f"e{i}")) == f"e{i}"
    assert platform.metering.charge("acme", "2026-11", 2, usage_record("e9")) is None
    assert platform.metering.used("acme", "2026-11") == 2
    assert [r.execution_id for r in platform.metering.records("acme")] == ["e0", "e1"]


def test_rate_limit_counts_per_second(platform):
    assert [platform.metering.admit("acme", 100, 2) for _ in range(3)] == [True, True, False]
    assert platform.metering.admit("acme", 101, 2) is True


def test_keys_are_stored_as_digests_only(platform):
    items = platform.accounts.db.call("scan", TableName=Settings().api_keys_table)["Items"]
    assert platform.secret not in json.dumps(items)
    assert authenticate(f"Bearer {platform.secret}", platform.accounts).tenant_id == "acme"


@pytest.mark.parametrize("header", [None, "", "Bearer", "Basic abc", "Bearer short",
                                    "Bearer ls_" + "x" * 40])
def test_bad_keys_are_unauthorized(platform, header):
    with pytest.raises(LoopsenseError) as caught:
        authenticate(header, platform.accounts)
    assert caught.value.code == "UNAUTHORIZED"


def test_revoked_key_is_refused_at_once(platform):
    [key] = platform.accounts.keys("acme")
    assert platform.accounts.revoke_key("acme", key.key_id, NOW.isoformat())
    assert authorizer_context(f"Bearer {platform.secret}", platform.accounts)["authError"] == (
        "UNAUTHORIZED")


def test_store_down_is_plan_eligibility_unavailable_with_retry_after():
    config = Settings(dynamodb_endpoint="http://127.0.0.1:9", store_timeout_s=0.2)
    dead = build_execute(config, invoker=FixedInvoker())
    context = authorizer_context("Bearer ls_" + "k" * 30, dead.accounts)
    assert context["authError"] == "PLAN_ELIGIBILITY_UNAVAILABLE"
    response = dead.execute(Request("POST", "/v1/execute", {}, b"{}", "r", context))
    assert response["statusCode"] == 503
    assert json.loads(response["body"])["error"]["retryable"] is True
    assert int(response["headers"]["Retry-After"]) >= 1


@pytest.mark.parametrize(("now", "expected"), [
    (datetime(2026, 11, 30, 23, 59, 0, tzinfo=UTC), 60),
    (datetime(2026, 12, 31, 23, 59, 59, tzinfo=UTC), 1),
    (datetime(2026, 2, 1, 0, 0, 0, tzinfo=UTC), 28 * 86400),
])
def test_quota_resets_at_the_next_utc_month(now, expected):
    assert next_month_in_seconds(now) == expected


class FakeLambda:
    def __init__(self, payload, function_error=None):
        self.payload, self.function_error, self.calls = payload, function_error, []

    def invoke(self, **kwargs):
        self.calls.append(kwargs)
        answer = {"Payload": io.BytesIO(json.dumps(self.payload).encode())}
        if self.function_error:
            answer["FunctionError"] = self.function_error
        return answer


def test_lambda_invoker_calls_the_skill_function_by_name(monkeypatch):
    from loopsense.platform.access.catalog import CATALOG

    monkeypatch.setenv("LOOPSENSE_FUNCTION_LoopDetectFunction", "stack-LoopDetect-123")
    client = FakeLambda({"output": {"ok": 1}})
    skill = CATALOG["agent.loop_detect"]
    assert LambdaInvoker(client).invoke(skill, LOOP, "r1") == {"output": {"ok": 1}}
    assert client.calls[0]["FunctionName"] == "stack-LoopDetect-123"
    assert json.loads(client.calls[0]["Payload"]) == {"input": LOOP, "requestId": "r1"}


@pytest.mark.parametrize(("message", "code"), [
    ("2026-11-29T12:00:00Z abc Task timed out after 10.00 seconds", "EXECUTION_TIMEOUT"),
    ("division by zero", "INTERNAL_ERROR"),
])
def test_lambda_invoker_maps_function_errors(monkeypatch, message, code):
    from loopsense.platform.access.catalog import CATALOG

    monkeypatch.setenv("LOOPSENSE_FUNCTION_LoopDetectFunction", "fn")
    client = FakeLambda({"errorMessage": message}, function_error="Unhandled")
    with pytest.raises(LoopsenseError) as caught:
        LambdaInvoker(client).invoke(CATALOG["agent.loop_detect"], LOOP, "r1")
    assert caught.value.code == code


def test_a_store_that_is_down_is_not_mistaken_for_a_new_plan():
    from loopsense_local import operator

    dead = build_execute(Settings(dynamodb_endpoint="http://127.0.0.1:9", store_timeout_s=0.2),
                          invoker=FixedInvoker())
    with pytest.raises(LoopsenseError) as caught:
        operator.set_plan(dead.accounts, "hobby", {"credits_per_month": 5})
    assert caught.value.code == "PLAN_ELIGIBILITY_UNAVAILABLE"


def test_the_store_client_uses_the_deployments_region(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    monkeypatch.delenv("AWS_REGION", raising=False)
    assert make_client(Settings()).meta.region_name == "eu-west-1"


def test_a_malformed_tenant_item_is_an_internal_error_in_the_envelope(platform):
    platform.accounts.db.put(Settings().tenants_table, {"tenantId": "acme", "status": "active"})
    context = authorizer_context(f"Bearer {platform.secret}", platform.accounts)
    assert context["authError"] == "INTERNAL_ERROR"
    response = platform.execute(Request("POST", "/v1/execute", {}, b"{}", "r", context))
    assert response["statusCode"] == 500
    assert json.loads(response["body"])["error"]["code"] == "INTERNAL_ERROR"


@pytest.mark.parametrize("command", ["issue_key", "list_keys", "usage", "thresholds",
                                     "set_tenant_plan"])
def test_operator_commands_on_a_tenant_that_does_not_exist_are_refused(platform, command):
    """One rule for every command naming a tenant: VALIDATION_ERROR on `tenant`, nothing done."""
    from loopsense.platform.settings.service import TenantSettings
    from loopsense_local import operator

    run = {
        "issue_key": lambda: operator.issue_key(platform.accounts, "ghost", ["*"]),
        "list_keys": lambda: operator.list_keys(platform.accounts, "ghost"),
        "usage": lambda: operator.usage(platform.accounts, platform.metering, "ghost", None),
        "thresholds": lambda: TenantSettings(platform.accounts).thresholds("ghost"),
        "set_tenant_plan": lambda: operator.set_tenant_plan(platform.accounts, "ghost", "team"),
    }[command]
    with pytest.raises(LoopsenseError) as caught:
        run()
    assert caught.value.code == "VALIDATION_ERROR"
    assert [d.path for d in caught.value.details] == ["tenant"]
    assert platform.accounts.keys("ghost") == []
    assert platform.accounts.tenant("ghost") is None


def test_creating_a_tenant_that_exists_is_refused_and_changes_nothing(platform):
    from loopsense_local import operator

    with pytest.raises(LoopsenseError) as caught:
        operator.create_tenant(platform.accounts, "team", "acme")
    assert caught.value.code == "VALIDATION_ERROR"
    assert [d.path for d in caught.value.details] == ["tenantId"]
    assert platform.accounts.tenant("acme")["plan"] == "hobby"
