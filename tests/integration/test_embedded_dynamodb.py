"""The embedded DynamoDB's own guarantees, beyond matching moto on the operations loopsense uses
(tests/integration/test_embedded_store_matches_moto.py):

- stored items are isolated from the objects callers send and receive, in-process;
- DynamoDB's limits hold (400 KB items) and a bad request is an error, never a crash or a half
  write, over HTTP as in-process;
- binary values cross the in-process client as bytes, as boto3 gives them;
- `make_client` routes this process's clients of the embedded endpoint in-process, and only
  while the store runs.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, ParamValidationError

from loopsense.settings import Settings
from loopsense.store.dynamo import make_client
from loopsense_local.dynamodb.client import InProcessClient
from loopsense_local.embedded import EmbeddedDynamoDB

TABLE = "things"
NUMBERED = "numbered"  # a number as its key


@pytest.fixture(scope="module")
def store() -> Iterator[EmbeddedDynamoDB]:
    running = EmbeddedDynamoDB("127.0.0.1", 0).start()
    running.client().create_table(
        TableName=TABLE, BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}])
    running.client().create_table(
        TableName=NUMBERED, BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "n", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "n", "AttributeType": "N"}])
    yield running
    running.stop()


@pytest.fixture(scope="module")
def http(store: EmbeddedDynamoDB) -> Any:
    return boto3.client("dynamodb", endpoint_url=store.endpoint, region_name="us-east-1",
                        aws_access_key_id="local", aws_secret_access_key="local")


def code_of(error: pytest.ExceptionInfo[ClientError]) -> str:
    return str(error.value.response["Error"]["Code"])


def get(client: Any, item_id: str) -> dict[str, Any] | None:
    found: dict[str, Any] | None = client.get_item(TableName=TABLE,
                                                   Key={"id": {"S": item_id}}).get("Item")
    return found


def test_items_are_isolated_from_what_callers_send_and_receive(store: EmbeddedDynamoDB) -> None:
    client = store.client()
    item = {"id": {"S": "iso"}, "tags": {"L": [{"S": "a"}]}}
    client.put_item(TableName=TABLE, Item=item)
    item["tags"]["L"].append({"S": "sent-then-changed"})
    read = get(client, "iso")
    assert read == {"id": {"S": "iso"}, "tags": {"L": [{"S": "a"}]}}
    read["tags"]["L"].clear()
    assert get(client, "iso") == {"id": {"S": "iso"}, "tags": {"L": [{"S": "a"}]}}


@pytest.mark.parametrize("path", ["in-process", "http"])
def test_an_item_over_400_kb_is_refused_and_not_stored(store: EmbeddedDynamoDB, http: Any,
                                                       path: str) -> None:
    client = store.client() if path == "in-process" else http
    big = {"id": {"S": f"big-{path}"}, "blob": {"S": "x" * (400 * 1024)}}
    with pytest.raises(ClientError) as refused:
        client.put_item(TableName=TABLE, Item=big)
    assert code_of(refused) == "ValidationException"
    assert get(client, f"big-{path}") is None
    client.put_item(TableName=TABLE, Item={**big, "blob": {"S": "x" * (390 * 1024)}})
    assert get(client, f"big-{path}") is not None


@pytest.mark.parametrize(("call", "refused_by"), [
    ({"TableName": TABLE}, "boto3"),
    ({"TableName": TABLE, "Key": {"id": {"S": "a"}}, "ConsistentRaed": True}, "boto3"),
    ({"TableName": TABLE, "Key": {"id": {"N": "1"}}}, "DynamoDB"),  # the key's type is S
    ({"TableName": TABLE, "Key": {"id": {"S": "a"}, "extra": {"S": "b"}}}, "DynamoDB"),
    ({"TableName": TABLE, "Key": {"id": {"S": 5}}}, "either"),
    ({"TableName": TABLE, "Key": "not-a-map"}, "either"),
])
@pytest.mark.parametrize("path", ["in-process", "http"])
def test_a_malformed_request_is_refused(store: EmbeddedDynamoDB, http: Any, path: str,
                                        call: dict[str, Any], refused_by: str) -> None:
    """A misspelt or missing parameter is refused as boto3 refuses it (not silently ignored,
    in-process either); a key that does not fit the table, as DynamoDB refuses it. A value of
    the wrong type is refused by boto3 over HTTP and by the engine in-process."""
    client = store.client() if path == "in-process" else http
    with pytest.raises((ParamValidationError, ClientError)) as refused:
        client.get_item(**call)
    error = refused.value
    if refused_by == "boto3":
        assert isinstance(error, ParamValidationError)
    elif refused_by == "DynamoDB" or isinstance(error, ClientError):
        assert isinstance(error, ClientError)
        assert error.response["Error"]["Code"] == "ValidationException"


@pytest.mark.parametrize("expression", ["used <", "attribute_exists(", "a = :v OR",
                                        "nonsense(a)", "a = :v extra"])
def test_an_expression_that_does_not_parse_is_refused_with_nothing_written(
        store: EmbeddedDynamoDB, expression: str) -> None:
    client = store.client()
    with pytest.raises(ClientError) as refused:
        client.put_item(TableName=TABLE, Item={"id": {"S": "parse"}},
                        ConditionExpression=expression,
                        ExpressionAttributeValues={":v": {"S": "x"}})
    assert code_of(refused) == "ValidationException"
    assert "ConditionExpression" in refused.value.response["Error"]["Message"]
    assert get(client, "parse") is None


def test_a_cancelled_transaction_writes_nothing(store: EmbeddedDynamoDB) -> None:
    client = store.client()
    client.put_item(TableName=TABLE, Item={"id": {"S": "held"}})
    with pytest.raises(ClientError) as cancelled:
        client.transact_write_items(TransactItems=[
            {"Update": {"TableName": TABLE, "Key": {"id": {"S": "counter"}},
                        "UpdateExpression": "ADD n :one",
                        "ExpressionAttributeValues": {":one": {"N": "1"}}}},
            {"Put": {"TableName": TABLE, "Item": {"id": {"S": "held"}},
                     "ConditionExpression": "attribute_not_exists(id)"}},
        ])
    assert code_of(cancelled) == "TransactionCanceledException"
    assert [r["Code"] for r in cancelled.value.response["CancellationReasons"]] == [
        "None", "ConditionalCheckFailed"]
    assert get(client, "counter") is None


def test_a_transaction_with_a_value_that_cannot_be_stored_writes_nothing(
        store: EmbeddedDynamoDB) -> None:
    client = store.client()
    with pytest.raises(ClientError) as refused:
        client.transact_write_items(TransactItems=[
            {"Put": {"TableName": TABLE, "Item": {"id": {"S": "first"}}}},
            {"Put": {"TableName": TABLE, "Item": {"id": {"S": "second"},
                                                  "odd": {"N": "not a number"}}}},
        ])
    assert code_of(refused) == "ValidationException"
    assert get(client, "first") is None


def test_number_keys_are_equal_by_value(store: EmbeddedDynamoDB) -> None:
    client = store.client()
    client.put_item(TableName=NUMBERED, Item={"n": {"N": "1.0"}, "v": {"S": "one"}})
    found = client.get_item(TableName=NUMBERED, Key={"n": {"N": "1"}})["Item"]
    assert found["v"] == {"S": "one"}
    client.put_item(TableName=NUMBERED, Item={"n": {"N": "01"}, "v": {"S": "replaced"}})
    assert client.scan(TableName=NUMBERED)["Count"] == 1


@pytest.mark.parametrize(("value", "stored"), [
    ({"NS": ["1", "2.5"]}, True), ({"SS": ["a"]}, True),
    ({"NS": []}, False), ({"NS": ["1", "1.0"]}, False), ({"SS": ["a", "a"]}, False),
    ({"M": {"inner": {"SS": []}}}, False),
])
def test_sets_are_refused_empty_or_with_duplicates(store: EmbeddedDynamoDB,
                                                   value: dict[str, Any], stored: bool) -> None:
    client = store.client()
    item_id = f"set-{json.dumps(value)}"
    if stored:
        client.put_item(TableName=TABLE, Item={"id": {"S": item_id}, "v": value})
        assert get(client, item_id) == {"id": {"S": item_id}, "v": value}
        return
    with pytest.raises(ClientError) as refused:
        client.put_item(TableName=TABLE, Item={"id": {"S": item_id}, "v": value})
    assert code_of(refused) == "ValidationException"
    assert get(client, item_id) is None


def test_refused_as_dynamodb_refuses_what_moto_lets_through(store: EmbeddedDynamoDB) -> None:
    """Reversed BETWEEN bounds and begins_with on a number sort key are request errors in
    DynamoDB (moto fails the condition or crashes, so the moto comparison cannot check them)."""
    client = store.client()
    client.put_item(TableName=TABLE, Item={"id": {"S": "between"}, "n": {"N": "5"}})
    with pytest.raises(ClientError) as reversed_bounds:
        client.put_item(TableName=TABLE, Item={"id": {"S": "between"}},
                        ConditionExpression="n BETWEEN :hi AND :lo",
                        ExpressionAttributeValues={":lo": {"N": "1"}, ":hi": {"N": "9"}})
    assert code_of(reversed_bounds) == "ValidationException"
    client.create_table(
        TableName="ranged", BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "p", "KeyType": "HASH"},
                   {"AttributeName": "r", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": "p", "AttributeType": "S"},
                              {"AttributeName": "r", "AttributeType": "N"}])
    try:
        with pytest.raises(ClientError) as number_prefix:
            client.query(TableName="ranged", KeyConditionExpression="p = :p AND "
                         "begins_with(r, :prefix)",
                         ExpressionAttributeValues={":p": {"S": "a"}, ":prefix": {"S": "1"}})
        assert code_of(number_prefix) == "ValidationException"
    finally:
        client.delete_table(TableName="ranged")


def test_a_batch_write_over_25_requests_or_naming_a_key_twice_writes_nothing(
        store: EmbeddedDynamoDB) -> None:
    """DynamoDB's BatchWriteItem limits (moto writes both batches)."""
    client = store.client()
    for writes in ([{"PutRequest": {"Item": {"id": {"S": f"bw{i}"}}}} for i in range(26)],
                   [{"PutRequest": {"Item": {"id": {"S": "bw0"}}}},
                    {"DeleteRequest": {"Key": {"id": {"S": "bw0"}}}}]):
        with pytest.raises(ClientError) as refused:
            client.batch_write_item(RequestItems={TABLE: writes})
        assert code_of(refused) == "ValidationException"
        assert get(client, "bw0") is None


