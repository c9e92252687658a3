"""The authorizer and router Lambdas with their events/ files, on moto tables from the template."""

from __future__ import annotations

import json

import pytest
from moto import mock_aws

from loopsense.platform import wiring
from loopsense.settings import settings
from loopsense.store.accounts import Accounts
from loopsense.store.dynamo import Dynamo, make_client
from loopsense_local.tables import create_tables

DEV_KEY = "ls_local_development_key_0001"


@pytest.fixture
def deployed(monkeypatch):
    """Fresh settings and platform singletons (as at a cold start) over seeded moto tables."""
    monkeypatch.setenv("LOOPSENSE_SKILL_INVOKER", "inprocess")
    caches = (settings, wiring.execute, wiring.accounts)
    for cached in caches:
        cached.cache_clear()
    with mock_aws():
        config = settings()
        create_tables(make_client(config), config)
        accounts = Accounts(Dynamo(make_client(config)), config)
        accounts.create_tenant("dev", "team", "2026-11-29T12:00:00+00:00")
        accounts.issue_key("dev", ("*",), "2026-11-29T12:00:00+00:00", secret=DEV_KEY)
        yield accounts
    for cached in caches:
        cached.cache_clear()


def test_authorizer_event_resolves_the_dev_key(deployed, lambda_module, lambda_context,
                                               event_file):
    answer = lambda_module("authorizer").lambda_handler(event_file("authorizer"), lambda_context)
    assert answer["isAuthorized"] is True
    context = answer["context"]
    assert (context["tenantId"], context["plan"], context["scopes"]) == ("dev", "team", "*")
    assert context["keyId"].startswith("key_")


def test_authorizer_hands_unknown_keys_to_the_router_as_an_error(deployed, lambda_module,
                                                                  lambda_context, event_file):
    event = event_file("authorizer")
    event["headers"]["authorization"] = "Bearer ls_" + "z" * 43
    context = lambda_module("authorizer").lambda_handler(event, lambda_context)["context"]
    assert context["authError"] == "UNAUTHORIZED"
    assert "tenantId" not in context


def test_execute_event_runs_the_skill_and_charges(deployed, lambda_module, lambda_context,
                                                  event_file):
    response = lambda_module("execute").lambda_handler(event_file("execute"), lambda_context)
    assert response["statusCode"] == 200
    body = json.loads(response["body"])
    assert body["output"]["spans"] == [{"start": 0, "end": 5, "cycleLength": 2, "repeats": 3}]
    assert body["billing"] == {"credits": 1}
    metering = wiring.execute().metering
    [record] = metering.records("dev")
    assert record.execution_id == body["executionId"]
    assert metering.used("dev", record.at[:7]) == 1


def test_execute_without_an_identity_is_unauthorized(deployed, lambda_module, lambda_context,
                                                     event_file):
    event = event_file("execute")
    event["requestContext"]["authorizer"]["lambda"] = {"authError": "UNAUTHORIZED"}
    response = lambda_module("execute").lambda_handler(event, lambda_context)
    assert response["statusCode"] == 401
    assert json.loads(response["body"])["error"]["code"] == "UNAUTHORIZED"

