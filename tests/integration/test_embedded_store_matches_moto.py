"""The embedded DynamoDB engine answers every call the project makes exactly as moto does.

`loopsense serve` no longer runs moto (4-8 ms a call) but its own in-memory engine
(loopsense_local.dynamodb behind EmbeddedDynamoDB). moto stays the reference: it has long been
the project's local DynamoDB and follows DynamoDB closely for the operations used here. So each
test runs the same calls against moto and against the engine, both over its HTTP endpoint (the
operator's path) and through ``store.client()`` (the server's in-process path), and requires
equal outcomes, call by call:

- success: the response without ResponseMetadata and ConsumedCapacity, items deserialized (so
  "1" and "1.0" are the same number); query pages in order, scans as sorted lists;
- failure: the error code only, plus the cancellation reason codes of a cancelled transaction
  and the old item a failed condition returns under ReturnValuesOnConditionCheckFailure.

Hypothesis generates sequences over a small key space, so conditions both hold and fail: the
exact request shapes of loopsense.store and of Powertools' idempotency layer (they are the
contract), and general condition and update expressions. Explicit examples pin each operation
and error; there, moto's own outcome is also checked against DynamoDB's documented behaviour, so
the reference is known to be right where it is asserted. Each sequence ends by comparing every
table's full contents. Where moto departs from DynamoDB, the case is left out, with the reason.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

import boto3
import pytest
from boto3.dynamodb.types import Binary, TypeDeserializer
from botocore.exceptions import ClientError
from hypothesis import given, settings
from hypothesis import strategies as st
from moto import mock_aws

from loopsense.store.accounts import thresholds_update
from loopsense_local.embedded import EmbeddedDynamoDB

REGION = "us-east-1"
FAKE_CREDENTIALS = {"aws_access_key_id": "x", "aws_secret_access_key": "x"}
# Epoch seconds in 2033: TTL values here lie in the future, so no TTL sweep can make a
# difference between the stores.
T0 = 2_000_000_000

_deserializer = TypeDeserializer()


# --- tables ----------------------------------------------------------------------------------

def _table(hash_key: tuple[str, str], range_key: tuple[str, str] | None = None,
           index: tuple[str, tuple[str, str], tuple[str, str]] | None = None,
           ttl: str | None = None) -> dict[str, Any]:
    """create_table's arguments (as loopsense_local.tables passes them) and the TTL attribute."""
    keys = [hash_key] + ([range_key] if range_key else [])
    schema = [{"AttributeName": name, "KeyType": kind}
              for (name, _), kind in zip(keys, ("HASH", "RANGE"), strict=False)]
    attributes = dict(keys)
    spec: dict[str, Any] = {"KeySchema": schema, "BillingMode": "PAY_PER_REQUEST"}
    if index:
        name, index_hash, index_range = index
        attributes.update([index_hash, index_range])
        spec["GlobalSecondaryIndexes"] = [{
            "IndexName": name,
            "KeySchema": [{"AttributeName": index_hash[0], "KeyType": "HASH"},
                          {"AttributeName": index_range[0], "KeyType": "RANGE"}],
            "Projection": {"ProjectionType": "ALL"},
        }]
    spec["AttributeDefinitions"] = [{"AttributeName": name, "AttributeType": kind}
                                    for name, kind in attributes.items()]
    return {"create": spec, "ttl": ttl}


TABLES: dict[str, dict[str, Any]] = {
    "tenants": _table(("tenantId", "S")),
    "usage": _table(("tenantId", "S"), ("sk", "S"), ttl="expiresAt"),
    "rate_limits": _table(("counterId", "S"), ttl="expiresAt"),
    "api_keys": _table(("keyDigest", "S"), index=("byTenant", ("tenantId", "S"), ("keyId", "S"))),
    "plans": _table(("plan", "S")),
    "idempotency": _table(("id", "S"), ttl="expiration"),
    # General expressions: a numeric sort key, so query order is by number, not by text.
    "things": _table(("pk", "S"), ("sk", "N")),
}


# --- calls and their normalized outcomes -----------------------------------------------------

@dataclass
class Call:
    """One client call; TableName values are logical names (keys of TABLES), bound per store.

    ``expect`` (examples only): the outcome moto must give, "ok" or an error code, so that the
    reference is known to follow DynamoDB where the example relies on it.
    """

    op: str  # a client method, or "query_pages" (query with Limit, following LastEvaluatedKey)
    args: dict[str, Any] = field(default_factory=dict)
    expect: str | None = None


def S(value: str) -> dict[str, str]:  # named after DynamoDB's type letters
    return {"S": value}


def N(value: int | float | str | Decimal) -> dict[str, str]:
    return {"N": str(value)}


def _bind(value: Any, tables: dict[str, str]) -> Any:
    """The call's arguments with every logical TableName (and RequestItems' table names)
    replaced by this store's table."""
    if isinstance(value, dict):
        return {k: (tables.get(v, v) if k == "TableName" else
                    {tables.get(t, t): _bind(w, tables) for t, w in v.items()}
                    if k == "RequestItems" else _bind(v, tables))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_bind(v, tables) for v in value]
    return value


def plain_item(item: dict[str, Any]) -> dict[str, Any]:
    return {name: _deserializer.deserialize(value) for name, value in item.items()}


def _sort_key(value: Any) -> str:
    """A total order on deserialized items that does not depend on how a number is written."""
    def canonical(v: Any) -> Any:
        if isinstance(v, Decimal):
            return "N:" + str(v.normalize())
        if isinstance(v, str):
            return "S:" + v
        if isinstance(v, set):
            return sorted(canonical(x) for x in v)
        if isinstance(v, Binary):
            return "B:" + bytes(v).hex()
        if isinstance(v, dict):
            return {k: canonical(x) for k, x in v.items()}
        if isinstance(v, list):
            return [canonical(x) for x in v]
        return v
    return json.dumps(canonical(value), sort_keys=True)


def _table_shape(description: dict[str, Any], logical: dict[str, str]) -> dict[str, Any]:
    """What a table description says about keys and indexes. Status, ARN, dates and counts
    are left out: DynamoDB answers CREATING and updates ItemCount every ~6 h; moto does not."""
    indexes = [{k: g[k] for k in ("IndexName", "KeySchema", "Projection")}
               for g in description.get("GlobalSecondaryIndexes", [])]
    return {
        "TableName": logical.get(description["TableName"], description["TableName"]),
        "KeySchema": description["KeySchema"],
        "AttributeDefinitions": sorted(description["AttributeDefinitions"],
                                       key=lambda a: a["AttributeName"]),
        "GlobalSecondaryIndexes": sorted(indexes, key=lambda g: g["IndexName"]),
    }


def _items(call: Call, items: list[dict[str, Any]]) -> Any:
    plain = [plain_item(i) for i in items]
    if call.op == "scan":  # scan order is unspecified
        return sorted(plain, key=_sort_key)
    if "IndexName" in call.args:
        # An index's keys need not be unique, and DynamoDB leaves the order of ties open: the
        # order of byTenant's sort key, and the items whatever their order.
        return {"order": [i.get("keyId") for i in plain], "items": sorted(plain, key=_sort_key)}
    return plain


