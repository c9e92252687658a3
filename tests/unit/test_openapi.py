"""The OpenAPI document (loopsense_local.openapi) against the code it is generated from: the
committed file is what the code builds now, it is valid OpenAPI 3.1, every route of template.yaml
has a contract beside its ROUTES, every code a feature raises is declared by one of its routes,
and the stack's function answers the committed bytes."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import pytest
from openapi_spec_validator import validate

from loopsense.errors import ERRORS
from loopsense.platform.contract.routes import DOCUMENT
from loopsense_local import openapi

REPO = Path(__file__).resolve().parents[2]
FEATURE_DIRS = {"loopsense.platform.execute.pipeline": "execute",
                "loopsense.platform.runs.routes": "runs",
                "loopsense.platform.telemetry.routes": "telemetry",
                "loopsense.platform.settings.routes": "settings",
                "loopsense.platform.usage.routes": "usage",
                "loopsense.platform.playbooks.routes": "playbooks",
                "loopsense.platform.dashboard.files": "dashboard",
                "loopsense.platform.contract.routes": "contract"}


@pytest.fixture(scope="module")
def built() -> str:
    return openapi.render()


def test_the_committed_document_is_what_the_code_builds(built):
    committed = DOCUMENT.read_text(encoding="utf-8")
    assert committed == built, (
        "shared/loopsense/platform/contract/openapi.json is stale: run scripts/openapi")


def test_it_is_valid_openapi_3_1(built):
    document = json.loads(built)
    assert document["openapi"].startswith("3.1")
    validate(document)


def test_every_feature_declares_a_contract_for_each_of_its_routes():
    assert set(FEATURE_DIRS) == set(openapi.FEATURES)
    for name in openapi.FEATURES:
        module = importlib.import_module(name)
        tables = [value for attr, value in vars(module).items()
                  if attr in ("ROUTES", "INGEST", "GROUPS", "OTLP")]
        routes = {key for table in tables for key in table}
        if routes:
            assert routes == set(module.CONTRACTS), name


def test_every_code_a_feature_raises_is_declared_by_one_of_its_routes():
    """A new refusal in a feature's code must be named in its CONTRACTS (or be one every route
    may answer), or the document would not list it."""
    common = {*openapi.EVERY_ROUTE_ERRORS, "ROUTE_NOT_FOUND"}
    for name, folder in FEATURE_DIRS.items():
        declared = {code for c in importlib.import_module(name).CONTRACTS.values()
                    for code in c.errors}
        source = " ".join(p.read_text() for p in
                          (REPO / "shared/loopsense/platform" / folder).glob("*.py"))
        raised = {code for code in re.findall(r'"([A-Z][A-Z_]+)"', source) if code in ERRORS}
        assert raised - declared - common == set(), folder


def test_each_route_lists_its_codes_under_their_status_with_retry_after_where_retryable(built):
    paths = json.loads(built)["paths"]
    steps = paths["/v1/runs/{runId}/steps"]["post"]["responses"]
    assert "RUN_WRITE_CONFLICT" in steps["409"]["description"]
    assert "Retry-After" in steps["409"]["headers"] and "Retry-After" in steps["429"]["headers"]
    assert "Retry-After" not in steps["400"]["headers"]
    execute = paths["/v1/execute"]["post"]
    for code in ("LOOP_EVENTS_INVALID", "SEMANTIC_LOOP_EVENT_LIMIT_EXCEEDED", "QUOTA_EXCEEDED"):
        status = str(ERRORS[code].status)
        enum = execute["responses"][status]["content"]["application/json"]["schema"][
            "allOf"][1]["properties"]["error"]["properties"]["code"]["enum"]
        assert code in enum
    assert {"$ref": "#/components/parameters/Idempotency-Key"} in execute["parameters"]
    assert paths["/openapi.json"]["get"]["security"] == []


def test_the_function_answers_the_committed_document_read_at_cold_start(
        lambda_module, event_file, lambda_context):
    app = lambda_module("contract")
    answer = app.lambda_handler(event_file("contract"), lambda_context)
    assert answer["statusCode"] == 200 and answer["body"] == DOCUMENT.read_text(encoding="utf-8")
    again = event_file("contract")
    again["headers"] = {"if-none-match": answer["headers"]["ETag"]}
    assert app.lambda_handler(again, lambda_context)["statusCode"] == 304


def test_otlp_refusals_are_documented_as_otlps_status_not_the_envelope(built):
    """Found by the fuzz: POST /v1/traces and /v1/logs answer their refusals as OTLP's
    google.rpc.Status (platform/telemetry/routes.py), which the document first described as
    the envelope."""
    from jsonschema import Draft202012Validator

    document = json.loads(built)
    for path in ("/v1/traces", "/v1/logs"):
        refused = document["paths"][path]["post"]["responses"]["401"]["content"]
        assert set(refused) == {"application/json", "application/x-protobuf"}
        assert refused["application/json"]["schema"] == {
            "$ref": "#/components/schemas/OtlpStatus"}
    status = {"code": 16, "message": "UNAUTHORIZED: missing Authorization header",
              "details": []}
    Draft202012Validator(document["components"]["schemas"]["OtlpStatus"]).validate(status)


def test_every_ref_resolves_to_a_component(built):
    """Found by datamodel-code-generator's dangling-ref warning: the run config's ToolConfig was
    left in a nested $defs that its #/components/schemas/ToolConfig ref did not reach."""
    document = json.loads(built)
    refs = set(re.findall(r'"\$ref": "#/components/(\w+)/([^"]+)"', built))
    assert refs and all(name in document["components"][kind] for kind, name in refs), sorted(
        (kind, name) for kind, name in refs if name not in document["components"][kind])
    assert '"$defs"' not in built



def test_every_enum_of_strings_is_sorted(built):
    # typing caches a union by equality and Literal["a", "b"] == Literal["b", "a"], so the order
    # a model's literal comes out in can depend on which module spelled it first; in one test
    # session agent.loops' vectors came out reversed. Sorted, the document cannot move with it.
    enums: list[list[str]] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "enum" and isinstance(value, list) and all(
                        isinstance(v, str) for v in value):
                    enums.append(value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(built))
    assert enums and all(enum == sorted(enum) for enum in enums)
