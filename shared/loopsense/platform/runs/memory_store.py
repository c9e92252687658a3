"""Working memory, lessons, snapshots and the event log of a run in the runs table
(docs/recover.md). Every DynamoDB access of them is here; the rules are platform/runs/recover.py.

Items (``pk``, ``sk``):

- ``<tenantId>#<runId>``, ``MEMORY``: the head of the run's working memory. ``generation``
  (the id of the live generation), ``count`` (its entries),
  ``events`` (events appended so far), ``lastBreak``/``lastCount`` (the latest break's snapshot
  and how many entries it took: a break copies ``count`` there in its own write), ``recent``
  (the last Idempotency-Keys of breaks and restores).
- ``<tenantId>#<runId>#MEMORY``, ``<generation>#<key>``: one entry of a generation, ``value``
  the canonical JSON text. In a partition of their own, so that reading the run's agents,
  lessons and events never pages through memory entries (run ids hold no ``#``).
- ``<tenantId>#<runId>``, ``LESSON#<id>``: a lesson or fact, or a snapshot (``kind``
  ``loop_detected`` or ``replaced_by_restore``, ``generation``: the frozen generation holding
  its entries). Ids sort by creation time.
- ``<tenantId>#<runId>``, ``EVENT#<seq>``: the event log (``seq`` zero-padded: sorted).

A generation is written only while it is the live one: every entry write is a transaction
whose head update is conditional on the generation it read. A break makes a new generation
live with one conditional write, so the entries of the old one are frozen from then on: they
are the snapshot, never copied.

A head past its ``expiresAt`` is absent, whether TTL has deleted it yet or not (TTL deletes
late and in no order): a run without a live head starts a fresh generation (so entries of an
expired one are never read again) and takes its next event seq from its newest event item (an
expired event may still hold the seq the head counted). Its first write is still conditional
on the head item as stored (absent, or the expired generation), so racing writers take turns.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from loopsense import jsonio
from loopsense.platform.runs.store import partition
from loopsense.store.dynamo import ConditionFailed, Dynamo, from_item, to_item

HEAD = "MEMORY"
LESSON = "LESSON#"
EVENT = "EVENT#"
BATCH_WRITES = 25  # BatchWriteItem's limit


def entries_partition(tenant_id: str, run_id: str) -> str:
    return f"{partition(tenant_id, run_id)}#MEMORY"


def event_sk(seq: int) -> str:
    return f"{EVENT}{seq:010d}"


@dataclass
class Head:
    """The live head of a run's working memory, or (``live`` False) a fresh one to create."""

    generation: str = field(default_factory=lambda: uuid.uuid4().hex)
    count: int = 0
    events: int = 0
    last_break: str | None = None
    last_count: int = 0
    recent: list[list[Any]] = field(default_factory=list)  # [[key, body, at, answer], ...]
    expires_at: int = 0
    live: bool = False
    stored: str | None = None  # the generation of the item as stored, expired or not

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> Head:
        return cls(item["generation"], int(item.get("count", 0)), int(item.get("events", 0)),
                   item.get("lastBreak"), int(item.get("lastCount", 0)),
                   json.loads(item.get("recent", "[]")), int(item["expiresAt"]), True,
                   item["generation"])


@dataclass(frozen=True)
class Entry:
    key: str
    value: str  # canonical JSON text
    updated_at: str
    expires_at: int


