"""functions/runs/app.py invoked the way Lambda does (events/runs.json, moto tables from
template.yaml): the event's batch is applied and answered, a retry of it answered the same,
every other route reached through its routeKey, and failures in the envelope."""

from __future__ import annotations

import json
from typing import Any

import pytest
from moto import mock_aws

from loopsense.platform import wiring
from loopsense.platform.runs.routes import ROUTES
from loopsense.settings import settings
from loopsense.store.accounts import Accounts
from loopsense.store.dynamo import Dynamo, make_client
from loopsense_local.tables import create_tables, load_template


@pytest.fixture
def app(lambda_module):
    caches = (settings, wiring.runs)
    for cached in caches:
        cached.cache_clear()
    with mock_aws():
        config = settings()
        create_tables(make_client(config), config)
        Accounts(Dynamo(make_client(config)), config).create_tenant("dev", "team", "2026-11-30")
        yield lambda_module("runs")
    for cached in caches:
        cached.cache_clear()


def route(event: dict[str, Any], key: str, path: str, body: Any) -> dict[str, Any]:
    method = key.split(" ", 1)[0]
    event = {**event, "routeKey": key, "rawPath": path,
             "body": None if body is None else json.dumps(body)}
    event["requestContext"] = {**event["requestContext"], "routeKey": key,
                               "http": {"method": method, "path": path}}
    return event


def test_the_event_applies_its_batch_once(app, event_file, lambda_context):
    event = event_file("runs")
    first = app.lambda_handler(event, lambda_context)
    assert first["statusCode"] == 200, first
    body = json.loads(first["body"])
    assert body["sequence"] == 6 and body["recommendation"]["action"] == "nudge"
    assert app.lambda_handler(event_file("runs"), lambda_context)["body"] == first["body"]
    signal = route(event, "GET /v1/runs/{runId}/signal", "/v1/runs/run-2214/signal", None)
    signal["queryStringParameters"] = {"agentId": "ari"}
    answer = json.loads(app.lambda_handler(signal, lambda_context)["body"])
    assert answer["sequence"] == 6 and answer["signal"]["is_looping"]


def test_every_route_answers_and_failures_are_enveloped(app, event_file, lambda_context):
    event = event_file("runs")
    for key, body in (("POST /v1/runs/{runId}/agents", {"agentId": "ari", "role": "x"}),
                      ("PUT /v1/runs/{runId}/config", {"repeat_warn": 5}),
                      ("POST /v1/runs/{runId}/reset", None)):
        path = key.split(" ", 1)[1].replace("{runId}", "run-2214")
        answer = app.lambda_handler(route(event, key, path, body), lambda_context)
        assert answer["statusCode"] == 200, (key, answer)
    unauthorized = event_file("runs")
    unauthorized["requestContext"]["authorizer"]["lambda"] = {"authError": "UNAUTHORIZED"}
    assert app.lambda_handler(unauthorized, lambda_context)["statusCode"] == 401
    unknown = route(event, "DELETE /v1/runs/{runId}", "/v1/runs/run-2214", None)
    answer = app.lambda_handler(unknown, lambda_context)
    assert json.loads(answer["body"])["error"]["code"] == "ROUTE_NOT_FOUND"


def test_the_handlers_routes_are_the_templates():
    events = load_template()["Resources"]["RunsFunction"]["Properties"]["Events"]
    assert set(ROUTES) == {f"{e['Properties']['Method'].upper()} {e['Properties']['Path']}"
                           for e in events.values()}
