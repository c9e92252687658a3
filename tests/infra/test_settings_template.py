"""template.yaml's SettingsFunction: the four settings routes behind the API's authorizer, and
least privilege (read and update the tenants table, read plans; nothing else)."""

from __future__ import annotations

from typing import Any

import pytest
from cfnlint.decode import cfn_yaml

from loopsense.settings import TABLE_FIELDS, env_name
from loopsense_local.gateway import template_routes
from loopsense_local.tables import load_template
from tests.infra.test_template import TEMPLATE

ROUTES = {"GET /v1/detector-thresholds", "PUT /v1/detector-thresholds",
          "GET /v1/me/time-budget-config", "PUT /v1/me/time-budget-config"}


@pytest.fixture(scope="module")
def settings_function() -> dict[str, Any]:
    template: dict[str, Any] = cfn_yaml.load(str(TEMPLATE))
    function: dict[str, Any] = template["Resources"]["SettingsFunction"]["Properties"]
    return function


def test_the_four_routes_are_on_the_api_and_served_locally(settings_function):
    events = settings_function["Events"].values()
    assert {f"{e['Properties']['Method']} {e['Properties']['Path']}" for e in events} == ROUTES
    assert all(e["Type"] == "HttpApi" and e["Properties"]["ApiId"] == {"Ref": "Api"}
               for e in events)
    assert all("Auth" not in e["Properties"] for e in events)  # the API's default authorizer
    local = {r.route_key: r.code_dir for r in template_routes(load_template())}
    assert {local[route] for route in ROUTES} == {"functions/settings/"}


def test_it_may_read_and_update_tenants_and_read_plans_only(settings_function):
    statements = [s for p in settings_function["Policies"] for s in p["Statement"]]
    granted = set()
    for statement in statements:
        assert statement["Effect"] == "Allow"
        actions = statement["Action"] if isinstance(statement["Action"], list) else [
            statement["Action"]]
        for action in actions:
            granted.add((action, statement["Resource"]["Fn::GetAtt"][0]))
    assert granted == {("dynamodb:GetItem", "TenantsTable"),
                       ("dynamodb:UpdateItem", "TenantsTable"),
                       ("dynamodb:GetItem", "PlansTable")}
    # Every table's name (a name is no permission): the settings fail fast at cold start
    # without any (tests/infra/test_template.py); the policy above is what limits access.
    assert set(settings_function["Environment"]["Variables"]) == {
        env_name(field) for field in TABLE_FIELDS}
