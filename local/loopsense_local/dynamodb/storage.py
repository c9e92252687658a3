"""Where the embedded DynamoDB keeps its tables and items: SQLite, in a file or in memory.

Every DynamoDB write (an item written or deleted, a transaction, a table created or deleted, a
TTL setting) is one SQLite transaction, so a process killed at any moment leaves either the
state before the write or the state after it. The file is opened in WAL mode with
synchronous=NORMAL: a commit survives the process crashing (the WAL is in the OS's hands), not
the machine losing power (docs/decisions.md). It is also opened in EXCLUSIVE locking mode and
written to at once, so a second server on the same file fails at start instead of both writing.

Items are rows of JSON text, keyed by table and key values; ``expires`` holds the item's TTL
attribute (epoch seconds) when its table has TTL enabled, indexed, so a sweep deletes what has
expired without reading any item. ``index_keys`` holds, for each item a global secondary index
holds, that index's hash key value, so a Query of an index reads the items of one index
partition instead of decoding every item of the table. Callers serialise every call (the
engine's one lock).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from loopsense_local.dynamodb.values import AttributeValue, number

IN_MEMORY = ":memory:"
DATABASE_FILE = "dynamodb.sqlite3"
_NO_RANGE = ""  # a table without a range key (a key value is never empty: DynamoDB refuses it)
_VERSION = 1  # PRAGMA user_version: 1 = index_keys kept; a file of version 0 is reindexed
IndexKeys = Iterable[tuple[str, str]]  # (index name, the item's hash key value in that index)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tables (
    name TEXT PRIMARY KEY,
    description TEXT NOT NULL,
    ttl TEXT
);
CREATE TABLE IF NOT EXISTS items (
    tbl TEXT NOT NULL,
    hash TEXT NOT NULL,
    range TEXT NOT NULL,
    item TEXT NOT NULL,
    expires REAL,
    PRIMARY KEY (tbl, hash, range)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS items_expiry ON items (tbl, expires) WHERE expires IS NOT NULL;
CREATE TABLE IF NOT EXISTS index_keys (
    tbl TEXT NOT NULL,
    idx TEXT NOT NULL,
    hash TEXT NOT NULL,
    item_hash TEXT NOT NULL,
    item_range TEXT NOT NULL,
    PRIMARY KEY (tbl, idx, hash, item_hash, item_range)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS index_keys_item ON index_keys (tbl, item_hash, item_range);
"""


class StoreLocked(Exception):
    """Another process holds the data file."""


