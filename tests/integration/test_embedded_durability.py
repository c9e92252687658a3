"""The embedded engine's SQLite file: what it keeps across a reopen, and a failed write.

The restart of a whole `loopsense serve` (SIGTERM, SIGKILL, killed mid-charges) is proven over
HTTP in tests/e2e/test_restart.py; here, at the engine: every kind of state comes back from the
file, a write that fails half-way leaves nothing of itself (one SQLite transaction per
DynamoDB write), and a second engine on the same file is refused.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from loopsense_local.dynamodb.engine import Engine
from loopsense_local.dynamodb.errors import DynamoDBError
from loopsense_local.dynamodb.storage import DATABASE_FILE, Storage, StoreLocked

TABLE = {
    "TableName": "t", "BillingMode": "PAY_PER_REQUEST",
    "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"},
                  {"AttributeName": "sk", "KeyType": "RANGE"}],
    "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"},
                             {"AttributeName": "sk", "AttributeType": "N"},
                             {"AttributeName": "g", "AttributeType": "S"}],
    "GlobalSecondaryIndexes": [{"IndexName": "by-g",
                                "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                                "Projection": {"ProjectionType": "ALL"}}],
}


def item(pk: str, sk: int, **more: Any) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"N": str(sk)}, **more}


def add(pk: str, sk: int) -> dict[str, Any]:
    return {"Update": {"TableName": "t", "Key": {"pk": {"S": pk}, "sk": {"N": str(sk)}},
                       "UpdateExpression": "ADD n :one",
                       "ExpressionAttributeValues": {":one": {"N": "1"}}}}


def test_everything_comes_back_from_the_file(tmp_path: Path) -> None:
    path = tmp_path / DATABASE_FILE
    engine = Engine(path)
    engine.execute("CreateTable", TABLE)
    engine.execute("UpdateTimeToLive", {"TableName": "t", "TimeToLiveSpecification": {
        "AttributeName": "exp", "Enabled": True}})
    engine.execute("PutItem", {"TableName": "t", "Item": item("a", 2, g={"S": "x"})})
    engine.execute("PutItem", {"TableName": "t", "Item": item("a", 10)})
    engine.execute("TransactWriteItems", {"TransactItems": [add("a", 10), add("b", 1)]})
    engine.execute("DeleteItem", {"TableName": "t", "Key": {"pk": {"S": "a"}, "sk": {"N": "2"}}})
    engine.execute("PutItem", {"TableName": "t", "Item": item("c", 1, g={"S": "x"})})
    engine.execute("CreateTable", {**TABLE, "TableName": "gone"})
    engine.execute("DeleteTable", {"TableName": "gone"})
    reads: list[tuple[str, dict[str, Any]]] = [
        ("ListTables", {}), ("DescribeTable", {"TableName": "t"}),
        ("DescribeTimeToLive", {"TableName": "t"}), ("Scan", {"TableName": "t"}),
        ("Query", {"TableName": "t", "IndexName": "by-g", "KeyConditionExpression": "g = :g",
                   "ExpressionAttributeValues": {":g": {"S": "x"}}})]
    before = [engine.execute(op, params) for op, params in reads]
    engine.close()
    again = Engine(path)
    try:
        assert [again.execute(op, params) for op, params in reads] == before
        assert before[0] == {"TableNames": ["t"]}
        assert len(before[3]["Items"]) == 3
        assert len(before[4]["Items"]) == 1
    finally:
        again.close()


def counts(engine: Engine) -> dict[str, str]:
    return {i["pk"]["S"]: i["n"]["N"] for i in engine.execute("Scan", {"TableName": "t"})["Items"]}


def test_a_write_that_fails_half_way_leaves_nothing(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / DATABASE_FILE
    engine = Engine(path)
    engine.execute("CreateTable", TABLE)
    engine.execute("TransactWriteItems", {"TransactItems": [add("a", 1), add("b", 1)]})
    real_put, calls = Storage.put, []

    def put_then_fail(self: Storage, *args: Any) -> None:
        calls.append(args)
        if len(calls) == 2:
            raise sqlite3.OperationalError("database or disk is full")
        real_put(self, *args)

    monkeypatch.setattr(Storage, "put", put_then_fail)
    with pytest.raises(DynamoDBError) as failed:
        engine.execute("TransactWriteItems", {"TransactItems": [add("a", 1), add("b", 1)]})
    assert (failed.value.code, failed.value.status) == ("InternalServerError", 500)
    assert len(calls) == 2  # the first item was written inside the transaction, then undone
    monkeypatch.undo()
    assert counts(engine) == {"a": "1", "b": "1"}
    engine.close()
    again = Engine(path)
    try:
        assert counts(again) == {"a": "1", "b": "1"}
    finally:
        again.close()


def test_a_second_engine_on_the_same_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / DATABASE_FILE
    engine = Engine(path)
    try:
        with pytest.raises(StoreLocked, match="in use by another process"):
            Engine(path)
        engine.execute("ListTables", {})  # the first one is unharmed
    finally:
        engine.close()
    Engine(path).close()  # free again once the first is closed
