"""docs/security.md against what deploys: every IAM grant of the stack, as SAM expands
template.yaml (offline, with the SAM translator the infra tests already install), holds no
wildcard action or resource beyond the ones docs/security.md lists and justifies; and every
justified wildcard still exists (the list cannot go stale).

What is checked is the translated CloudFormation, not the template as written: SAM adds roles,
managed policies and Lambda permissions of its own, and those are what AWS enforces.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

ROOT = Path(__file__).resolve().parents[2]
SECURITY = ROOT / "docs" / "security.md"
MANAGED_PREFIX = "arn:aws:iam::aws:policy/"
# The dashboard's static files, served without a key (docs/security.md): no tenant data.
PUBLIC = {("get", "/"), ("get", "/ui/{proxy+}"), ("get", "/openapi.json")}
API_ARN = "arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${__ApiId__}/"


class _NoManagedPolicies:
    def load(self) -> dict[str, str]:
        return {}  # the template names managed policies by ARN only (none by name)


@pytest.fixture(scope="module")
def deployed(monkeypatch_module: pytest.MonkeyPatch) -> dict[str, Any]:
    template = yaml_parse((ROOT / "template.yaml").read_text(encoding="utf-8"))
    for resource in template["Resources"].values():
        properties = resource.get("Properties", {})
        for uri in ("CodeUri", "ContentUri"):  # what `sam package` puts there
            if uri in properties:
                properties[uri] = "s3://bucket/key"
    monkeypatch_module.setenv("AWS_DEFAULT_REGION", "us-east-1")
    translated: dict[str, Any] = transform(template, {}, _NoManagedPolicies())
    return translated


@pytest.fixture(scope="module")
def monkeypatch_module():  # type: ignore[no-untyped-def]
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _text(value: Any) -> str:
    """A resource as written: a plain ARN, or the string inside its intrinsic function."""
    if isinstance(value, dict) and "Fn::Sub" in value:
        sub = value["Fn::Sub"]
        return sub[0] if isinstance(sub, list) else sub
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def justified() -> set[str]:
    """The first column of docs/security.md's wildcard table (backticked)."""
    text = SECURITY.read_text(encoding="utf-8")
    section = text.split("## IAM wildcards", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([^`]+)` \|", section, flags=re.MULTILINE))


def wildcards(deployed: dict[str, Any]) -> tuple[set[str], list[str]]:
    """(the wildcard grants found, named as docs/security.md names them; the problems)."""
    found: set[str] = set()
    problems: list[str] = []
    api = deployed["Resources"]["Api"]["Properties"]["Body"]["paths"]
    routes = {(method.upper(), path) for path, methods in api.items() for method in methods}
    for name, resource in deployed["Resources"].items():
        kind, properties = resource["Type"], resource.get("Properties", {})
        if kind.startswith("AWS::IAM::") and kind != "AWS::IAM::Role":
            problems.append(f"{name}: {kind} (grants are inline in each function's role)")
        if kind == "AWS::IAM::Role":
            for arn in properties.get("ManagedPolicyArns", []):
                if not (isinstance(arn, str) and arn.startswith(MANAGED_PREFIX)):
                    problems.append(f"{name}: managed policy {arn!r} is not an AWS one")
                    continue
                found.add(arn.removeprefix(MANAGED_PREFIX))  # each has "*" resources
            for policy in properties.get("Policies", []):
                for statement in policy["PolicyDocument"]["Statement"]:
                    if statement.get("Effect") != "Allow" or {"NotAction", "NotResource"} & set(
                            statement):
                        problems.append(f"{name}: a statement other than Allow/Action/Resource")
                    for action in _as_list(statement.get("Action")):
                        if "*" in action:
                            found.add(f"{action} ({name})")
                    for target in _as_list(statement.get("Resource")):
                        if "*" in _text(target):
                            found.add(f"{_text(target)} ({name})")
        if kind == "AWS::Lambda::Permission":
            source = _text(properties.get("SourceArn"))
            if properties.get("Principal") != "apigateway.amazonaws.com" or not source.startswith(
                    API_ARN):
                problems.append(f"{name}: invoked by something other than this stack's API")
                continue
            rest = source.removeprefix(API_ARN)
            if rest == "authorizers/*":
                found.add("execute-api:authorizers/*")
                continue
            stage, method, path = rest.split("/", 2)
            assert stage == "${__Stage__}", name
            expected = {(method, re.sub(r"\{[^}]+\}", "*", p)) for m, p in routes if m == method}
            # (SAM leaves a greedy {name+} as written: no wildcard, the route itself)
            if (method, re.sub(r"\{[^}]+\}", "*", "/" + path)) not in expected:
                problems.append(f"{name}: {rest} is wider than its route")
            found.add("execute-api:stage/*")
            if "*" in path:
                found.add("execute-api:path-parameter/*")
    return found, problems


def test_no_wildcard_grant_beyond_what_docs_security_justifies(deployed):
    found, problems = wildcards(deployed)
    assert problems == []
    assert found - justified() == set(), "a wildcard grant docs/security.md does not justify"
    assert justified() - found == set(), "docs/security.md justifies a wildcard that is gone"


def test_a_wildcard_in_a_function_policy_is_caught(deployed):
    """The check above would see a `*` someone adds to a function's own policy."""
    widened = copy.deepcopy(deployed)
    role = widened["Resources"]["SettingsFunctionRole"]["Properties"]
    role["Policies"][0]["PolicyDocument"]["Statement"].append(
        {"Effect": "Allow", "Action": "dynamodb:*", "Resource": "*"})
    found, _ = wildcards(widened)
    assert {"dynamodb:* (SettingsFunctionRole)", "* (SettingsFunctionRole)"} <= found


def test_the_api_may_invoke_the_authorizer(deployed):
    """SAM does not give an HTTP API's Lambda authorizer an invoke permission unless asked
    (EnableFunctionDefaultPermissions): without it every request of a deployed stack fails."""
    permissions = [r["Properties"] for r in deployed["Resources"].values()
                   if r["Type"] == "AWS::Lambda::Permission"]
    assert any(p["FunctionName"] == {"Fn::GetAtt": ["AuthorizerFunction", "Arn"]}
               and _text(p["SourceArn"]).endswith("/authorizers/*") for p in permissions)


def test_every_routes_invoke_permission_matches_its_requests(deployed):
    """SAM writes a route's path into its Lambda permission, turning ``{name}`` and
    ``{proxy+}`` into ``*`` but leaving any other greedy parameter (``{path+}``) as it is: API
    Gateway could then never invoke that function for a real path."""
    for name, resource in deployed["Resources"].items():
        if resource["Type"] == "AWS::Lambda::Permission":
            arn = re.sub(r"\$\{[^}]*\}", "", _text(resource["Properties"]["SourceArn"]))
            assert "{" not in arn, (name, arn)  # what is left once Fn::Sub's own ${...} go


def test_every_route_goes_through_the_authorizer_and_nothing_else_is_exposed(deployed):
    api = deployed["Resources"]["Api"]["Properties"]["Body"]["paths"]
    for path, methods in api.items():
        for method, operation in methods.items():
            expected = "NONE" if (method, path) in PUBLIC else "KeyAuthorizer"
            assert operation.get("security") == [{expected: []}], (method, path)
    for name, resource in deployed["Resources"].items():
        assert resource["Type"] != "AWS::Lambda::Url", f"{name}: a function URL bypasses the API"


def test_the_files_bucket_policy_only_denies_and_names_the_routers_own_role(deployed):
    """A bucket policy could grant what no role shows: here it only denies, and the one role
    it lets touch objects is the one the execute router runs as (docs/security.md)."""
    resources = deployed["Resources"]
    policies = [r["Properties"]["PolicyDocument"] for r in resources.values()
                if r["Type"] == "AWS::S3::BucketPolicy"]
    assert policies, "the files' bucket has its policy"
    statements = [s for policy in policies for s in policy["Statement"]]
    assert all(s["Effect"] == "Deny" for s in statements)
    roles = {json.dumps(s["Condition"]["ArnNotEquals"]["aws:PrincipalArn"]) for s in statements
             if "ArnNotEquals" in s.get("Condition", {})}
    router_role = resources["ExecuteFunction"]["Properties"]["Role"]  # {"Fn::GetAtt": [...]}
    assert roles == {json.dumps(router_role)}
