"""The straightforward search, written for clarity: the oracle for tests and the benchmark's
baseline (for each start, for each length, compare element by element with early exit)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence


def naive_find_cycle(trace: Sequence[Hashable], window: int, threshold: int,
                     min_length: int = 1):
    """(start, end, cycle_length, repeats) of the earliest, then shortest, span of blocks of
    ``min_length`` to ``window`` items, or None."""
    n = len(trace)
    for start in range(n):
        for length in range(min_length, window + 1):
            copies = 1
            while start + (copies + 1) * length <= n and all(
                trace[start + i] == trace[start + copies * length + i] for i in range(length)
            ):
                copies += 1
            if copies >= threshold:
                return start, start + copies * length - 1, length, copies
    return None
