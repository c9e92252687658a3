"""The embedded engine's SQLite file: what it keeps across a reopen, and a failed write.

The restart of a whole `loopsense serve` (SIGTERM, SIGKILL, killed mid-charges) is proven over
HTTP in tests/e2e/test_restart.py; here, at the engine: every kind of state comes back from the
file, a write that fails half-way leaves nothing of itself (one SQLite transaction per
DynamoDB write), a process killed with SIGKILL at any moment leaves every transaction whole,
and a second engine on the same file is refused.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
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


# A process that opens the file and makes transactions of 10 increments, one key each, forever
# (each also writing 20 KB, so that much of its time is spent committing); "ready" once the
# table exists. Each transaction is all or nothing, so whenever it is killed
# the ten counters must be equal.
WRITER = """
import sys
from loopsense_local.dynamodb.engine import Engine
engine = Engine(sys.argv[1])
if "t" not in engine.execute("ListTables", {})["TableNames"]:
    engine.execute("CreateTable", {
        "TableName": "t", "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}]})
print("ready", flush=True)
while True:
    engine.execute("TransactWriteItems", {"TransactItems": [
        {"Update": {"TableName": "t", "Key": {"pk": {"S": f"k{i}"}},
                    "UpdateExpression": "ADD n :one SET pad = :pad",
                    "ExpressionAttributeValues": {":one": {"N": "1"}, ":pad": {"S": "x" * 20000}},
                    }} for i in range(10)]})
"""


def test_a_kill_9_between_or_inside_transactions_leaves_each_whole(tmp_path: Path) -> None:
    path = tmp_path / DATABASE_FILE
    totals = []
    for delay in (0.05, 0.08, 0.13, 0.17, 0.21, 0.26, 0.34, 0.40, 0.47, 0.55):
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path)],
                                  stdout=subprocess.PIPE, text=True)
        assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
        time.sleep(delay)  # not a bound: different moments in the loop for the kill
        writer.kill()  # SIGKILL
        writer.wait(30)
        engine = Engine(path)
        try:
            items = engine.execute("Scan", {"TableName": "t"})["Items"]
        finally:
            engine.close()
        values = {item["n"]["N"] for item in items}
        assert len(items) in (0, 10) and len(values) <= 1, values  # all ten equal, or none
        totals.append(int(values.pop()) if values else 0)
    assert totals == sorted(totals) and totals[-1] > 0  # kept across kills, and growing
