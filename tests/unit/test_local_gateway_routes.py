"""The local gateway's routes come from template.yaml's HttpApi events."""

from __future__ import annotations

from loopsense_local.gateway import query_parameters, template_routes
from loopsense_local.tables import load_template


def fn(path: str, method: str = "GET") -> dict:
    return {"Type": "AWS::Serverless::Function", "Properties": {
        "CodeUri": "functions/x/",
        "Events": {"E": {"Type": "HttpApi", "Properties": {"Path": path, "Method": method}}}}}


def test_path_parameters_match_one_segment():
    [route] = template_routes({"Resources": {"F": fn("/v1/playbooks/{name}")}})
    assert route.match("/v1/playbooks/identical_call") == {"name": "identical_call"}
    assert route.match("/v1/playbooks/a/b") is None
    assert route.method == "GET"
    assert route.route_key == "GET /v1/playbooks/{name}"


def test_literal_paths_are_escaped():
    [route] = template_routes({"Resources": {"F": fn("/v1/a.b", "post")}})
    assert route.method == "POST"  # the template's "post", as API Gateway reads it
    assert route.match("/v1/a.b") == {}
    assert route.match("/v1/aXb") is None


def test_the_real_template_routes_execute_to_the_router():
    routes = {r.route_key: r.code_dir for r in template_routes(load_template())}
    assert routes["POST /v1/execute"] == "functions/execute/"


def test_query_parameters_as_api_gateway_sends_them():
    assert query_parameters("") is None
    assert query_parameters("a=1&b=x%20y&a=2&c=") == {"a": "1,2", "b": "x y", "c": ""}