def test_binary_values_cross_the_in_process_client_as_bytes(store: EmbeddedDynamoDB,
                                                           http: Any) -> None:
    store.client().put_item(TableName=TABLE, Item={"id": {"S": "bin"}, "b": {"B": b"\x00\xff"},
                                                   "bs": {"BS": [b"\x01", b"\x02"]}})
    assert get(store.client(), "bin") == get(http, "bin") == {
        "id": {"S": "bin"}, "b": {"B": b"\x00\xff"}, "bs": {"BS": [b"\x01", b"\x02"]}}


def post(store: EmbeddedDynamoDB, target: str, body: bytes) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(store.endpoint, data=body, method="POST", headers={
        "X-Amz-Target": f"DynamoDB_20120810.{target}",
        "Content-Type": "application/x-amz-json-1.0"})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310 - localhost
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.mark.parametrize(("target", "body", "code"), [
    ("DescribeBackup", b"{}", "UnknownOperationException"),
    ("GetItem", b"{not json", "SerializationException"),
    ("GetItem", b"[1, 2]", "ValidationException"),
    ("GetItem", b'{"TableName": "missing", "Key": {"id": {"S": "a"}}}',
     "ResourceNotFoundException"),
])
def test_the_http_endpoint_answers_bad_requests_in_dynamodbs_error_form(
        store: EmbeddedDynamoDB, target: str, body: bytes, code: str) -> None:
    status, answer = post(store, target, body)
    assert status == 400
    assert answer["__type"].rsplit("#", 1)[1] == code
    assert answer["message"]
    # and it keeps answering
    assert post(store, "ListTables", b"{}") == (200, {"TableNames": sorted([TABLE, NUMBERED])})


def test_make_client_routes_the_embedded_endpoint_in_process_only_while_it_runs() -> None:
    running = EmbeddedDynamoDB("127.0.0.1", 0).start()
    endpoint = running.endpoint
    assert isinstance(make_client(Settings(dynamodb_endpoint=endpoint)), InProcessClient)
    running.stop()
    assert not isinstance(make_client(Settings(dynamodb_endpoint=endpoint)), InProcessClient)
