"""``client.runs``: the stateful run monitor, working memory, the circuit break and the briefing
(the loopsense repository's docs/runs.md and docs/recover.md).

    signal = client.runs.signal(run_id, agent_id="ari")
    if signal.is_looping and signal.confidence >= 0.7:
        result = client.runs.circuit_break(run_id, reason="repeated_tool_call")
        briefing = client.runs.context(run_id, query="resume ticket 2214", max_token_budget=1500)

Calls go through the client's retry loop. Steps, circuit breaks and restores send an
``Idempotency-Key`` (a uuid4, or yours) made once per call and sent again on each retry, so a
retry after a lost answer is applied once. Listing calls (``memory``, ``lessons``, ``events``,
``snapshot``) follow the pages to the end.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

if TYPE_CHECKING:
    from loopsense_sdk.client import Client

__all__ = ["Runs", "Signal"]


@dataclass(frozen=True)
class Signal:
    """The merged verdict of ``GET /v1/runs/{runId}/signal``. With the tenant's monitor switched
    off (``monitor_disabled``), every flag is false: "no pathologies detected"."""

    monitor_disabled: bool
    is_looping: bool = False
    is_stuck: bool = False
    is_drifting: bool = False
    is_novelty_starved: bool = False
    loop_score: float = 0.0
    drift_score: float = -1
    novelty_score: float = 1.0
    confidence: float = 0.0
    source: str = "rule"
    rationale: str = ""
    findings: list[dict[str, Any]] = field(default_factory=list)
    recommendation: dict[str, Any] = field(default_factory=lambda: {"action": "continue"})
    raw: dict[str, Any] = field(default_factory=dict)  # the whole answer

    @classmethod
    def from_answer(cls, answer: dict[str, Any]) -> Signal:
        verdict = answer.get("signal")
        if answer.get("monitor_disabled") or not isinstance(verdict, dict):
            return cls(True, raw=answer)
        names = cls.__dataclass_fields__
        return cls(False, **{k: v for k, v in verdict.items()
                             if k in names and k not in ("monitor_disabled", "raw")},
                   raw=answer)


def _dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, allow_nan=False,
                      separators=(",", ":")).encode("utf-8")


class Runs:
    def __init__(self, client: Client) -> None:
        self._client = client

    def _path(self, run_id: str, *parts: str, query: Mapping[str, str] | None = None) -> str:
        path = "/v1/runs/" + "/".join(quote(p, safe="") for p in (run_id, *parts))
        return path + ("?" + urlencode(query) if query else "")

    def _send(self, method: str, path: str, body: Any = None, *, raw: bytes | None = None,
              idempotency_key: str | None = None, keyed: bool = False) -> Any:
        data = raw if raw is not None else (None if body is None else _dumps(body))
        headers = {}
        if keyed:
            headers["Idempotency-Key"] = idempotency_key or str(uuid.uuid4())
        return self._client._call(method, path, data, headers)

    def _pages(self, run_id: str, *parts: str, field_name: str) -> Iterable[Any]:
        query: dict[str, str] = {"limit": "1000"}
        while True:
            page = self._send("GET", self._path(run_id, *parts, query=query))
            yield page[field_name]
            if page.get("next") is None:
                return
            query = {"limit": "1000", "after": str(page["next"])}

    # the monitor -----------------------------------------------------------------------------
    def register(self, run_id: str, agent_id: str, *, role: str | None = None,
                 objective_embedding: Sequence[float] | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"agentId": agent_id}
        if role is not None:
            body["role"] = role
        if objective_embedding is not None:
            body["objectiveEmbedding"] = list(objective_embedding)
        answer: dict[str, Any] = self._send("POST", self._path(run_id, "agents"), body)
        return answer

    def steps(self, run_id: str, steps: Sequence[Mapping[str, Any]] | Mapping[str, Any], *,
              idempotency_key: str | None = None) -> dict[str, Any]:
        """One step (a mapping with ``kind``) or a batch of 1..500 steps of one agent."""
        body = dict(steps) if isinstance(steps, Mapping) else {"steps": list(steps)}
        answer: dict[str, Any] = self._send("POST", self._path(run_id, "steps"), body,
                                            idempotency_key=idempotency_key, keyed=True)
        return answer

    def signal(self, run_id: str, agent_id: str) -> Signal:
        return Signal.from_answer(self._send(
            "GET", self._path(run_id, "signal", query={"agentId": agent_id})))

    def reset(self, run_id: str, agent_id: str | None = None) -> dict[str, Any]:
        body = {"agentId": agent_id} if agent_id is not None else {}
        answer: dict[str, Any] = self._send("POST", self._path(run_id, "reset"), body)
        return answer

    def set_config(self, run_id: str, config: Mapping[str, Any]) -> dict[str, Any]:
        answer: dict[str, Any] = self._send("PUT", self._path(run_id, "config"), dict(config))
        return answer

    # working memory and lessons ----------------------------------------------------------------
    def put_memory(self, run_id: str, key: str, value: Any) -> dict[str, Any]:
        """A JSON value of at most 32 KiB under ``key`` (1..256 of ``A-Z a-z 0-9 . _ : -``)."""
        answer: dict[str, Any] = self._send("PUT", self._path(run_id, "memory", key),
                                            raw=_dumps(value))
        return answer

    def get_memory(self, run_id: str, key: str) -> Any:
        """The value under ``key``; NotFoundError (RUN_MEMORY_NOT_FOUND) when there is none."""
        return self._send("GET", self._path(run_id, "memory", key))["value"]

    def delete_memory(self, run_id: str, key: str) -> None:
        self._send("DELETE", self._path(run_id, "memory", key))

    def memory(self, run_id: str) -> dict[str, Any]:
        """All of working memory, ``{key: value}`` in key order."""
        entries: dict[str, Any] = {}
        for page in self._pages(run_id, "memory", field_name="entries"):
            entries.update(page)
        return entries

    def add_lesson(self, run_id: str, text: str, *, tags: Sequence[str] = (),
                   kind: str = "lesson") -> dict[str, Any]:
        answer: dict[str, Any] = self._send("POST", self._path(run_id, "lessons"),
                                            {"text": text, "tags": list(tags), "kind": kind})
        return answer

    def lessons(self, run_id: str) -> list[dict[str, Any]]:
        return [x for page in self._pages(run_id, "lessons", field_name="lessons") for x in page]

    def events(self, run_id: str) -> list[dict[str, Any]]:
        return [x for page in self._pages(run_id, "events", field_name="events") for x in page]

    # the circuit break -------------------------------------------------------------------------
    def circuit_break(self, run_id: str, *, reason: str, agent_id: str | None = None,
                      idempotency_key: str | None = None) -> dict[str, Any]:
        """Snapshot working memory, clear it, reset the monitor, log CIRCUIT_BROKEN: one
        atomic step. ``{"broken": true, "snapshot_id", "summary": {"entries", "reason"}}``."""
        body: dict[str, Any] = {"reason": reason}
        if agent_id is not None:
            body["agentId"] = agent_id
        answer: dict[str, Any] = self._send("POST", self._path(run_id, "circuit-break"), body,
                                            idempotency_key=idempotency_key, keyed=True)
        return answer

    def snapshot(self, run_id: str, snapshot_id: str) -> dict[str, Any]:
        """The working memory a break (or a restore) saved, ``{key: value}``."""
        entries: dict[str, Any] = {}
        for page in self._pages(run_id, "snapshots", snapshot_id, field_name="entries"):
            entries.update(page)
        return entries

    def restore(self, run_id: str, snapshot_id: str, *,
                idempotency_key: str | None = None) -> dict[str, Any]:
        """Replace working memory with the snapshot's; the replaced memory is kept as a
        snapshot of its own (``replaced.snapshotId``)."""
        answer: dict[str, Any] = self._send(
            "POST", self._path(run_id, "snapshots", snapshot_id, "restore"), raw=b"",
            idempotency_key=idempotency_key, keyed=True)
        return answer

    def context(self, run_id: str, *, query: str, max_token_budget: int = 1500
                ) -> dict[str, Any]:
        """The briefing of a fresh attempt: ``{"context_block", "items", "tokens"}``."""
        answer: dict[str, Any] = self._send("POST", self._path(run_id, "context"),
                                            {"query": query,
                                             "max_token_budget": max_token_budget})
        return answer