class Storage:
    def __init__(self, database: str | Path = IN_MEMORY) -> None:
        self.database = str(database)
        self._db = sqlite3.connect(self.database, isolation_level=None, timeout=0,
                                   check_same_thread=False)  # the engine's lock serialises
        try:
            if self.database != IN_MEMORY:
                self._db.execute("PRAGMA locking_mode=EXCLUSIVE")
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
            with self.transaction():  # the first write takes the file's lock, for good
                version = self._db.execute("PRAGMA user_version").fetchone()[0]
                for statement in _SCHEMA.split(";")[:-1]:
                    self._db.execute(statement)
                # A file written before index_keys existed: the engine rebuilds them at load.
                self.needs_reindex = version < _VERSION and self._db.execute(
                    "SELECT 1 FROM items LIMIT 1").fetchone() is not None
                self._db.execute(f"PRAGMA user_version = {_VERSION}")
        except sqlite3.OperationalError as error:
            self._db.close()
            if "locked" in str(error):
                raise StoreLocked(f"the local store {self.database} is in use by another "
                                  f"process (another `loopsense serve`?)") from None
            raise

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One SQLite transaction: every write inside it is committed, or none is."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    # tables --------------------------------------------------------------------------------
    def tables(self) -> list[tuple[str, dict[str, Any], dict[str, Any] | None]]:
        rows = self._db.execute("SELECT name, description, ttl FROM tables ORDER BY name")
        return [(name, json.loads(description), json.loads(ttl) if ttl else None)
                for name, description, ttl in rows]

    def save_table(self, name: str, description: dict[str, Any],
                   ttl: dict[str, Any] | None) -> None:
        self._db.execute("INSERT OR REPLACE INTO tables VALUES (?, ?, ?)",
                         (name, json.dumps(description), json.dumps(ttl) if ttl else None))

    def drop_table(self, name: str) -> None:
        self._db.execute("DELETE FROM index_keys WHERE tbl = ?", (name,))
        self._db.execute("DELETE FROM items WHERE tbl = ?", (name,))
        self._db.execute("DELETE FROM tables WHERE name = ?", (name,))

    # items ---------------------------------------------------------------------------------
    def get(self, table: str, hash_value: str, range_value: str | None) -> str | None:
        row = self._db.execute("SELECT item FROM items WHERE tbl = ? AND hash = ? AND range = ?",
                               (table, hash_value, range_value or _NO_RANGE)).fetchone()
        return row[0] if row else None

    def put(self, table: str, hash_value: str, range_value: str | None, text: str,
            expires: float | None, index_keys: IndexKeys = ()) -> None:
        self._db.execute("INSERT OR REPLACE INTO items VALUES (?, ?, ?, ?, ?)",
                         (table, hash_value, range_value or _NO_RANGE, text, expires))
        self._index(table, hash_value, range_value or _NO_RANGE, index_keys)

    def delete(self, table: str, hash_value: str, range_value: str | None) -> None:
        self._db.execute("DELETE FROM items WHERE tbl = ? AND hash = ? AND range = ?",
                         (table, hash_value, range_value or _NO_RANGE))
        self._index(table, hash_value, range_value or _NO_RANGE, ())

    def _index(self, table: str, hash_value: str, range_value: str, keys: IndexKeys) -> None:
        """The item's rows of index_keys: the ones given replace the ones it had."""
        self._db.execute("DELETE FROM index_keys WHERE tbl = ? AND item_hash = ? AND "
                         "item_range = ?", (table, hash_value, range_value))
        self._db.executemany("INSERT INTO index_keys VALUES (?, ?, ?, ?, ?)",
                             [(table, index, key, hash_value, range_value)
                              for index, key in keys])

    def reindex(self, table: str, keys_of: Callable[[str], IndexKeys]) -> None:
        """Rebuild a table's index_keys from its items (``keys_of`` an item's text)."""
        rows = self._db.execute("SELECT hash, range, item FROM items WHERE tbl = ?",
                                (table,)).fetchall()
        for hash_value, range_value, text in rows:
            self._index(table, hash_value, range_value, keys_of(text))

    def index_partition(self, table: str, index: str, hash_value: str) -> list[str]:
        """The items an index holds under one hash key value."""
        rows = self._db.execute(
            "SELECT i.item FROM index_keys k JOIN items i ON i.tbl = k.tbl "
            "AND i.hash = k.item_hash AND i.range = k.item_range "
            "WHERE k.tbl = ? AND k.idx = ? AND k.hash = ?", (table, index, hash_value))
        return [row[0] for row in rows]

    def partition(self, table: str, hash_value: str) -> list[str]:
        rows = self._db.execute("SELECT item FROM items WHERE tbl = ? AND hash = ?",
                                (table, hash_value))
        return [row[0] for row in rows]

    def items(self, table: str) -> list[str]:
        return [row[0] for row in self._db.execute("SELECT item FROM items WHERE tbl = ?",
                                                   (table,))]

    def count(self, table: str) -> int:
        row = self._db.execute("SELECT COUNT(*) FROM items WHERE tbl = ?", (table,)).fetchone()
        return int(row[0])

    def set_expiries(self, table: str, attribute: str | None) -> None:
        """Recompute every item's ``expires`` after the table's TTL setting changed."""
        rows = self._db.execute("SELECT hash, range, item FROM items WHERE tbl = ?",
                                (table,)).fetchall()
        self._db.executemany(
            "UPDATE items SET expires = ? WHERE tbl = ? AND hash = ? AND range = ?",
            [(expiry(json.loads(text), attribute), table, hash_value, range_value)
             for hash_value, range_value, text in rows])

    def sweep(self, table: str, now: float, limit: int) -> int:
        """Delete up to ``limit`` items that expired before ``now``; how many were deleted."""
        with self.transaction():
            expired = self._db.execute(
                "SELECT hash, range FROM items WHERE tbl = ? AND expires < ? LIMIT ?",
                (table, now, limit)).fetchall()
            for hash_value, range_value in expired:
                self.delete(table, hash_value, range_value)
        return len(expired)


def expiry(item: dict[str, AttributeValue], attribute: str | None) -> float | None:
    """When an item expires: its TTL attribute, if that is a Number (epoch seconds), as
    DynamoDB reads it; None (never) for any other type or when TTL is off."""
    value = item.get(attribute) if attribute is not None else None
    if not isinstance(value, dict) or list(value) != ["N"]:
        return None
    return float(number(value))
