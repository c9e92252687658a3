"""Cycle search: the earliest span of a trace in which one block repeats back to back.

A span is a start ``s`` and a cycle length ``L`` such that ``trace[s:s+L]`` is followed by at
least ``threshold - 1`` copies of itself. Among all spans the earliest start wins, then the
shortest ``L``; ``repeats`` counts the copies to the end of the run (it may exceed the
threshold).

The search is O(n * window) and vectorized: ``eq[i, L-1]`` says whether ``trace[i]`` equals
``trace[i+L]``; a block of length ``L`` at ``s`` is followed by ``k`` copies exactly when
``eq[s : s+k*L, L-1]`` is all true. A reversed running minimum gives, for every cell at once,
the length of the run of equalities starting there; scanning the cells that meet the threshold
in row-major order yields the earliest start, then the shortest length.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    end: int  # inclusive
    cycle_length: int
    repeats: int


def symbol_ids(items: Sequence[Hashable]) -> np.ndarray:
    """Small integer ids in order of first appearance (equal items share an id)."""
    ids: dict[Hashable, int] = {}
    return np.fromiter((ids.setdefault(x, len(ids)) for x in items), dtype=np.int32,
                       count=len(items))


def find_cycle(trace: Sequence[Hashable], window: int, threshold: int,
               min_length: int = 1) -> Span | None:
    """The earliest, then shortest, block of ``min_length`` to ``window`` items repeated
    ``threshold`` or more times in a row."""
    if threshold < 2 or window < 1 or min_length < 1:
        raise ValueError("threshold must be >= 2, window and min_length >= 1")
    return find_cycle_ids(symbol_ids(trace), window, threshold, min_length)


def find_cycle_ids(ids: np.ndarray, window: int, threshold: int,
                   min_length: int = 1, first_block: int | None = None) -> Span | None:
    """``find_cycle`` on ids. The starts are searched in two blocks, the first tenth of the
    trace (``first_block``) then the rest, so a loop found early costs about a fifth of the whole
    search; each block also reads the ``(threshold - 1) * window`` events after it, which decide
    whether a run starting inside it is long enough."""
    n = len(ids)
    # A cycle of length L needs threshold * L events, so longer ones cannot fit.
    max_len = min(window, n // threshold)
    if max_len < 1:
        return None
    # Pad with values no real id takes (ids are >= 0) so comparisons past the end are false.
    padded = np.concatenate([ids, np.full(max_len, -1, dtype=ids.dtype)])
    shifted = np.lib.stride_tricks.sliding_window_view(padded[1:], max_len)[:n]
    reach = (threshold - 1) * max_len  # the events after a start that its hit depends on
    if first_block is None:  # two blocks when the first and what it reads are well under n
        first_block = n // 10 if 2 * (n // 10 + reach) <= n else 0
    blocks = [(0, first_block), (first_block, n)] if 0 < first_block < n else [(0, n)]
    for lo, hi in blocks:
        found = _first_hit(ids, shifted, lo, hi, min(n, hi + reach), max_len, threshold,
                           min_length)
        if found is not None:
            start, length = found
            # The whole run of equalities from start at this length: repeats to its end.
            differs = ids[start:n - length] != ids[start + length:]
            run = int(np.argmax(differs)) if differs.any() else len(differs)
            repeats = 1 + run // length
            return Span(start=start, end=start + repeats * length - 1, cycle_length=length,
                        repeats=repeats)
    return None


def _first_hit(ids: np.ndarray, shifted: np.ndarray, lo: int, hi: int, end: int, max_len: int,
               threshold: int, min_length: int) -> tuple[int, int] | None:
    """The earliest start in ``lo..hi-1``, then the shortest length, of a block repeated
    ``threshold`` times, looking at the events up to ``end`` (all those a start there needs)."""
    size = end - lo
    # The smallest index type that holds the rows: less memory traffic, 20-40% faster.
    index = np.int16 if size <= np.iinfo(np.int16).max else np.int32
    lengths = np.arange(1, max_len + 1, dtype=index)
    eq = ids[lo:end, None] == shifted[lo:end]  # eq[i, L-1]: trace[lo+i] == trace[lo+i+L]
    # run[i, L-1]: how many equalities in a row from i, i.e. (next false index) - i; cut at
    # ``end``, which is at least ``need`` past every start of the block, so no hit is lost.
    rows = np.arange(size, dtype=index)[:, None]
    next_false = np.where(eq, index(size), rows)
    next_false = np.minimum.accumulate(next_false[::-1], axis=0)[::-1]
    run = (next_false - rows)[:hi - lo]
    need = (threshold - 1) * lengths  # equalities required after a start
    hit = run >= need[None, :]
    if min_length > 1:
        hit[:, :min_length - 1] = False  # shorter blocks are another rule's business
    flat = int(np.argmax(hit))  # row-major: earliest start, then shortest length
    if not hit.flat[flat]:
        return None
    start, col = divmod(flat, max_len)
    return lo + start, col + 1
