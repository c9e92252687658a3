"""The embedded DynamoDB: moto, in this process, also reachable over HTTP for operator commands.

The server's own calls are answered in-process (no HTTP hop: about 2 ms a call instead of 7);
a ThreadedMotoServer-style endpoint on localhost shares the same in-memory tables, so
`loopsense tenants/keys/plans/usage` in another shell see and change them.

moto does not make a conditional write atomic: two concurrent requests can both pass the same
condition (shown in tests/integration/test_embedded_atomicity.py). Every request, in-process or
over HTTP, is therefore served under one lock, so the embedded store's conditional writes are
as atomic as DynamoDB's.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from typing import Any

from moto import mock_aws
from moto.core import models as moto_models
from moto.dynamodb import models as moto_dynamodb_models
from moto.dynamodb.comparisons import get_filter_expression
from moto.dynamodb.exceptions import TransactionCanceledException
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import BaseWSGIServer, make_server

STORE_LOCK = threading.RLock()

# Credentials and region for the fake AWS; no real account is ever touched.
FAKE_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "loopsense-local",
    "AWS_SECRET_ACCESS_KEY": "loopsense-local",
    "AWS_SESSION_TOKEN": "loopsense-local",
    "AWS_DEFAULT_REGION": "us-east-1",
}
# Variables that would send the in-process calls elsewhere than moto.
_ENDPOINT_VARS = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "LOOPSENSE_DYNAMODB_ENDPOINT")


class _NoTableCopies:
    """Stands in for the ``copy`` module inside moto's DynamoDB backend during a transaction."""

    @staticmethod
    def deepcopy(value: Any) -> Any:
        return value


def _transactions_without_table_copies() -> None:
    """moto backs up every table a transaction touches with a deep copy, so each charge costs
    time in proportion to all usage records so far (measured: 20 ms at first, 360 ms after
    2,500 calls). Under STORE_LOCK no other request interleaves, so check every condition first
    and cancel without writing if one fails (the per-item reasons moto would give); when all
    hold, moto writes them without the backup, which it needs only to undo a failed condition.
    """
    backend_class = moto_dynamodb_models.DynamoDBBackend
    if getattr(backend_class, "_loopsense_checked_first", False):
        return
    original = backend_class.transact_write_items

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        with STORE_LOCK:
            reasons = [_condition_holds(self, item) for item in transact_items]
            if not all(reasons):
                raise TransactionCanceledException([
                    (None, None, None) if ok else
                    ("ConditionalCheckFailed", "The conditional request failed", None)
                    for ok in reasons])
            saved = moto_dynamodb_models.copy
            moto_dynamodb_models.copy = _NoTableCopies  # type: ignore[assignment]
            try:
                original(self, transact_items)
            finally:
                moto_dynamodb_models.copy = saved

    backend_class.transact_write_items = transact_write_items  # type: ignore[method-assign]
    backend_class._loopsense_checked_first = True  # type: ignore[attr-defined]


def _condition_holds(backend: Any, item: dict[str, Any]) -> bool:
    op_type, op = next(iter(item.items()))
    condition = op.get("ConditionExpression")
    if condition is None:
        return True
    table = backend.get_table(op["TableName"])
    if op_type == "Put":
        names = [table.hash_key_attr] + ([table.range_key_attr] if table.range_key_attr else [])
        key = {name: op["Item"][name] for name in names}
    else:
        key = op["Key"]
    check = get_filter_expression(condition, op.get("ExpressionAttributeNames"),
                                  op.get("ExpressionAttributeValues"))
    return bool(check.expr(backend.get_item(op["TableName"], key)))


def _serialize_in_process_calls() -> None:
    stubber = moto_models.botocore_stubber
    if getattr(stubber, "_loopsense_locked", False):
        return
    process = stubber.process_request

    def locked(request: Any) -> Any:
        with STORE_LOCK:
            return process(request)

    stubber.process_request = locked  # type: ignore[method-assign]
    stubber._loopsense_locked = True  # type: ignore[attr-defined]


class _QuietHandler(MotoRequestHandler):
    def log_request(self, *args: Any, **kwargs: Any) -> None:  # request lines carry no payload,
        pass  # but the server's output is for the operator, not per-call noise


def _locked_app(app: Callable[..., Iterable[bytes]]) -> Callable[..., list[bytes]]:
    def serve(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        with STORE_LOCK:
            return list(app(environ, start_response))

    return serve


class EmbeddedDynamoDB:
    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._host, self._port = host, port
        self._mock = mock_aws()
        self._server: BaseWSGIServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def endpoint(self) -> str:
        assert self._server is not None
        return f"http://{self._host}:{self._server.server_port}"

    def start(self) -> EmbeddedDynamoDB:
        for name in _ENDPOINT_VARS:
            os.environ.pop(name, None)
        os.environ.update(FAKE_AWS_ENV)
        self._mock.start()
        _serialize_in_process_calls()
        _transactions_without_table_copies()
        app = _locked_app(DomainDispatcherApplication(create_backend_app))
        self._server = make_server(self._host, self._port, app, threaded=True,
                                   request_handler=_QuietHandler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True,
                                        name="embedded-dynamodb")
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._mock.stop()
