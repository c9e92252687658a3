"""The operations: DynamoDB's JSON API (parameters and answers as on the wire), one at a time.

One lock serves every operation, in-process and over HTTP alike, so each write and each
transaction is atomic, as in DynamoDB, and a condition can never be passed by two racing
requests. Operations take microseconds, so the lock costs nothing that matters locally.

Tables and items live in loopsense_local.dynamodb.storage (SQLite, in a file or in memory);
each write or transaction is one SQLite transaction, made under the same lock. As DynamoDB
does, a sweeper deletes expired items of tables with TTL enabled, in the background: until it
gets round to one, an expired item is still read like any other.

Conflicts (``transaction_hold_s``, off by default): DynamoDB runs a transaction in two phases
and cancels what meets one in flight (its guide, "Transaction conflict handling"): a
TransactWriteItems with an item another ongoing TransactWriteItems holds is cancelled
(TransactionCanceledException, that item's CancellationReasons code TransactionConflict, the
others' None or their own failure), and a PutItem, UpdateItem or DeleteItem of such an item
fails with TransactionConflictException (a BatchWriteItem too, whole: it is made of them).
Reads are not refused: they see the committed item (read-committed). With the mode on, a
transaction checks its conditions and takes its items under the lock, holds them for
``transaction_hold_s`` with the lock released (what DynamoDB's prepare round trip takes), then
commits them under the lock. The single-item writes stay instant: DynamoDB documents no
conflict of a transaction with them.
"""

from __future__ import annotations

import json
import pathlib
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from loopsense_local.dynamodb.capacity import (
    consumed,
    item_size,
    read_units,
    write_units,
)
from loopsense_local.dynamodb.documents import Path, apply_update, check_overlaps, project
from loopsense_local.dynamodb.errors import (
    DynamoDBError,
    condition_failed,
    no_table,
    validation,
)
from loopsense_local.dynamodb.expressions import (
    Context,
    Item,
    Tree,
    holds,
    parse_condition,
    parse_projection,
    parse_update,
)
from loopsense_local.dynamodb.storage import IN_MEMORY, Storage
from loopsense_local.dynamodb.table import Index, Key, KeySchema, Table, key_text

Params = dict[str, Any]
MAX_TRANSACTION_ITEMS = 100
MAX_BATCH_GET_KEYS = 100
MAX_BATCH_WRITES = 25
ACCOUNT = "000000000000"
REGION = "local"
SWEEP_INTERVAL_S = 30.0
SWEEP_BATCH = 500  # items deleted per hold of the lock, so a sweep never stalls the requests


@dataclass
class _Change:
    """One write, checked and computed but not yet made: what a transaction commits at once."""

    table: Table
    key: Key
    old: Item | None
    new: Item | None  # None: delete
    written: list[Path] | None = None  # the paths an update wrote
    text: str | None = None  # ``new`` as stored, encoded before anything is written
    write: bool = True  # False: a transaction's ConditionCheck


TRANSACTION_CONFLICT = {"Code": "TransactionConflict",
                        "Message": "Transaction is ongoing for the item"}


