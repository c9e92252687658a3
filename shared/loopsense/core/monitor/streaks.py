"""Rules over the end of the segment: error_streak, stagnation, monologue, condensation_loop.

Each reads the trailing run of one kind of step, so it stops the moment the run is broken.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from loopsense.core.monitor import lookalike
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
    """Talking without acting, in the trailing run of messages (no tool call among them): the
    latest message and those of the run near-identical to it (word Jaccard at least
    ``monologue_similar``, chained as similar_call chains arguments) number ``monologue_limit``:
    critical when all are identical, else warning; or the run holds ``monologue_run`` messages
    whatever they say: warning. Fewer distinct messages are narration, not a loop
    (docs/decisions.md, "monologue")."""
    run: list[Entry] = []
    for e in reversed(entries):
        if e["k"] != "message":
            break
        run.append(e)
    limit = config.integer("monologue_limit")
    long = config.integer("monologue_run")
    if len(run) < limit and len(run) < long:
        return None
    run.reverse()
    close = lookalike.linked(run, run[-1], config.value("monologue_similar"))
    if len(close) >= limit and len({e["c"] for e in close}) == 1:
        indices = [e["i"] for e in close]
        return Finding("monologue", CRITICAL, len(close), indices, limit, subject=run[-1]["c"],
                       first=indices[0])
    if len(run) >= long:
        indices = [e["i"] for e in run]
        return Finding("monologue", WARNING, len(run), indices, long, first=indices[0])
    if len(close) >= limit:
        indices = [e["i"] for e in close]
        return Finding("monologue", WARNING, len(close), indices, limit, first=indices[0],
                       facts={"similar": True})
    return None


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
