"""The engine as a boto3 DynamoDB client in this process: the same methods, parameters, answers
and ClientErrors, without building, signing, sending and parsing an HTTP request (that round
trip is most of what a call to a local DynamoDB costs)."""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from loopsense.local.dynamodb.engine import Engine, Params
from loopsense.local.dynamodb.errors import DynamoDBError


def _snake(operation: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", operation).lower()


class InProcessClient:
    def __init__(self, engine: Engine) -> None:
        self._methods = {_snake(op): self._method(engine, op) for op in engine.operations}

    def __getattr__(self, name: str) -> Callable[..., Params]:
        try:
            return self._methods[name]
        except KeyError:
            raise AttributeError(f"the embedded DynamoDB has no operation {name}") from None

    @staticmethod
    def _method(engine: Engine, operation: str) -> Callable[..., Params]:
        def call(**params: Any) -> Params:
            try:
                answer = engine.execute(operation, _blobs_out(params))
            except DynamoDBError as error:
                response: Any = {"Error": {"Code": error.code, "Message": error.message},
                                 "ResponseMetadata": {"HTTPStatusCode": error.status},
                                 **_blobs_in(error.fields)}
                raise ClientError(response, operation) from None
            return {**_blobs_in(answer), "ResponseMetadata": {"HTTPStatusCode": 200}}

        call.__name__ = _snake(operation)
        return call


# Binary values travel base64-encoded on the wire, and the engine keeps them so; boto3 takes
# and gives bytes.
def _blobs_out(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode()
    if isinstance(value, dict):
        return {k: _blobs_out(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_blobs_out(v) for v in value]
    return value


def _blobs_in(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: (base64.b64decode(v) if k == "B" and isinstance(v, str) else
                    [base64.b64decode(m) for m in v] if k == "BS" and isinstance(v, list) else
                    _blobs_in(v))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_blobs_in(v) for v in value]
    return value
