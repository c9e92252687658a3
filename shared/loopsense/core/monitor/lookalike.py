"""Rules over tool calls that differ and still repeat: similar_call, same_result.

similar_call: the latest call, and the calls of the same tool linked to it by chains of
near-identical arguments (the Jaccard similarity of their words at least ``similar_args``),
among those whose results are the latest's (the same hash) or, when the latest carries
nothing, carry nothing too. Near-identical
arguments with results that differ are progress (sibling files, pages): those calls are not
counted. Two or more distinct arguments are needed (one call repeated is repeated_call's).

same_result: the latest call and the calls of the same tool that got the same result hash, when
that result carries nothing, or came with a negative outcome, or the tool's policy says
``same_result`` (any result counts); two or more distinct arguments are needed.

Both look at the latest counted tool call ("stuck now"), never at a pending one (no result yet:
nothing to compare), nor at a polling or exempt tool.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from loopsense.core.monitor.config import MonitorConfig
from loopsense.core.monitor.findings import CRITICAL, WARNING, Finding

Entry = dict[str, Any]


def alike(a: Entry, b: Entry) -> float:
    """The Jaccard similarity of two calls' argument words, or two messages' words (1 for the
    same key; 0 when either has no words kept, as in a state stored before words were)."""
    if a["c"] == b["c"]:
        return 1.0
    left, right = a.get("t"), b.get("t")
    if not left or not right:
        return 0.0
    common = len(set(left).intersection(right))
    return common / (len(left) + len(right) - common)


def linked(calls: Sequence[Entry], latest: Entry, least: float) -> list[Entry]:
    """The calls (or messages) linked to ``latest`` by chains of near-identical words
    (similarity at least ``least``), in their order: a query reworded a little each time chains
    into one cluster, as in agent.loops' similar_call."""
    found = {id(latest)}
    frontier = [latest]
    rest = [e for e in calls if e is not latest]
    while frontier and rest:
        node = frontier.pop()
        near = [e for e in rest if alike(e, node) >= least]
        if near:
            found.update(id(e) for e in near)
            frontier.extend(near)
            rest = [e for e in rest if id(e) not in found]
    return [e for e in calls if id(e) in found]


def _latest(tool_calls: Sequence[Entry], config: MonitorConfig) -> Entry | None:
    if not tool_calls:
        return None
    latest = tool_calls[-1]
    if latest["r"] is None or config.policy(latest["a"]).poll:
        return None
    return latest


def similar_call(tool_calls: Sequence[Entry], config: MonitorConfig) -> Finding | None:
    latest = _latest(tool_calls, config)
    if latest is None:
        return None
    action = latest["a"]
    if "z" in latest:
        same = [e for e in tool_calls if e["a"] == action and "z" in e and e["r"] is not None]
    else:
        same = [e for e in tool_calls if e["a"] == action and e["r"] == latest["r"]]
    close = linked(same, latest, config.value("similar_args"))
    if len({e["c"] for e in close}) < 2:
        return None
    indices = [e["i"] for e in close]
    base = dict(subject=latest["c"], tool=action, first=indices[0])
    critical = config.tool_int(action, "similar_critical")
    if len(close) >= critical and len({e["r"] for e in close}) == 1:
        return Finding("similar_call", CRITICAL, len(close), indices, critical, **base)
    warn = config.tool_int(action, "similar_warn")
    if len(close) >= warn:
        return Finding("similar_call", WARNING, len(close), indices, warn, **base)
    return None


def _empty_answer(e: Entry, config: MonitorConfig) -> bool:
    return "z" in e or e["o"] == "neg" or config.policy(e["a"]).same_result


def same_result(tool_calls: Sequence[Entry], config: MonitorConfig) -> Finding | None:
    latest = _latest(tool_calls, config)
    if latest is None or not _empty_answer(latest, config):
        return None
    action, result = latest["a"], latest["r"]
    same = [e for e in tool_calls if e["a"] == action and e["r"] == result
            and _empty_answer(e, config)]
    warn = config.tool_int(action, "same_result_warn")
    if len(same) < warn or len({e["c"] for e in same}) < 2:
        return None
    indices = [e["i"] for e in same]
    return Finding("same_result", WARNING, len(same), indices, warn, subject=result,
                   tool=action, first=indices[0])
