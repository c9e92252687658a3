"""GET /v1/runs and GET /v1/runs/{runId} (docs/runs.md, "Reading runs"): a tenant's runs as the
dashboard and a client read them. Read only, free, counted against the rate limit like
``signal``; the runs API's gate (team and enterprise plans, a key granted agent.run_monitor).

Listing: the byActivity index (keys only) holds one entry per agent item, keyed by the tenant
and the agent's last write. Walking it newest first, a run is listed where its newest agent
stands (its other agents' entries come later and are skipped), with every live agent of the
run read by one Query of its partition. So a page of ``limit`` runs costs one index Query per
page of entries read plus one Query per run met (at most MAX_INDEX_PAGES and MAX_RUN_READS of
each: past them the page ends early, with a cursor), and a run is listed once however many agents
it has. The cursor names a position in the index (an entry's time, run and agent), never a
tenant: the tenant is always the caller's.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from loopsense.core.monitor.monitor import inspect
from loopsense.errors import LoopsenseError, validation_error
from loopsense.platform.http.auth import Identity
from loopsense.platform.http.request import limit_param
from loopsense.platform.runs.monitor import AGENT_ID, RUN_ID, Caller, Runs, check_run_id
from loopsense.platform.runs.store import AGENT, AgentItem, CallsItem, ConfigItem, partition, run_of

DEFAULT_LIMIT, MAX_LIMIT = 20, 50
INDEX_PAGE = 100  # index entries read per Query
MAX_INDEX_PAGES = 5  # per request: past them the answer stops early, with a cursor
# Runs read per request, likewise: expired runs stay in the index until TTL deletes them (up to
# two days late), and each costs a Query before it can be skipped.
MAX_RUN_READS = 2 * MAX_LIMIT
CURSOR_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{8,15}(Z|\+00:00)", re.ASCII)


def _time(stored: str | None) -> str | None:
    return stored.replace("+00:00", "Z") if stored else stored


def encode_cursor(entry: dict[str, str]) -> str:
    position = [entry["ask"], entry["pk"].split("#", 1)[1], entry["sk"].removeprefix(AGENT)]
    return base64.urlsafe_b64encode(json.dumps(position).encode()).decode().rstrip("=")


def decode_cursor(tenant_id: str, cursor: str) -> dict[str, Any]:
    """The index key a cursor stands for, in the caller's own partition."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        at, run_id, agent_id = json.loads(raw)
        # Each part as the API writes it, so no caller-made key reaches the store (DynamoDB
        # refuses empty or oversized key strings with an error, not a page).
        if not (isinstance(at, str) and CURSOR_TIME.fullmatch(at) and isinstance(run_id, str)
                and RUN_ID.match(run_id) and isinstance(agent_id, str)
                and AGENT_ID.match(agent_id)):
            raise ValueError
    except (ValueError, TypeError, UnicodeError):
        raise validation_error("cursor", "is not a cursor this API returned") from None
    return {"apk": {"S": tenant_id}, "ask": {"S": at},
            "pk": {"S": partition(tenant_id, run_id)}, "sk": {"S": AGENT + agent_id}}


class RunViews:
    def __init__(self, runs: Runs) -> None:
        self.runs = runs

    def _agents(self, caller: Caller, agents: list[AgentItem], config: ConfigItem | None,
                calls: CallsItem, epoch: int, full: bool) -> list[dict[str, Any]]:
        views = []
        for agent in sorted((a for a in agents if a.live(epoch)), key=lambda a: a.agent_id):
            state = agent.body["monitor"]
            signal = None
            if not caller.monitor_disabled:
                signal = inspect(state, self.runs.monitor_config(caller, config, epoch, agent),
                                 calls.body).signal()
            view = {"agentId": agent.agent_id, "role": agent.role, "sequence": state["next"],
                    "segmentStart": state["segmentStart"], "createdAt": _time(agent.created_at),
                    "lastActivity": _time(agent.updated_at),
                    "recommendation": signal["recommendation"] if signal else None,
                    "signal": signal if full or signal is None else
                    {k: v for k, v in signal.items() if k not in ("findings", "recommendation")}}
            views.append(view)
        return views

    # GET /v1/runs -----------------------------------------------------------------------------
    def list(self, identity: Identity, query: dict[str, str]) -> dict[str, Any]:
        limit = limit_param(query.get("limit"), DEFAULT_LIMIT, MAX_LIMIT)
        caller = self.runs.admit(identity)
        start = decode_cursor(caller.tenant_id, query["cursor"]) if "cursor" in query else None
        self.runs.count_request(caller)
        epoch = int(self.runs.clock().timestamp())
        items: list[dict[str, Any]] = []
        met: set[str] = set()
        last: dict[str, str] | None = None
        for _ in range(MAX_INDEX_PAGES):
            entries, start = self.runs.store.recent(caller.tenant_id, INDEX_PAGE, start)
            for entry in entries:
                run_id = run_of(entry["pk"])
                if run_id not in met and len(met) == MAX_RUN_READS and last is not None:
                    return {"items": items, "nextCursor": encode_cursor(last)}  # this one next
                last = entry
                if run_id in met:
                    continue
                met.add(run_id)
                agents, config, calls = self.runs.store.run(caller.tenant_id, run_id, epoch)
                live = [a for a in agents if a.live(epoch)]
                newest = max(live, key=lambda a: (a.updated_at or "", a.agent_id), default=None)
                if newest is None or AGENT + newest.agent_id != entry["sk"] \
                        or newest.updated_at != entry["ask"]:
                    continue  # expired, or listed where its newest agent stands
                items.append({"runId": run_id, "lastActivity": _time(newest.updated_at),
                              "agents": self._agents(caller, live, config, calls, epoch,
                                                        False)})
                if len(items) == limit:
                    return {"items": items, "nextCursor": encode_cursor(entry)}
            if start is None:
                return {"items": items, "nextCursor": None}
        return {"items": items, "nextCursor": encode_cursor(last) if last else None}

    # GET /v1/runs/{runId} ---------------------------------------------------------------------
    def detail(self, identity: Identity, run_id: str) -> dict[str, Any]:
        check_run_id(run_id)
        caller = self.runs.admit(identity)
        self.runs.count_request(caller)
        epoch = int(self.runs.clock().timestamp())
        agents, config, calls = self.runs.store.run(caller.tenant_id, run_id, epoch)
        live = [a for a in agents if a.live(epoch)]
        if not live:
            raise LoopsenseError("RUN_NOT_FOUND", "no live agent in this run")
        newest = max(live, key=lambda a: (a.updated_at or "", a.agent_id))
        stored = config.raw if config is not None and config.expires_at > epoch else None
        return {"runId": run_id, "lastActivity": _time(newest.updated_at),
                "agents": self._agents(caller, live, config, calls, epoch, True), "config": stored,
                "retention": self.runs.retention(caller, max(a.expires_at for a in live))}
