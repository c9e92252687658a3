"""Rules over the end of the segment: error_streak, stagnation, monologue, condensation_loop.

Each reads the trailing run of one kind of step, so it stops the moment the run is broken.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from loopsense.core.monitor.config import MonitorConfig
from loopsense.core.monitor.findings import CRITICAL, WARNING, Finding

Entry = dict[str, Any]


def failures(entries: Sequence[Entry]) -> list[Entry]:
    """The trailing run of (counted) tool calls with a negative outcome. Calls sent without an
    outcome (not known yet) neither break nor extend it."""
    run: list[Entry] = []
    for e in reversed(entries):
        if e["k"] != "tool_call" or "x" in e or e["o"] is None:
            continue
        if e["o"] != "neg":
            break
        run.append(e)
    run.reverse()
    return run


def error_streak(streak: Sequence[Entry], config: MonitorConfig) -> Finding | None:
    limit = config.integer("error_streak")
    if len(streak) < limit:
        return None
    indices = [e["i"] for e in streak]
    actions = {e["a"] for e in streak}
    # The same action failing each time is no progress at all, whatever the error said.
    if len(actions) == 1:
        return Finding("error_streak", CRITICAL, len(streak), indices, limit,
                       subject=str(streak[0]["c"]), tool=streak[0]["a"], first=indices[0])
    return Finding("error_streak", WARNING, len(streak), indices, limit, first=indices[0])


def stagnation(streak: Sequence[Entry], config: MonitorConfig) -> Finding | None:
    limit = config.integer("stagnation_threshold")
    if len(streak) < limit:
        return None
    indices = [e["i"] for e in streak]
    return Finding("stagnation", WARNING, len(streak), indices, limit, first=indices[0])


def monologue(entries: Sequence[Entry], config: MonitorConfig) -> Finding | None:
    run: list[Entry] = []
    for e in reversed(entries):
        if e["k"] != "message":
            break
        run.append(e)
    limit = config.integer("monologue_limit")
    if len(run) < limit:
        return None
    run.reverse()
    indices = [e["i"] for e in run]
    identical = len({e["c"] for e in run}) == 1
    return Finding("monologue", CRITICAL if identical else WARNING, len(run), indices, limit,
                   subject=run[0]["c"] if identical else "", first=indices[0])


def condensation_loop(entries: Sequence[Entry], config: MonitorConfig) -> Finding | None:
    """Condensations with at most one other step between consecutive ones, the last of them at
    most one step back."""
    chain: list[int] = []
    others = 0
    for e in reversed(entries):
        if e["k"] == "condensation":
            chain.append(e["i"])
            others = 0
            continue
        others += 1
        if others > 1:
            break
    limit = config.integer("condensation_limit")
    if len(chain) < limit:
        return None
    chain.reverse()
    return Finding("condensation_loop", CRITICAL, len(chain), chain, limit, first=chain[0])
