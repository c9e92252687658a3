"""Recover, don't kill (spec/loop_safety.md; docs/recover.md): a run's working memory, lessons,
event log, the circuit break, snapshots, restore and the briefing of a fresh attempt.

Working memory lives in generations (platform/runs/memory_store.py). An entry write is one
transaction: the memory head, conditional on the generation it read (and moving its count), and the
entry, conditional on its existence as read. The circuit break is one transaction of a fixed number
of items, however large the memory: the head switches to a new generation (on condition that the old
one is still live), the old generation becomes the snapshot (a lesson of kind ``loop_detected``),
the agents' monitors reset (each conditional on its version), and a ``CIRCUIT_BROKEN`` event is
appended. A write that raced a break either committed before it (its entry is in the snapshot) or
fails its condition and is applied again to the new generation: every entry ends up in exactly one
place. Restore copies a snapshot into a new generation nobody reads, then switches to it in one
transaction like a break, the replaced memory kept as a snapshot of its own (kind
``replaced_by_restore``): restore replaces, and loses nothing.

``Recover`` extends the runs API (platform/runs/monitor.py) and uses its parts: the gate (who may),
the rate counter in every write's transaction, ``expiresAt`` on every item from the tenant's
retention, the agents' store for the monitor reset. Nothing here is charged
(docs/decisions.md).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, Field, StringConstraints

from loopsense import jsonio
from loopsense.core import briefing
from loopsense.core.instants import stamp
from loopsense.core.monitor.monitor import reset as reset_monitor
from loopsense.errors import LoopsenseError, validation_error
from loopsense.platform.access.idempotency import digest, remember, replay
from loopsense.platform.access.retry import until_written
from loopsense.platform.http.auth import Identity
from loopsense.platform.http.request import limit_param
from loopsense.platform.runs.memory_store import (
    EVENT,
    LESSON,
    Entry,
    Head,
    MemoryStore,
)
from loopsense.platform.runs.monitor import (
    Caller,
    Runs,
    check_agent_id,
    check_run_id,
    encoded,
    write_conflict,
)
from loopsense.validation import STRICT, ascii_int, validate

MAX_VALUE = 32 * 1024  # bytes of one working-memory value (JSON)
MAX_ENTRIES = 10_000  # entries of a run's working memory
MAX_PAGE = 1000  # entries, lessons or events per page
DEFAULT_PAGE = 100
MAX_SEQ = 9_999_999_999  # an event's seq: 10 digits, as it is kept (zero-padded) in its key
MAX_PAGE_BYTES = 4 * 1024 * 1024  # of values per page (a Lambda answer is at most 6 MB)
MAX_BRIEF_SNAPSHOTS = 20  # the newest snapshots a briefing reads
MAX_BRIEF_LESSONS = 5000
SNAPSHOT_KINDS = ("loop_detected", "replaced_by_restore")
KEY = re.compile(r"^[A-Za-z0-9._:-]{1,256}$")
ID = re.compile(r"^[0-9]{13}-[0-9a-f]{8}$")
BREAK_EVENT, RESTORE_EVENT = "CIRCUIT_BROKEN", "MEMORY_RESTORED"

Tag = Annotated[str, StringConstraints(min_length=1, max_length=64)]


class LessonBody(BaseModel):
    model_config = STRICT
    text: Annotated[str, StringConstraints(min_length=1, max_length=4000)]
    tags: list[Tag] = Field(default_factory=list, max_length=16)
    kind: Annotated[str, StringConstraints(pattern=r"^(lesson|fact)$")] = "lesson"


class BreakBody(BaseModel):
    model_config = STRICT
    reason: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    agentId: str | None = None


class ContextBody(BaseModel):
    model_config = STRICT
    query: Annotated[str, StringConstraints(min_length=1, max_length=4000)]
    max_token_budget: int = Field(1500, ge=50, le=32_000)


def check_memory_key(key: str | None, path: str = "key") -> str:
    if not key or not KEY.match(key):
        raise validation_error(path, "must be 1 to 256 characters among A-Z a-z 0-9 . _ : -")
    return key


def check_id(value: str | None, path: str) -> str:
    if not value or not ID.match(value):
        raise validation_error(path, "must be an id this API returned (13 digits, '-', "
                                     "8 hex digits)")
    return value


def page_args(query: dict[str, str], after_check: Callable[[str, str], str]
              ) -> tuple[int, str | None]:
    """``?limit=1..1000&after=...`` of a listing; ``after_check(value, "after")`` checks the
    cursor."""
    limit = limit_param(query.get("limit"), DEFAULT_PAGE, MAX_PAGE)
    after = query.get("after")
    return limit, (after_check(after, "after") if after is not None else None)


def _new_id(now: datetime) -> str:
    return f"{int(now.timestamp() * 1000):013d}-{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class Switch:
    """What a break or a restore writes besides the head: the generation to make live and its
    entries, the snapshot lesson of the one it freezes, the event, other actions."""

    generation: str
    count: int
    lesson: dict[str, Any]
    event: dict[str, Any]
    actions: list[dict[str, Any]]


def _value(entry: Entry) -> Any:
    return jsonio.loads(entry.value)


class Recover:
    def __init__(self, runs: Runs) -> None:
        self.runs = runs
        self.store = MemoryStore(runs.store.db, runs.store.table)

    def _enter(self, identity: Identity, run_id: str, read: bool) -> Caller:
        check_run_id(run_id)
        caller = self.runs.admit(identity)
        if read:
            self.runs.count_request(caller)
        return caller

    def _write(self, caller: Caller, actions: list[dict[str, Any]], now: datetime) -> bool:
        epoch = int(now.timestamp())
        return self.runs.write(caller, [self.runs.admission(caller, epoch), *actions], None,
                                now)

    def _retention(self, caller: Caller, expires: int) -> dict[str, Any]:
        return self.runs.retention(caller, expires)

    # working memory ----------------------------------------------------------------------
    def put(self, identity: Identity, run_id: str, key: str, body: bytes) -> dict[str, Any]:
        check_memory_key(key)
        if len(body) > MAX_VALUE:
            raise validation_error("value", f"must be at most {MAX_VALUE} bytes (32 KiB) of "
                                            "JSON")
        value = jsonio.dumps(jsonio.loads(body, "value"))
        caller = self._enter(identity, run_id, read=False)

        def attempt() -> dict[str, Any] | None:
            now = self.runs.clock()
            head = self.store.head(caller.tenant_id, run_id, int(now.timestamp()))
            found = self.store.entry(caller.tenant_id, run_id, head.generation, key)
            existed = found is not None
            expires = self.runs.expiry(caller, now)
            actions = [
                self.store.count_change(caller.tenant_id, run_id, head, 0 if existed else 1,
                                        stamp(now), expires, MAX_ENTRIES),
                self.store.put_entry(caller.tenant_id, run_id, head.generation, key, value,
                                     stamp(now), expires, existed)]
            if self._write(caller, actions, now):
                return {"runId": run_id, "key": key, "created": not existed,
                        "retention": self._retention(caller, expires)}
            if not existed and head.live and head.count >= MAX_ENTRIES:
                self._full_unless_expired(caller, run_id, head, int(now.timestamp()))
            return None

        return until_written(attempt, write_conflict)

    def _full_unless_expired(self, caller: Caller, run_id: str, head: Head, epoch: int
                             ) -> None:
        """The head counts entries TTL has since expired (or deleted): nothing lowers its
        count then. Count the live ones; RUN_MEMORY_FULL if they fill it, else correct the
        count (if generation and count are still as read) for the caller to write again."""
        live = self.store.count(caller.tenant_id, run_id, head.generation, epoch)
        if live >= MAX_ENTRIES and \
                self.store.head(caller.tenant_id, run_id, epoch).generation == head.generation:
            raise LoopsenseError("RUN_MEMORY_FULL",
                                 f"working memory holds at most {MAX_ENTRIES} entries")
        if live < head.count:
            self.store.recount(caller.tenant_id, run_id, head, live)

    def get(self, identity: Identity, run_id: str, key: str) -> dict[str, Any]:
        check_memory_key(key)
        caller = self._enter(identity, run_id, read=True)
        epoch = int(self.runs.clock().timestamp())
        head = self.store.head(caller.tenant_id, run_id, epoch)
        found = self.store.entry(caller.tenant_id, run_id, head.generation, key)
        if found is None or found.expires_at <= epoch:
            raise LoopsenseError("RUN_MEMORY_NOT_FOUND", "no such key in working memory")
        return {"runId": run_id, "key": key, "value": _value(found),
                "updatedAt": found.updated_at,
                "retention": self._retention(caller, found.expires_at)}

    def delete(self, identity: Identity, run_id: str, key: str) -> dict[str, Any]:
        check_memory_key(key)
        caller = self._enter(identity, run_id, read=False)

        def attempt() -> dict[str, Any] | None:
            now = self.runs.clock()
            head = self.store.head(caller.tenant_id, run_id, int(now.timestamp()))
            found = self.store.entry(caller.tenant_id, run_id, head.generation, key)
            if found is None or found.expires_at <= int(now.timestamp()):
                raise LoopsenseError("RUN_MEMORY_NOT_FOUND", "no such key in working memory")
            expires = self.runs.expiry(caller, now)
            actions = [self.store.count_change(caller.tenant_id, run_id, head, -1, stamp(now),
                                               expires, MAX_ENTRIES),
                       self.store.delete_entry(caller.tenant_id, run_id, head.generation, key)]
            if self._write(caller, actions, now):
                return {"runId": run_id, "key": key, "deleted": True}
            return None

        return until_written(attempt, write_conflict)

    def _page(self, caller: Caller, run_id: str, generation: str, query: dict[str, str]
              ) -> tuple[dict[str, Any], str | None]:
        limit, after = page_args(query, check_memory_key)
        epoch = int(self.runs.clock().timestamp())
        found, following = self.store.entries(caller.tenant_id, run_id, generation, after,
                                              limit)
        entries: dict[str, Any] = {}
        size = 0
        for entry in found:
            size += len(entry.value)
            if entries and size > MAX_PAGE_BYTES:
                following = next(reversed(entries))
                break
            if entry.expires_at > epoch:
                entries[entry.key] = _value(entry)
        return entries, following

    def get_all(self, identity: Identity, run_id: str, query: dict[str, str]
                ) -> dict[str, Any]:
        caller = self._enter(identity, run_id, read=True)
        head = self.store.head(caller.tenant_id, run_id, int(self.runs.clock().timestamp()))
        entries, following = self._page(caller, run_id, head.generation, query)
        # a page holding the whole memory counts its live entries; else the head's count
        # (docs/recover.md: it may still count entries that expired untouched)
        whole = "after" not in query and following is None
        return {"runId": run_id, "count": len(entries) if whole else head.count,
                "entries": entries, "next": following}

    # lessons and events ------------------------------------------------------------------
    def add_lesson(self, identity: Identity, run_id: str, raw: Any) -> dict[str, Any]:
        body = validate(LessonBody, raw, prefix="")
        caller = self._enter(identity, run_id, read=False)
        now = self.runs.clock()
        expires = self.runs.expiry(caller, now)
        values = {"lessonId": _new_id(now), "kind": body.kind, "text": body.text,
                  "tags": body.tags, "createdAt": stamp(now), "expiresAt": expires}
        if not self._write(caller, [self.store.put_lesson(caller.tenant_id, run_id, values)],
                           now):
            raise write_conflict()
        return {"runId": run_id, **_lesson(values),
                "retention": self._retention(caller, expires)}

    def lessons(self, identity: Identity, run_id: str, query: dict[str, str]
                ) -> dict[str, Any]:
        caller = self._enter(identity, run_id, read=True)
        limit, after = page_args(query, check_id)
        epoch = int(self.runs.clock().timestamp())
        found, following = self.store.listed(caller.tenant_id, run_id, LESSON, after, limit)
        return {"runId": run_id, "lessons": [_lesson(i) for i in found
                                             if i["expiresAt"] > epoch], "next": following}

    def events(self, identity: Identity, run_id: str, query: dict[str, str]
               ) -> dict[str, Any]:
        caller = self._enter(identity, run_id, read=True)

        def seq(value: str, path: str) -> str:
            seq = ascii_int(value, path, 0, MAX_SEQ, "must be an event's seq (an integer of "
                                                     "at most 10 digits)")
            return f"{seq:010d}"

        limit, after = page_args(query, seq)
        epoch = int(self.runs.clock().timestamp())
        found, following = self.store.listed(caller.tenant_id, run_id, EVENT, after, limit)
        events = [{"seq": i["seq"], "type": i["type"], "at": i["at"], **i["details"]}
                  for i in found if i["expiresAt"] > epoch]
        return {"runId": run_id, "events": events,
                "next": str(int(following)) if following else None}

    # the circuit break -------------------------------------------------------------------
    def circuit_break(self, identity: Identity, run_id: str, raw: Any, body: bytes,
                      idempotency_key: str | None) -> dict[str, Any]:
        check_run_id(run_id)
        request = validate(BreakBody, raw if raw is not None else {}, prefix="")
        agent_id = (check_agent_id(request.agentId, "agentId")
                    if request.agentId is not None else None)
        caller = self._enter(identity, run_id, read=False)

        def plan(head: Head, now: datetime, expires: int) -> Switch:
            agents = self.runs.agents_to_reset(caller, run_id, agent_id, int(now.timestamp()))
            names = [a.agent_id for a in agents]
            snapshot_id = _new_id(now)
            lesson = {"lessonId": snapshot_id, "kind": "loop_detected",
                      "text": f"working memory at the circuit break ({request.reason})",
                      "tags": [request.reason], "generation": head.generation,
                      "agentIds": names, "createdAt": stamp(now), "expiresAt": expires}
            resets = []
            for agent in agents:
                reset_monitor(agent.body["monitor"])
                resets.append(self.runs.store.put_agent(caller.tenant_id, run_id, agent,
                                                        encoded(agent), stamp(now), expires))
            if agent_id is None:  # every agent: the run's view of their calls starts afresh
                resets.append(self.runs.store.drop_calls(caller.tenant_id, run_id))
            return Switch(uuid.uuid4().hex, 0, lesson,
                          {"type": BREAK_EVENT, "details": {"snapshotId": snapshot_id,
                                                            "reason": request.reason,
                                                            "agentIds": names}}, resets)

        return self._switch(caller, run_id, idempotency_key, body, plan)

    # the one transaction of a break or a restore ------------------------------------------
    def _switch(self, caller: Caller, run_id: str, idempotency_key: str | None, body: bytes,
                plan: Callable[[Head, datetime, int], Switch]) -> dict[str, Any]:
        """Read the head; answer a replayed Idempotency-Key from what it made; else write, in
        one transaction: the head switched to ``plan``'s generation (on condition that the one
        read is still live), the snapshot lesson of the old one, the event, ``plan``'s other
        actions. A lost race (a concurrent break or restore, an agent's step) plans again."""
        key = digest(idempotency_key) if idempotency_key is not None else None
        body_digest = digest(body)

        def attempt() -> dict[str, Any] | None:
            now = self.runs.clock()
            epoch = int(now.timestamp())
            head = self.store.head(caller.tenant_id, run_id, epoch)
            replayed = self._replay(caller, run_id, head, key, body_digest, epoch)
            if replayed is not None:
                return replayed
            expires = self.runs.expiry(caller, now)
            step = plan(head, now, expires)
            made = step.lesson["lessonId"]
            recent = head.recent if key is None else remember(head.recent, key, body_digest,
                                                              epoch, made)
            event = {**step.event, "at": stamp(now), "expiresAt": expires}
            actions = [self.store.switch(caller.tenant_id, run_id, head, step.generation,
                                         step.count, made, recent, stamp(now), expires),
                       self.store.put_lesson(caller.tenant_id, run_id, step.lesson),
                       self.store.put_event(caller.tenant_id, run_id, head.events + 1, event),
                       *step.actions]
            if self._write(caller, actions, now):
                return self._answer(caller, run_id, step.lesson,
                                    self._frozen_count(caller, run_id, made, head.generation))
            return None

        return until_written(attempt, write_conflict)

    def _frozen_count(self, caller: Caller, run_id: str, snapshot_id: str,
                      generation: str) -> int:
        """The entries of a generation a switch just froze: copied by the switch itself to
        the head's lastCount, unless another switch has come since (then counted)."""
        head = self.store.head(caller.tenant_id, run_id, int(self.runs.clock().timestamp()))
        if head.last_break == snapshot_id:
            return head.last_count
        return self.store.count(caller.tenant_id, run_id, generation,
                                int(self.runs.clock().timestamp()))

    def _replay(self, caller: Caller, run_id: str, head: Head, key: str | None,
                body_digest: str, epoch: int) -> dict[str, Any] | None:
        """The answer of the break or restore this Idempotency-Key already made (kept in the
        head: the last 16 keys, 24 h), rebuilt from the snapshot it froze; or None."""
        made = replay(head.recent, key, body_digest, epoch) if key is not None else None
        lesson = self.store.lesson(caller.tenant_id, run_id, made) if made is not None else None
        if lesson is None:
            return None
        return self._answer(caller, run_id, lesson,
                            self.store.count(caller.tenant_id, run_id, lesson["generation"],
                                             epoch))

    def _answer(self, caller: Caller, run_id: str, lesson: dict[str, Any], frozen: int
                ) -> dict[str, Any]:
        """A break's or a restore's answer, from the snapshot lesson it made and the entries
        that snapshot holds."""
        retention = self._retention(caller, int(lesson["expiresAt"]))
        if lesson["kind"] == "loop_detected":
            return {"runId": run_id, "broken": True, "snapshotId": lesson["lessonId"],
                    "summary": {"entries": frozen, "reason": lesson["tags"][0]},
                    "agentsReset": lesson["agentIds"], "retention": retention}
        return {"runId": run_id, "restored": True, "snapshotId": lesson["restoredFrom"],
                "entries": int(lesson["restoredEntries"]),
                "replaced": {"snapshotId": lesson["lessonId"], "entries": frozen},
                "retention": retention}

    # snapshots ---------------------------------------------------------------------------
    def _snapshot(self, caller: Caller, run_id: str, snapshot_id: str) -> dict[str, Any]:
        check_id(snapshot_id, "snapshotId")
        found = self.store.lesson(caller.tenant_id, run_id, snapshot_id)
        if found is None or found.get("kind") not in SNAPSHOT_KINDS or \
                found["expiresAt"] <= int(self.runs.clock().timestamp()):
            raise LoopsenseError("RUN_SNAPSHOT_NOT_FOUND", "no such snapshot in this run")
        return found

    def snapshot(self, identity: Identity, run_id: str, snapshot_id: str,
                 query: dict[str, str]) -> dict[str, Any]:
        caller = self._enter(identity, run_id, read=True)
        found = self._snapshot(caller, run_id, snapshot_id)
        entries, following = self._page(caller, run_id, found["generation"], query)
        return {"runId": run_id, "snapshotId": snapshot_id, "kind": found["kind"],
                "createdAt": found["createdAt"], **_origin(found), "entries": entries,
                "next": following, "retention": self._retention(caller, found["expiresAt"])}

    def restore(self, identity: Identity, run_id: str, snapshot_id: str, raw: Any,
                body: bytes, idempotency_key: str | None) -> dict[str, Any]:
        """Copy the snapshot into a generation nobody reads, then switch to it like a break:
        the memory it replaces becomes a snapshot of kind replaced_by_restore."""
        if raw not in (None, {}):
            raise validation_error("body", "must be empty or {} (a restore takes no options)")
        caller = self._enter(identity, run_id, read=False)
        body = snapshot_id.encode() + b"\n" + body  # a key restores one snapshot
        now = self.runs.clock()
        replayed = self._replay(caller, run_id,
                                self.store.head(caller.tenant_id, run_id, int(now.timestamp())),
                                digest(idempotency_key) if idempotency_key else None,
                                digest(body), int(now.timestamp()))
        if replayed is not None:
            return replayed
        source = self._snapshot(caller, run_id, snapshot_id)
        entries, _ = self.store.entries(caller.tenant_id, run_id, source["generation"])
        live = [e for e in entries if e.expires_at > int(now.timestamp())]
        staged = uuid.uuid4().hex
        self.store.stage(caller.tenant_id, run_id, staged, live, stamp(now),
                         self.runs.expiry(caller, now))

        def plan(head: Head, now: datetime, expires: int) -> Switch:
            replaced_id = _new_id(now)
            lesson = {"lessonId": replaced_id, "kind": "replaced_by_restore",
                      "text": f"working memory replaced by restoring snapshot {snapshot_id}",
                      "tags": ["restore"], "generation": head.generation,
                      "restoredFrom": snapshot_id, "restoredEntries": len(live),
                      "createdAt": stamp(now), "expiresAt": expires}
            return Switch(staged, len(live), lesson,
                          {"type": RESTORE_EVENT, "details": {
                              "snapshotId": snapshot_id, "entries": len(live),
                              "replacedSnapshotId": replaced_id}}, [])

        return self._switch(caller, run_id, idempotency_key, body, plan)

    # the briefing ------------------------------------------------------------------------
    def context(self, identity: Identity, run_id: str, raw: Any) -> dict[str, Any]:
        body = validate(ContextBody, raw, prefix="")
        caller = self._enter(identity, run_id, read=True)
        epoch = int(self.runs.clock().timestamp())
        found, _ = self.store.listed(caller.tenant_id, run_id, LESSON, limit=MAX_BRIEF_LESSONS,
                                     newest_first=True)
        items: list[briefing.Item] = []
        snapshots = 0
        for lesson in found:
            if lesson["expiresAt"] <= epoch:
                continue
            if lesson["kind"] not in SNAPSHOT_KINDS:
                tags = f", tags: {', '.join(lesson['tags'])}" if lesson.get("tags") else ""
                items.append(briefing.Item("lesson", lesson["lessonId"], lesson["createdAt"],
                                           f"{lesson['kind']} ({lesson['createdAt']}{tags})",
                                           lesson["text"], terms=tuple(lesson.get("tags", []))))
                continue
            if snapshots == MAX_BRIEF_SNAPSHOTS:
                continue
            snapshots += 1
            entries, _ = self.store.entries(caller.tenant_id, run_id, lesson["generation"])
            lines = tuple(f"{e.key}: {e.value}" for e in entries if e.expires_at > epoch)
            if lines:
                items.append(briefing.Item("snapshot", lesson["lessonId"],
                                           lesson["createdAt"],
                                           f"{lesson['text']} ({lesson['createdAt']}, "
                                           f"snapshot {lesson['lessonId']})", "", lines,
                                           tuple(lesson.get("tags", []))))
        packed = briefing.pack(body.query, items, body.max_token_budget)
        return {"runId": run_id, "context_block": packed.block, "items": packed.items,
                "tokens": packed.tokens, "max_token_budget": body.max_token_budget}


def _origin(lesson: dict[str, Any]) -> dict[str, Any]:
    if lesson["kind"] == "loop_detected":
        return {"reason": lesson["tags"][0], "agentIds": lesson.get("agentIds", [])}
    return {"restoredFrom": lesson["restoredFrom"]}


def _lesson(item: dict[str, Any]) -> dict[str, Any]:
    shown = {"lessonId": item["lessonId"], "kind": item["kind"], "text": item["text"],
             "tags": item.get("tags", []), "createdAt": item["createdAt"]}
    if item["kind"] in SNAPSHOT_KINDS:
        shown["snapshotId"] = item["lessonId"]
    return shown
