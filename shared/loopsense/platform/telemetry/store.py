"""Telemetry ingestion and failure groups in one DynamoDB table (TelemetryTable).

Access patterns and keys (docs/failure-groups.md has the full table):

| item | pk | sk |
| --- | --- | --- |
| execution state | ``X#<tenant>#<execution>`` | ``#state`` |
| a batch (its events, zlib JSON) | same | ``B#<seq, 10 digits>`` |
| an Idempotency-Key of a batch | same | ``K#<key>`` |
| a detector counter | same | ``C#<i or s>#<sha256>`` |
| a signature fired by the execution | same | ``F#<signature>`` |
| a failure group | ``G#<tenant>`` | ``<signature>`` |
| an execution of a group | ``M#<tenant>#<signature>`` | ``<firedAt>#<execution>`` |
| the tenant's telemetry settings | ``S#<tenant>`` | ``#settings`` |
| an OTLP span and its log records, joined | ``J#<tenant>#<trace id>`` | ``<span id>`` |

Indexes: ``byLastSeen`` (gpk ``G#<tenant>``, gsk ``<lastSeen>#<signature>``) lists a tenant's
groups newest first; ``byClass`` (cpk ``G#<tenant>#<class>``, same gsk) lists one class; ``byIdle``
(ipk ``open``, idleAt) is sparse: only executions not yet ended carry ipk, so the sweeper finds
the idle ones without a scan (and, under ipk ``join``, the OTLP spans still waiting for their
log records). Every key starts with the tenant (the sweeper's index aside, which holds keys
only), so no query of one tenant can reach another's items.

Counters are made idempotent per batch: an ADD carries the batch's seq into a number set and is
conditional on the set not holding it yet, so a retried batch never counts twice. A signature is
recorded by one transaction (the ``F#`` item, conditional on its absence, with the group's ADD
and the member item), so each (execution, signature) counts once, whoever races.
"""

from __future__ import annotations

import base64
import zlib
from dataclasses import dataclass
from typing import Any

from loopsense import jsonio
from loopsense.platform.access.retry import until_written
from loopsense.store.dynamo import (
    CONFLICTS,
    ConditionFailed,
    Dynamo,
    from_item,
    to_item,
    unavailable,
)

STATE = "#state"
SETTINGS = "#settings"
OPEN = "open"
JOIN = "join"
BY_LAST_SEEN = "byLastSeen"
BY_CLASS = "byClass"
BY_IDLE = "byIdle"
# DynamoDB refuses items over 400 KB; a stored batch keeps a margin for its other attributes.
MAX_STORED_BATCH_BYTES = 350_000


def execution_pk(tenant: str, execution: str) -> str:
    return f"X#{tenant}#{execution}"


def group_pk(tenant: str) -> str:
    return f"G#{tenant}"


def join_pk(tenant: str, trace: str) -> str:
    return f"J#{tenant}#{trace}"


def member_pk(tenant: str, signature: str) -> str:
    return f"M#{tenant}#{signature}"


def tenant_of(pk: str) -> str:
    """The tenant of a partition key built above (a tenant id holds no '#')."""
    return pk.split("#", 2)[1]


def _v(value: Any) -> dict[str, Any]:
    return to_item({"v": value})["v"]  # type: ignore[no-any-return]


def pack(events: list[Any]) -> bytes:
    return zlib.compress(jsonio.dumps(events).encode("utf-8"), 6)


def unpack(blob: Any) -> list[Any]:
    raw = bytes(blob.value if hasattr(blob, "value") else blob)
    return list(jsonio.loads(zlib.decompress(raw)))


@dataclass(frozen=True, slots=True)
class Fire:
    signature: str
    cls: str  # "loops" | "semantic_loop" | "tool_calls"
    sub: str
    canonical_state: str | None = None


