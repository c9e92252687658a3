"""The local API Gateway: HTTP on localhost in front of the same Lambda handlers, in-process.

The routes are template.yaml's own: every HttpApi event of a function (method, path with
{params}) maps to that function's CodeUri. Each request becomes the HTTP API (payload 2.0)
events AWS would send: first to the authorizer's handler, then, with its context, to the
route's handler. The handlers are the files in functions/, loaded as Lambda loads them.
"""

from __future__ import annotations

import base64
import importlib.util
import re
import uuid
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import parse_qsl

from loopsense import jsonio
from loopsense.errors import LoopsenseError
from loopsense.platform.http import body_too_large, error_response
from loopsense.platform.pipeline import MAX_BODY_BYTES
from loopsense_local.tables import REPO_ROOT, load_template


@dataclass(frozen=True)
class Route:
    method: str
    pattern: re.Pattern[str]
    route_key: str  # "GET /v1/playbooks/{name}", as API Gateway names it
    code_dir: str  # the function's CodeUri, e.g. "functions/execute/"

    def match(self, method: str, path: str) -> dict[str, str] | None:
        found = self.pattern.fullmatch(path) if method == self.method else None
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
            pattern = re.compile(re.sub(r"\\{(\w+)\\}", r"(?P<\1>[^/]+)", re.escape(path)))
            routes.append(Route(method, pattern, f"{method} {path}", props["CodeUri"]))
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


class Gateway:
    def __init__(self) -> None:
        self.routes = template_routes(load_template())
        self.authorizer = load_handler("functions/authorizer/")
        self.handlers = {r.code_dir: load_handler(r.code_dir) for r in self.routes}

    def handle(self, method: str, path: str, headers: dict[str, str],
               body: bytes, query: str = "") -> dict[str, Any]:
        request_id = str(uuid.uuid4())
        for route in self.routes:
            params = route.match(method, path)
            if params is not None:
                break
        else:
            return error_response(LoopsenseError("ROUTE_NOT_FOUND", "no such route"),
                                  request_id)
        headers = {k.lower(): v for k, v in headers.items()}
        context = {"requestId": request_id, "http": {"method": method, "path": path},
                   "routeKey": route.route_key}
        authorized = self.authorizer(
            {"version": "2.0", "type": "REQUEST", "routeKey": route.route_key,
             "rawPath": path, "headers": headers, "requestContext": context},
            LocalContext("authorizer", request_id),
        )
        try:
            text, encoded = body.decode("utf-8"), False
        except UnicodeDecodeError:
            text, encoded = base64.b64encode(body).decode(), True
        # As API Gateway: repeated parameters joined by commas.
        parameters: dict[str, str] = {}
        for name, value in parse_qsl(query, keep_blank_values=True):
            parameters[name] = f"{parameters[name]},{value}" if name in parameters else value
        event = {"version": "2.0", "routeKey": route.route_key, "rawPath": path,
                 "rawQueryString": query, "headers": headers, "pathParameters": params,
                 "queryStringParameters": parameters or None,
                 "body": text, "isBase64Encoded": encoded,
                 "requestContext": {**context,
                                    "authorizer": {"lambda": authorized.get("context", {})}}}
        handler = self.handlers[route.code_dir]
        return handler(event, LocalContext(Path(route.code_dir).name, request_id))  # type: ignore[no-any-return]


def make_http_server(gateway: Gateway, host: str, port: int) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in separate writes; with Nagle's algorithm on, a kept-alive
        # client's delayed ACK stalls each response by ~40 ms.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
            pass  # one metadata log line per request comes from the router instead

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            path, _, query = self.path.partition("?")
            if length > MAX_BODY_BYTES:
                self.close_connection = True
                self._send(error_response(body_too_large(MAX_BODY_BYTES), str(uuid.uuid4())))
                return
            body = self.rfile.read(length) if length else b""
            self._send(gateway.handle(self.command, path, dict(self.headers.items()), body,
                                      query))

        def _send(self, response: dict[str, Any]) -> None:
            payload = response.get("body", "")
            if response.get("isBase64Encoded"):  # a binary answer, as API Gateway decodes it
                data = base64.b64decode(payload)
            elif isinstance(payload, str):
                data = payload.encode()
            else:
                data = jsonio.dumps(payload).encode()
            self.send_response(int(response.get("statusCode", HTTPStatus.OK)))
            for name, value in (response.get("headers") or {}).items():
                self.send_header(name, str(value))
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_POST = do_GET = do_PUT = do_DELETE = _serve

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        # socketserver's default listen backlog is 5: a burst of concurrent clients beyond it
        # has its connections reset (ECONNRESET) before any handler thread sees them.
        request_queue_size = 128

    return Server((host, port), Handler)