class MemoryStore:
    def __init__(self, db: Dynamo, table: str) -> None:
        self.db, self.table = db, table

    def _key(self, pk: str, sk: str) -> dict[str, Any]:
        return {"pk": {"S": pk}, "sk": {"S": sk}}

    # reads ---------------------------------------------------------------------------------
    def head(self, tenant_id: str, run_id: str, epoch: int) -> Head:
        """The live head; else a fresh one, its events counted from the newest event item
        (one more query, only then)."""
        item = self.db.get(self.table, {"pk": partition(tenant_id, run_id), "sk": HEAD})
        if item is not None and int(item["expiresAt"]) > epoch:
            return Head.from_item(item)
        newest, _ = self.listed(tenant_id, run_id, EVENT, limit=1, newest_first=True)
        return Head(events=int(newest[0]["seq"]) if newest else 0,
                    stored=item["generation"] if item is not None else None)

    def entry(self, tenant_id: str, run_id: str, generation: str, key: str) -> Entry | None:
        item = self.db.get(self.table, {"pk": entries_partition(tenant_id, run_id),
                                        "sk": f"{generation}#{key}"})
        return _entry(item) if item else None

    def entries(self, tenant_id: str, run_id: str, generation: str, after: str | None = None,
                limit: int | None = None) -> tuple[list[Entry], str | None]:
        """A generation's entries in key order, from after ``after``: at most ``limit`` (all
        when None), and the key to continue after (None: no more)."""
        kwargs: dict[str, Any] = {
            "ConsistentRead": True,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :g)",
            "ExpressionAttributeValues": {":pk": {"S": entries_partition(tenant_id, run_id)},
                                          ":g": {"S": f"{generation}#"}}}
        if after is not None:
            kwargs["ExclusiveStartKey"] = self._key(entries_partition(tenant_id, run_id),
                                                    f"{generation}#{after}")
        found: list[Entry] = []
        while True:
            if limit is not None:
                kwargs["Limit"] = limit - len(found)
            page = self.db.call("query", TableName=self.table, **kwargs)
            found.extend(_entry(from_item(i)) for i in page.get("Items", []))
            last = page.get("LastEvaluatedKey")
            if last is None:
                return found, None
            if limit is not None and len(found) >= limit:
                return found, found[-1].key
            kwargs["ExclusiveStartKey"] = last

    def count(self, tenant_id: str, run_id: str, generation: str, epoch: int) -> int:
        """A generation's live entries (those not past their ``expiresAt`` at ``epoch``)."""
        total = 0
        kwargs: dict[str, Any] = {
            "ConsistentRead": True, "Select": "COUNT",
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :g)",
            "FilterExpression": "expiresAt > :now",
            "ExpressionAttributeValues": {":pk": {"S": entries_partition(tenant_id, run_id)},
                                          ":g": {"S": f"{generation}#"},
                                          ":now": {"N": str(epoch)}}}
        while True:
            page = self.db.call("query", TableName=self.table, **kwargs)
            total += int(page.get("Count", 0))
            if "LastEvaluatedKey" not in page:
                return total
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def lesson(self, tenant_id: str, run_id: str, lesson_id: str) -> dict[str, Any] | None:
        return self.db.get(self.table, {"pk": partition(tenant_id, run_id),
                                        "sk": LESSON + lesson_id})

    def listed(self, tenant_id: str, run_id: str, prefix: str, after: str | None = None,
               limit: int | None = None, newest_first: bool = False
               ) -> tuple[list[dict[str, Any]], str | None]:
        """Items of the run whose sort key starts with ``prefix`` (lessons, events), in order,
        resuming after the item whose sort key is ``prefix + after``."""
        pk = partition(tenant_id, run_id)
        kwargs: dict[str, Any] = {
            "ConsistentRead": True, "ScanIndexForward": not newest_first,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :p)",
            "ExpressionAttributeValues": {":pk": {"S": pk}, ":p": {"S": prefix}}}
        if after is not None:
            kwargs["ExclusiveStartKey"] = self._key(pk, prefix + after)
        found: list[dict[str, Any]] = []
        while True:
            if limit is not None:
                kwargs["Limit"] = limit - len(found)
            page = self.db.call("query", TableName=self.table, **kwargs)
            found.extend(from_item(i) for i in page.get("Items", []))
            last = page.get("LastEvaluatedKey")
            if last is None:
                return found, None
            if limit is not None and len(found) >= limit:
                return found, found[-1]["sk"][len(prefix):]
            kwargs["ExclusiveStartKey"] = last

    # writes: transaction actions, combined by the caller ------------------------------------
    def _head_condition(self, head: Head) -> tuple[str, dict[str, Any]]:
        """The head item is still as read: absent, or of the generation read (live or not)."""
        if head.stored is None:
            return "attribute_not_exists(generation)", {}
        return "generation = :cur", {":cur": {"S": head.stored}}

    def count_change(self, tenant_id: str, run_id: str, head: Head, delta: int, now: str,
                     expires_at: int, max_entries: int) -> dict[str, Any]:
        """The head of an entry write: still as read (else a break came first), ``count``
        moved by ``delta``, below ``max_entries`` when it grows. A fresh head is written
        whole over what an expired one left."""
        condition, values = self._head_condition(head)
        values.update(to_item({":g": head.generation, ":d": delta, ":now": now,
                               ":e": expires_at}))
        if not head.live:
            values.update(to_item({":ev": head.events, ":r": "[]"}))
            return {"Update": {
                "TableName": self.table, "Key": self._key(partition(tenant_id, run_id), HEAD),
                "UpdateExpression": "SET generation = :g, #c = :d, events = :ev, recent = :r, "
                                    "updatedAt = :now, expiresAt = :e "
                                    "REMOVE lastBreak, lastCount",
                "ConditionExpression": condition,
                "ExpressionAttributeNames": {"#c": "count"},
                "ExpressionAttributeValues": values}}
        if delta > 0:
            condition += " AND (attribute_not_exists(#c) OR #c < :max)"
            values[":max"] = {"N": str(max_entries)}
        return {"Update": {
            "TableName": self.table, "Key": self._key(partition(tenant_id, run_id), HEAD),
            "UpdateExpression": "SET generation = :g, updatedAt = :now, expiresAt = :e "
                                "ADD #c :d",
            "ConditionExpression": condition,
            "ExpressionAttributeNames": {"#c": "count"},
            "ExpressionAttributeValues": values}}

    def recount(self, tenant_id: str, run_id: str, head: Head, count: int) -> bool:
        """Set a live head's ``count`` to ``count`` (its live entries, counted), if its
        generation and count are still as read; False when they are not."""
        try:
            self.db.call("update_item", TableName=self.table,
                         Key=self._key(partition(tenant_id, run_id), HEAD),
                         UpdateExpression="SET #c = :n",
                         ConditionExpression="generation = :cur AND #c = :old",
                         ExpressionAttributeNames={"#c": "count"},
                         ExpressionAttributeValues=to_item({":cur": head.generation,
                                                            ":old": head.count, ":n": count}))
        except ConditionFailed:
            return False
        return True

    def put_entry(self, tenant_id: str, run_id: str, generation: str, key: str, value: str,
                  now: str, expires_at: int, existed: bool | None) -> dict[str, Any]:
        """Put an entry; ``existed`` True/False: only if it still does/does not exist."""
        action: dict[str, Any] = {
            "TableName": self.table,
            "Item": to_item({"pk": entries_partition(tenant_id, run_id),
                             "sk": f"{generation}#{key}", "value": value, "updatedAt": now,
                             "expiresAt": expires_at})}
        if existed is not None:
            action["ConditionExpression"] = ("attribute_exists(sk)" if existed
                                             else "attribute_not_exists(sk)")
        return {"Put": action}

    def delete_entry(self, tenant_id: str, run_id: str, generation: str, key: str
                     ) -> dict[str, Any]:
        return {"Delete": {
            "TableName": self.table,
            "Key": self._key(entries_partition(tenant_id, run_id), f"{generation}#{key}"),
            "ConditionExpression": "attribute_exists(sk)"}}

    def switch(self, tenant_id: str, run_id: str, head: Head, generation: str, count: int,
               snapshot_id: str, recent: list[list[Any]], now: str, expires_at: int
               ) -> dict[str, Any]:
        """Make ``generation`` the live one, if ``head.generation`` still is: the old one is
        frozen as ``snapshot_id``, its count copied to ``lastCount`` in the same write. The new
        generation holds ``count`` entries (0 after a break); one more event."""
        condition, values = self._head_condition(head)
        values.update(to_item({":new": generation, ":n": count, ":ev": head.events + 1,
                               ":sid": snapshot_id, ":r": jsonio.dumps(recent), ":now": now,
                               ":e": expires_at, ":zero": 0}))
        # the frozen count: the live one as committed; an expired head's held nothing live
        last = "if_not_exists(#c, :zero)" if head.live else ":zero"
        return {"Update": {
            "TableName": self.table, "Key": self._key(partition(tenant_id, run_id), HEAD),
            "UpdateExpression": f"SET generation = :new, lastCount = {last}, "
                                "#c = :n, events = :ev, lastBreak = :sid, recent = :r, "
                                "updatedAt = :now, expiresAt = :e",
            "ConditionExpression": condition,
            "ExpressionAttributeNames": {"#c": "count"},
            "ExpressionAttributeValues": values}}

    def put_lesson(self, tenant_id: str, run_id: str, values: dict[str, Any]) -> dict[str, Any]:
        item = {"pk": partition(tenant_id, run_id), "sk": LESSON + values["lessonId"], **values}
        return {"Put": {"TableName": self.table, "Item": to_item(item),
                        "ConditionExpression": "attribute_not_exists(sk)"}}

    def put_event(self, tenant_id: str, run_id: str, seq: int, values: dict[str, Any]
                  ) -> dict[str, Any]:
        item = {"pk": partition(tenant_id, run_id), "sk": event_sk(seq), "seq": seq, **values}
        return {"Put": {"TableName": self.table, "Item": to_item(item),
                        "ConditionExpression": "attribute_not_exists(sk)"}}

    def stage(self, tenant_id: str, run_id: str, generation: str, entries: list[Entry],
              now: str, expires_at: int) -> None:
        """Write entries into a generation nobody reads yet (a restore's copy): one
        BatchWriteItem per 25 (unconditional: nothing else writes there); visible only once a
        ``switch`` makes the generation live."""
        for start in range(0, len(entries), BATCH_WRITES):
            puts = [{"PutRequest": {"Item": self.put_entry(
                tenant_id, run_id, generation, e.key, e.value, now, expires_at, None
            )["Put"]["Item"]}} for e in entries[start:start + BATCH_WRITES]]
            self.db.batch("batch_write_item", {self.table: puts}, "UnprocessedItems")


def _entry(item: dict[str, Any]) -> Entry:
    _, key = item["sk"].split("#", 1)
    return Entry(key, item["value"], item.get("updatedAt", ""), int(item["expiresAt"]))