class TelemetryStore:
    def __init__(self, db: Dynamo, table: str) -> None:
        self.db = db
        self.table = table

    # ---- reads -------------------------------------------------------------------------------
    def _get(self, pk: str, sk: str) -> dict[str, Any] | None:
        return self.db.get(self.table, {"pk": pk, "sk": sk})

    def execution(self, tenant: str, execution: str) -> dict[str, Any] | None:
        return self._get(execution_pk(tenant, execution), STATE)

    def batch(self, tenant: str, execution: str, seq: int) -> dict[str, Any] | None:
        return self._get(execution_pk(tenant, execution), f"B#{seq:010d}")

    def idempotency_key(self, tenant: str, execution: str, key: str) -> dict[str, Any] | None:
        return self._get(execution_pk(tenant, execution), f"K#{key}")

    def fired(self, tenant: str, execution: str, signature: str) -> dict[str, Any] | None:
        return self._get(execution_pk(tenant, execution), f"F#{signature}")

    def events(self, tenant: str, execution: str) -> list[Any]:
        """Every stored event of the execution, in order (its batches by seq)."""
        items = self.db.query(
            self.table, KeyConditionExpression="pk = :pk AND begins_with(sk, :b)",
            ExpressionAttributeValues={":pk": _v(execution_pk(tenant, execution)),
                                       ":b": _v("B#")},
            ConsistentRead=True)
        return [event for item in items for event in unpack(item["events"])]

    def settings(self, tenant: str) -> dict[str, Any]:
        return self._get(f"S#{tenant}", SETTINGS) or {}

    # ---- ingestion ---------------------------------------------------------------------------
    def claim(self, tenant: str, execution: str, seq: int, *, events: list[Any], digest: str,
              total: int, thresholds: str, key: str | None, now_ms: int,
              idle_at: int, expires_at: int) -> None:
        """Take ``seq`` for this batch and store its events, atomically: the state moves from
        ``seq`` to ``seq + 1`` only if nobody took ``seq`` and the execution has not ended.
        ConditionFailed otherwise (nothing written)."""
        pk = execution_pk(tenant, execution)
        blob = pack(events)
        condition = ("attribute_not_exists(nextSeq)" if seq == 0
                     else "nextSeq = :seq AND attribute_not_exists(endedAt)")
        values = {":seq": _v(seq), ":next": _v(seq + 1), ":total": _v(total),
                  ":thr": _v(thresholds), ":now": _v(now_ms), ":open": _v(OPEN),
                  ":idle": _v(idle_at), ":exp": _v(expires_at)}
        if seq == 0:
            del values[":seq"]
        actions: list[dict[str, Any]] = [
            {"Update": {
                "TableName": self.table, "Key": to_item({"pk": pk, "sk": STATE}),
                "UpdateExpression": "SET nextSeq = :next, events = :total, "
                                    "thresholds = if_not_exists(thresholds, :thr), "
                                    "createdAt = if_not_exists(createdAt, :now), lastAt = :now, "
                                    "ipk = :open, idleAt = :idle, expiresAt = :exp",
                "ConditionExpression": condition,
                "ExpressionAttributeValues": values}},
            {"Put": {
                "TableName": self.table,
                "Item": to_item({"pk": pk, "sk": f"B#{seq:010d}", "events": blob,
                                 "n": len(events), "offset": total - len(events),
                                 "digest": digest, "applied": False, "expiresAt": expires_at}),
                "ConditionExpression": "attribute_not_exists(pk)"}},
        ]
        if key is not None:
            actions.append({"Put": {
                "TableName": self.table,
                "Item": to_item({"pk": pk, "sk": f"K#{key}", "seq": seq, "digest": digest,
                                 "expiresAt": expires_at}),
                "ConditionExpression": "attribute_not_exists(pk)"}})
        self.db.call("transact_write_items", TransactItems=actions)

    def count(self, tenant: str, execution: str, counter: str, amount: int, seq: int,
              expires_at: int) -> int:
        """Add ``amount`` to the counter once per batch ``seq``; the counter's value after."""
        key = to_item({"pk": execution_pk(tenant, execution), "sk": f"C#{counter}"})
        try:
            answer = self.db.call(
                "update_item", TableName=self.table, Key=key,
                UpdateExpression="ADD n :k, seqs :s SET expiresAt = :exp",
                ConditionExpression="attribute_not_exists(seqs) OR NOT contains(seqs, :seq)",
                ExpressionAttributeValues={":k": _v(amount), ":s": {"NS": [str(seq)]},
                                           ":seq": _v(seq), ":exp": _v(expires_at)},
                ReturnValues="UPDATED_NEW")
            return int(answer["Attributes"]["n"]["N"])
        except ConditionFailed:  # this batch was counted already (a retry): read the value
            item = self.db.get(self.table, {"pk": key["pk"]["S"], "sk": key["sk"]["S"]})
            return int(item["n"]) if item else 0

    def mark_applied(self, tenant: str, execution: str, seq: int) -> None:
        self.db.call("update_item", TableName=self.table,
                     Key=to_item({"pk": execution_pk(tenant, execution),
                                  "sk": f"B#{seq:010d}"}),
                     UpdateExpression="SET applied = :t",
                     ExpressionAttributeValues={":t": _v(True)})

    def fire(self, tenant: str, execution: str, fire: Fire, now_iso: str,
             telemetry_expires_at: int, group_expires_at: int) -> bool:
        """Record that the execution fired ``fire.signature``: True the first time only."""
        pk = execution_pk(tenant, execution)
        gpk = group_pk(tenant)
        actions = [
            {"Put": {
                "TableName": self.table,
                "Item": to_item({"pk": pk, "sk": f"F#{fire.signature}", "firedAt": now_iso,
                                 "canonicalState": fire.canonical_state,
                                 "expiresAt": telemetry_expires_at}),
                "ConditionExpression": "attribute_not_exists(pk)"}},
            {"Update": {
                "TableName": self.table, "Key": to_item({"pk": gpk, "sk": fire.signature}),
                # and one more execution on the day (UTC) it fired: the group's timeline
                "UpdateExpression": "ADD executions :one, #d :one SET #c = :c, #s = :s, "
                                    "firstSeen = if_not_exists(firstSeen, :now), "
                                    "lastSeen = :now, gpk = :gpk, cpk = :cpk, gsk = :gsk, "
                                    "expiresAt = :exp",
                "ExpressionAttributeNames": {"#c": "class", "#s": "sub",
                                             "#d": DAY_PREFIX + now_iso[:10]},
                "ExpressionAttributeValues": {
                    ":one": _v(1), ":c": _v(fire.cls), ":s": _v(fire.sub), ":now": _v(now_iso),
                    ":gpk": _v(gpk), ":cpk": _v(f"{gpk}#{fire.cls}"),
                    ":gsk": _v(f"{now_iso}#{fire.signature}"),
                    ":exp": _v(group_expires_at)}}},
            {"Put": {
                "TableName": self.table,
                "Item": to_item({"pk": member_pk(tenant, fire.signature),
                                 "sk": f"{now_iso}#{execution}", "executionId": execution,
                                 "firedAt": now_iso, "expiresAt": group_expires_at})}},
        ]

        def attempt() -> bool | None:
            try:
                self.db.transact(actions, CONFLICTS)
                return True
            except ConditionFailed as refused:
                if "ConditionalCheckFailed" in refused.reasons:
                    return False  # only the F# item has a condition: fired before
                # A concurrent fire of the same group item (TransactionConflict): again.
                return None

        return until_written(attempt, unavailable)

    def end(self, tenant: str, execution: str, duration_ms: int | None, now_ms: int) -> None:
        """Mark the execution ended (it stays in the sweeper's index until evaluated, so an
        evaluation cut short is finished by the sweeper); ConditionFailed if it
        does not exist or has ended already."""
        names = "SET endedAt = :now" + (", durationMs = :d" if duration_ms is not None else "")
        values = {":now": _v(now_ms)}
        if duration_ms is not None:
            values[":d"] = _v(duration_ms)
        self.db.call("update_item", TableName=self.table,
                     Key=to_item({"pk": execution_pk(tenant, execution), "sk": STATE}),
                     UpdateExpression=names,
                     ConditionExpression="attribute_exists(nextSeq) AND "
                                         "attribute_not_exists(endedAt)",
                     ExpressionAttributeValues=values)

    def mark_evaluated(self, tenant: str, execution: str) -> None:
        """Done with: the sweeper's index no longer holds it."""
        self.db.call("update_item", TableName=self.table,
                     Key=to_item({"pk": execution_pk(tenant, execution), "sk": STATE}),
                     UpdateExpression="SET evaluated = :t REMOVE ipk, idleAt",
                     ExpressionAttributeValues={":t": _v(True)})

    def idle(self, now_ms: int, limit: int) -> list[tuple[str, str]]:
        """Open executions whose idle deadline has passed: (tenant, execution)."""
        page = self.db.call(
            "query", TableName=self.table, IndexName=BY_IDLE, Limit=limit,
            KeyConditionExpression="ipk = :open AND idleAt <= :now",
            ExpressionAttributeValues={":open": _v(OPEN), ":now": _v(now_ms)})
        found = []
        for item in page.get("Items", []):
            _, tenant, execution = from_item(item)["pk"].split("#", 2)
            found.append((tenant, execution))
        return found

    # ---- OTLP spans joined to their log records ----------------------------------------------
    def join(self, tenant: str, trace: str, span: str, part: str, value: str,
             expires_at: int, wait_until: int | None = None) -> dict[str, Any] | None:
        """Record one side of a span's join (``part``: "content" from its log records, "pending"
        the span's own event, waiting until ``wait_until`` for them); the item after, or None
        when the join was already taken (its item is then ``joined``)."""
        sets = "#p = :v, expiresAt = :exp" + (
            ", ipk = :join, idleAt = :wait" if wait_until is not None else "")
        values = {":v": _v(value), ":exp": _v(expires_at)}
        if wait_until is not None:
            values.update({":join": _v(JOIN), ":wait": _v(wait_until)})
        try:
            answer = self.db.call(
                "update_item", TableName=self.table, Key=to_item({"pk": join_pk(tenant, trace),
                                                                  "sk": span}),
                UpdateExpression=f"SET {sets}", ExpressionAttributeNames={"#p": part},
                ConditionExpression="attribute_not_exists(takenBy)",
                ExpressionAttributeValues=values, ReturnValues="ALL_NEW")
        except ConditionFailed:
            return None
        return from_item(answer["Attributes"])

    def joined(self, tenant: str, trace: str, span: str) -> dict[str, Any] | None:
        return self._get(join_pk(tenant, trace), span)

    def take(self, pk: str, sk: str, taker: str) -> dict[str, Any] | None:
        """Take a waiting span's join for ``taker`` (it ingests the span's event): the item, or
        None when another took it first. The item stays, marked, so a retry of the taker's
        request finds its own take again (``takenBy``)."""
        try:
            answer = self.db.call(
                "update_item", TableName=self.table, Key=to_item({"pk": pk, "sk": sk}),
                UpdateExpression="SET takenBy = :who REMOVE ipk, idleAt",
                ConditionExpression="attribute_exists(pending) AND attribute_not_exists(takenBy)",
                ExpressionAttributeValues={":who": _v(taker)}, ReturnValues="ALL_NEW")
        except ConditionFailed:
            return None
        return from_item(answer["Attributes"])

    def waiting(self, tenant: str, trace: str) -> list[dict[str, Any]]:
        """The joins of one trace that hold a span's event (taken or not)."""
        items = self.db.query(
            self.table, KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": _v(join_pk(tenant, trace))}, ConsistentRead=True)
        return [item for item in items if "pending" in item]

    def due_joins(self, now_ms: int, limit: int) -> list[tuple[str, str]]:
        """Joins whose span has waited its time for log records: (pk, sk)."""
        page = self.db.call(
            "query", TableName=self.table, IndexName=BY_IDLE, Limit=limit,
            KeyConditionExpression="ipk = :join AND idleAt <= :now",
            ExpressionAttributeValues={":join": _v(JOIN), ":now": _v(now_ms)})
        return [(str(from_item(i)["pk"]), str(from_item(i)["sk"])) for i in page.get("Items", [])]

    # ---- failure groups ----------------------------------------------------------------------
    def group(self, tenant: str, signature: str) -> dict[str, Any] | None:
        return self._get(group_pk(tenant), signature)

    def groups(self, tenant: str, cls: str | None, limit: int, after: str | None,
               now_epoch: int) -> tuple[list[dict[str, Any]], str | None]:
        """One page of the tenant's groups (of one class, or all), newest lastSeen first.
        ``after``: the previous page's last gsk. Expired groups (TTL not yet swept) are left out."""
        gpk = group_pk(tenant)
        index, hash_name, hash_value = ((BY_CLASS, "cpk", f"{gpk}#{cls}") if cls
                                        else (BY_LAST_SEEN, "gpk", gpk))
        kwargs: dict[str, Any] = {
            "TableName": self.table, "IndexName": index, "ScanIndexForward": False,
            "KeyConditionExpression": f"{hash_name} = :h",
            "FilterExpression": "expiresAt > :now",
            "ExpressionAttributeValues": {":h": _v(hash_value), ":now": _v(now_epoch)}}
        items: list[dict[str, Any]] = []
        if after is not None:
            sig = after.split("#", 1)[1] if "#" in after else ""
            kwargs["ExclusiveStartKey"] = to_item({hash_name: hash_value, "gsk": after,
                                                   "pk": gpk, "sk": sig})
        while len(items) < limit:
            kwargs["Limit"] = limit - len(items)
            page = self.db.call("query", **kwargs)
            items.extend(from_item(i) for i in page.get("Items", []))
            last = page.get("LastEvaluatedKey")
            if not last:
                return items, None
            kwargs["ExclusiveStartKey"] = last
        return items, items[-1]["gsk"]

    def members(self, tenant: str, signature: str, limit: int) -> list[dict[str, Any]]:
        page = self.db.call(
            "query", TableName=self.table, ScanIndexForward=False, Limit=limit,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": _v(member_pk(tenant, signature))})
        return [from_item(i) for i in page.get("Items", [])]

    # ---- settings ----------------------------------------------------------------------------
    def put_settings(self, tenant: str, values: dict[str, Any]) -> dict[str, Any]:
        """Set these attributes of the tenant's telemetry settings at once; the item after."""
        names = {f"#a{i}": name for i, name in enumerate(values)}
        sets = ", ".join(f"#a{i} = :a{i}" for i in range(len(values)))
        answer = self.db.call(
            "update_item", TableName=self.table,
            Key=to_item({"pk": f"S#{tenant}", "sk": SETTINGS}), UpdateExpression=f"SET {sets}",
            ExpressionAttributeNames=names,
            ExpressionAttributeValues={f":a{i}": _v(v) for i, v in enumerate(values.values())},
            ReturnValues="ALL_NEW")
        return from_item(answer["Attributes"])


DAY_PREFIX = "d#"  # a group's executions of one day: d#2026-12-01


def timeline(group: dict[str, Any]) -> list[dict[str, Any]]:
    """A group item's day counters, oldest first: [{"day", "executions"}]."""
    return [{"day": name.removeprefix(DAY_PREFIX), "executions": int(value)}
            for name, value in sorted(group.items()) if name.startswith(DAY_PREFIX)]


def encode_cursor(gsk: str) -> str:
    return base64.urlsafe_b64encode(gsk.encode("utf-8")).decode("ascii").rstrip("=")


def decode_cursor(cursor: str) -> str | None:
    """The gsk a cursor stands for; None if it is not one this API made. (A cursor names only a
    position: the partition is always the caller's own, whatever the cursor says.)"""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        gsk = base64.b64decode(padded.encode("ascii"), altchars=b"-_", validate=True)
        text = gsk.decode("utf-8")
    except (ValueError, UnicodeError):
        return None
    return text if "#" in text else None
