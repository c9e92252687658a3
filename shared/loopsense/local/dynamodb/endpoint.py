"""The engine over HTTP, speaking DynamoDB's JSON protocol (X-Amz-Target, JSON bodies, errors
as {"__type", "message"}), so boto3, the AWS CLI and the operator's commands in another shell
reach the same tables as the server's in-process calls."""

from __future__ import annotations

import json
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from loopsense.local.dynamodb.engine import Engine
from loopsense.local.dynamodb.errors import DynamoDBError

_ERROR_PREFIX = "com.amazonaws.dynamodb.v20120810#"


def answer(engine: Engine, target: str, body: bytes) -> tuple[int, dict[str, Any]]:
    """The status and JSON body for one request."""
    try:
        params = json.loads(body or b"{}")
        return 200, engine.execute(target.rpartition(".")[2], params)
    except json.JSONDecodeError:
        return 400, {"__type": _ERROR_PREFIX + "SerializationException",
                     "message": "the request body is not JSON"}
    except DynamoDBError as error:
        return error.status, {"__type": _ERROR_PREFIX + error.code, "message": error.message,
                              **error.fields}


def make_server(engine: Engine, host: str, port: int) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # see loopsense.local.gateway

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
            pass  # request lines are noise for the operator watching the server

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            length = int(self.headers.get("Content-Length") or 0)
            status, payload = answer(engine, self.headers.get("X-Amz-Target", ""),
                                     self.rfile.read(length))
            data = json.dumps(payload, separators=(",", ":")).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/x-amz-json-1.0")
            self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 128  # see loopsense.local.gateway

    return Server((host, port), Handler)
