"""run_repeated_call: the same tool call made again and again across the agents of one run (a
manager and its sub-agents each fetching the same file with the same arguments). The runs API
only: the stateless skill takes one agent's trace.

The run's view is a plain JSON object the runs API keeps beside the run's agents (docs/runs.md):
``{"calls": {key: [count, result, agents]}, "made": n}``, one entry per tool-call key (the first 16
hex digits of the call key) in the order last made, at most KEPT keys (the oldest go). ``count`` is
how many times the agents of the run made the call since its result last changed, ``result`` the
first 16 hex digits of that result's hash (None: none known yet), ``agents`` the first AGENT_HEX hex
digits of the SHA-256 of the agent ids that made it, at most MAX_AGENTS (the rule needs two). A
result that differs from the one kept is progress (a poll): the count starts again. Exempt and
polling tools are never counted.

The finding stands while the agent's latest counted tool call is the repeated one ("stuck
now"), as repeated_call's does: a warning at ``run_repeat_warn`` calls (per tool too) made by
two agents or more. Its step indices are this agent's calls of that key in the segment (the
other agents' steps are theirs).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from loopsense.core.monitor.config import MonitorConfig
from loopsense.core.monitor.findings import WARNING, Finding

Entry = dict[str, Any]
RULE = "run_repeated_call"
KEPT = 256  # tool-call keys a run's view keeps
MAX_AGENTS = 4  # agents kept per key: enough to say "two or more", and how many up to 4
KEY_HEX = 16
AGENT_HEX = 8


def new_view() -> dict[str, Any]:
    return {"calls": {}, "made": 0}  # made: the calls counted, ever (a batch that counted
    # none leaves the view as it was, and the runs API need not write it)


def agent_tag(agent_id: str) -> str:
    return hashlib.sha256(agent_id.encode("utf-8")).hexdigest()[:AGENT_HEX]


def counts(e: Entry, config: MonitorConfig) -> bool:
    """Whether the tool call ``e`` counts in the run's view."""
    return (e["k"] == "tool_call" and "x" not in e and RULE not in config.disabled_rules
            and not config.policy(e["a"]).poll)


def count(view: dict[str, Any], e: Entry, agent: str) -> None:
    """Count the tool call ``e`` (see ``counts``) by the agent tagged ``agent``."""
    calls = view["calls"]
    view["made"] += 1
    key = e["c"][:KEY_HEX]
    result = e["r"][:KEY_HEX] if e["r"] is not None else None
    kept = calls.pop(key, None)  # popped: re-inserted last, the most recent
    if kept is None or result is not None and kept[1] is not None and kept[1] != result:
        kept = [0, result, []]
    kept[0] += 1
    if kept[1] is None:
        kept[1] = result
    if agent not in kept[2] and len(kept[2]) < MAX_AGENTS:
        kept[2] = sorted([*kept[2], agent])
    calls[key] = kept
    while len(calls) > KEPT:
        del calls[next(iter(calls))]


def run_repeated_call(view: Mapping[str, Any], latest: str | None, entries: Sequence[Entry],
                      config: MonitorConfig) -> Finding | None:
    """The finding for the agent's latest counted tool-call key ``latest``, if any."""
    if latest is None:
        return None
    kept = view["calls"].get(latest[:KEY_HEX])
    if kept is None or len(kept[2]) < 2:
        return None
    mine = [e for e in entries if e["k"] == "tool_call" and e["c"] == latest and "x" not in e]
    if not mine:
        return None
    action = mine[-1]["a"]
    warn = config.tool_int(action, "run_repeat_warn")
    if kept[0] < warn or config.policy(action).poll:
        return None
    indices = [e["i"] for e in mine]
    return Finding(RULE, WARNING, kept[0], indices, warn, subject=latest, tool=action,
                   first=indices[0], facts={"agents": len(kept[2])})