class Engine:
    def __init__(self, database: str | pathlib.Path = IN_MEMORY,
                 clock: Callable[[], float] = time.time,
                 transaction_hold_s: float | None = None) -> None:
        """``database``: a SQLite file (made if absent, loaded if present), or memory.
        ``transaction_hold_s``: None, transactions serialized (never a conflict); else how
        long each transaction holds its items, refusing others as DynamoDB does."""
        self._storage = Storage(database)
        self.transaction_hold_s = transaction_hold_s
        self._held: set[tuple[str, Key]] = set()  # the items in-flight transactions hold
        self.conflicts = 0  # the requests refused for meeting one (what benchmarks count)
        self._clock = clock
        self._tables = {name: _define_table(description, ttl, self._storage)
                        for name, description, ttl in self._storage.tables()}
        if self._storage.needs_reindex:  # a data file from before index_keys existed
            with self._storage.transaction():
                for table in self._tables.values():
                    if table.indexes:
                        table.reindex()
        self._lock = threading.Lock()
        self._stop_sweeping = threading.Event()
        self._sweeper: threading.Thread | None = None
        self._operations: dict[str, Callable[[Params], Params]] = {
            "CreateTable": self.create_table, "DeleteTable": self.delete_table,
            "DescribeTable": self.describe_table, "ListTables": self.list_tables,
            "UpdateTable": self.update_table,
            "UpdateTimeToLive": self.update_time_to_live,
            "DescribeTimeToLive": self.describe_time_to_live,
            "GetItem": self.get_item, "PutItem": self.put_item, "UpdateItem": self.update_item,
            "DeleteItem": self.delete_item, "Query": self.query, "Scan": self.scan,
            "TransactWriteItems": self.transact_write_items,
            "BatchGetItem": self.batch_get_item, "BatchWriteItem": self.batch_write_item,
        }

    @property
    def operations(self) -> tuple[str, ...]:
        return tuple(sorted(self._operations))

    def close(self) -> None:
        self.stop_sweeper()
        with self._lock:
            self._storage.close()

    # TTL -----------------------------------------------------------------------------------
    def start_sweeper(self, interval_s: float = SWEEP_INTERVAL_S) -> None:
        """Delete expired items every ``interval_s`` seconds, in a background thread."""
        if self._sweeper is None:
            self._stop_sweeping.clear()
            self._sweeper = threading.Thread(target=self._sweep_forever, args=(interval_s,),
                                             daemon=True, name="dynamodb-ttl-sweeper")
            self._sweeper.start()

    def stop_sweeper(self) -> None:
        if self._sweeper is not None:
            self._stop_sweeping.set()
            self._sweeper.join()
            self._sweeper = None
            self._stop_sweeping.clear()

    def _sweep_forever(self, interval_s: float) -> None:
        while not self._stop_sweeping.wait(interval_s):
            try:
                self.sweep()
            except sqlite3.Error:  # the disk failing: the next round tries again
                continue

    def sweep(self) -> int:
        """Delete every item whose TTL attribute is before the clock's now; how many."""
        deleted = 0
        with self._lock:
            names = [name for name, table in self._tables.items() if table.ttl_attribute]
        for name in names:
            while not self._stop_sweeping.is_set():
                with self._lock:  # released between batches: requests go first
                    if name not in self._tables:
                        break
                    done = self._storage.sweep(name, self._clock(), SWEEP_BATCH)
                deleted += done
                if done < SWEEP_BATCH:
                    break
        return deleted

    def execute(self, operation: str, params: Params) -> Params:
        run = self._operations.get(operation)
        if run is None:
            raise DynamoDBError("UnknownOperationException",
                                f"the embedded DynamoDB does not offer {operation}")
        if not isinstance(params, dict):
            raise validation("the request body must be a JSON object")
        if operation == "TransactWriteItems" and self.transaction_hold_s is not None:
            return self._transact_in_two_phases(params)
        return self._locked(operation, run, params)

    def _locked(self, operation: str, run: Callable[[Params], Params], params: Params) -> Params:
        """``run(params)`` under the lock, its failures as DynamoDB's errors."""
        with self._lock:
            try:
                return run(params)
            except DynamoDBError as error:
                if error.code == "TransactionConflictException" or any(
                        reason == TRANSACTION_CONFLICT
                        for reason in error.fields.get("CancellationReasons", ())):
                    self.conflicts += 1
                raise
            except (KeyError, TypeError, AttributeError, ValueError, IndexError):
                raise validation(f"{operation}: a parameter is missing or malformed") from None
            except RecursionError:
                raise validation(f"{operation}: an expression or value is nested too deeply") \
                    from None
            except sqlite3.Error:  # the disk full or failing: the write was rolled back
                raise DynamoDBError("InternalServerError", f"{operation}: the embedded "
                                    f"DynamoDB could not write its data file", status=500) \
                    from None

    # tables --------------------------------------------------------------------------------
    def _table(self, params: Params) -> Table:
        table = self._tables.get(params["TableName"])
        if table is None:
            raise no_table()
        return table

    def create_table(self, params: Params) -> Params:
        name = params["TableName"]
        if name in self._tables:
            raise DynamoDBError("ResourceInUseException", f"Table already exists: {name}")
        _define_table(params, None, self._storage)  # its key schema and indexes checked
        description = json.loads(json.dumps({  # a copy: nothing shared with the caller
            "TableName": name, "KeySchema": params["KeySchema"],
            "AttributeDefinitions": params["AttributeDefinitions"], "TableStatus": "ACTIVE",
            "CreationDateTime": time.time(),
            "TableArn": f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{name}",
            "BillingModeSummary": {"BillingMode": params.get("BillingMode", "PROVISIONED")},
            **({"GlobalSecondaryIndexes": [{**i, "IndexStatus": "ACTIVE"}
                                           for i in params["GlobalSecondaryIndexes"]]}
               if params.get("GlobalSecondaryIndexes") else {}),
        }))
        with self._storage.transaction():
            self._storage.save_table(name, description, None)
        self._tables[name] = _define_table(description, None, self._storage)
        return {"TableDescription": self._describe(self._tables[name])}

    def _describe(self, table: Table) -> Params:
        return {**table.description, "ItemCount": table.count()}

    def delete_table(self, params: Params) -> Params:
        table = self._table(params)
        with self._storage.transaction():
            self._storage.drop_table(table.name)
        del self._tables[table.name]
        return {"TableDescription": {**self._describe(table), "TableStatus": "DELETING"}}

    def describe_table(self, params: Params) -> Params:
        return {"Table": self._describe(self._table(params))}

    def update_table(self, params: Params) -> Params:
        """Adding global secondary indexes (``GlobalSecondaryIndexUpdates`` of ``Create``s, and
        the AttributeDefinitions of their keys) to a table that has items: each is filled
        from them at once (DynamoDB backfills in the background; here it is ACTIVE when this
        answers). Nothing else of UpdateTable is offered."""
        table = self._table(params)
        updates = params.get("GlobalSecondaryIndexUpdates") or []
        if not updates or any(set(u) != {"Create"} for u in updates):
            raise validation("the embedded DynamoDB's UpdateTable only creates global "
                             "secondary indexes")
        indexes = list(table.description.get("GlobalSecondaryIndexes", []))
        names = {i["IndexName"] for i in indexes}
        for update in updates:
            if update["Create"]["IndexName"] in names:
                raise validation("One or more parameter values were invalid: the index exists")
            names.add(update["Create"]["IndexName"])
        definitions = {d["AttributeName"]: d for d in table.description["AttributeDefinitions"]}
        definitions.update({d["AttributeName"]: d for d in params.get("AttributeDefinitions", [])})
        description = json.loads(json.dumps({  # a copy: nothing shared with the caller
            **table.description, "AttributeDefinitions": list(definitions.values()),
            "GlobalSecondaryIndexes": indexes + [{**u["Create"], "IndexStatus": "ACTIVE"}
                                                 for u in updates]}))
        updated = _define_table(description, table.ttl, self._storage)  # keys checked
        with self._storage.transaction():
            self._storage.save_table(table.name, description, table.ttl)
            updated.reindex()
        self._tables[table.name] = updated
        return {"TableDescription": self._describe(updated)}

    def list_tables(self, params: Params) -> Params:
        return {"TableNames": sorted(self._tables)}

    def update_time_to_live(self, params: Params) -> Params:
        table, spec = self._table(params), params["TimeToLiveSpecification"]
        ttl = {"AttributeName": spec["AttributeName"], "Enabled": bool(spec["Enabled"])}
        with self._storage.transaction():
            self._storage.save_table(table.name, table.description, ttl)
            self._storage.set_expiries(table.name, ttl["AttributeName"] if ttl["Enabled"]
                                       else None)
        table.ttl = ttl
        return {"TimeToLiveSpecification": dict(table.ttl)}

    def describe_time_to_live(self, params: Params) -> Params:
        ttl = self._table(params).ttl
        if ttl is None or not ttl["Enabled"]:
            return {"TimeToLiveDescription": {"TimeToLiveStatus": "DISABLED"}}
        return {"TimeToLiveDescription": {"TimeToLiveStatus": "ENABLED",
                                          "AttributeName": ttl["AttributeName"]}}

    # single items --------------------------------------------------------------------------
    def get_item(self, params: Params) -> Params:
        table = self._table(params)
        projection = _projection(params)
        context = Context(params.get("ExpressionAttributeNames"), None,
                          list(projection or ()))
        paths = _projected_paths(projection, context) if projection else None
        item = table.get(table.key(params["Key"]))
        used = consumed(params, lambda: {table.name: read_units(
            item_size(item), bool(params.get("ConsistentRead")))})
        if item is None:
            return used
        return {"Item": project(item, paths) if paths else item, **used}

    def batch_get_item(self, params: Params) -> Params:
        """Up to 100 keys over any tables, all read at once (never any UnprocessedKeys)."""
        requests = params["RequestItems"]
        if not 1 <= sum(len(r["Keys"]) for r in requests.values()) <= MAX_BATCH_GET_KEYS:
            raise validation(f"RequestItems must name 1 to {MAX_BATCH_GET_KEYS} keys")
        responses: Params = {}
        read: list[tuple[str, list[Item | None], bool]] = []
        for name, request in requests.items():
            if "ProjectionExpression" in request or "AttributesToGet" in request:
                raise validation("BatchGetItem: projections are not offered here")
            table = self._table({"TableName": name})
            items = [table.get(table.key(key)) for key in request["Keys"]]
            responses[name] = [item for item in items if item is not None]
            read.append((name, items, bool(request.get("ConsistentRead"))))
        used = consumed(params, lambda: {name: sum(read_units(item_size(i), consistent)
                                                   for i in items)
                                         for name, items, consistent in read})
        return {"Responses": responses, "UnprocessedKeys": {}, **used}

    def batch_write_item(self, params: Params) -> Params:
        """Up to 25 puts and deletes over any tables, unconditional, no key twice: all
        written at once (never any UnprocessedItems)."""
        requests = params["RequestItems"]
        if not 1 <= sum(len(writes) for writes in requests.values()) <= MAX_BATCH_WRITES:
            raise validation(f"RequestItems must hold 1 to {MAX_BATCH_WRITES} write requests")
        changes: list[_Change] = []
        for name, writes in requests.items():
            for write in writes:
                if set(write) == {"PutRequest"}:
                    change = self._plan("Put", {"TableName": name, **write["PutRequest"]})
                elif set(write) == {"DeleteRequest"}:
                    change = self._plan("Delete", {"TableName": name,
                                                   **write["DeleteRequest"]})
                else:
                    raise validation("a write request is one PutRequest or DeleteRequest")
                if any(c.table is change.table and c.key == change.key for c in changes):
                    raise validation("Provided list of item keys contains duplicates")
                changes.append(change)
        self._commit(changes)
        return {"UnprocessedItems": {}, **consumed(params, lambda: _write_units(changes, False))}

    def put_item(self, params: Params) -> Params:
        returns = _returns(params, ("NONE", "ALL_OLD"))
        change = self._plan("Put", params)
        self._commit([change])
        used = consumed(params, lambda: _write_units([change], False))
        return {"Attributes": change.old, **used} if returns == "ALL_OLD" and change.old else used

    def delete_item(self, params: Params) -> Params:
        returns = _returns(params, ("NONE", "ALL_OLD"))
        change = self._plan("Delete", params)
        self._commit([change])
        used = consumed(params, lambda: _write_units([change], False))
        return {"Attributes": change.old, **used} if returns == "ALL_OLD" and change.old else used

    def update_item(self, params: Params) -> Params:
        returns = _returns(params, ("NONE", "ALL_OLD", "ALL_NEW", "UPDATED_OLD", "UPDATED_NEW"))
        change = self._plan("Update", params)
        self._commit([change])
        used = consumed(params, lambda: _write_units([change], False))
        if returns == "NONE":
            return used
        source = change.old if returns.endswith("OLD") else change.new
        if returns.startswith("UPDATED"):
            source = project(source or {}, change.written or [])
        return {"Attributes": source, **used} if source else used

    def _plan(self, kind: str, params: Params) -> _Change:
        """Check one write (its condition included) and compute the item it leaves; an item an
        in-flight transaction holds is TransactionConflictException."""
        table = self._table(params)
        if "Expected" in params or "AttributeUpdates" in params:
            raise validation("the embedded DynamoDB takes expressions, not the legacy "
                             "Expected / AttributeUpdates parameters")
        condition = _condition(params.get("ConditionExpression"), "ConditionExpression")
        update = parse_update(params["UpdateExpression"]) if kind == "Update" else None
        context = Context(params.get("ExpressionAttributeNames"),
                          params.get("ExpressionAttributeValues"),
                          [t for t in (condition, update) if t is not None])
        if kind == "Put":
            key, new = table.key(params["Item"], whole_item=True), params["Item"]
        else:
            key, new = table.key(params["Key"]), None
        if (table.name, key) in self._held:
            raise DynamoDBError("TransactionConflictException",
                                "Transaction is ongoing for the item")
        old = table.get(key)
        if condition is not None and not holds(condition, old, context):
            raise condition_failed(
                old, params.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD")
        change = _Change(table, key, old, new)
        if update is not None:
            change.new = table.get(key) or table.key_item(key)
            change.written = apply_update(update, old, change.new, context, table.keys.names)
        elif kind == "ConditionCheck":
            change.write = False
        if change.new is not None and change.write:
            change.text = table.encode(change.new)
        return change

    def _commit(self, changes: list[_Change]) -> None:
        with self._storage.transaction():
            for change in changes:
                if not change.write:
                    continue
                if change.text is None or change.new is None:
                    change.table.delete(change.key)
                else:
                    change.table.put(change.key, change.new, change.text)

    # transactions --------------------------------------------------------------------------
    def transact_write_items(self, params: Params) -> Params:
        """All the actions or none (serialized: the mode without conflicts)."""
        changes = self._prepare(params)[0]
        self._commit(changes)
        return consumed(params, lambda: _write_units(changes, True))

    def _prepare(self, params: Params) -> tuple[list[_Change], list[tuple[str, Key]]]:
        """A transaction's changes, every condition checked, and the items it targets; a
        failed condition or a held item cancels it (TransactionCanceledException)."""
        actions = params["TransactItems"]
        if not 1 <= len(actions) <= MAX_TRANSACTION_ITEMS:
            raise validation(f"TransactItems must have 1 to {MAX_TRANSACTION_ITEMS} actions")
        targets = []
        for action in actions:
            [(kind, body)] = action.items()
            if kind not in ("Put", "Update", "Delete", "ConditionCheck"):
                raise validation(f"unknown transaction action {kind}")
            table = self._table(body)
            key = table.key(body["Item"], whole_item=True) if kind == "Put" else \
                table.key(body["Key"])
            targets.append((body["TableName"], key))
        if len(set(targets)) != len(targets):
            raise validation("Transaction request cannot include multiple operations on one item")
        changes: list[_Change | None] = []
        reasons: list[Params] = []
        for action in actions:
            [(kind, body)] = action.items()
            try:
                changes.append(self._plan(kind, body))
                reasons.append({"Code": "None"})
            except DynamoDBError as error:
                if error.code == "TransactionConflictException":
                    reasons.append(dict(TRANSACTION_CONFLICT))
                elif error.code == "ConditionalCheckFailedException":
                    reasons.append({"Code": "ConditionalCheckFailed", "Message": error.message,
                                    **error.fields})
                else:
                    raise
                changes.append(None)
        if any(change is None for change in changes):
            codes = ", ".join(reason["Code"] for reason in reasons)
            raise DynamoDBError("TransactionCanceledException",
                                f"Transaction cancelled, please refer cancellation reasons for "
                                f"specific reasons [{codes}]", {"CancellationReasons": reasons})
        return [change for change in changes if change is not None], targets

    def _transact_in_two_phases(self, params: Params) -> Params:
        """The conflict mode's TransactWriteItems: prepare and take the items, hold them with
        the lock released, commit and let them go. While held, nothing else writes them, so
        the changes planned at the start are still right at the commit."""

        def take(params: Params) -> Params:
            changes, targets = self._prepare(params)
            self._held.update(targets)
            return {"changes": changes, "targets": targets}

        def commit(prepared: Params) -> Params:
            try:
                self._commit(prepared["changes"])
            finally:
                self._held.difference_update(prepared["targets"])
            return consumed(params, lambda: _write_units(prepared["changes"], True))

        prepared = self._locked("TransactWriteItems", take, params)
        try:
            time.sleep(self.transaction_hold_s or 0.0)
        finally:
            answer = self._locked("TransactWriteItems", commit, prepared)
        return answer

    # reading many --------------------------------------------------------------------------
    def query(self, params: Params) -> Params:
        table = self._table(params)
        index = _index(table, params.get("IndexName"))
        keys = index.keys if index else table.keys
        key_condition = parse_condition(params["KeyConditionExpression"],
                                        "KeyConditionExpression")
        hash_value, range_term = _key_terms(key_condition, keys, table.types, params)
        if index is None:
            found = list(table.partition(hash_value))
        else:  # the items holding the index's keys (index_keys in storage), not a scan
            found = list(table.index_partition(index, hash_value))
        reading = _Reading(params, [key_condition])
        if range_term is not None:
            found = [item for item in found if holds(range_term, item, reading.context)]
        return _page(table, index, found, params, reading,
                     forward=params.get("ScanIndexForward", True))

    def scan(self, params: Params) -> Params:
        table = self._table(params)
        index = _index(table, params.get("IndexName"))
        found = list(table.items())
        if index is not None:
            found = [i for i in found if all(n in i for n in index.keys.names)]
        return _page(table, index, found, params, _Reading(params, []), forward=True)


def _write_units(changes: list[_Change], transactional: bool) -> dict[str, float]:
    """The write units of ``changes`` by table (a ConditionCheck: its item, read to check)."""
    units: dict[str, float] = {}
    for change in changes:
        if change.write:
            spent = write_units(change.table, change.old, change.new, transactional)
        else:
            spent = 2.0 * max(1, -(-item_size(change.old) // 1024))
        units[change.table.name] = units.get(change.table.name, 0.0) + spent
    return units


def _define_table(params: Params, ttl: Params | None, storage: Storage) -> Table:
    """A table as CreateTable's parameters (or the description made of them) define it."""
    types = {d["AttributeName"]: d["AttributeType"] for d in params["AttributeDefinitions"]}
    keys = KeySchema.parse(params["KeySchema"])
    indexes = {i["IndexName"]: Index(i["IndexName"], KeySchema.parse(i["KeySchema"]),
                                     i.get("Projection", {"ProjectionType": "ALL"}))
               for i in params.get("GlobalSecondaryIndexes", [])}
    for schema in [keys, *(i.keys for i in indexes.values())]:
        if any(types.get(n) not in ("S", "N", "B") for n in schema.names):
            raise validation("One or more parameter values were invalid: a key attribute "
                             "has no AttributeDefinitions entry")
    return Table(params, keys, types, indexes, storage, ttl)


class _Reading:
    """A Query's or Scan's FilterExpression and ProjectionExpression, with its placeholders."""

    def __init__(self, params: Params, trees: list[Tree]) -> None:
        self.filter = _condition(params.get("FilterExpression"), "FilterExpression")
        self.projection = _projection(params)
        self.context = Context(
            params.get("ExpressionAttributeNames"), params.get("ExpressionAttributeValues"),
            trees + [t for t in (self.filter,) if t is not None] + list(self.projection or ()))


def _page(table: Table, index: Index | None, found: list[Item], params: Params,
          reading: _Reading, forward: bool) -> Params:
    """Order, resume after ExclusiveStartKey, stop at Limit, then filter and project."""
    found.sort(key=lambda item: table.order(item, index), reverse=not forward)
    start = params.get("ExclusiveStartKey")
    if start is not None:
        after = table.order(start, index)
        found = [i for i in found
                 if (table.order(i, index) > after if forward
                     else table.order(i, index) < after)]
    limit = params.get("Limit")
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise validation("Limit must be at least 1")
    evaluated = found[:limit] if limit is not None else found
    answer: Params = {"ScannedCount": len(evaluated)}
    answer.update(consumed(params, lambda: {table.name: read_units(
        sum(item_size(index.project(i, table.keys) if index else i) for i in evaluated),
        bool(params.get("ConsistentRead")))}))
    if limit is not None and len(evaluated) == limit and evaluated:
        last = evaluated[-1]
        names = table.keys.names + (index.keys.names if index else ())
        answer["LastEvaluatedKey"] = {n: last[n] for n in names}
    if index is not None:  # a filter sees only what the index holds
        evaluated = [index.project(item, table.keys) for item in evaluated]
    if reading.filter is not None:
        evaluated = [item for item in evaluated if holds(reading.filter, item, reading.context)]
    if reading.projection:
        paths = _projected_paths(reading.projection, reading.context)
        evaluated = [project(item, paths) for item in evaluated]
    answer["Count"] = len(evaluated)
    if params.get("Select") != "COUNT":
        answer["Items"] = evaluated
    return answer


def _condition(text: str | None, what: str) -> Tree | None:
    return parse_condition(text, what) if text is not None else None


def _projection(params: Params) -> Tree | None:
    text = params.get("ProjectionExpression")
    return parse_projection(text) if text is not None else None


def _projected_paths(projection: Tree, context: Context) -> list[Path]:
    paths = [context.resolve(path) for path in projection]
    check_overlaps(paths, "ProjectionExpression")
    return paths


def _returns(params: Params, allowed: tuple[str, ...]) -> str:
    value = params.get("ReturnValues", "NONE")
    if value not in allowed:
        raise validation("Return values set to invalid value")
    return str(value)


def _index(table: Table, name: str | None) -> Index | None:
    if name is None:
        return None
    if name not in table.indexes:
        raise validation(f"The table does not have the specified index: {name}")
    return table.indexes[name]


def _key_terms(tree: Tree, keys: KeySchema, types: dict[str, str],
               params: Params) -> tuple[str, Tree | None]:
    """The hash key's value and the range key's condition, if any, of a KeyConditionExpression:
    ``hash = :v`` and, optionally, ANDed, one comparison (not <>), BETWEEN or begins_with of
    the range key against values of its type."""
    terms = [tree[1], tree[2]] if tree[0] == "and" else [tree]
    names = params.get("ExpressionAttributeNames") or {}
    values = params.get("ExpressionAttributeValues") or {}

    def subject_and_operands(term: Tree) -> tuple[str | None, list[Tree]]:
        if term[0] == "cmp" and term[1] != "<>":
            subject, operands = term[2], [term[3]]
        elif term[0] == "between":
            subject, operands = term[1], [term[2], term[3]]
        elif term[0] == "call" and term[1] == "begins_with":
            subject, operands = term[2][0], [term[2][1]]
        else:
            return None, []
        if subject[0] != "path" or len(subject[1]) != 1:
            return None, []
        return str(names.get(subject[1][0], subject[1][0])), operands

    found: dict[str, tuple[Tree, list[Tree]]] = {}
    for term in terms:
        attribute, operands = subject_and_operands(term)
        if attribute not in keys.names or attribute in found:
            raise validation("Query condition missed key schema element or has an unsupported "
                             "form")
        found[attribute] = (term, operands)
        for operand in operands:
            value = values.get(operand[1]) if operand[0] == "value" else None
            if not isinstance(value, dict) or list(value) != [types[attribute]]:
                raise validation("One or more parameter values were invalid: Condition "
                                 "parameter type does not match schema type")
        if term[0] == "call" and types[attribute] == "N":
            raise validation("Invalid KeyConditionExpression: begins_with takes a string or "
                             "binary sort key")
    if keys.hash_key not in found or found[keys.hash_key][0][:2] != ("cmp", "="):
        raise validation("Query condition missed key schema element")
    hash_value = values[found[keys.hash_key][1][0][1]]
    range_term = found[keys.range_key][0] if keys.range_key in found else None
    return key_text(hash_value), range_term
