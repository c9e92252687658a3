"""One table: its key schema and indexes, its items, and the rules DynamoDB applies to keys.

Items are kept as JSON text (in loopsense_local.dynamodb.storage): every read hands out fresh
objects and no caller can change a stored item by keeping a reference to what it wrote or read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from loopsense_local.dynamodb.errors import validation
from loopsense_local.dynamodb.storage import Storage, expiry
from loopsense_local.dynamodb.values import (
    AttributeValue,
    Item,
    checked_size,
    key_text,
    sort_value,
    type_of,
)

MAX_ITEM_BYTES = 400 * 1024
Key = tuple[str, str | None]  # the hash key's and range key's values, as sent


@dataclass(frozen=True)
class KeySchema:
    hash_key: str
    range_key: str | None

    @classmethod
    def parse(cls, schema: list[dict[str, str]]) -> KeySchema:
        by_type = {element["KeyType"]: element["AttributeName"] for element in schema}
        if "HASH" not in by_type or len(schema) != len(by_type):
            raise validation("Invalid KeySchema: exactly one HASH and at most one RANGE key")
        return cls(by_type["HASH"], by_type.get("RANGE"))

    @property
    def names(self) -> tuple[str, ...]:
        return (self.hash_key,) if self.range_key is None else (self.hash_key, self.range_key)


@dataclass(frozen=True)
class Index:
    name: str
    keys: KeySchema
    projection: dict[str, Any]

    def project(self, item: Item, table_keys: KeySchema) -> Item:
        kind = self.projection.get("ProjectionType", "ALL")
        if kind == "ALL":
            return item
        kept = {*table_keys.names, *self.keys.names,
                *(self.projection.get("NonKeyAttributes", []) if kind == "INCLUDE" else [])}
        return {name: value for name, value in item.items() if name in kept}


@dataclass
class Table:
    description: dict[str, Any]  # as CreateTable was given it, for DescribeTable
    keys: KeySchema
    types: dict[str, str]  # attribute -> S | N | B, from AttributeDefinitions
    indexes: dict[str, Index]
    storage: Storage
    ttl: dict[str, Any] | None = None

    @property
    def name(self) -> str:
        return str(self.description["TableName"])

    @property
    def ttl_attribute(self) -> str | None:
        """The attribute TTL reads, while TTL is enabled."""
        return self.ttl["AttributeName"] if self.ttl and self.ttl["Enabled"] else None

    # keys ----------------------------------------------------------------------------------
    def key(self, values: dict[str, AttributeValue], whole_item: bool = False) -> Key:
        """The key of an item (``whole_item``) or of a request's Key, checked as DynamoDB does."""
        names = self.keys.names
        if not whole_item and set(values) != set(names):
            raise validation("The provided key element does not match the schema")
        for name in names:
            if name not in values:
                raise validation(f"One or more parameter values were invalid: Missing the key "
                                 f"{name} in the item")
            self._check_key_value(name, values[name], None)
        hash_value = key_text(values[names[0]])
        return hash_value, (key_text(values[names[1]]) if len(names) > 1 else None)

    def _check_key_value(self, name: str, value: AttributeValue, index: str | None) -> None:
        checked_size(value)  # a well-formed value first
        expected, actual = self.types.get(name), type_of(value)
        if actual != expected:
            where = "key" if index is None else "Index Key"
            suffix = "" if index is None else f" IndexName: {index}"
            raise validation(f"One or more parameter values were invalid: Type mismatch for "
                             f"{where} {name} expected: {expected} actual: {actual}{suffix}")
        if value[actual] == "":
            raise validation(f"One or more parameter values are not valid. The AttributeValue "
                             f"for a key attribute cannot contain an empty string value. "
                             f"Key: {name}")

    def encode(self, item: Item) -> str:
        """An item checked as DynamoDB checks it before a write, as the text ``put`` stores."""
        for index in self.indexes.values():
            for name in index.keys.names:
                if name in item:
                    self._check_key_value(name, item[name], index.name)
        size = sum(len(str(name).encode()) + checked_size(value) for name, value in item.items())
        if size > MAX_ITEM_BYTES:
            raise validation("Item size has exceeded the maximum allowed size")
        return json.dumps(item, separators=(",", ":"))

    def key_item(self, key: Key) -> Item:
        """The key attributes alone: what an update starts from when the item is absent."""
        return {name: {self.types[name]: value}
                for name, value in zip(self.keys.names, key, strict=False)}

    # items ---------------------------------------------------------------------------------
    def get(self, key: Key) -> Item | None:
        text = self.storage.get(self.name, *key)
        return json.loads(text) if text is not None else None

    def put(self, key: Key, item: Item, text: str) -> None:
        self.storage.put(self.name, *key, text, expiry(item, self.ttl_attribute),
                         self.index_keys(item))

    def index_keys(self, item: Item) -> list[tuple[str, str]]:
        """The indexes that hold the item (it has all their key attributes), with its hash key
        value in each."""
        return [(index.name, key_text(item[index.keys.hash_key]))
                for index in self.indexes.values()
                if all(name in item for name in index.keys.names)]

    def reindex(self) -> None:
        self.storage.reindex(self.name, lambda text: self.index_keys(json.loads(text)))

    def delete(self, key: Key) -> None:
        self.storage.delete(self.name, *key)

    def partition(self, hash_value: str) -> Iterator[Item]:
        for text in self.storage.partition(self.name, hash_value):
            yield json.loads(text)

    def index_partition(self, index: Index, hash_value: str) -> Iterator[Item]:
        for text in self.storage.index_partition(self.name, index.name, hash_value):
            yield json.loads(text)

    def items(self) -> Iterator[Item]:
        for text in self.storage.items(self.name):
            yield json.loads(text)

    def count(self) -> int:
        return self.storage.count(self.name)

    # order ---------------------------------------------------------------------------------
    def order(self, item: Item, index: Index | None) -> tuple[Any, ...]:
        """Where an item sorts in a Query or Scan: by the index's keys, then the table's."""
        names = (index.keys.names if index else ()) + self.keys.names
        return tuple(sort_value(item[name]) if name in item else None for name in names)
