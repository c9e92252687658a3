"""The embedded engine's conflict mode: what meets an in-flight transaction is refused as DynamoDB
refuses it (its developer guide, "Transaction conflict handling").

A transaction is held in flight on a thread of its own (the engine holds its items for
``HOLD_S``); the test waits until it holds them, then sends what DynamoDB documents: another
transaction on one of its items is cancelled (that item's reason TransactionConflict, the
others' None), a PutItem, UpdateItem, DeleteItem or BatchWriteItem of one is
TransactionConflictException, a read sees the committed item, and what touches none of its
items goes through. Then the held transaction commits whole.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from loopsense_local.embedded import EmbeddedDynamoDB

TABLE = "items"
HOLD_S = 0.25  # long enough for the checks below to run while it is held


@pytest.fixture(scope="module")
def store() -> Iterator[EmbeddedDynamoDB]:
    running = EmbeddedDynamoDB("127.0.0.1", 0, transaction_hold_s=HOLD_S).start()
    running.client().create_table(
        TableName=TABLE, BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "p", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "p", "AttributeType": "S"}])
    yield running
    running.stop()


def key(name: str) -> dict[str, Any]:
    return {"p": {"S": name}}


def add(name: str, condition: str | None = None) -> dict[str, Any]:
    update: dict[str, Any] = {"TableName": TABLE, "Key": key(name),
                              "UpdateExpression": "ADD n :one",
                              "ExpressionAttributeValues": {":one": {"N": "1"}}}
    if condition:
        update["ConditionExpression"] = condition
    return {"Update": update}


def n(client: Any, name: str) -> int | None:
    item = client.get_item(TableName=TABLE, Key=key(name), ConsistentRead=True).get("Item")
    return int(item["n"]["N"]) if item else None


def in_flight(store: EmbeddedDynamoDB, actions: list[dict[str, Any]]) -> threading.Thread:
    """``actions`` as one transaction on a thread of its own, returned once its items are
    held (it commits HOLD_S later)."""
    thread = threading.Thread(target=store.client().transact_write_items,
                              kwargs={"TransactItems": actions})
    thread.start()
    deadline = time.monotonic() + 10
    while not store.engine._held:  # noqa: SLF001 - the one way to know it is in flight
        assert time.monotonic() < deadline, "the transaction never took its items"
        time.sleep(0.001)
    return thread


def refusal(call: Any, **params: Any) -> dict[str, Any]:
    with pytest.raises(ClientError) as error:
        call(**params)
    return error.value.response  # type: ignore[no-any-return]


def test_what_meets_an_in_flight_transaction_is_refused(store: EmbeddedDynamoDB) -> None:
    client = store.client()
    client.put_item(TableName=TABLE, Item={**key("a"), "n": {"N": "5"}})
    held = in_flight(store, [add("a"), add("b")])

    cancelled = refusal(client.transact_write_items, TransactItems=[add("c"), add("b")])
    assert cancelled["Error"]["Code"] == "TransactionCanceledException"
    assert [r["Code"] for r in cancelled["CancellationReasons"]] == ["None",
                                                                     "TransactionConflict"]
    # a failed condition and a conflict in one transaction: both reasons are given
    both = refusal(client.transact_write_items,
                   TransactItems=[add("c", "attribute_exists(p)"), add("a")])
    assert [r["Code"] for r in both["CancellationReasons"]] == ["ConditionalCheckFailed",
                                                                "TransactionConflict"]
    for call, params in [
        (client.put_item, {"Item": key("a")}),
        (client.update_item, {"Key": key("b"), "UpdateExpression": "SET x = :x",
                              "ExpressionAttributeValues": {":x": {"S": "x"}}}),
        (client.delete_item, {"Key": key("a")}),
    ]:
        assert refusal(call, TableName=TABLE, **params)["Error"]["Code"] == \
            "TransactionConflictException"
    batch = refusal(client.batch_write_item, RequestItems={TABLE: [
        {"PutRequest": {"Item": key("d")}}, {"PutRequest": {"Item": key("a")}}]})
    assert batch["Error"]["Code"] == "TransactionConflictException"

    assert n(client, "a") == 5  # read-committed: the value before the transaction
    assert n(client, "b") is None
    client.put_item(TableName=TABLE, Item=key("e"))  # items it does not hold: written
    client.transact_write_items(TransactItems=[add("f")])
    held.join()

    assert store.engine.conflicts == 6  # the requests refused above
    assert (n(client, "a"), n(client, "b"), n(client, "f")) == (6, 1, 1)
    assert n(client, "c") is None and n(client, "d") is None  # nothing of the refused
    client.put_item(TableName=TABLE, Item={**key("a"), "n": {"N": "0"}})  # let go: written
    assert n(client, "a") == 0


def test_a_cancelled_transaction_leaves_nothing_held(store: EmbeddedDynamoDB) -> None:
    client = store.client()
    refusal(client.transact_write_items,
            TransactItems=[add("g"), add("h", "attribute_exists(p)")])
    assert not store.engine._held  # noqa: SLF001
    client.transact_write_items(TransactItems=[add("g"), add("h")])
    assert (n(client, "g"), n(client, "h")) == (1, 1)
