"""Rules over repeated keys in the segment: repeated_call, cycle, repeated_query.

Each looks at the latest relevant step ("stuck now"): it fires while the agent's latest tool
call (or query) is the repeated one, and stops as soon as the agent does something else.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from loopsense.core.cycles import find_cycle
from loopsense.core.monitor.config import MonitorConfig
from loopsense.core.monitor.findings import CRITICAL, WARNING, Finding

Entry = dict[str, Any]
QUERY_KINDS = frozenset({"recall", "llm_call"})


def calls(entries: Sequence[Entry]) -> list[Entry]:
    """The segment's counted tool calls (exempt tools never count)."""
    return [e for e in entries if e["k"] == "tool_call" and "x" not in e]


def repeated_call(tool_calls: Sequence[Entry], config: MonitorConfig) -> Finding | None:
    if not tool_calls:
        return None
    latest = tool_calls[-1]
    same = [e for e in tool_calls if e["c"] == latest["c"]]
    action = latest["a"]
    # Calls sent without a result (e.g. the call about to be made) are pending: they count,
    # but prove nothing about progress.
    known = [e["r"] for e in same if e["r"] is not None]
    # A result that changed every time is progress: polling.
    polling = config.policy(action).poll or (
        len(known) > 1 and all(a != b for a, b in zip(known, known[1:], strict=False)))
    base = dict(subject=latest["c"], tool=action, first=same[0]["i"])
    if not polling and known:
        identical = [e["i"] for e in same if e["r"] == known[-1]
                     or (e is latest and e["r"] is None)]
        critical = config.tool_int(action, "repeat_critical")
        if len(identical) >= critical:
            return Finding("repeated_call", CRITICAL, len(identical), identical, critical, **base)
    warn = config.tool_int(action, "poll_warn" if polling else "repeat_warn")
    if len(same) >= warn:
        return Finding("repeated_call", WARNING, len(same), [e["i"] for e in same], warn,
                       facts={"polling": polling}, **base)
    return None


def cycle(tool_calls: Sequence[Entry], config: MonitorConfig) -> Finding | None:
    """agent.loop_detect's search over the tool-call keys, for a cycle (length 2 or more)
    ending at the latest call: the earliest span of the reversed trace, if it starts there."""
    window, repeats = config.integer("cycle_window"), config.integer("cycle_repeats")
    keys = [e["c"] for e in tool_calls]
    n = len(keys)
    # Cheap test first: a trailing cycle of length L (2..window) needs keys[-1] == keys[-1-L].
    reach = min(window, n - 1)
    if reach < 2 or keys[-1] not in keys[n - 1 - reach:n - 2]:
        return None
    span = find_cycle(keys[::-1], window, repeats, min_length=2)
    if span is None or span.start != 0:
        return None
    length = span.cycle_length
    chosen = tool_calls[n - 1 - span.end:]
    block = [e["c"] for e in chosen[:length]]
    if len(set(block)) == 1:
        return None  # one call repeated: repeated_call's business
    # Critical when each position's copies also got identical results (two or more known;
    # a pending call, without result, neither proves nor disproves it).
    same_results = True
    for position in range(length):
        known = {e["r"] for e in chosen[position::length]} - {None}
        count = sum(e["r"] is not None for e in chosen[position::length])
        same_results = same_results and len(known) == 1 and count >= 2
    severity = CRITICAL if same_results else WARNING
    return Finding("cycle", severity, span.repeats, [e["i"] for e in chosen], repeats,
                   subject=":".join(block), first=chosen[0]["i"], facts={"length": length})


def repeated_query(entries: Sequence[Entry], config: MonitorConfig) -> Finding | None:
    queries = [e for e in entries if e["k"] in QUERY_KINDS]
    if not queries:
        return None
    latest = queries[-1]
    same = [e["i"] for e in queries if e["c"] == latest["c"]]
    warn = config.integer("repeat_warn")
    if len(same) < warn:
        return None
    return Finding("repeated_query", WARNING, len(same), same, warn, subject=latest["c"],
                   first=same[0])
