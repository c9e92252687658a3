"""The engine as a boto3 DynamoDB client in this process: the same methods, parameters, answers
and errors, without building, signing, sending and parsing an HTTP request (that round trip is
most of what a call to a local DynamoDB costs). Parameter names are still checked against
DynamoDB's API model, so a misspelt or missing parameter fails here as boto3 fails it, instead
of being ignored; the engine checks the values (boto3's full check would cost more than the
call itself)."""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from botocore.exceptions import ClientError, ParamValidationError
from botocore.session import get_session

from loopsense_local.dynamodb.engine import Engine, Params
from loopsense_local.dynamodb.errors import DynamoDBError


def _snake(operation: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", operation).lower()


@lru_cache(maxsize=1)
def _api_model() -> Any:
    return get_session().get_service_model("dynamodb")  # loading it takes about 50 ms


class InProcessClient:
    def __init__(self, engine: Engine) -> None:
        model = _api_model()
        self._methods = {_snake(op): self._method(engine, op, model.operation_model(op))
                         for op in engine.operations}

    def __getattr__(self, name: str) -> Callable[..., Params]:
        methods = self.__dict__.get("_methods", {})  # (absent while copy.copy builds one)
        if name not in methods:
            raise AttributeError(f"the embedded DynamoDB has no operation {name}")
        return methods[name]  # type: ignore[no-any-return]

    @staticmethod
    def _method(engine: Engine, operation: str, model: Any) -> Callable[..., Params]:
        known = set(model.input_shape.members)
        required = set(model.input_shape.required_members)

        def call(**params: Any) -> Params:
            unknown, missing = sorted(params.keys() - known), sorted(required - params.keys())
            if unknown or missing:
                raise ParamValidationError(report=f"Unknown parameters {unknown}, missing "
                                                  f"required parameters {missing}")
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
# bytes (or text, which it encodes as UTF-8) and gives bytes.
def _blobs_out(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: (_base64(v) if k == "B" else [_base64(m) for m in v] if k == "BS" and
                    isinstance(v, list | tuple | set) else _blobs_out(v))
                for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_blobs_out(v) for v in value]
    return value


def _base64(value: Any) -> Any:
    if isinstance(value, str):
        value = value.encode()
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode()
    return _blobs_out(value)  # an attribute named "B" holds a value, not bytes


def _blobs_in(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: (base64.b64decode(v) if k == "B" and isinstance(v, str) else
                    [base64.b64decode(m) for m in v] if k == "BS" and isinstance(v, list) else
                    _blobs_in(v))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_blobs_in(v) for v in value]
    return value
