"""drift and novelty: how far the recent steps are from the objective, and how much they add.

Novelty is incremental: when a step joins the segment its highest similarity to any earlier
step of the segment is computed once, and 1 minus it kept in its entry (``u``, the step's
novelty): cosine when both steps carry an embedding, else 1 for the same novelty key and 0
otherwise. The score averages ``u`` over the last ``novelty_window`` steps.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Sequence
from typing import Any

from loopsense.core.monitor.config import MonitorConfig
from loopsense.core.monitor.findings import WARNING, Finding

Entry = dict[str, Any]
UNKNOWN = -1  # drift unknown (spec: -1)
_NOVELTY = operator.itemgetter("u")


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    if len(a) != len(b):
        return 0.0  # vectors of different models: nothing in common
    return sum(map(operator.mul, a, b))  # fixed order: deterministic


def highest_similarity(new: Entry, earlier: Sequence[Entry]) -> float:
    vector = new.get("e")
    if vector is None:  # every pair compares by key
        return 1.0 if new["n"] in [e["n"] for e in earlier] else 0.0
    best = 0.0
    for e in earlier:
        other = e.get("e")
        if vector is not None and other is not None:
            best = max(best, _dot(vector, other))
        elif e["n"] == new["n"]:
            return 1.0
    return min(best, 1.0)


def novelty_score(counted: Sequence[Entry], config: MonitorConfig) -> float:
    return window_score(counted[-config.integer("novelty_window"):])


def window_score(recent: Sequence[Entry]) -> float:
    """The novelty score of ``recent``, the segment's last novelty_window counted steps."""
    if not recent:
        return 1.0
    return _mean(math.fsum(map(_NOVELTY, recent)), len(recent))


@functools.lru_cache(maxsize=4_096)
def _mean(total: float, count: int) -> float:
    """Pure, and without embeddings ``total`` is a whole number: a few pairs recur at every
    step, and round() to 4 digits costs a third of the score."""
    return round(total / count, 4)


def novelty(counted: Sequence[Entry], score: float, config: MonitorConfig) -> Finding | None:
    window = config.integer("novelty_window")
    if len(counted) < window or score >= config.value("novelty_floor"):
        return None
    indices = [e["i"] for e in counted[-window:]]
    return Finding("novelty", WARNING, window, indices, window, first=indices[0],
                   facts={"score": score})


def drift_score(counted: Sequence[Entry], config: MonitorConfig) -> float | int:
    """Cosine distance (0..2) of the mean embedding of the last novelty_window steps from the
    objective; -1 when unknown (no objective, or no embedding among those steps)."""
    objective = config.objective
    if objective is None:
        return UNKNOWN
    vectors = [e["e"] for e in counted[-config.integer("novelty_window"):] if e.get("e")]
    if not vectors or any(len(v) != len(objective) for v in vectors):
        return UNKNOWN
    mean = [math.fsum(column) / len(vectors) for column in zip(*vectors, strict=True)]
    norm = math.sqrt(math.fsum(x * x for x in mean))
    target = math.sqrt(math.fsum(x * x for x in objective))
    if norm == 0 or target == 0:
        return UNKNOWN
    cosine = _dot(mean, objective) / (norm * target)
    return round(min(2.0, max(0.0, 1.0 - cosine)), 4)


def drift(counted: Sequence[Entry], score: float | int, config: MonitorConfig) -> Finding | None:
    if score == UNKNOWN or score < config.value("drift_threshold"):
        return None
    indices = [e["i"] for e in counted[-config.integer("novelty_window"):] if e.get("e")]
    return Finding("drift", WARNING, len(indices), indices, len(indices), first=indices[0],
                   facts={"score": score})
