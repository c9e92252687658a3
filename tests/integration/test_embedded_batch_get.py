"""BatchGetItem on the embedded DynamoDB (added for the runs API), answered as moto answers:
found items per table, missing keys left out, binary values intact, the 100-key limit."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from loopsense.settings import Settings
from loopsense_local.embedded import EmbeddedDynamoDB
from loopsense_local.tables import create_tables

CONFIG = Settings(dynamodb_endpoint="http://embedded.invalid")


def seeded(client: Any) -> Any:
    create_tables(client, CONFIG)
    for sk in ("AGENT#ari", "CONFIG"):
        client.put_item(TableName=CONFIG.runs_table,
                        Item={"pk": {"S": "t#r"}, "sk": {"S": sk}, "body": {"B": b"\x00\xff"}})
    client.put_item(TableName=CONFIG.plans_table, Item={"plan": {"S": "team"}})
    return client


def answer(client: Any) -> dict[str, Any]:
    found = client.batch_get_item(RequestItems={
        CONFIG.runs_table: {"ConsistentRead": True, "Keys": [
            {"pk": {"S": "t#r"}, "sk": {"S": sk}} for sk in ("AGENT#ari", "AGENT#bob", "CONFIG")]},
        CONFIG.plans_table: {"Keys": [{"plan": {"S": "team"}}, {"plan": {"S": "gold"}}]}})
    return {table: sorted(items, key=str) for table, items in found["Responses"].items()} | {
        "unprocessed": found.get("UnprocessedKeys")}


@pytest.fixture
def embedded() -> Iterator[Any]:
    yield seeded(EmbeddedDynamoDB("127.0.0.1", 0).client())


def test_batch_get_answers_as_moto_does(embedded):
    with mock_aws():
        from loopsense.store.dynamo import make_client

        expected = answer(seeded(make_client(Settings())))
    got = answer(embedded)
    assert got == expected
    assert [i["sk"]["S"] for i in got[CONFIG.runs_table]] == ["AGENT#ari", "CONFIG"]
    assert got[CONFIG.runs_table][0]["body"]["B"] == b"\x00\xff"


def test_more_than_100_keys_are_refused(embedded):
    keys = [{"pk": {"S": "t#r"}, "sk": {"S": f"AGENT#{i}"}} for i in range(101)]
    with pytest.raises(ClientError) as caught:
        embedded.batch_get_item(RequestItems={CONFIG.runs_table: {"Keys": keys}})
    assert caught.value.response["Error"]["Code"] == "ValidationException"
