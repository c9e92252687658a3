"""The embedded engine answers a Query of a global secondary index from the index's own keys
(storage's index_keys), not by decoding every item of the table: the keys follow every write
(put, update, delete, a transaction, a TTL sweep, a table dropped), and a data file written
before they existed is indexed when it is opened. That the answers equal moto's is
tests/integration/test_embedded_store_matches_moto.py's part.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from loopsense_local.dynamodb.engine import Engine
from loopsense_local.dynamodb.storage import DATABASE_FILE
from loopsense_local.dynamodb.table import Table

TABLE = {
    "TableName": "t", "BillingMode": "PAY_PER_REQUEST",
    "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"},
                  {"AttributeName": "sk", "KeyType": "RANGE"}],
    "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"},
                             {"AttributeName": "sk", "AttributeType": "S"},
                             {"AttributeName": "g", "AttributeType": "S"},
                             {"AttributeName": "at", "AttributeType": "N"}],
    "GlobalSecondaryIndexes": [
        {"IndexName": "byG", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"},
                                           {"AttributeName": "at", "KeyType": "RANGE"}],
         "Projection": {"ProjectionType": "ALL"}},
        {"IndexName": "byGOnly", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
         "Projection": {"ProjectionType": "KEYS_ONLY"}}],
}
GROUPS = ("a", "b", "c")


def key(pk: str, sk: str) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def query(engine: Engine, index: str, group: str) -> list[tuple[str, str]]:
    answer = engine.execute("Query", {
        "TableName": "t", "IndexName": index, "KeyConditionExpression": "g = :g",
        "ExpressionAttributeValues": {":g": {"S": group}}})
    return [(i["pk"]["S"], i["sk"]["S"]) for i in answer["Items"]]


def expected(engine: Engine, index: str, group: str) -> list[tuple[str, str]]:
    """The same answer worked out from a Scan of the whole table."""
    held = [i for i in engine.execute("Scan", {"TableName": "t"})["Items"]
            if i.get("g") == {"S": group} and (index == "byGOnly" or "at" in i)]
    order = (lambda i: (float(i["at"]["N"]), i["pk"]["S"], i["sk"]["S"])) if index == "byG" \
        else (lambda i: (i["pk"]["S"], i["sk"]["S"]))
    return [(i["pk"]["S"], i["sk"]["S"]) for i in sorted(held, key=order)]


def no_full_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(self: Table) -> Any:
        raise AssertionError("a Query of an index read every item of the table")

    monkeypatch.setattr(Table, "items", refused)


def write_at_random(engine: Engine, rng: random.Random, steps: int) -> None:
    """Puts, updates that set, move or remove an index key, deletes and transactions."""
    for _ in range(steps):
        k = key(f"p{rng.randrange(6)}", f"s{rng.randrange(6)}")
        kind = rng.randrange(5)
        group = {"S": rng.choice(GROUPS)}
        if kind == 0:
            item = {**k, "g": group, **({"at": {"N": str(rng.randrange(9))}}
                                        if rng.random() < 0.7 else {})}
            engine.execute("PutItem", {"TableName": "t", "Item": item})
        elif kind == 1:
            engine.execute("UpdateItem", {
                "TableName": "t", "Key": k, "UpdateExpression": "SET g = :g, #at = :at",
                "ExpressionAttributeNames": {"#at": "at"},
                "ExpressionAttributeValues": {":g": group, ":at": {"N": str(rng.randrange(9))}}})
        elif kind == 2:
            engine.execute("UpdateItem", {"TableName": "t", "Key": k,
                                          "UpdateExpression": "REMOVE g"})
        elif kind == 3:
            engine.execute("DeleteItem", {"TableName": "t", "Key": k})
        else:
            engine.execute("TransactWriteItems", {"TransactItems": [
                {"Put": {"TableName": "t", "Item": {**k, "g": group}}},
                {"Delete": {"TableName": "t", "Key": key("p9", "s9")}}]})


@pytest.mark.parametrize("seed", range(3))
def test_index_queries_follow_every_write_without_reading_the_table(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = Engine()
    engine.execute("CreateTable", TABLE)
    write_at_random(engine, random.Random(seed), 300)
    wanted = {(index, group): expected(engine, index, group)
              for index in ("byG", "byGOnly") for group in GROUPS}
    assert any(wanted.values())
    no_full_reads(monkeypatch)
    assert {(index, group): query(engine, index, group)
            for index in ("byG", "byGOnly") for group in GROUPS} == wanted


def test_swept_and_dropped_items_leave_no_index_keys(tmp_path: Path) -> None:
    now = [1000.0]
    engine = Engine(tmp_path / DATABASE_FILE, clock=lambda: now[0])
    engine.execute("CreateTable", TABLE)
    engine.execute("UpdateTimeToLive", {"TableName": "t", "TimeToLiveSpecification": {
        "AttributeName": "exp", "Enabled": True}})
    for n, expires in enumerate((900, 2000)):
        engine.execute("PutItem", {"TableName": "t", "Item": {
            **key("p", f"s{n}"), "g": {"S": "a"}, "at": {"N": "1"}, "exp": {"N": str(expires)}}})
    assert engine.sweep() == 1
    assert query(engine, "byG", "a") == [("p", "s1")]
    engine.execute("CreateTable", {**TABLE, "TableName": "gone"})
    engine.execute("PutItem", {"TableName": "gone", "Item": {**key("p", "s"), "g": {"S": "a"}}})
    engine.execute("DeleteTable", {"TableName": "gone"})
    engine.close()
    with sqlite3.connect(tmp_path / DATABASE_FILE) as db:
        rows = db.execute("SELECT tbl, idx, item_range FROM index_keys ORDER BY idx").fetchall()
    db.close()
    assert rows == [("t", "byG", "s1"), ("t", "byGOnly", "s1")]


def test_a_data_file_from_before_index_keys_is_indexed_when_opened(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / DATABASE_FILE
    engine = Engine(path)
    engine.execute("CreateTable", TABLE)
    write_at_random(engine, random.Random(7), 200)
    wanted = expected(engine, "byG", "b")
    assert wanted
    engine.close()
    with sqlite3.connect(path) as db:  # as an engine without index_keys left the file
        db.execute("DROP TABLE index_keys")
        db.execute("PRAGMA user_version = 0")
    db.close()
    again = Engine(path)
    try:
        no_full_reads(monkeypatch)
        assert query(again, "byG", "b") == wanted
    finally:
        again.close()


def test_an_index_added_to_a_table_with_items_holds_them_and_survives_a_restart(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """UpdateTable (Create): what create_tables does for a data dir from before an index of
    the template existed (the runs table's byActivity)."""
    path = tmp_path / DATABASE_FILE
    engine = Engine(path)
    without = {**TABLE, "GlobalSecondaryIndexes": TABLE["GlobalSecondaryIndexes"][1:],
               "AttributeDefinitions": TABLE["AttributeDefinitions"][:3]}
    engine.execute("CreateTable", without)
    write_at_random(engine, random.Random(11), 200)
    [by_g] = TABLE["GlobalSecondaryIndexes"][:1]
    engine.execute("UpdateTable", {"TableName": "t", "AttributeDefinitions": TABLE[
        "AttributeDefinitions"][3:], "GlobalSecondaryIndexUpdates": [{"Create": by_g}]})
    wanted = expected(engine, "byG", "b")
    assert wanted and query(engine, "byG", "b") == wanted
    with pytest.raises(Exception, match="exists"):
        engine.execute("UpdateTable", {"TableName": "t",
                                       "GlobalSecondaryIndexUpdates": [{"Create": by_g}]})
    engine.close()
    again = Engine(path)
    try:
        no_full_reads(monkeypatch)
        assert query(again, "byG", "b") == wanted
    finally:
        again.close()


def test_create_tables_adds_the_templates_missing_indexes_to_kept_tables(tmp_path: Path) -> None:
    from loopsense.settings import Settings
    from loopsense.store.dynamo import make_client
    from loopsense_local.embedded import EmbeddedDynamoDB
    from loopsense_local.tables import create_tables, load_template

    template = load_template()
    runs = template["Resources"]["RunsTable"]["Properties"]
    old = {**template, "Resources": {**template["Resources"], "RunsTable": {
        **template["Resources"]["RunsTable"], "Properties": {
            k: v for k, v in runs.items() if k != "GlobalSecondaryIndexes"}}}}
    embedded = EmbeddedDynamoDB("127.0.0.1", 0, str(tmp_path)).start()
    try:
        config = Settings(dynamodb_endpoint=embedded.endpoint)
        client = make_client(config)
        create_tables(client, config, old)
        assert "GlobalSecondaryIndexes" not in client.describe_table(
            TableName=config.runs_table)["Table"]
        create_tables(client, config)
        create_tables(client, config)  # idempotent
        indexes = client.describe_table(TableName=config.runs_table)["Table"][
            "GlobalSecondaryIndexes"]
        assert [i["IndexName"] for i in indexes] == ["byActivity"]
    finally:
        embedded.stop()
