"""The local API Gateway: HTTP on localhost in front of the same Lambda handlers, in-process.

The routes are template.yaml's own: every HttpApi event of a function (method, path with
{params}) maps to that function's CodeUri. Each request becomes the HTTP API (payload 2.0)
events AWS would send: first to the authorizer's handler, then, with its context, to the
route's handler. The handlers are the files in functions/, loaded as Lambda loads them.
Routes match the path as sent (a parameter is one segment, '/' or '%2F' included) and each
path parameter is then percent-decoded once. HTTP itself (framing, timeouts, concurrency) is
loopsense_local.http_server's.
"""

from __future__ import annotations

import base64
import importlib.util
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import parse_qsl, unquote

from loopsense.errors import LoopsenseError
from loopsense.platform.http.request import error_response
from loopsense_local.tables import REPO_ROOT, load_template


@dataclass(frozen=True)
class Route:
    method: str
    pattern: re.Pattern[str]
    route_key: str  # "GET /v1/playbooks/{name}", as API Gateway names it
    code_dir: str  # the function's CodeUri, e.g. "functions/execute/"
    authorized: bool = True  # False: the event says Auth: {Authorizer: NONE}

    def match(self, path: str) -> dict[str, str] | None:
        found = self.pattern.fullmatch(path)
        return found.groupdict() if found else None


def template_routes(template: dict[str, Any]) -> list[Route]:
    routes = []
    for resource in template["Resources"].values():
        if resource["Type"] != "AWS::Serverless::Function":
            continue
        props = resource["Properties"]
        for event in (props.get("Events") or {}).values():
            if event["Type"] != "HttpApi":
                continue
            method, path = event["Properties"]["Method"].upper(), event["Properties"]["Path"]
            # {name} is one segment, a greedy {name+} the rest of the path (API Gateway's rule)
            pattern = re.sub(r"\\{(\w+)\\}", r"(?P<\1>[^/]+)", re.escape(path))
            pattern = re.sub(r"\\{(\w+)\\\+\\}", r"(?P<\1>.+)", pattern)
            auth = (event["Properties"].get("Auth") or {}).get("Authorizer")
            routes.append(Route(method, re.compile(pattern), f"{method} {path}",
                                props["CodeUri"], auth != "NONE"))
    return sorted(routes, key=lambda r: r.route_key)


def load_handler(code_dir: str) -> Any:
    name = Path(code_dir).name
    path = REPO_ROOT / code_dir / "app.py"
    spec = importlib.util.spec_from_file_location(f"loopsense_local_{name}_app", path)
    assert spec is not None and spec.loader is not None, path
    module: ModuleType = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.lambda_handler


@dataclass
class LocalContext:
    """What Powertools reads from a Lambda context."""

    function_name: str
    aws_request_id: str
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:local:000000000000:function:loopsense-local"
    function_version: str = "$LATEST"

    def get_remaining_time_in_millis(self) -> int:
        return 29_000


def query_parameters(raw: str) -> dict[str, str] | None:
    """queryStringParameters as API Gateway (payload 2.0) sends them: decoded, a repeated name's
    values joined by commas, absent (None) without a query."""
    params: dict[str, str] = {}
    for name, value in parse_qsl(raw, keep_blank_values=True):
        params[name] = f"{params[name]},{value}" if name in params else value
    return params or None


class Gateway:
    def __init__(self) -> None:
        self.routes = template_routes(load_template())
        self.authorizer = load_handler("functions/authorizer/")
        self.handlers = {r.code_dir: load_handler(r.code_dir) for r in self.routes}

    def handle(self, method: str, path: str, query: str, headers: dict[str, str],
               body: bytes) -> dict[str, Any]:
        """One request (``headers`` by lower-case name) -> the handler's answer; an unknown path
        is ROUTE_NOT_FOUND, a known path with another method METHOD_NOT_ALLOWED."""
        request_id = str(uuid.uuid4())
        matches = [(route, params) for route in self.routes
                   if (params := route.match(path)) is not None]
        found = [(route, params) for route, params in matches if route.method == method]
        if not found:
            if not matches:
                return error_response(LoopsenseError("ROUTE_NOT_FOUND", "no such route"),
                                      request_id)
            response = error_response(
                LoopsenseError("METHOD_NOT_ALLOWED", "this path does not take this method"),
                request_id)
            response["headers"]["Allow"] = ", ".join(sorted({r.method for r, _ in matches}))
            return response
        route, raw_params = found[0]
        # API Gateway hands the integration its path parameters percent-decoded, once
        # (docs/decisions.md, "Path parameters"): `run%3A42` is the id `run:42`.
        params = {name: unquote(value) for name, value in raw_params.items()}
        context = {"requestId": request_id, "http": {"method": method, "path": path},
                   "routeKey": route.route_key}
        # API Gateway leaves queryStringParameters out of an event without a query.
        request = {"rawPath": path, "rawQueryString": query, "headers": headers,
                   **({"queryStringParameters": q} if (q := query_parameters(query)) else {})}
        authorized = self.authorizer(
            {"version": "2.0", "type": "REQUEST", "routeKey": route.route_key, **request,
             "requestContext": context},
            LocalContext("authorizer", request_id),
        ) if route.authorized else {}
        try:
            text, encoded = body.decode("utf-8"), False
        except UnicodeDecodeError:
            text, encoded = base64.b64encode(body).decode(), True
        event = {"version": "2.0", "routeKey": route.route_key, **request,
                 "pathParameters": params, "body": text, "isBase64Encoded": encoded,
                 "requestContext": {**context,
                                    "authorizer": {"lambda": authorized.get("context", {})}}}
        handler = self.handlers[route.code_dir]
        return handler(event, LocalContext(Path(route.code_dir).name, request_id))  # type: ignore[no-any-return]
