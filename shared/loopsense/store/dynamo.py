"""The one DynamoDB client wrapper: typed items in and out, and store failures as one error.

Every call goes through ``Dynamo.call``, the one place DynamoDB's errors are mapped: a store that is
down, slow or throttling becomes PLAN_ELIGIBILITY_UNAVAILABLE (503, retryable), while a failed
condition stays visible to the caller as ``ConditionFailed`` (with a transaction's per-action
reasons). A caller that re-reads and tries again after losing a race names ``CONFLICTS``
(``Dynamo.transact``): DynamoDB's TransactionConflict (a concurrent transaction on the same item,
which the client does not retry) is then a lost race too, not an outage.
"""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

import boto3
from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from loopsense.errors import LoopsenseError
from loopsense.settings import Settings

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()

STORE_DOWN_RETRY_AFTER = 2
# The reasons a transaction was refused that mean "a condition failed"; with CONFLICTS, also "a
# concurrent transaction got there first".
CONDITION = frozenset({"ConditionalCheckFailed"})
CONFLICTS = frozenset({"ConditionalCheckFailed", "TransactionConflict"})
BATCH_TRIES = 6  # a batch's leftovers are sent again after 50, 100 ... 800 ms (1.55 s in all)


class Conflicted(Exception):
    """A write met an in-flight transaction on one of its items (DynamoDB's TransactionConflict)
    and changed nothing: sent again, unchanged, it is decided afresh (``until_settled`` of
    platform/access/retry.py)."""


class ConditionFailed(Exception):
    """A conditional write was refused; ``reasons`` holds a transaction's per-item codes."""

    def __init__(self, reasons: list[str] | None = None) -> None:
        super().__init__("condition failed")
        self.reasons = reasons or []


def to_item(values: dict[str, Any]) -> dict[str, Any]:
    return {k: _serializer.serialize(v) for k, v in values.items() if v is not None}


def from_item(item: dict[str, Any]) -> dict[str, Any]:
    return {k: _plain(_deserializer.deserialize(v)) for k, v in item.items()}


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, set):
        return sorted(_plain(v) for v in value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


# Endpoints served by this very process (the embedded store of `loopsense serve`), with the
# in-process client that answers for each: no HTTP round trip to ourselves.
_IN_PROCESS: dict[str, Any] = {}


def serve_in_process(endpoint: str, client: Any | None) -> None:
    """Route this process's clients of ``endpoint`` to ``client`` (None: stop doing so)."""
    if client is None:
        _IN_PROCESS.pop(endpoint, None)
    else:
        _IN_PROCESS[endpoint] = client


def make_client(settings: Settings) -> Any:
    if settings.dynamodb_endpoint in _IN_PROCESS:
        return _IN_PROCESS[settings.dynamodb_endpoint]
    config = Config(
        connect_timeout=settings.store_timeout_s,
        read_timeout=settings.store_timeout_s,
        retries={"max_attempts": 2, "mode": "standard"},
    )
    return boto3.client(
        "dynamodb",
        endpoint_url=settings.dynamodb_endpoint,
        region_name=settings.region,
        config=config,
    )


def unavailable() -> LoopsenseError:
    return LoopsenseError(
        "PLAN_ELIGIBILITY_UNAVAILABLE",
        "the plan or quota store could not be reached",
        retry_after=STORE_DOWN_RETRY_AFTER,
    )


class Dynamo:
    def __init__(self, client: Any) -> None:
        self.client = client

    def call(self, operation: str, **kwargs: Any) -> dict[str, Any]:
        """``operation`` of the client with ``kwargs``; ConditionFailed when a condition failed
        (a transaction's too), PLAN_ELIGIBILITY_UNAVAILABLE for any other failure."""
        return self._call(operation, kwargs, CONDITION)

    def settled(self, operation: str, **kwargs: Any) -> dict[str, Any]:
        """``call``, but a write that met an in-flight transaction raises Conflicted (a
        transaction's too, when no condition of it failed) instead of being an outage."""
        try:
            return self._call(operation, kwargs, CONFLICTS)
        except ConditionFailed as failed:
            if failed.reasons and set(failed.reasons) <= {"TransactionConflict", "None"}:
                raise Conflicted() from None
            raise

    def transact(self, actions: list[dict[str, Any]], refused: frozenset[str] = CONDITION
                 ) -> None:
        """One TransactWriteItems: all of ``actions`` or none; ConditionFailed (with each
        action's reason) when it was cancelled for one of the ``refused`` reasons."""
        self._call("transact_write_items", {"TransactItems": actions}, refused)

    def _call(self, operation: str, kwargs: dict[str, Any], refused: frozenset[str]
              ) -> dict[str, Any]:
        try:
            return getattr(self.client, operation)(**kwargs)  # type: ignore[no-any-return]
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code == "ConditionalCheckFailedException":
                raise ConditionFailed() from None
            if code == "TransactionConflictException" and "TransactionConflict" in refused:
                raise ConditionFailed(["TransactionConflict"]) from None
            if code == "TransactionCanceledException":
                cancelled = exc.response.get("CancellationReasons", [])
                reasons = [r.get("Code", "None") or "None" for r in cancelled]
                if refused & set(reasons):
                    raise ConditionFailed(reasons) from None
            raise unavailable() from None
        except BotoCoreError:
            raise unavailable() from None

    def batch(self, operation: str, request: dict[str, Any], leftover: str
              ) -> list[dict[str, Any]]:
        """A batch operation (``RequestItems``) and its answers, sending what DynamoDB left
        over (``leftover``: UnprocessedKeys, UnprocessedItems; it does under throttling) again
        after a growing pause, as AWS advises; the store is unavailable if some is still left
        after BATCH_TRIES calls."""
        answers = []
        for attempt in range(BATCH_TRIES):
            if attempt:
                time.sleep(0.05 * 2 ** (attempt - 1))
            answers.append(self.call(operation, RequestItems=request))
            request = answers[-1].get(leftover) or {}
            if not request:
                return answers
        raise unavailable()

    def get(self, table: str, key: dict[str, Any]) -> dict[str, Any] | None:
        item = self.call("get_item", TableName=table, Key=to_item(key),
                         ConsistentRead=True).get("Item")
        return from_item(item) if item else None

    def put(self, table: str, values: dict[str, Any], condition: str | None = None) -> None:
        kwargs: dict[str, Any] = {"TableName": table, "Item": to_item(values)}
        if condition:
            kwargs["ConditionExpression"] = condition
        self.call("put_item", **kwargs)

    def query(self, table: str, **kwargs: Any) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        while True:
            page = self.call("query", TableName=table, **kwargs)
            items.extend(from_item(i) for i in page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return items
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
