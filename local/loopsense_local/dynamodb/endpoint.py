"""The engine over HTTP, speaking DynamoDB's JSON protocol (X-Amz-Target, JSON bodies, errors
as {"__type", "message"}), so boto3, the AWS CLI and the operator's commands in another shell
reach the same tables as the server's in-process calls."""

from __future__ import annotations

import json
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from loopsense_local.dynamodb.engine import Engine
from loopsense_local.dynamodb.errors import DynamoDBError

_ERROR_PREFIX = "com.amazonaws.dynamodb.v20120810#"


def answer(engine: Engine, target: str, body: bytes) -> tuple[int, dict[str, Any]]:
    """The status and JSON body for one request; every failure is an error in DynamoDB's form,
    so a client never sees a dropped connection."""
    try:
        params = json.loads(body or b"{}")
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested beyond parsing
        return _error(DynamoDBError("SerializationException", "the request body is not JSON"))
    try:
        return 200, engine.execute(target.rpartition(".")[2], params)
    except DynamoDBError as error:
        return _error(error)
    except Exception:  # noqa: BLE001 - a bug answers 500 in the protocol's form, like DynamoDB
        return _error(DynamoDBError("InternalServerError", "the embedded DynamoDB failed",
                                    status=500))


def _error(error: DynamoDBError) -> tuple[int, dict[str, Any]]:
    return error.status, {"__type": _ERROR_PREFIX + error.code, "message": error.message,
                          **error.fields}


def make_server(engine: Engine, host: str, port: int) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # see loopsense_local.gateway

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
            pass  # request lines are noise for the operator watching the server

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            length = self.headers.get("Content-Length")
            # chunked is not what AWS clients send; isdigit() alone takes '²'
            if length is None or not (length.isascii() and length.isdigit()):
                self.close_connection = True
                status, payload = _error(DynamoDBError(
                    "ValidationException", "a request needs a Content-Length", status=411))
            else:
                status, payload = answer(engine, self.headers.get("X-Amz-Target", ""),
                                         self.rfile.read(int(length)))
            data = json.dumps(payload, separators=(",", ":")).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/x-amz-json-1.0")
            self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 128  # see loopsense_local.gateway

    return Server((host, port), Handler)
