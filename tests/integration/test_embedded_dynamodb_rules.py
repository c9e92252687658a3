"""DynamoDB rules the embedded engine keeps where moto cannot be the reference (moto gets them
wrong or crashes on them), each from DynamoDB's documentation: numbers with 38 exact digits,
binary values compared by their bytes, list indexes in one REMOVE naming the original list,
sparse and projected indexes, request checks (projections, key conditions, size() in updates),
and values DynamoDB refuses. Most were found by a review of the engine.
"""

from __future__ import annotations

import decimal
import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from loopsense_local.embedded import EmbeddedDynamoDB

ITEMS = "items"  # hash p (S), range r (B), GSI "byG" on g (S) / h (S) projecting KEYS_ONLY
NUMBERS = "numbers"  # hash n (N)


@pytest.fixture(scope="module")
def store() -> Iterator[EmbeddedDynamoDB]:
    running = EmbeddedDynamoDB("127.0.0.1", 0).start()
    client = running.client()
    client.create_table(
        TableName=ITEMS, BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "p", "KeyType": "HASH"},
                   {"AttributeName": "r", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": n, "AttributeType": t}
                              for n, t in (("p", "S"), ("r", "B"), ("g", "S"), ("h", "S"))],
        GlobalSecondaryIndexes=[{
            "IndexName": "byG", "Projection": {"ProjectionType": "KEYS_ONLY"},
            "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"},
                          {"AttributeName": "h", "KeyType": "RANGE"}]}])
    client.create_table(
        TableName=NUMBERS, BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "n", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "n", "AttributeType": "N"}])
    yield running
    running.stop()


@pytest.fixture
def client(store: EmbeddedDynamoDB) -> Any:
    return store.client()


def code_of(error: pytest.ExceptionInfo[ClientError]) -> str:
    return str(error.value.response["Error"]["Code"])


def refused(call: Any, **params: Any) -> str:
    with pytest.raises(ClientError) as error:
        call(**params)
    return code_of(error)


# numbers ----------------------------------------------------------------------------------------
def test_numbers_keep_38_exact_digits_whatever_the_callers_decimal_context(client: Any) -> None:
    first, second = "1234567890123456789012345678901", "1234567890123456789012345678902"
    with decimal.localcontext(decimal.Context(prec=2)):
        client.put_item(TableName=NUMBERS, Item={"n": {"N": first}, "v": {"N": "100"}})
        client.put_item(TableName=NUMBERS, Item={"n": {"N": second}})
        answer = client.update_item(TableName=NUMBERS, Key={"n": {"N": first}},
                                    UpdateExpression="ADD v :one",
                                    ExpressionAttributeValues={":one": {"N": "1"}},
                                    ReturnValues="UPDATED_NEW")
    assert answer["Attributes"] == {"v": {"N": "101"}}
    keys = sorted(i["n"]["N"] for i in client.scan(TableName=NUMBERS)["Items"])
    assert keys == [first, second]
    big = "9" * 35
    client.put_item(TableName=NUMBERS, Item={"n": {"N": "7"}, "v": {"N": big}})
    client.update_item(TableName=NUMBERS, Key={"n": {"N": "7"}}, UpdateExpression="ADD v :one",
                       ExpressionAttributeValues={":one": {"N": "1"}})
    got = client.get_item(TableName=NUMBERS, Key={"n": {"N": "7"}})["Item"]["v"]["N"]
    assert got == "1" + "0" * 35


@pytest.mark.parametrize("value", ["1" * 39, "1E+126", "NaN", "Infinity", "abc", ""])
def test_numbers_dynamodb_cannot_hold_are_refused(client: Any, value: str) -> None:
    assert refused(client.put_item, TableName=NUMBERS,
                   Item={"n": {"N": "8"}, "v": {"N": value}}) == "ValidationException"