def _success(call: Call, response: dict[str, Any], tables: dict[str, str]) -> dict[str, Any]:
    logical = {physical: name for name, physical in tables.items()}
    out: dict[str, Any] = {}
    for key, value in response.items():
        if key in ("ResponseMetadata", "ConsumedCapacity"):
            continue
        if key == "ItemCollectionMetrics" and not value:  # moto sends it empty, unasked
            continue
        if key in ("Item", "Attributes", "LastEvaluatedKey"):
            out[key] = plain_item(value)
        elif key == "Items":
            out[key] = _items(call, value)
        elif key in ("TableDescription", "Table"):
            out[key] = _table_shape(value, logical)
        elif key == "TableNames":  # other tests' and examples' tables are not this call's
            out[key] = sorted(logical[name] for name in value if name in logical)
        else:
            out[key] = value
    return out


def _failure(exc: ClientError) -> dict[str, Any]:
    response = exc.response
    out: dict[str, Any] = {"error": response["Error"]["Code"]}
    if out["error"] == "TransactionCanceledException":
        out["reasons"] = [r.get("Code") for r in response.get("CancellationReasons", [])]
    if "Item" in response:
        out["item"] = plain_item(response["Item"])
    return out


def _query_pages(client: Any, args: dict[str, Any]) -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    while True:
        page = client.query(**args)
        items.extend(page.get("Items", []))
        if "LastEvaluatedKey" not in page:
            return {"Items": items}  # the pages' boundaries may differ; their sum may not
        args = {**args, "ExclusiveStartKey": page["LastEvaluatedKey"]}


def outcome(client: Any, call: Call, tables: dict[str, str]) -> dict[str, Any]:
    args = _bind(call.args, tables)
    try:
        if call.op == "query_pages":
            response = _query_pages(client, args)
        else:
            response = getattr(client, call.op)(**args)
    except ClientError as exc:
        return _failure(exc)
    return _success(call, response, tables)


def _label(result: dict[str, Any]) -> str:
    """ "ok", an error code, or a cancelled transaction's code with its reasons."""
    if "reasons" in result:
        return f"{result['error']}{result['reasons']}"
    return str(result.get("error", "ok"))


# --- the stores ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Store:
    name: str
    client: Any


@pytest.fixture(scope="module", params=["in-memory", "durable"])
def stores(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Store]]:
    """moto first (the reference), then the engine over HTTP and in-process, with its tables in
    memory and in a SQLite file. Clients are made once: boto3 takes ~150 ms per client;
    examples get fresh tables instead."""
    saved_env = dict(os.environ)
    data_dir = tmp_path_factory.mktemp("store") if request.param == "durable" else None
    embedded = EmbeddedDynamoDB("127.0.0.1", 0, data_dir).start()
    reference = mock_aws()
    reference.start()  # intercepts AWS's own endpoints only, not the engine's localhost one
    try:
        yield [
            Store("moto", boto3.client("dynamodb", region_name=REGION, **FAKE_CREDENTIALS)),
            Store("http", boto3.client("dynamodb", region_name=REGION,
                                       endpoint_url=embedded.endpoint, **FAKE_CREDENTIALS)),
            Store("in-process", embedded.client()),
        ]
    finally:
        reference.stop()
        embedded.stop()
        os.environ.clear()
        os.environ.update(saved_env)


def _setup(tables: list[str]) -> list[Call]:
    calls = []
    for name in tables:
        calls.append(Call("create_table", {"TableName": name, **TABLES[name]["create"]}))
        if TABLES[name]["ttl"]:
            calls.append(Call("update_time_to_live", {
                "TableName": name,
                "TimeToLiveSpecification": {"Enabled": True,
                                            "AttributeName": TABLES[name]["ttl"]}}))
    return calls


