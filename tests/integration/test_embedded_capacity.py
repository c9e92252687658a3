"""The embedded engine's ReturnConsumedCapacity, by DynamoDB's rules (loopsense_local.dynamodb
.capacity): 1 write unit per KB of the larger of the item before and after, twice in a
transaction; 1 read unit per 4 KB consistent, half eventually consistent; a batch each item, a
Query its items once; an index the write changes, its own writes."""

from __future__ import annotations

from typing import Any

from loopsense_local.embedded import EmbeddedDynamoDB

TOTAL = {"ReturnConsumedCapacity": "TOTAL"}


def test_each_request_consumes_what_dynamodb_counts() -> None:
    client = EmbeddedDynamoDB("127.0.0.1", 0).client()
    client.create_table(
        TableName="t", BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "p", "KeyType": "HASH"},
                   {"AttributeName": "s", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in "psg"],
        GlobalSecondaryIndexes=[{"IndexName": "byG", "Projection": {"ProjectionType": "ALL"},
                                 "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}]}])

    def units(answer: dict[str, Any]) -> Any:
        found = answer["ConsumedCapacity"]
        return found["CapacityUnits"] if isinstance(found, dict) else \
            [(c["TableName"], c["CapacityUnits"]) for c in found]

    small = {"p": {"S": "a"}, "s": {"S": "1"}, "v": {"S": "x" * 100}}
    big = {"p": {"S": "a"}, "s": {"S": "2"}, "v": {"S": "x" * 3000}}  # 3 KB
    assert units(client.put_item(TableName="t", Item=small, **TOTAL)) == 1
    assert units(client.put_item(TableName="t", Item=big, **TOTAL)) == 3
    assert "ConsumedCapacity" not in client.put_item(TableName="t", Item=big)
    # an update: the larger of before (3 KB) and after; with an index key now: +1 index write
    assert units(client.update_item(TableName="t", Key={"p": big["p"], "s": big["s"]},
                                    UpdateExpression="SET g = :g",
                                    ExpressionAttributeValues={":g": {"S": "G"}}, **TOTAL)) == 6
    assert units(client.get_item(TableName="t", Key={"p": big["p"], "s": big["s"]},
                                 ConsistentRead=True, **TOTAL)) == 1
    assert units(client.get_item(TableName="t", Key={"p": {"S": "none"}, "s": {"S": "x"}},
                                 **TOTAL)) == 0.5  # absent, eventually consistent: the minimum
    assert units(client.transact_write_items(TransactItems=[
        {"Put": {"TableName": "t", "Item": {**small, "s": {"S": "3"}}}},
        {"Update": {"TableName": "t", "Key": {"p": small["p"], "s": small["s"]},
                    "UpdateExpression": "SET w = :w",
                    "ExpressionAttributeValues": {":w": {"N": "1"}}}}], **TOTAL)) == [("t", 4)]
    keys = [{"p": {"S": "a"}, "s": {"S": s}} for s in "123"]
    assert units(client.batch_get_item(RequestItems={"t": {"Keys": keys, "ConsistentRead": True}},
                                       **TOTAL)) == [("t", 3)]
    assert units(client.query(TableName="t", KeyConditionExpression="p = :p",
                              ExpressionAttributeValues={":p": {"S": "a"}}, **TOTAL)) == 0.5


def test_a_write_that_changes_nothing_an_index_holds_costs_the_index_nothing() -> None:
    client = EmbeddedDynamoDB("127.0.0.1", 0).client()
    client.create_table(
        TableName="k", BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "p", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in "pg"],
        GlobalSecondaryIndexes=[{"IndexName": "byG", "Projection": {"ProjectionType": "KEYS_ONLY"},
                                 "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}]}])
    item = {"p": {"S": "a"}, "g": {"S": "G"}, "v": {"S": "x"}}
    assert client.put_item(TableName="k", Item=item, **TOTAL)["ConsumedCapacity"][
        "CapacityUnits"] == 2  # the item and its index entry
    update = {"TableName": "k", "Key": {"p": {"S": "a"}}, **TOTAL}
    assert client.update_item(**update, UpdateExpression="SET v = :v",  # not projected
                              ExpressionAttributeValues={":v": {"S": "y"}}
                              )["ConsumedCapacity"]["CapacityUnits"] == 1
    assert client.update_item(**update, UpdateExpression="SET g = :g",  # the index key moves
                              ExpressionAttributeValues={":g": {"S": "H"}}
                              )["ConsumedCapacity"]["CapacityUnits"] == 3  # a delete, a put