def test_a_sum_beyond_38_digits_is_refused(client: Any) -> None:
    client.put_item(TableName=NUMBERS, Item={"n": {"N": "9"}, "v": {"N": "9" * 38}})
    assert refused(client.update_item, TableName=NUMBERS, Key={"n": {"N": "9"}},
                   UpdateExpression="ADD v :one",
                   ExpressionAttributeValues={":one": {"N": "1"}}) == "ValidationException"


@pytest.mark.parametrize("value", [{}, {"NULL": False}, {"S": "a", "N": "1"},
                                   {"M": {"deep": json.loads('{"L": [' * 40 + "]}" * 40)}}])
def test_attribute_values_dynamodb_refuses_are_refused(client: Any, value: Any) -> None:
    assert refused(client.put_item, TableName=ITEMS,
                   Item={"p": {"S": "bad"}, "r": {"B": b"x"}, "v": value}) == "ValidationException"
    assert "Item" not in client.get_item(TableName=ITEMS, Key={"p": {"S": "bad"},
                                                               "r": {"B": b"x"}})


# binary -----------------------------------------------------------------------------------------
def test_binary_values_compare_sort_and_measure_by_their_bytes(client: Any) -> None:
    for raw in (b"\x01", b"\x7f", b"\x80", b"\xfe\xff", b"abc"):
        client.put_item(TableName=ITEMS, Item={"p": {"S": "bin"}, "r": {"B": raw},
                                               "b": {"B": raw}})

    def query(condition: str, value: bytes) -> list[bytes]:
        answer = client.query(TableName=ITEMS, KeyConditionExpression=f"p = :p AND {condition}",
                              ExpressionAttributeValues={":p": {"S": "bin"}, ":v": {"B": value}})
        return [i["r"]["B"] for i in answer["Items"]]

    assert query("r > :v", b"\x7f") == [b"\x80", b"\xfe\xff"]
    assert query("begins_with(r, :v)", b"\xfe") == [b"\xfe\xff"]
    assert query("begins_with(r, :v)", b"ab") == [b"abc"]
    sized = client.scan(TableName=ITEMS, FilterExpression="p = :p AND size(b) = :three",
                        ExpressionAttributeValues={":p": {"S": "bin"}, ":three": {"N": "3"}})
    assert [i["b"]["B"] for i in sized["Items"]] == [b"abc"]


# updates ----------------------------------------------------------------------------------------
def test_list_indexes_in_one_remove_name_the_list_as_it_was(client: Any) -> None:
    letters = {"L": [{"S": c} for c in "abcdef"]}
    key = {"p": {"S": "list"}, "r": {"B": b"l"}}
    client.put_item(TableName=ITEMS, Item={**key, "l": letters})
    client.update_item(TableName=ITEMS, Key=key, UpdateExpression="REMOVE l[1], l[3], l[4]")
    left = client.get_item(TableName=ITEMS, Key=key)["Item"]["l"]["L"]
    assert [v["S"] for v in left] == ["a", "c", "f"]


def test_updated_new_names_the_element_appended_past_the_end(client: Any) -> None:
    key = {"p": {"S": "append"}, "r": {"B": b"a"}}
    client.put_item(TableName=ITEMS, Item={**key, "l": {"L": [{"S": "a"}, {"S": "b"}]}})
    answer = client.update_item(TableName=ITEMS, Key=key, UpdateExpression="SET l[5] = :c",
                                ExpressionAttributeValues={":c": {"S": "c"}},
                                ReturnValues="UPDATED_NEW")
    assert answer["Attributes"] == {"l": {"L": [{"S": "c"}]}}


def test_size_is_not_allowed_in_an_update_expression(client: Any) -> None:
    key = {"p": {"S": "s"}, "r": {"B": b"s"}}
    client.put_item(TableName=ITEMS, Item={**key, "m": {"S": "abc"}})
    assert refused(client.update_item, TableName=ITEMS, Key=key,
                   UpdateExpression="SET n = size(m)") == "ValidationException"
    assert "n" not in client.get_item(TableName=ITEMS, Key=key)["Item"]


