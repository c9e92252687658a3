"""template.yaml's telemetry functions (spec/failure_groups.md): their routes behind the API's
authorizer (and served locally), the sweeper's schedule, the table's keys, indexes and TTL, and
least privilege: each function may do exactly what its store calls need, on TelemetryTable (and
its named indexes) and, for ingestion, read plans."""

from __future__ import annotations

from typing import Any

import pytest
from cfnlint.decode import cfn_yaml

from loopsense_local.gateway import template_routes
from loopsense_local.schedules import template_schedules
from loopsense_local.tables import load_template
from tests.infra.test_template import TEMPLATE

ROUTES = {
    "TelemetryIngestFunction": {"POST /v1/executions/{executionId}/events",
                                "POST /v1/executions/{executionId}/end"},
    "TelemetryOtlpFunction": {"POST /v1/traces", "POST /v1/logs"},
    "FailureGroupsFunction": {"GET /v1/failure-groups", "GET /v1/failure-groups/{signature}",
                              "GET /v1/severity-routing", "PUT /v1/severity-routing",
                              "GET /v1/telemetry-settings", "PUT /v1/telemetry-settings"},
}
TABLE_ACTIONS = {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"}
GRANTS = {
    "TelemetryIngestFunction": {*((a, "TelemetryTable") for a in TABLE_ACTIONS),
                                ("dynamodb:GetItem", "PlansTable")},
    "TelemetryOtlpFunction": {*((a, "TelemetryTable") for a in TABLE_ACTIONS),
                              ("dynamodb:GetItem", "PlansTable")},
    "TelemetrySweeperFunction": {*((a, "TelemetryTable") for a in TABLE_ACTIONS),
                                 ("dynamodb:Query", "TelemetryTable/index/byIdle")},
    "FailureGroupsFunction": {("dynamodb:GetItem", "TelemetryTable"),
                              ("dynamodb:Query", "TelemetryTable"),
                              ("dynamodb:UpdateItem", "TelemetryTable"),
                              ("dynamodb:Query", "TelemetryTable/index/byLastSeen"),
                              ("dynamodb:Query", "TelemetryTable/index/byClass")},
}


@pytest.fixture(scope="module")
def resources() -> dict[str, Any]:
    template: dict[str, Any] = cfn_yaml.load(str(TEMPLATE))
    return dict(template["Resources"])


def _resource_name(resource: Any) -> str:
    if "Fn::GetAtt" in resource:
        return str(resource["Fn::GetAtt"][0])
    text = str(resource["Fn::Sub"])  # ${TelemetryTable.Arn}/index/NAME
    return text.replace("${", "").replace(".Arn}", "")


@pytest.mark.parametrize("function", sorted(ROUTES))
def test_routes_are_on_the_api_and_served_locally(resources, function):
    events = resources[function]["Properties"]["Events"].values()
    assert {f"{e['Properties']['Method']} {e['Properties']['Path']}" for e in events} == ROUTES[
        function]
    assert all(e["Type"] == "HttpApi" and e["Properties"]["ApiId"] == {"Ref": "Api"}
               and "Auth" not in e["Properties"] for e in events)
    local = {r.route_key: r.code_dir for r in template_routes(load_template())}
    code_dir = resources[function]["Properties"]["CodeUri"]
    assert {local[route] for route in ROUTES[function]} == {code_dir}


@pytest.mark.parametrize("function", sorted(GRANTS))
def test_least_privilege(resources, function):
    granted = set()
    for policy in resources[function]["Properties"]["Policies"]:
        for statement in policy["Statement"]:
            assert statement["Effect"] == "Allow"
            actions = statement["Action"]
            targets = statement["Resource"]
            for action in actions if isinstance(actions, list) else [actions]:
                for target in targets if isinstance(targets, list) else [targets]:
                    granted.add((action, _resource_name(target)))
    assert granted == GRANTS[function]


def test_only_the_otlp_function_installs_the_otlp_definitions():
    from tests.infra.test_template import REPO_ROOT

    own = (REPO_ROOT / "functions" / "telemetry_otlp" / "requirements.txt").read_text()
    assert "opentelemetry-proto" in own
    layer = (REPO_ROOT / "shared" / "requirements.txt").read_text()
    assert "opentelemetry" not in layer and "protobuf" not in layer


def test_the_sweeper_runs_every_minute_here_and_on_aws(resources):
    events = list(resources["TelemetrySweeperFunction"]["Properties"]["Events"].values())
    assert [(e["Type"], e["Properties"]["ScheduleExpression"]) for e in events] == [
        ("ScheduleV2", "rate(1 minute)")]
    local = [(s.function, s.interval_s) for s in template_schedules(load_template())]
    assert ("TelemetrySweeperFunction", 60) in local


def test_the_table_has_the_documented_indexes_and_ttl(resources):
    table = resources["TelemetryTable"]["Properties"]
    assert [k["AttributeName"] for k in table["KeySchema"]] == ["pk", "sk"]
    indexes = {i["IndexName"]: [k["AttributeName"] for k in i["KeySchema"]]
               for i in table["GlobalSecondaryIndexes"]}
    assert indexes == {"byLastSeen": ["gpk", "gsk"], "byClass": ["cpk", "gsk"],
                       "byIdle": ["ipk", "idleAt"]}
    assert table["TimeToLiveSpecification"] == {"AttributeName": "expiresAt", "Enabled": True}
