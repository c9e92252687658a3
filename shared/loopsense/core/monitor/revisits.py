"""state_revisit: the latest checkpoint's state (its canonical metadata, spec/semantic_loop.md)
seen again and again in the segment.

Revisits count from the last time the agent reached a state it had not seen before in the
segment: a hub it returns to between new pages (a search page between results) is progress;
a state it keeps coming back to while everything between is old is not. Warning at
``revisit_threshold`` counted visits; critical when no other state was checkpointed between
them (the agent acts, the state stays put). It stands while that checkpoint is the latest.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from loopsense.core.monitor.config import MonitorConfig
from loopsense.core.monitor.findings import CRITICAL, WARNING, Finding

Entry = dict[str, Any]
CHECKPOINT = "checkpoint"


def state_revisit(entries: Sequence[Entry], config: MonitorConfig) -> Finding | None:
    checkpoints = [e for e in entries if e["k"] == CHECKPOINT]
    if not checkpoints:
        return None
    state = checkpoints[-1]["n"]
    seen: set[str] = set()
    visits: list[int] = []  # the counted visits of ``state``
    moved = False  # another state checkpointed between the counted visits
    fresh = False  # a state new to the segment since the last visit
    other_between = False  # another state since the last visit
    for e in checkpoints:
        key = e["n"]
        if key == state:
            if fresh:
                visits, moved = [], False
            elif visits and other_between:
                moved = True
            visits.append(e["i"])
            fresh = other_between = False
        else:
            fresh = fresh or key not in seen
            other_between = True
        seen.add(key)
    threshold = config.integer("revisit_threshold")
    if len(visits) < threshold:
        return None
    severity = WARNING if moved else CRITICAL
    return Finding("state_revisit", severity, len(visits), visits, threshold, subject=state,
                   first=visits[0])