# reading ----------------------------------------------------------------------------------------
def test_an_index_holds_only_items_with_its_keys_and_its_projected_attributes(client: Any) -> None:
    base = {"p": {"S": "gsi"}, "g": {"S": "G"}}
    client.put_item(TableName=ITEMS, Item={**base, "r": {"B": b"1"}, "h": {"S": "h1"},
                                           "secret": {"S": "x"}})
    client.put_item(TableName=ITEMS, Item={**base, "r": {"B": b"2"}})  # no h: not indexed
    client.put_item(TableName=ITEMS, Item={**base, "r": {"B": b"3"}})
    found = client.query(TableName=ITEMS, IndexName="byG", KeyConditionExpression="g = :g",
                         ExpressionAttributeValues={":g": {"S": "G"}})["Items"]
    assert found == [{"p": {"S": "gsi"}, "r": {"B": b"1"}, "g": {"S": "G"}, "h": {"S": "h1"}}]
    filtered = client.query(TableName=ITEMS, IndexName="byG", KeyConditionExpression="g = :g",
                            FilterExpression="attribute_exists(secret)",
                            ExpressionAttributeValues={":g": {"S": "G"}})
    assert filtered["Items"] == []  # "secret" is not projected into the index


@pytest.mark.parametrize("projection", ["l, l[0]", "m, m", "m.a, m"])
def test_overlapping_projection_paths_are_refused(client: Any, projection: str) -> None:
    assert refused(client.get_item, TableName=ITEMS, Key={"p": {"S": "x"}, "r": {"B": b"x"}},
                   ProjectionExpression=projection) == "ValidationException"


@pytest.mark.parametrize(("condition", "values"), [
    ("p = :p AND r > :n", {":p": {"S": "a"}, ":n": {"N": "1"}}),  # r is binary
    ("p = :n", {":n": {"N": "1"}}),
])
def test_a_key_condition_value_of_the_wrong_type_is_refused(client: Any, condition: str,
                                                            values: dict[str, Any]) -> None:
    assert refused(client.query, TableName=ITEMS, KeyConditionExpression=condition,
                   ExpressionAttributeValues=values) == "ValidationException"


def test_a_key_condition_compares_the_key_with_values_only(client: Any) -> None:
    assert refused(client.query, TableName=ITEMS, KeyConditionExpression="p = :p AND r = other",
                   ExpressionAttributeValues={":p": {"S": "a"}}) == "ValidationException"


def test_a_deeply_nested_expression_is_refused_not_a_crash(client: Any) -> None:
    assert refused(client.put_item, TableName=ITEMS, Item={"p": {"S": "n"}, "r": {"B": b"n"}},
                   ConditionExpression="NOT " * 990 + "a = :v",
                   ExpressionAttributeValues={":v": {"S": "x"}}) == "ValidationException"


# the HTTP endpoint -------------------------------------------------------------------------------
def raw_post(store: EmbeddedDynamoDB, head: bytes, body: bytes) -> bytes:
    host, port = store.endpoint.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(head + body)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
            if b"\r\n\r\n" in answer and answer.endswith(b"}"):
                break
        return answer


def test_the_endpoint_answers_bad_bodies_in_dynamodbs_error_form(store: EmbeddedDynamoDB) -> None:
    target = b"X-Amz-Target: DynamoDB_20120810.ListTables\r\n"
    not_utf8 = b"\xff\xfe{"
    answer = raw_post(store, b"POST / HTTP/1.1\r\nHost: x\r\n" + target
                      + f"Content-Length: {len(not_utf8)}\r\n\r\n".encode(), not_utf8)
    assert answer.startswith(b"HTTP/1.1 400") and b"SerializationException" in answer
    chunked = raw_post(store, b"POST / HTTP/1.1\r\nHost: x\r\n" + target
                       + b"Transfer-Encoding: chunked\r\n\r\n", b"2\r\n{}\r\n0\r\n\r\n")
    assert chunked.startswith(b"HTTP/1.1 411") and b"Content-Length" in chunked
