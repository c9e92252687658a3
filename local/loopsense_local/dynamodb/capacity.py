"""What a request consumes, by DynamoDB's rules, for ``ReturnConsumedCapacity`` (TOTAL or
INDEXES: the engine answers both as TOTAL, one entry per table).

From DynamoDB's developer guide ("Read/write capacity mode", "Capacity management for
transactions", "Query and Scan"): a write costs 1 unit per KB (rounded up) of the larger of
the item before and after it, a transactional write twice that; a strongly consistent read 1
unit per 4 KB, an eventually consistent one half, a transactional read twice; a Query or Scan
rounds the items it evaluated up once, a batch each item; a read of an absent item still costs
its minimum. A global secondary index the write changes costs its own writes (the item's
projection there, a key change a delete and a put), counted with the table; a write that
changes nothing the index holds costs it nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from loopsense_local.dynamodb.table import Table
from loopsense_local.dynamodb.values import Item, checked_size

KB, READ_BLOCK = 1024, 4096


def item_size(item: Item | None) -> int:
    if not item:
        return 0
    return sum(len(str(name).encode()) + checked_size(value) for name, value in item.items())


def write_units(table: Table, old: Item | None, new: Item | None, transactional: bool) -> float:
    """One item written (``new`` None: deleted), its indexes included."""
    units = max(1, math.ceil(max(item_size(old), item_size(new)) / KB))
    units *= 2 if transactional else 1
    for index in table.indexes.values():
        had = old is not None and all(n in old for n in index.keys.names)
        has = new is not None and all(n in new for n in index.keys.names)
        before = index.project(old, table.keys) if had and old is not None else None
        after = index.project(new, table.keys) if has and new is not None else None
        if before == after:
            continue  # nothing the index holds changed: no write there
        if before is not None and after is not None and all(
                old[n] == new[n] for n in index.keys.names):  # type: ignore[index]
            units += max(1, math.ceil(max(item_size(before), item_size(after)) / KB))
        else:
            units += sum(max(1, math.ceil(item_size(i) / KB)) for i in (before, after)
                         if i is not None)
    return float(units)


def read_units(size: int, consistent: bool) -> float:
    return max(1, math.ceil(size / READ_BLOCK)) * (1.0 if consistent else 0.5)


def consumed(params: dict[str, Any], count: Callable[[], dict[str, float]]) -> dict[str, Any]:
    """The answer's ConsumedCapacity when the request asked for it, else nothing (``count`` is
    called only then: sizing an item walks all of it, and most requests never ask)."""
    if params.get("ReturnConsumedCapacity", "NONE") == "NONE":
        return {}
    units = count()
    if not units:
        return {}
    entries = [{"TableName": name, "CapacityUnits": total} for name, total in sorted(units.items())]
    single = "TableName" in params
    return {"ConsumedCapacity": entries[0] if single else entries}
