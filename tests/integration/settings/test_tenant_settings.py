"""Per-tenant thresholds in-process, on moto tables from template.yaml: the store's one
conditional write and its retries, the settings Lambda with events/settings.json, and the way
the values travel: authorizer context -> router -> skill (in-process and the Lambda payload).
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from moto import mock_aws

from loopsense.errors import LoopsenseError
from loopsense.platform import wiring
from loopsense.platform.access.catalog import CATALOG
from loopsense.platform.execute.invoke import LambdaInvoker
from loopsense.platform.http.auth import authorizer_context, identity_from_context
from loopsense.platform.http.request import Request
from loopsense.platform.settings.service import TenantSettings
from loopsense.settings import Settings, settings
from loopsense.store.accounts import Accounts
from loopsense.store.dynamo import ConditionFailed, Dynamo, make_client
from loopsense_local.tables import create_tables

NOW = "2026-11-29T12:00:00+00:00"
DEV_KEY = "ls_local_development_key_0001"
THREE = {"events": [{"type": "checkpoint", "metadata": {"a": 1}}] * 3}


@pytest.fixture
def accounts():
    with mock_aws():
        config = Settings()
        create_tables(make_client(config), config)
        store = Accounts(Dynamo(make_client(config)), config)
        store.create_tenant("acme", "team", NOW)
        yield store


def stored(accounts: Accounts, tenant: str = "acme") -> Any:
    item = accounts.tenant(tenant)
    assert item is not None
    return item.get("thresholds")


# ---- the store: one conditional UpdateItem ----------------------------------------------------


def test_the_first_change_writes_the_map_whole_later_ones_only_their_names(accounts):
    service = TenantSettings(accounts)
    assert stored(accounts) is None  # no map: every default applies
    service.set_thresholds("acme", {"revisit_threshold": 5, "similar_call_distance_threshold": 0.3})
    assert stored(accounts) == {"revisit_threshold": 5, "similar_call_distance_threshold": 0.3}
    service.set_thresholds("acme", {"step_count_threshold": 20, "revisit_threshold": None})
    assert stored(accounts) == {"similar_call_distance_threshold": 0.3, "step_count_threshold": 20}


def test_floats_are_stored_as_their_shortest_decimal(accounts):
    TenantSettings(accounts).set_thresholds("acme", {"similar_call_distance_threshold": 0.1})
    raw = accounts.db.call("get_item", TableName=Settings().tenants_table,
                           Key={"tenantId": {"S": "acme"}})["Item"]
    assert raw["thresholds"]["M"]["similar_call_distance_threshold"] == {"N": "0.1"}


def test_the_write_holds_only_while_the_plan_is_the_one_checked(accounts):
    with pytest.raises(ConditionFailed):
        accounts.update_thresholds("acme", "enterprise", {"time_budget_ms": 86_400_000}, (),
                                   create=True)
    assert stored(accounts) is None


class PlanChangesOnce(Accounts):
    """The operator lowers the plan between the settings' read and their write."""

    def __init__(self, inner: Accounts) -> None:
        super().__init__(inner.db, inner.s)
        self.writes = 0

    def update_thresholds(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self.writes += 1
        if self.writes == 1:
            self.set_tenant_plan("acme", "hobby")
        return super().update_thresholds(*args, **kwargs)


def test_a_plan_lowered_meanwhile_is_seen_and_the_value_checked_again(accounts):
    racing = PlanChangesOnce(accounts)
    with pytest.raises(LoopsenseError) as caught:
        TenantSettings(racing).set_time_budget("acme", {"time_budget_ms": 3_600_000})
    assert caught.value.code == "TIME_BUDGET_ABOVE_PLAN_CAP"
    assert "600000" in caught.value.message
    assert racing.writes == 1 and stored(accounts) is None


class MapAppearsMeanwhile(Accounts):
    """Another request creates the map between this one's read and its write."""

    def __init__(self, inner: Accounts) -> None:
        super().__init__(inner.db, inner.s)
        self.creates = 0

    def update_thresholds(self, tenant_id: str, plan: str, values: Any, reset: Any,
                          create: bool) -> dict[str, Any]:
        if create and not self.creates:
            self.creates += 1
            super().update_thresholds(tenant_id, plan, {"step_count_threshold": 50}, (), True)
        return super().update_thresholds(tenant_id, plan, values, reset, create)


def test_a_map_created_meanwhile_is_updated_not_overwritten(accounts):
    TenantSettings(MapAppearsMeanwhile(accounts)).set_thresholds("acme", {"revisit_threshold": 6})
    assert stored(accounts) == {"step_count_threshold": 50, "revisit_threshold": 6}


def test_a_tenant_that_does_not_exist_is_named(accounts):
    with pytest.raises(LoopsenseError) as caught:
        TenantSettings(accounts).set_thresholds("nobody", {"revisit_threshold": 6})
    assert caught.value.details[0].path == "tenant"


# ---- the settings Lambda ----------------------------------------------------------------------


@pytest.fixture
def deployed(monkeypatch):
    caches = (settings, wiring.accounts, wiring.tenant_settings)
    for cached in caches:
        cached.cache_clear()
    with mock_aws():
        config = settings()
        create_tables(make_client(config), config)
        store = Accounts(Dynamo(make_client(config)), config)
        store.create_tenant("dev", "team", NOW)
        yield store
    for cached in caches:
        cached.cache_clear()


def test_the_settings_event_changes_the_tenants_thresholds(deployed, lambda_module,
                                                           lambda_context, event_file):
    app = lambda_module("settings")
    response = app.lambda_handler(event_file("settings"), lambda_context)
    assert response["statusCode"] == 200, response
    body = json.loads(response["body"])
    assert body["thresholds"]["revisit_threshold"]["value"] == 4
    assert body["thresholds"]["time_budget_ms"]["value"] == 300_000
    assert stored(deployed, "dev") == {"revisit_threshold": 4, "time_budget_ms": 300_000}

    for route, path in (("GET /v1/detector-thresholds", "/v1/detector-thresholds"),
                        ("GET /v1/me/time-budget-config", "/v1/me/time-budget-config")):
        event = event_file("settings")
        event.update(routeKey=route, rawPath=path, body=None)
        event["requestContext"].update(routeKey=route, http={"method": "GET", "path": path})
        answer = json.loads(app.lambda_handler(event, lambda_context)["body"])
        assert 300_000 in (answer.get("time_budget_ms"),
                           answer.get("thresholds", {}).get("time_budget_ms", {}).get("value"))


def test_the_settings_lambda_answers_every_failure_in_the_envelope(deployed, lambda_module,
                                                                   lambda_context, event_file):
    app = lambda_module("settings")
    event = event_file("settings")
    event["requestContext"]["authorizer"]["lambda"] = {"authError": "UNAUTHORIZED"}
    assert app.lambda_handler(event, lambda_context)["statusCode"] == 401
    event = event_file("settings")
    event["body"] = json.dumps({"time_budget_ms": 3_600_001})
    response = app.lambda_handler(event, lambda_context)
    assert (response["statusCode"], json.loads(response["body"])["error"]["code"]) == (
        400, "TIME_BUDGET_ABOVE_PLAN_CAP")
    assert stored(deployed, "dev") is None


# ---- how the values travel ----------------------------------------------------------------------


def test_the_authorizer_context_carries_the_stored_map_as_json(accounts):
    TenantSettings(accounts).set_thresholds("acme", {"revisit_threshold": 5,
                                                     "similar_call_distance_threshold": 0.3})
    secret, _ = accounts.issue_key("acme", ("*",), NOW)
    context = authorizer_context(f"Bearer {secret}", accounts)
    assert all(isinstance(v, str) for v in context.values())  # HTTP API context values
    assert identity_from_context(context).thresholds == {
        "revisit_threshold": 5, "similar_call_distance_threshold": 0.3}
    for broken in ("not json", "[1]", None):
        assert identity_from_context({**context, "thresholds": broken}).thresholds == {}


class Recording:
    def __init__(self) -> None:
        self.handed: list[Any] = []

    def invoke(self, skill, raw_input, request_id, tenant_thresholds=None):
        from loopsense.platform.execute.skill_handler import call_skill

        self.handed.append(tenant_thresholds)
        return call_skill(skill, raw_input, request_id, tenant_thresholds)


def test_the_router_hands_the_skill_valid_values_and_the_clamped_budget(accounts):
    platform = wiring.build_execute(Settings(), invoker=(recording := Recording()))
    TenantSettings(accounts).set_thresholds("acme", {"revisit_threshold": 4,
                                                     "time_budget_ms": 3_600_000})
    accounts.set_tenant_plan("acme", "hobby")  # lowered after the budget was set
    # a value no write path lets through (a raw write): ignored, the default applies
    accounts.db.call("update_item", TableName=Settings().tenants_table,
                     Key={"tenantId": {"S": "acme"}},
                     UpdateExpression="SET thresholds.step_count_threshold = :v",
                     ExpressionAttributeValues={":v": {"N": "1"}})
    secret, _ = accounts.issue_key("acme", ("*",), NOW)
    context = authorizer_context(f"Bearer {secret}", accounts)
    body = json.dumps({"skillKey": "agent.semantic_loop", "input": THREE}).encode()
    response = platform.execute(Request("POST", "/v1/execute", {}, body, "r-1", context))
    assert response["statusCode"] == 200, response
    assert json.loads(response["body"])["output"]["revisitThreshold"] == 4
    assert recording.handed == [{"revisit_threshold": 4, "time_budget_ms": 600_000,
                                 "max_time_budget_ms": 600_000}]


def test_the_skill_lambda_passes_the_events_tenant_thresholds(lambda_module, lambda_context):
    app = lambda_module("semantic_loop")
    event = {"requestId": "r-1", "input": THREE, "tenantThresholds": {"revisit_threshold": 4}}
    assert app.lambda_handler(event, lambda_context)["output"]["fired"] is False
    for absent in ({}, {"tenantThresholds": None}, {"tenantThresholds": "4"}):
        event = {"requestId": "r-2", "input": THREE, **absent}
        assert app.lambda_handler(event, lambda_context)["output"]["revisitThreshold"] == 3


def test_the_lambda_invoker_puts_the_tenant_thresholds_in_the_payload(monkeypatch):
    monkeypatch.setenv("LOOPSENSE_FUNCTION_SemanticLoopFunction", "fn")

    class FakeLambda:
        payloads: list[Any] = []

        def invoke(self, **kwargs):
            self.payloads.append(json.loads(kwargs["Payload"]))
            return {"Payload": io.BytesIO(b'{"output": {}}')}

    client = FakeLambda()
    handed = {"revisit_threshold": 4, "max_time_budget_ms": 600_000}
    LambdaInvoker(client).invoke(CATALOG["agent.semantic_loop"], THREE, "r-1", handed)
    assert client.payloads == [{"input": THREE, "requestId": "r-1", "tenantThresholds": handed}]
