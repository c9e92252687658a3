"""Faults at the platform's two outer boundaries, for tests of the real pipeline.

``FaultyDynamoDB`` is a DynamoDB client (the embedded store's, in this process) that fails the
operations a test names with the errors botocore raises for DynamoDB's own answers: throttling,
an unreachable endpoint, a transaction cancelled for a conflict. ``LambdaService`` is the Lambda
service behind a real boto3 client (a botocore ``before-send`` hook answers instead of the
network): it runs each skill's real handler, or answers Lambda's refusals on the wire (429
throttled, 413 payload too large, a function error), which botocore parses as it would AWS's.
The code under test is not touched: both sit where it meets AWS.
"""

from __future__ import annotations

import io
import json
import threading
from typing import Any

import boto3
from botocore.awsrequest import AWSResponse
from botocore.config import Config
from botocore.exceptions import ClientError, EndpointConnectionError
from urllib3.response import HTTPResponse

# DynamoDB's throttling answers (HTTP 400), as botocore raises them.
THROTTLING = ("ProvisionedThroughputExceededException", "ThrottlingException",
              "RequestLimitExceeded")
OUTAGE = "outage"  # the endpoint unreachable (connection refused or dropped)
# another transaction in flight holds an item: a transaction is cancelled with that reason, a
# single write fails with TransactionConflictException
CONFLICT = "TransactionConflict"


def dynamodb_error(fault: str, operation: str, actions: int = 1) -> Exception:
    if fault == OUTAGE:
        return EndpointConnectionError(endpoint_url="http://dynamodb.invalid")
    if fault == CONFLICT and operation != "transact_write_items":
        return ClientError({"Error": {"Code": "TransactionConflictException",
                                      "Message": "Transaction is ongoing for the item"},
                            "ResponseMetadata": {"HTTPStatusCode": 400}}, operation)
    if fault == CONFLICT:
        return ClientError({
            "Error": {"Code": "TransactionCanceledException",
                      "Message": "Transaction cancelled, please refer cancellation reasons"},
            "CancellationReasons": [{"Code": "TransactionConflict",
                                     "Message": "Transaction is ongoing for the item"}]
            + [{"Code": "None"}] * (actions - 1),
            "ResponseMetadata": {"HTTPStatusCode": 400}}, operation)
    return ClientError({"Error": {"Code": fault, "Message": "Rate of requests exceeds"},
                        "ResponseMetadata": {"HTTPStatusCode": 400}}, operation)


class FaultyDynamoDB:
    """``client``'s operations, of which the armed ones fail (every call, until ``heal``)."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._lock = threading.Lock()
        self._fault: str | None = None
        self._operations: frozenset[str] = frozenset()
        self._times = 0
        self._skip = 0
        self._applied = False
        self.calls: list[str] = []  # every operation called, in order
        self.failed = 0

    def fail(self, fault: str, *operations: str, times: int = 10**9, skip: int = 0,
             applied: bool = False) -> None:
        """Fail ``operations`` (snake_case; none: every one) with ``fault``, ``times`` times,
        after letting the first ``skip`` of them through; ``applied``: the store applies each
        failed request first (its answer is what is lost)."""
        with self._lock:
            self._fault, self._operations, self._times, self._skip, self.failed = (
                fault, frozenset(operations), times, skip, 0)
            self._applied = applied

    def heal(self) -> None:
        with self._lock:
            self._fault = None

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._client, name)
        if not callable(method):
            return method

        def call(**params: Any) -> Any:
            with self._lock:
                self.calls.append(name)
                failing = (self._fault is not None and self._times > 0
                           and (not self._operations or name in self._operations))
                if failing and self._skip:
                    self._skip -= 1
                    failing = False
                if failing:
                    self._times -= 1
                    self.failed += 1
                    fault = self._fault
            if failing:
                assert fault is not None
                if self._applied:
                    method(**params)
                raise dynamodb_error(fault, name, len(params.get("TransactItems", [1])))
            return method(**params)

        return call


# Lambda's refusals of Invoke, as it answers them on the wire.
LAMBDA_THROTTLED = "TooManyRequestsException"
LAMBDA_TOO_LARGE = "RequestEntityTooLargeException"
FUNCTION_ERROR = "function error"  # the runtime died (out of memory, a crash past the handler)
FUNCTION_TIMEOUT = "function timeout"  # the runtime stopped the function at its timeout
LAMBDA_PAYLOAD_LIMIT = 6 * 1024 * 1024  # a synchronous invocation's request payload, bytes


def _answer(status: int, body: Any, headers: dict[str, str] | None = None) -> AWSResponse:
    data = json.dumps(body).encode()
    raw = HTTPResponse(body=io.BytesIO(data), status=status, preload_content=False)
    return AWSResponse("https://lambda.invalid", status,
                       {"Content-Length": str(len(data)), **(headers or {})}, raw)


class LambdaService:
    """A boto3 Lambda client (``client``) whose Invoke runs ``functions[name]`` (a skill's
    Lambda handler, by function name) in this process, unless a fault is armed."""

    def __init__(self, functions: dict[str, Any]) -> None:
        self.functions = functions
        self.fault: str | None = None
        self.invoked = 0
        self.payload_bytes: list[int] = []  # each Invoke's request payload
        self.client = boto3.client(
            "lambda", region_name="us-east-1", aws_access_key_id="test",
            aws_secret_access_key="test",  # noqa: S106 - no AWS is reached
            config=Config(retries={"max_attempts": 0}))
        self.client.meta.events.register("before-send.lambda.Invoke", self._send)

    def _send(self, request: Any, **_: Any) -> AWSResponse:
        self.invoked += 1
        self.payload_bytes.append(len(request.body))
        name = request.url.split("/functions/", 1)[1].split("/", 1)[0]
        fault = self.fault
        if fault == LAMBDA_THROTTLED:
            return _answer(429, {"Type": "User", "message": "Rate Exceeded.",
                                 "Reason": "ReservedFunctionConcurrentInvocationLimitExceeded"},
                           {"x-amzn-ErrorType": LAMBDA_THROTTLED})
        if fault == LAMBDA_TOO_LARGE or len(request.body) > LAMBDA_PAYLOAD_LIMIT:
            return _answer(413, {"Type": "User", "message": "Request must be smaller than "
                                 f"{LAMBDA_PAYLOAD_LIMIT} bytes for the InvokeFunction operation"},
                           {"x-amzn-ErrorType": LAMBDA_TOO_LARGE})
        if fault == FUNCTION_ERROR:
            return _answer(200, {"errorMessage": "Runtime exited with error: signal: killed",
                                 "errorType": "Runtime.ExitError"},
                           {"X-Amz-Function-Error": "Unhandled"})
        if fault == FUNCTION_TIMEOUT:
            return _answer(200, {"errorMessage": "2026-12-02T01:00:00.000Z abc Task timed out "
                                                 "after 10.00 seconds"},
                           {"X-Amz-Function-Error": "Unhandled"})
        event = json.loads(request.body)
        return _answer(200, self.functions[name](event, _Context(name)))


class _Context:
    def __init__(self, name: str) -> None:
        self.function_name = name
        self.aws_request_id = "lambda-" + name
        self.memory_limit_in_mb = 512
        self.invoked_function_arn = f"arn:aws:lambda:us-east-1:000000000000:function:{name}"
        self.function_version = "$LATEST"

    def get_remaining_time_in_millis(self) -> int:
        return 10_000
