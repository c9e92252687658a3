"""The telemetry Lambdas with their events/ files, on moto tables built from template.yaml: the
ingestion, OTLP, failure-groups and sweeper handlers as Lambda runs them (one at a time: moto's
conditional writes are not atomic under concurrency, which the embedded engine's tests cover)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws

from loopsense.core.signatures import hash8
from loopsense.platform import wiring
from loopsense.settings import settings
from loopsense.store.accounts import Accounts
from loopsense.store.dynamo import Dynamo, make_client
from loopsense_local.tables import create_tables

CACHES = (settings, wiring.accounts, wiring.telemetry_store, wiring.ingestion,
          wiring.failure_groups)
IDENTICAL = f"loops/identical_call_{hash8('gpt-4o-mini', 'find a hotel in Paris')}"


@pytest.fixture
def deployed() -> Iterator[None]:
    for cached in CACHES:
        cached.cache_clear()
    with mock_aws():
        config = settings()
        create_tables(make_client(config), config)
        Accounts(Dynamo(make_client(config)), config).create_tenant("dev", "team",
                                                                    "2026-11-29T12:00:00Z")
        yield
    for cached in CACHES:
        cached.cache_clear()


def _body(response: dict[str, Any]) -> Any:
    return json.loads(response["body"])


def _groups(lambda_module, event_file, lambda_context) -> dict[str, Any]:
    event = event_file("failure_groups")
    event["queryStringParameters"], event["rawQueryString"] = None, ""  # no query at all
    response = lambda_module("failure_groups").lambda_handler(event, lambda_context)
    assert response["statusCode"] == 200, response["body"]
    return {g["signature"]: g for g in _body(response)["items"]}


def test_ingest_event_fires_and_a_retry_counts_nothing_twice(deployed, lambda_module,
                                                             lambda_context, event_file):
    app = lambda_module("telemetry_ingest")
    first = app.lambda_handler(event_file("telemetry_ingest"), lambda_context)
    assert first["statusCode"] == 200, first["body"]
    fired = _body(first)["fired"]
    assert IDENTICAL in fired and any(s.startswith("semantic_loop:") for s in fired)
    again = _body(app.lambda_handler(event_file("telemetry_ingest"), lambda_context))
    assert again["duplicate"] is True and again["fired"] == []
    groups = _groups(lambda_module, event_file, lambda_context)
    assert set(groups) == set(fired) and {g["executions"] for g in groups.values()} == {1}

    end = event_file("telemetry_ingest")
    end["routeKey"] = "POST /v1/executions/{executionId}/end"
    end["body"] = json.dumps({"durationMs": 120_000})
    ended = _body(app.lambda_handler(end, lambda_context))
    assert ended["fired"] == ["loops/time_budget_60s+"]


def test_otlp_event_is_ingested(deployed, lambda_module, lambda_context, event_file):
    response = lambda_module("telemetry_otlp").lambda_handler(event_file("telemetry_otlp"),
                                                              lambda_context)
    assert response["statusCode"] == 200, response["body"]
    assert response["headers"]["Content-Type"] == "application/json"  # answered like asked
    assert _groups(lambda_module, event_file, lambda_context)[IDENTICAL]["executions"] == 1


def test_sweeper_event_runs(deployed, lambda_module, lambda_context, event_file):
    answer = lambda_module("telemetry_sweeper").lambda_handler(event_file("telemetry_sweeper"),
                                                               lambda_context)
    assert answer == {"swept": 0}


def test_store_down_is_a_retryable_503_and_nothing_half_written(deployed, lambda_module,
                                                                lambda_context, event_file,
                                                                monkeypatch):
    app = lambda_module("telemetry_ingest")
    store = wiring.telemetry_store()
    real = store.db.client.transact_write_items
    calls = {"n": 0}

    def flaky(**kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] >= 2 and not calls.get("up"):  # claimed; recording the signatures fails
            from botocore.exceptions import EndpointConnectionError

            raise EndpointConnectionError(endpoint_url="http://dynamodb")
        return real(**kwargs)

    monkeypatch.setattr(store.db.client, "transact_write_items", flaky)
    down = app.lambda_handler(event_file("telemetry_ingest"), lambda_context)
    assert down["statusCode"] == 503 and _body(down)["error"]["retryable"] is True
    assert "Retry-After" in down["headers"]
    calls["up"] = 1
    retried = _body(app.lambda_handler(event_file("telemetry_ingest"), lambda_context))
    assert retried["duplicate"] is True  # the claim stood; the retry finished the batch
    groups = _groups(lambda_module, event_file, lambda_context)
    assert groups[IDENTICAL]["executions"] == 1
    assert any(s.startswith("semantic_loop:") for s in groups)