def _tables_of(calls: list[Call]) -> list[str]:
    found: set[str] = set()

    def visit(value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                if k == "TableName" and v in TABLES:
                    found.add(v)
                elif k == "RequestItems":
                    found.update(t for t in v if t in TABLES)
                    visit(v)
                else:
                    visit(v)
        elif isinstance(value, list):
            for v in value:
                visit(v)

    for call in calls:
        visit(call.args)
    return sorted(found)


def assert_same(stores: list[Store], calls: list[Call], tables: list[str] | None = None) -> None:
    """Run the calls on fresh tables in every store, comparing each outcome with moto's, then
    each table's full contents."""
    tables = tables if tables is not None else _tables_of(calls)
    token = uuid.uuid4().hex[:10]
    bound = {s.name: {t: f"{t}-{s.name}-{token}" for t in tables} for s in stores}
    steps = [*_setup(tables), *calls, *(Call("scan", {"TableName": t}) for t in tables)]
    try:
        for i, call in enumerate(steps):
            results = {s.name: outcome(s.client, call, bound[s.name]) for s in stores}
            reference = results["moto"]
            if call.expect is not None:
                assert _label(reference) == call.expect, (
                    f"moto itself: step {i} {call.op} {call.args}: {reference}")
            for name, result in results.items():
                assert result == reference, (
                    f"step {i}: {call.op} {call.args}\n  moto: {reference}\n  {name}: {result}")
    finally:
        for s in stores:
            for physical in bound[s.name].values():
                with contextlib.suppress(ClientError):
                    s.client.delete_table(TableName=physical)


# --- the project's request shapes (loopsense.store, Powertools idempotency) ------------------

TENANTS = ("t0", "t1", "t2")
PLANS = ("free", "pro")
THRESHOLDS = ("loops", "repeats", "window")
NUMBERS = ("0", "1", "3", "0.2", "1.5", "10")


def create_tenant(tenant: str, plan: str, conditional: bool = True) -> Call:
    args: dict[str, Any] = {
        "TableName": "tenants",
        "Item": {"tenantId": S(tenant), "plan": S(plan), "status": S("active"),
                 "createdAt": S("2026-11-01T00:00:00.000+00:00")}}
    if conditional:
        args["ConditionExpression"] = "attribute_not_exists(tenantId)"
    return Call("put_item", args)


def get(table: str, **key: dict[str, str]) -> Call:
    return Call("get_item", {"TableName": table, "Key": key, "ConsistentRead": True})


def set_tenant_plan(tenant: str, plan: str) -> Call:
    return Call("update_item", {
        "TableName": "tenants", "Key": {"tenantId": S(tenant)}, "UpdateExpression": "SET #p = :p",
        "ConditionExpression": "attribute_exists(tenantId)",
        "ExpressionAttributeNames": {"#p": "plan"}, "ExpressionAttributeValues": {":p": S(plan)}})


def create_thresholds(tenant: str, plan: str, values: dict[str, str]) -> Call:
    return _thresholds(tenant, plan, values, (), create=True)


def change_thresholds(tenant: str, plan: str, values: dict[str, str],
                      reset: tuple[str, ...]) -> Call:
    return _thresholds(tenant, plan, values, reset, create=False)


def _thresholds(tenant: str, plan: str, values: dict[str, str], reset: tuple[str, ...],
                create: bool) -> Call:
    """The request Accounts.update_thresholds makes (its own expression builder)."""
    numbers = {name: Decimal(value) for name, value in values.items()}
    return Call("update_item", {
        "TableName": "tenants", "Key": {"tenantId": S(tenant)}, "ReturnValues": "ALL_NEW",
        **thresholds_update(plan, numbers, reset, create)})


def put_plan(plan: str, credits: int) -> Call:
    return Call("put_item", {"TableName": "plans", "Item": {
        "plan": S(plan), "creditsPerMonth": N(credits), "requestsPerSecond": N(5),
        "skills": {"L": [S("*")]}, "maxTimeBudgetMs": N(2000)}})


def issue_key(digest: str, key_id: str, tenant: str) -> Call:
    return Call("put_item", {
        "TableName": "api_keys",
        "Item": {"keyDigest": S(digest), "keyId": S(key_id), "tenantId": S(tenant),
                 "scopes": {"L": [S("execute")]}, "status": S("active"),
                 "createdAt": S("2026-11-01T00:00:00.000+00:00")},
        "ConditionExpression": "attribute_not_exists(keyDigest)"})


def keys_of(tenant: str, key_id: str | None = None) -> Call:
    if key_id is None:
        return Call("query", {"TableName": "api_keys", "IndexName": "byTenant",
                              "KeyConditionExpression": "tenantId = :t",
                              "ExpressionAttributeValues": {":t": S(tenant)}})
    return Call("query", {"TableName": "api_keys", "IndexName": "byTenant",
                          "KeyConditionExpression": "tenantId = :t AND keyId = :k",
                          "ExpressionAttributeValues": {":t": S(tenant), ":k": S(key_id)}})


def revoke_key(digest: str) -> Call:
    return Call("update_item", {
        "TableName": "api_keys", "Key": {"keyDigest": S(digest)},
        "UpdateExpression": "SET #s = :r, revokedAt = :now",
        "ConditionExpression": "attribute_exists(keyDigest)",
        "ExpressionAttributeNames": {"#s": "status"},
        "ExpressionAttributeValues": {":r": S("revoked"),
                                      ":now": S("2026-11-02T00:00:00.000+00:00")}})


def admit(counter: str, limit: int, second: int = T0) -> Call:
    return Call("update_item", {
        "TableName": "rate_limits", "Key": {"counterId": S(counter)},
        "UpdateExpression": "ADD hits :one SET expiresAt = :ttl",
        "ConditionExpression": "attribute_not_exists(hits) OR hits < :limit",
        "ExpressionAttributeValues": {":one": N(1), ":limit": N(limit), ":ttl": N(second + 120)}})


def charge(tenant: str, period: str, credits: int, quota: int, execution: str,
           once: tuple[str, int, int] | None = None) -> Call:
    """Metering.charge's transaction; ``once`` = (key, now, until)."""
    items: list[dict[str, Any]] = [
        {"Update": {
            "TableName": "usage", "Key": {"tenantId": S(tenant), "sk": S(f"PERIOD#{period}")},
            "UpdateExpression": "ADD used :cost",
            "ConditionExpression": "attribute_not_exists(used) OR used <= :max",
            "ExpressionAttributeValues": {":cost": N(credits), ":max": N(quota - credits)}}},
        {"Put": {
            "TableName": "usage",
            "Item": {"tenantId": S(tenant), "sk": S(f"EXEC#{execution}"),
                     "executionId": S(execution), "skillKey": S("agent.loop_detect"),
                     "skillVersion": S("1.0.0"), "credits": N(credits),
                     "at": S("2026-11-01T00:00:00.000+00:00"), "period": S(period),
                     "durationMs": N(7), "status": S("succeeded")},
            "ConditionExpression": "attribute_not_exists(sk)"}},
    ]
    if once is not None:
        key, now, until = once
        items.append({"Put": {
            "TableName": "usage",
            "Item": {"tenantId": S(tenant), "sk": S(f"ONCE#{key}"), "executionId": S(execution),
                     "expiresAt": N(until)},
            "ConditionExpression": "attribute_not_exists(sk) OR expiresAt < :now",
            "ExpressionAttributeValues": {":now": N(now)}}})
    return Call("transact_write_items", {"TransactItems": items})


def put_usage_record(tenant: str, execution: str, conditional: bool) -> Call:
    args: dict[str, Any] = {"TableName": "usage", "Item": {
        "tenantId": S(tenant), "sk": S(f"EXEC#{execution}"), "executionId": S(execution),
        "credits": N(1), "period": S("2026-11")}}
    if conditional:
        args["ConditionExpression"] = "attribute_not_exists(sk)"
    return Call("put_item", args)


def usage_records(tenant: str, page_size: int | None = None) -> Call:
    args: dict[str, Any] = {"TableName": "usage",
                            "KeyConditionExpression": "tenantId = :t AND begins_with(sk, :r)",
                            "ExpressionAttributeValues": {":t": S(tenant), ":r": S("EXEC#")}}
    if page_size is None:
        return Call("query", args)
    return Call("query_pages", {**args, "Limit": page_size})


IDEMPOTENCY_NAMES = {"#id": "id", "#expiry": "expiration",
                     "#in_progress_expiry": "in_progress_expiration", "#status": "status"}


def idempotency_put(key: str, status: str, expiry: int, now: int,
                    in_progress_expiry_ms: int | None = None) -> Call:
    """BasePersistenceLayer._put_record as DynamoDBPersistenceLayer sends it."""
    item = {"id": S(key), "expiration": N(expiry), "status": S(status)}
    if in_progress_expiry_ms is not None:
        item["in_progress_expiration"] = N(in_progress_expiry_ms)
    return Call("put_item", {
        "TableName": "idempotency", "Item": item,
        "ConditionExpression": (
            "attribute_not_exists(#id) OR #expiry < :now OR (#status = :inprogress AND "
            "attribute_exists(#in_progress_expiry) AND #in_progress_expiry < :now_in_millis)"),
        "ExpressionAttributeNames": IDEMPOTENCY_NAMES,
        "ExpressionAttributeValues": {":now": N(now), ":now_in_millis": N(now * 1000),
                                      ":inprogress": S("INPROGRESS")},
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD"})


def idempotency_update(key: str, expiry: int, data: str, validation: bool = True) -> Call:
    expression = "SET #response_data = :response_data, #expiry = :expiry, #status = :status"
    names = {"#expiry": "expiration", "#response_data": "data", "#status": "status"}
    values = {":expiry": N(expiry), ":response_data": S(data), ":status": S("COMPLETED")}
    if validation:
        expression += ", #validation_key = :validation_key"
        names["#validation_key"] = "validation"
        values[":validation_key"] = S("hash-" + data)
    return Call("update_item", {
        "TableName": "idempotency", "Key": {"id": S(key)}, "UpdateExpression": expression,
        "ExpressionAttributeNames": names, "ExpressionAttributeValues": values})


def idempotency_delete(key: str) -> Call:
    return Call("delete_item", {"TableName": "idempotency", "Key": {"id": S(key)}})


# --- strategies ------------------------------------------------------------------------------

tenant_ids = st.sampled_from(TENANTS)
plan_names = st.sampled_from(PLANS)
threshold_values = st.dictionaries(st.sampled_from(THRESHOLDS), st.sampled_from(NUMBERS))


@st.composite
def threshold_changes(draw: st.DrawFn) -> Call:
    # Each named threshold is either set or reset, never both (tenant_settings.parse_patch).
    named = draw(st.lists(st.sampled_from(THRESHOLDS), min_size=1, unique=True))
    values = {name: draw(st.sampled_from(NUMBERS)) for name in named if draw(st.booleans())}
    reset = tuple(name for name in named if name not in values)
    return change_thresholds(draw(tenant_ids), draw(plan_names), values, reset)


moments = st.integers(0, 4).map(lambda i: T0 + 10 * i)
onces = st.tuples(st.sampled_from(("k0", "k1")), moments, moments.map(lambda m: m + 15))

project_calls = st.one_of(
    st.builds(create_tenant, tenant_ids, plan_names, st.booleans()),
    tenant_ids.map(lambda t: get("tenants", tenantId=S(t))),
    st.builds(set_tenant_plan, tenant_ids, plan_names),
    st.builds(create_thresholds, tenant_ids, plan_names, threshold_values),
    threshold_changes(),
    st.builds(put_plan, plan_names, st.integers(0, 100)),
    plan_names.map(lambda p: get("plans", plan=S(p))),
    st.just(Call("scan", {"TableName": "plans"})),
    st.builds(issue_key, st.sampled_from(("d0", "d1", "d2", "d3")),
              st.sampled_from(("key_a", "key_b", "key_c")), tenant_ids),
    st.builds(keys_of, tenant_ids, st.none() | st.sampled_from(("key_a", "key_b"))),
    st.sampled_from(("d0", "d1", "d2")).map(revoke_key),
    st.builds(admit, st.sampled_from(("t0#1", "t1#1")), st.integers(0, 3)),
    st.builds(charge, tenant_ids, st.sampled_from(("2026-10", "2026-11")), st.integers(0, 3),
              st.integers(0, 6), st.sampled_from(("e0", "e1", "e2", "e3")), st.none() | onces),
    st.builds(lambda t, p: get("usage", tenantId=S(t), sk=S(f"PERIOD#{p}")),
              tenant_ids, st.sampled_from(("2026-10", "2026-11"))),
    st.builds(put_usage_record, tenant_ids, st.sampled_from(("e0", "e4")), st.booleans()),
    st.builds(usage_records, tenant_ids, st.none() | st.integers(1, 3)),
    st.builds(idempotency_put, st.sampled_from(("i0", "i1")),
              st.sampled_from(("INPROGRESS", "COMPLETED")), moments, moments,
              st.none() | moments.map(lambda m: m * 1000)),
    st.builds(idempotency_update, st.sampled_from(("i0", "i1")), moments,
              st.sampled_from(("{}", '{"a": 1}')), st.booleans()),
    st.sampled_from(("i0", "i1")).map(idempotency_delete),
    st.sampled_from(("i0", "i1")).map(lambda k: get("idempotency", id=S(k))),
)


# General expressions over "things": pk S, sk N, and attributes of every common type. Each
# attribute keeps one type (only "misc" takes any), because moto crashes on an ordering
# comparison of two types (DynamoDB: false). The generators also keep to what DynamoDB defines:
# BETWEEN bounds of one type and in order, begins_with of a string, size() of strings, lists,
# maps and sets, and no two update paths that overlap.
NUMS = ("-1", "0", "1", "2.5", "5", "10")
STRS = ("a", "ab", "abc", "b", "ba")
num_values = st.sampled_from(NUMS).map(N)
str_values = st.sampled_from(STRS).map(S)
scalars = num_values | str_values
string_sets = st.sets(st.sampled_from(("a", "b", "c")), min_size=1).map(
    lambda s: {"SS": sorted(s)})
lists = st.lists(scalars, max_size=3).map(lambda v: {"L": v})
maps = st.fixed_dictionaries({}, optional={"x": num_values, "y": str_values}).map(
    lambda m: {"M": m})
booleans = st.booleans().map(lambda b: {"BOOL": b})
# moto compares with Python's ==, so it finds NULL equal to a missing attribute and false equal
# to 0 (DynamoDB: neither). So NULL is never an operand, and booleans meet booleans only: "flag"
# is the one boolean attribute and is compared with booleans alone.
comparable_values = st.one_of(scalars, lists, maps, string_sets)
TYPED = {"num": num_values, "txt": str_values, "lst": lists, "mp": maps, "tags": string_sets,
         "flag": booleans, "misc": comparable_values | st.just({"NULL": True})}
ATTRS = tuple(TYPED)
# "extra" is absent from items as put, and only ever written as a number.
ORDERED = {("num",): "N", ("txt",): "S", ("extra",): "N", ("mp", "x"): "N", ("sk",): "N"}
VALUES_OF = {"N": num_values, "S": str_values}
pks = st.sampled_from(("p0", "p1"))
sks = st.sampled_from(("0", "1", "2", "10"))


def thing_key(pk: str, sk: str) -> dict[str, Any]:
    return {"pk": S(pk), "sk": N(sk)}


@st.composite
def things(draw: st.DrawFn) -> dict[str, Any]:
    item = thing_key(draw(pks), draw(sks))
    for name in draw(st.lists(st.sampled_from(ATTRS), unique=True)):
        item[name] = draw(TYPED[name])
    return item


class Placeholders:
    """The names and values of one request: one #name per attribute, one :value per operand,
    so every placeholder defined is used (DynamoDB refuses unused ones)."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.values: dict[str, Any] = {}

    def path(self, path: tuple[str | int, ...]) -> str:
        text = ""
        for part in path:
            if isinstance(part, int):
                text += f"[{part}]"
            else:
                self.names["#" + part] = part
                text += ("." if text else "") + "#" + part
        return text

    def value(self, value: Any) -> str:
        placeholder = f":v{len(self.values)}"
        self.values[placeholder] = value
        return placeholder

    def into(self, args: dict[str, Any]) -> dict[str, Any]:
        if self.names:
            args["ExpressionAttributeNames"] = self.names
        if self.values:
            args["ExpressionAttributeValues"] = self.values
        return args


COMPARATORS = ("=", "<>", "<", "<=", ">", ">=")
ordered_paths = st.sampled_from(sorted(ORDERED.items()))


@st.composite
def ordering(draw: st.DrawFn) -> tuple[Any, ...]:
    path, kind = draw(ordered_paths)
    return ("cmp", path, draw(st.sampled_from(COMPARATORS[2:])), draw(VALUES_OF[kind]))


@st.composite
def betweens(draw: st.DrawFn) -> tuple[Any, ...]:
    path, kind = draw(ordered_paths)
    pool = NUMS if kind == "N" else STRS
    low, high = sorted(draw(st.lists(st.sampled_from(pool), min_size=2, max_size=2)),
                       key=Decimal if kind == "N" else str)
    return ("between", path, {kind: low}, {kind: high})


all_paths = [(a,) for a in ATTRS] + [("extra",), ("mp", "x"), ("lst", 0), ("sk",), ("pk",)]
any_paths = st.sampled_from(all_paths)
compared_paths = st.sampled_from([path for path in all_paths if path != ("flag",)])
condition_leaves = st.one_of(
    st.tuples(st.just("cmp"), compared_paths, st.sampled_from(COMPARATORS[:2]),
              comparable_values),
    st.tuples(st.just("cmp"), st.just(("flag",)), st.sampled_from(COMPARATORS[:2]), booleans),
    ordering(),
    betweens(),
    st.tuples(st.just("in"), compared_paths, st.lists(scalars, min_size=1, max_size=3)),
    st.tuples(st.sampled_from(("attribute_exists", "attribute_not_exists")), any_paths),
    st.tuples(st.just("begins_with"), st.sampled_from([("txt",), ("num",), ("misc",)]),
              str_values),
    st.tuples(st.just("contains"), st.sampled_from([("txt",), ("tags",), ("lst",), ("extra",)]),
              scalars),
    st.tuples(st.just("size"), st.sampled_from([("txt",), ("lst",), ("mp",), ("tags",)]),
              st.sampled_from(COMPARATORS), st.sampled_from(("0", "1", "2", "3")).map(N)),
)
# AND and OR are written without parentheses unless "paren" adds them, so the stores' operator
# precedence (NOT, then AND, then OR) is compared too.
conditions = st.recursive(
    condition_leaves,
    lambda inner: st.one_of(st.tuples(st.just("NOT"), inner),
                            st.tuples(st.sampled_from(("AND", "OR")), inner, inner),
                            st.tuples(st.just("paren"), inner)),
    max_leaves=4)


def render_condition(node: tuple[Any, ...], p: Placeholders) -> str:
    kind = node[0]
    if kind == "cmp":
        return f"{p.path(node[1])} {node[2]} {p.value(node[3])}"
    if kind == "between":
        return f"{p.path(node[1])} BETWEEN {p.value(node[2])} AND {p.value(node[3])}"
    if kind == "in":
        return f"{p.path(node[1])} IN ({', '.join(p.value(v) for v in node[2])})"
    if kind in ("attribute_exists", "attribute_not_exists"):
        return f"{kind}({p.path(node[1])})"
    if kind in ("begins_with", "contains"):
        return f"{kind}({p.path(node[1])}, {p.value(node[2])})"
    if kind == "size":
        # Guarded: moto raises on size() of a missing attribute, where DynamoDB is false.
        path = p.path(node[1])
        return f"(attribute_exists({path}) AND size({path}) {node[2]} {p.value(node[3])})"
    if kind == "NOT":
        inner = render_condition(node[1], p)
        # moto cannot parse "NOT NOT x" (DynamoDB can); "NOT (NOT x)" means the same.
        return "NOT " + (f"({inner})" if inner.startswith("NOT ") else inner)
    if kind == "paren":
        inner = render_condition(node[1], p)
        # Parentheses right around parentheses are refused by DynamoDB ("redundant
        # parentheses"); that rule has its own example, so sequences stay valid.
        return inner if node[1][0] in ("paren", "size") else f"({inner})"
    return f"{render_condition(node[1], p)} {kind} {render_condition(node[2], p)}"


# Update actions: (clause, target path, operand). Targets have distinct root attributes:
# DynamoDB refuses overlapping paths, and moto misses the overlap of "#a" with "#a.#b".
set_actions = st.one_of(
    st.sampled_from(ATTRS).flatmap(
        lambda a: st.tuples(st.just("SET"), st.just((a,)), st.tuples(st.just("value"), TYPED[a]))),
    st.tuples(st.just("SET"), st.sampled_from((("num",), ("extra",))),
              st.tuples(st.sampled_from(("+", "-")), st.sampled_from(("num", "txt", "extra")),
                        num_values)),
    st.tuples(st.just("SET"), st.sampled_from((("num",), ("extra",))),
              st.tuples(st.just("if_not_exists+"), num_values)),
    st.tuples(st.just("SET"), st.just(("lst",)),
              st.tuples(st.sampled_from(("append", "prepend", "append_if_not_exists")), lists)),
    st.tuples(st.just("SET"), st.just(("mp", "x")), st.tuples(st.just("value"), num_values)),
    st.tuples(st.just("SET"), st.just(("mp", "y")), st.tuples(st.just("value"), str_values)),
)
update_actions = st.one_of(
    set_actions,
    st.tuples(st.just("REMOVE"), st.sampled_from(
        [(a,) for a in ATTRS] + [("extra",), ("mp", "x"), ("lst", 0)]), st.none()),
    # Not ADD to "txt": on an item without it, that would make it a number.
    st.tuples(st.just("ADD"), st.sampled_from((("num",), ("extra",))), num_values),
    st.tuples(st.just("ADD"), st.just(("tags",)), string_sets),
    st.tuples(st.just("DELETE"), st.just(("tags",)), string_sets),
)


def render_action(action: tuple[Any, ...], p: Placeholders) -> str:
    clause, path, operand = action
    target = p.path(path)
    if clause == "REMOVE":
        return target
    if clause in ("ADD", "DELETE"):
        return f"{target} {p.value(operand)}"
    kind = operand[0]
    if kind == "value":
        return f"{target} = {p.value(operand[1])}"
    if kind in ("+", "-"):
        return f"{target} = {p.path((operand[1],))} {kind} {p.value(operand[2])}"
    if kind == "if_not_exists+":
        return f"{target} = if_not_exists({target}, {p.value(N(0))}) + {p.value(operand[1])}"
    if kind == "append":
        return f"{target} = list_append({target}, {p.value(operand[1])})"
    if kind == "prepend":  # guarded: moto crashes on list_append(:v, #missing)
        return (f"{target} = list_append({p.value(operand[1])}, "
                f"if_not_exists({target}, {p.value({'L': []})}))")
    return (f"{target} = list_append(if_not_exists({target}, {p.value({'L': []})}), "
            f"{p.value(operand[1])})")


def render_update(actions: list[tuple[Any, ...]], order: list[str], p: Placeholders) -> str:
    clauses = []
    for clause in order:
        parts = [render_action(a, p) for a in actions if a[0] == clause]
        if parts:
            clauses.append(f"{clause} {', '.join(parts)}")
    return " ".join(clauses)


@st.composite
def general_calls(draw: st.DrawFn) -> Call:
    p = Placeholders()
    args: dict[str, Any] = {"TableName": "things"}
    kind = draw(st.sampled_from(("put", "update", "update", "delete", "get", "query", "scan")))
    if kind == "get":
        return get("things", **thing_key(draw(pks), draw(sks)))
    if kind == "scan":
        return Call("scan", args)
    if kind == "query":
        key = f"{p.path(('pk',))} = {p.value(S(draw(pks)))}"
        bound = draw(st.none() | st.sampled_from(COMPARATORS[:1] + COMPARATORS[2:] + ("BETWEEN",)))
        if bound == "BETWEEN":
            low, high = sorted(draw(st.lists(sks, min_size=2, max_size=2)), key=Decimal)
            key += f" AND {p.path(('sk',))} BETWEEN {p.value(N(low))} AND {p.value(N(high))}"
        elif bound:
            key += f" AND {p.path(('sk',))} {bound} {p.value(N(draw(sks)))}"
        args["KeyConditionExpression"] = key
        args["ScanIndexForward"] = draw(st.booleans())
        return Call("query", p.into(args))
    if kind == "put":
        args["Item"] = draw(things())
        return_values = draw(st.sampled_from(("NONE", "ALL_OLD")))
    elif kind == "delete":
        args["Key"] = thing_key(draw(pks), draw(sks))
        return_values = draw(st.sampled_from(("NONE", "ALL_OLD")))
    else:
        args["Key"] = thing_key(draw(pks), draw(sks))
        actions = draw(st.lists(update_actions, min_size=1, max_size=3,
                                unique_by=lambda a: a[1][0]))
        order = draw(st.permutations(("SET", "REMOVE", "ADD", "DELETE")))
        args["UpdateExpression"] = render_update(actions, order, p)
        # UPDATED_OLD/UPDATED_NEW are left to the examples: moto derives them by diffing the
        # item (an attribute SET to its own value is missing, keys of a new item are
        # included), where DynamoDB returns the attributes the expression names.
        return_values = draw(st.sampled_from(("NONE", "ALL_OLD", "ALL_NEW")))
    condition = draw(st.none() | conditions)
    if condition is not None:
        args["ConditionExpression"] = render_condition(condition, p)
        if draw(st.booleans()):
            args["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
    if return_values != "NONE":
        args["ReturnValues"] = return_values
    op = {"put": "put_item", "delete": "delete_item", "update": "update_item"}[kind]
    return Call(op, p.into(args))


# --- the differential properties -------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(calls=st.lists(project_calls, min_size=1, max_size=25))
def test_project_calls_match_moto(stores: list[Store], calls: list[Call]) -> None:
    assert_same(stores, calls)


@settings(max_examples=60, deadline=None)
@given(calls=st.lists(general_calls(), min_size=1, max_size=20))
def test_general_expressions_match_moto(stores: list[Store], calls: list[Call]) -> None:
    assert_same(stores, calls, ["things"])


# --- examples: each operation the project uses, and the general ones -------------------------

def want(call: Call, expect: str) -> Call:
    return replace(call, expect=expect)


OK, FAILED, INVALID = "ok", "ConditionalCheckFailedException", "ValidationException"


def cancelled(*reasons: str) -> str:
    return f"TransactionCanceledException{list(reasons)}"


CCF = "ConditionalCheckFailed"
ITEM = {"pk": S("p0"), "sk": N(1), "num": N(5), "txt": S("abc"),
        "lst": {"L": [N(1), S("x")]}, "mp": {"M": {"x": N(1)}}, "tags": {"SS": ["a", "b"]},
        "flag": {"BOOL": True}}
KEY = {"pk": S("p0"), "sk": N(1)}


def probe(condition: str, expect: str, **values: dict[str, Any]) -> Call:
    """Rewrite ITEM over itself on a condition: the outcome is the condition's truth."""
    args: dict[str, Any] = {"TableName": "things", "Item": ITEM, "ConditionExpression": condition}
    if values:
        args["ExpressionAttributeValues"] = {":" + k: v for k, v in values.items()}
    return Call("put_item", args, expect)


def update(expression: str, expect: str = OK, returns: str | None = None,
           key: dict[str, Any] = KEY, names: dict[str, str] | None = None,
           condition: str | None = None, **values: dict[str, Any]) -> Call:
    args: dict[str, Any] = {"TableName": "things", "Key": key, "UpdateExpression": expression}
    if condition:
        args["ConditionExpression"] = condition
    if names:
        args["ExpressionAttributeNames"] = names
    if values:
        args["ExpressionAttributeValues"] = {":" + k: v for k, v in values.items()}
    if returns:
        args["ReturnValues"] = returns
    return Call("update_item", args, expect)


PUT_ITEM = Call("put_item", {"TableName": "things", "Item": ITEM}, OK)

EXAMPLES: dict[str, list[Call]] = {
    "tenants": [
        want(create_tenant("t0", "free"), OK),
        want(create_tenant("t0", "pro"), FAILED),
        want(get("tenants", tenantId=S("t0")), OK),
        want(get("tenants", tenantId=S("t9")), OK),
        want(set_tenant_plan("t0", "pro"), OK),
        want(set_tenant_plan("t9", "pro"), FAILED),
        want(create_tenant("t0", "free", conditional=False), OK),
    ],
    "thresholds": [
        want(create_tenant("t0", "free"), OK),
        want(create_tenant("t1", "free"), OK),
        want(create_thresholds("t0", "pro", {"loops": "3"}), FAILED),
        want(create_thresholds("t0", "free", {"loops": "3", "window": "0.2"}), OK),
        want(create_thresholds("t0", "free", {"loops": "4"}), FAILED),
        want(change_thresholds("t0", "free", {"repeats": "2", "loops": "4"}, ("window",)), OK),
        want(change_thresholds("t0", "pro", {"loops": "5"}, ()), FAILED),
        want(change_thresholds("t1", "free", {"loops": "5"}, ()), FAILED),
        want(change_thresholds("t9", "free", {"loops": "5"}, ()), FAILED),
        want(change_thresholds("t0", "free", {}, ("loops", "repeats")), OK),
        want(change_thresholds("t0", "free", {"window": "1.5"}, ()), OK),
        want(create_thresholds("t1", "free", {}), OK),
    ],
    "rate counter": [
        want(admit("t0#1", 2), OK),
        want(admit("t0#1", 2), OK),
        want(admit("t0#1", 2), FAILED),
        want(admit("t0#1", 3), OK),
        want(admit("t0#2", 0), OK),  # a new counter: attribute_not_exists(hits) holds
        want(get("rate_limits", counterId=S("t0#1")), OK),
    ],
    "charge": [
        want(charge("t0", "2026-11", 2, 3, "e0"), OK),
        want(charge("t0", "2026-11", 2, 3, "e1"), cancelled(CCF, "None")),  # over quota
        want(charge("t0", "2026-11", 1, 3, "e0"), cancelled("None", CCF)),  # recorded already
        want(charge("t0", "2026-11", 1, 3, "e1"), OK),  # exactly the quota
        want(charge("t0", "2026-11", 0, 3, "e2"), OK),
        want(charge("t0", "2026-12", 1, 9, "e3", ("k0", T0, T0 + 60)), OK),
        want(charge("t0", "2026-12", 1, 9, "e4", ("k0", T0 + 10, T0 + 70)),
             cancelled("None", "None", CCF)),  # claimed: Metering reads reasons[2]
        want(charge("t0", "2026-11", 5, 3, "e0", ("k0", T0 + 20, T0 + 80)),
             cancelled(CCF, CCF, CCF)),
        want(charge("t0", "2026-12", 1, 9, "e4", ("k0", T0 + 61, T0 + 121)), OK),  # expired
        want(get("usage", tenantId=S("t0"), sk=S("PERIOD#2026-11")), OK),
        want(get("usage", tenantId=S("t0"), sk=S("ONCE#k0")), OK),
    ],
    "usage records": [
        *(want(charge(t, "2026-11", 1, 99, f"e{i}"), OK) for i in range(5) for t in ("t0", "t1")),
        want(put_usage_record("t0", "e0", conditional=True), FAILED),
        want(put_usage_record("t0", "e9", conditional=True), OK),
        want(put_usage_record("t0", "e9", conditional=False), OK),
        want(usage_records("t0"), OK),
        want(usage_records("t0", page_size=2), OK),
        want(usage_records("t1", page_size=1), OK),
        want(usage_records("t9", page_size=2), OK),
    ],
    "api keys": [
        want(issue_key("d0", "key_a", "t0"), OK),
        want(issue_key("d1", "key_b", "t0"), OK),
        want(issue_key("d2", "key_a", "t1"), OK),
        want(issue_key("d0", "key_c", "t0"), FAILED),
        want(keys_of("t0"), OK),
        want(keys_of("t0", "key_b"), OK),
        want(keys_of("t9"), OK),
        want(revoke_key("d1"), OK),
        want(revoke_key("d9"), FAILED),
        want(keys_of("t0"), OK),
        want(get("api_keys", keyDigest=S("d1")), OK),
    ],
    "plans": [
        want(put_plan("free", 100), OK),
        want(put_plan("pro", 10_000), OK),
        want(put_plan("free", 200), OK),
        want(get("plans", plan=S("free")), OK),
        want(Call("scan", {"TableName": "plans"}), OK),
    ],
    "idempotency": [
        want(idempotency_put("i0", "INPROGRESS", T0 + 100, T0, (T0 + 10) * 1000), OK),
        want(idempotency_put("i0", "INPROGRESS", T0 + 100, T0 + 5, (T0 + 15) * 1000), FAILED),
        # still INPROGRESS, but its in-progress expiry has passed
        want(idempotency_put("i0", "INPROGRESS", T0 + 100, T0 + 20, (T0 + 30) * 1000), OK),
        want(idempotency_update("i0", T0 + 100, '{"a": 1}'), OK),
        want(idempotency_put("i0", "INPROGRESS", T0 + 100, T0 + 40, (T0 + 50) * 1000), FAILED),
        want(idempotency_put("i0", "INPROGRESS", T0 + 200, T0 + 101), OK),  # expired
        want(idempotency_update("i0", T0 + 200, "{}", validation=False), OK),
        want(get("idempotency", id=S("i0")), OK),
        want(idempotency_delete("i0"), OK),
        want(idempotency_delete("i0"), OK),
        want(get("idempotency", id=S("i0")), OK),
    ],
    "comparisons": [
        PUT_ITEM,
        probe("num = :v", OK, v=N(5)),
        probe("num = :v", FAILED, v=N(6)),
        probe("num = :v", OK, v=N("5.0")),
        probe("num <> :v", OK, v=N(6)),
        probe("num <> :v", FAILED, v=N(5)),
        probe("num < :v", OK, v=N(10)),  # by number: "10" < "5" as text
        probe("num <= :v", OK, v=N(5)),
        probe("num > :v", FAILED, v=N(10)),
        probe("num > :v", OK, v=N("4.5")),
        probe("num >= :v", OK, v=N(5)),
        probe("txt < :v", OK, v=S("abd")),
        probe("txt <= :v", OK, v=S("abc")),
        probe("txt > :v", OK, v=S("ab")),
        probe("txt >= :v", FAILED, v=S("b")),
        probe("txt = :v", OK, v=S("abc")),
        probe("txt <> :v", OK, v=S("abd")),
        probe("num = :v", FAILED, v=S("5")),  # another type is never equal...
        probe("num <> :v", OK, v=S("5")),  # ...so always unequal
        # (An ordering comparison of two types is false in DynamoDB; moto crashes on it.)
        probe("mp.x = :v", OK, v=N(1)),
        probe("lst[1] = :v", OK, v=S("x")),
        probe("flag = :v", OK, v={"BOOL": True}),
        probe("tags = :v", OK, v={"SS": ["b", "a"]}),
        probe("nothing = :v", FAILED, v=N(1)),
        probe("nothing < :v", FAILED, v=N(1)),
        probe("nothing <> :v", OK, v=N(1)),  # a missing attribute equals nothing
    ],
    "between, in, functions": [
        PUT_ITEM,
        probe("num BETWEEN :a AND :b", OK, a=N(1), b=N(5)),
        probe("num BETWEEN :a AND :b", FAILED, a=N(6), b=N(9)),
        probe("txt BETWEEN :a AND :b", OK, a=S("ab"), b=S("abd")),
        # (BETWEEN with the bounds reversed: DynamoDB refuses it, moto answers false.)
        probe("num IN (:a, :b)", OK, a=N(1), b=N(5)),
        probe("num IN (:a, :b)", FAILED, a=N(1), b=N(2)),
        probe("txt IN (:a)", OK, a=S("abc")),
        probe("begins_with(txt, :p)", OK, p=S("ab")),
        probe("begins_with(txt, :p)", FAILED, p=S("b")),
        probe("contains(txt, :s)", OK, s=S("bc")),
        probe("contains(txt, :s)", FAILED, s=S("x")),
        probe("contains(tags, :s)", OK, s=S("a")),
        probe("contains(lst, :s)", OK, s=S("x")),
        probe("size(txt) = :n", OK, n=N(3)),
        probe("size(txt) > :n", FAILED, n=N(3)),
        probe("size(lst) = :n", OK, n=N(2)),
        probe("size(mp) = :n", OK, n=N(1)),
        probe("size(tags) = :n", OK, n=N(2)),
        probe("attribute_exists(mp.x)", OK),
        probe("attribute_not_exists(mp.y)", OK),
        probe("attribute_exists(pk)", OK),
    ],
    "not, and, or": [
        PUT_ITEM,
        probe("NOT num = :v", FAILED, v=N(5)),
        # AND binds tighter than OR: true OR (false AND false)
        probe("num = :a OR num = :b AND txt = :c", OK, a=N(5), b=N(6), c=S("zzz")),
        probe("(num = :a OR num = :b) AND txt = :c", FAILED, a=N(5), b=N(6), c=S("zzz")),
        # NOT binds tighter than AND: (NOT true) AND true
        probe("NOT num = :a AND txt = :c", FAILED, a=N(5), c=S("abc")),
        probe("NOT (num = :a AND txt = :c)", OK, a=N(5), c=S("zzz")),
        probe("NOT (NOT num = :a)", OK, a=N(5)),
        probe("(num = :a) AND (txt = :c)", OK, a=N(5), c=S("abc")),
        probe("((num = :a) AND txt = :c)", OK, a=N(5), c=S("abc")),
    ],
    "redundant parentheses": [
        PUT_ITEM,
        probe("((num = :a))", INVALID, a=N(5)),
        probe("NOT ((num = :a))", INVALID, a=N(6)),
    ],
    "update expressions": [
        PUT_ITEM,
        update("SET num = num + :n", returns="UPDATED_NEW", n=N(2)),
        update("SET num = num - :n", returns="ALL_NEW", n=N("0.5")),
        update("SET cnt = if_not_exists(cnt, :zero) + :n", returns="UPDATED_NEW",
               zero=N(0), n=N(1)),
        update("SET cnt = if_not_exists(cnt, :zero) + :n", returns="UPDATED_NEW",
               zero=N(0), n=N(1)),
        update("SET lst = list_append(lst, :more)", returns="UPDATED_NEW",
               more={"L": [S("y")]}),
        update("SET lst = list_append(:more, lst)", returns="ALL_NEW", more={"L": [N(0)]}),
        update("SET lst[0] = :v, mp.y = :w", returns="ALL_NEW", v=S("first"), w=S("why")),
        update("REMOVE txt", returns="UPDATED_OLD"),
        update("REMOVE lst[0]", returns="ALL_NEW"),
        update("ADD num :n", returns="UPDATED_OLD", n=N(3)),
        update("ADD tags :s", returns="ALL_NEW", s={"SS": ["c"]}),
        update("DELETE tags :s", returns="ALL_NEW", s={"SS": ["a"]}),
        update("DELETE tags :s", returns="ALL_NEW", s={"SS": ["b", "c"]}),  # empty: removed
        update("SET txt = :v REMOVE flag ADD num :n", returns="ALL_OLD", v=S("new"), n=N(1)),
        update("SET num = :v", returns="UPDATED_OLD", condition="num > :low",
               v=N(100), low=N(1)),
        update("SET num = :v", FAILED, condition="num < :low", v=N(0), low=N(1)),
        # A new item: created even by REMOVE alone; ALL_OLD has nothing to return.
        update("REMOVE txt", returns="ALL_OLD", key={"pk": S("p1"), "sk": N(1)}),
        update("SET num = :v", returns="ALL_NEW", key={"pk": S("p1"), "sk": N(2)}, v=N(1)),
        # (UPDATED_NEW/UPDATED_OLD where a value does not change, of a nested path, or on a new
        # item: moto diffs old and new items, DynamoDB returns the paths the expression names.)
    ],
    "return values of put and delete": [
        want(Call("put_item", {"TableName": "things", "Item": ITEM, "ReturnValues": "ALL_OLD"}),
             OK),
        want(Call("put_item", {"TableName": "things", "Item": {**ITEM, "num": N(6)},
                               "ReturnValues": "ALL_OLD"}), OK),
        want(Call("delete_item", {"TableName": "things", "Key": KEY, "ReturnValues": "ALL_OLD"}),
             OK),
        want(Call("delete_item", {"TableName": "things", "Key": KEY, "ReturnValues": "ALL_OLD"}),
             OK),
        PUT_ITEM,
        want(Call("delete_item", {"TableName": "things", "Key": KEY,
                                  "ConditionExpression": "num = :v",
                                  "ExpressionAttributeValues": {":v": N(4)},
                                  "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}), FAILED),
        want(Call("put_item", {"TableName": "things", "Item": {**KEY, "sk": N(7)},
                               "ConditionExpression": "attribute_exists(pk)",
                               "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}), FAILED),
    ],
    "query and scan": [
        *(want(Call("put_item", {"TableName": "things", "Item": {
            "pk": S(pk), "sk": N(sk), "num": N(i)}}), OK)
          for i, (pk, sk) in enumerate([("p0", "10"), ("p0", "2"), ("p0", "-1"), ("p0", "2.5"),
                                        ("p1", "0"), ("p0", "0")])),
        want(Call("query", {"TableName": "things", "KeyConditionExpression": "pk = :p",
                            "ExpressionAttributeValues": {":p": S("p0")}}), OK),
        want(Call("query", {"TableName": "things", "KeyConditionExpression": "pk = :p",
                            "ExpressionAttributeValues": {":p": S("p0")},
                            "ScanIndexForward": False}), OK),
        want(Call("query", {"TableName": "things",
                            "KeyConditionExpression": "pk = :p AND sk BETWEEN :a AND :b",
                            "ExpressionAttributeValues": {":p": S("p0"), ":a": N(0),
                                                          ":b": N("2.5")}}), OK),
        want(Call("query", {"TableName": "things", "KeyConditionExpression": "pk = :p AND sk > :a",
                            "ExpressionAttributeValues": {":p": S("p0"), ":a": N(2)}}), OK),
        want(Call("query_pages", {"TableName": "things", "KeyConditionExpression": "pk = :p",
                                  "ExpressionAttributeValues": {":p": S("p0")}, "Limit": 2}), OK),
        want(Call("scan", {"TableName": "things"}), OK),
    ],
    "tables": [
        want(Call("describe_table", {"TableName": "api_keys"}), OK),
        want(Call("describe_table", {"TableName": "usage"}), OK),
        want(Call("list_tables"), OK),
        want(Call("create_table", {"TableName": "plans", **TABLES["plans"]["create"]}),
             "ResourceInUseException"),
        want(Call("delete_table", {"TableName": "plans"}), OK),
        want(get("plans", plan=S("free")), "ResourceNotFoundException"),
        want(Call("list_tables"), OK),
        want(get("no-such-table", plan=S("free")), "ResourceNotFoundException"),
        want(Call("describe_table", {"TableName": "no-such-table"}), "ResourceNotFoundException"),
    ],
    "unused and undefined placeholders": [
        PUT_ITEM,
        # (moto lets an unused value pass in a put_item or delete_item condition, which DynamoDB
        # refuses, and crashes on an undefined :value in a condition or #name anywhere.)
        update("SET num = :v", INVALID, v=N(1), unused=N(2)),
        update("SET num = :v", INVALID, names={"#unused": "x"}, v=N(1)),
        want(Call("put_item", {"TableName": "things", "Item": ITEM,
                               "ConditionExpression": "num = :v",
                               "ExpressionAttributeNames": {"#unused": "x"},
                               "ExpressionAttributeValues": {":v": N(5)}}), INVALID),
        update("SET num = :undefined", INVALID),
    ],
    "invalid keys": [
        # Missing, of the wrong type, updated. (moto answers get_item with a key of the wrong
        # type as if the item were missing; DynamoDB refuses the key.)
        want(Call("put_item", {"TableName": "things", "Item": {"pk": S("p0"), "num": N(1)}}),
             INVALID),
        want(Call("put_item", {"TableName": "things", "Item": {"sk": N(1)}}), INVALID),
        want(Call("put_item", {"TableName": "things", "Item": {"pk": S("p0"), "sk": S("1")}}),
             INVALID),
        want(Call("put_item", {"TableName": "tenants", "Item": {"tenantId": N(1)}}), INVALID),
        PUT_ITEM,
        update("SET sk = :v", INVALID, v=N(2)),
        update("SET #k = :v", INVALID, names={"#k": "pk"}, v=S("p9")),
        want(create_tenant("t0", "free"), OK),
        want(Call("update_item", {"TableName": "tenants", "Key": {"tenantId": S("t0")},
                                  "UpdateExpression": "SET tenantId = :v",
                                  "ExpressionAttributeValues": {":v": S("t1")}}), INVALID),
    ],
    "invalid types and paths": [
        PUT_ITEM,
        update("ADD txt :n", INVALID, n=N(1)),
        update("SET num = txt + :n", INVALID, n=N(1)),
        update("SET nothing = nothing + :n", INVALID, n=N(1)),
        update("SET lst = list_append(nothing, :l)", INVALID, l={"L": []}),
        update("SET nothing.x = :n", INVALID, n=N(1)),
        update("SET num = :v REMOVE num", INVALID, v=N(1)),
        # (A bare reserved word, "SET status = :v": the engine leaves that check to moto and
        # DynamoDB by design, docs/decisions.md.)
    ],
    "an empty set": [
        want(Call("put_item", {"TableName": "things", "Item": {**ITEM, "tags": {"SS": []}}}),
             INVALID),
    ],
    "batch write": [  # restore's copy of a snapshot (platform/runs/memory_store.py stage)
        PUT_ITEM,
        want(Call("batch_write_item", {"RequestItems": {"things": [
            {"PutRequest": {"Item": {"pk": S("p1"), "sk": N(i), "num": N(i)}}}
            for i in range(24)] + [{"DeleteRequest": {"Key": KEY}}]}}), OK),
        # (26 requests, or one key twice: moto writes them all; DynamoDB and the engine refuse
        # them, tests/integration/test_embedded_dynamodb.py.)
        want(Call("batch_write_item", {"RequestItems": {"things": [
            {"PutRequest": {"Item": {"pk": S("p2")}}}]}}), INVALID),
    ],
    "one item twice in a transaction": [
        want(Call("transact_write_items", {"TransactItems": [
            {"Put": {"TableName": "things", "Item": ITEM}},
            {"Update": {"TableName": "things", "Key": KEY, "UpdateExpression": "SET num = :v",
                        "ExpressionAttributeValues": {":v": N(1)}}}]}), INVALID),
        want(Call("transact_write_items", {"TransactItems": [
            {"Update": {"TableName": "usage",
                        "Key": {"tenantId": S("t0"), "sk": S("PERIOD#2026-11")},
                        "UpdateExpression": "ADD used :cost",
                        "ExpressionAttributeValues": {":cost": N(1)}}},
            {"Put": {"TableName": "usage",
                     "Item": {"tenantId": S("t0"), "sk": S("PERIOD#2026-11")}}}]}), INVALID),
    ],
}


@pytest.mark.parametrize("calls", EXAMPLES.values(), ids=EXAMPLES.keys())
def test_examples_match_moto(stores: list[Store], calls: list[Call]) -> None:
    assert_same(stores, calls)
