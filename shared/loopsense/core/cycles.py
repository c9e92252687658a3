"""Cycle search: the earliest span of a trace in which one block repeats back to back.

A span is a start ``s`` and a cycle length ``L`` such that ``trace[s:s+L]`` is followed by at
least ``threshold - 1`` copies of itself. Among all spans the earliest start wins, then the
shortest ``L``; ``repeats`` counts the copies to the end of the run (it may exceed the
threshold).

The search is O(n * window) and vectorized: ``eq[L-1, i]`` says whether ``trace[i]`` equals
``trace[i+L]``; a block of length ``L`` at ``s`` is followed by ``k`` copies exactly when
``eq[L-1, s : s+k*L]`` is all true. Most traces have few equal pairs, so the runs of equalities
are read from the true cells alone (``_sparse_hit``); where over an eighth of the cells are true
(a trace of a few actions), a reversed running minimum over every cell gives the same answer
faster (``_dense_hit``). Either way the earliest start wins, then the shortest length.
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


def find_cycle_ids(ids: np.ndarray, window: int, threshold: int, min_length: int = 1,
                   first_block: int | None = None, sparse: bool | None = None) -> Span | None:
    """``find_cycle`` on ids. The starts are searched in two blocks, the first tenth of the
    trace (``first_block``) then the rest, so a loop found early costs about a fifth of the whole
    search; each block also reads the ``(threshold - 1) * window`` events after it, which decide
    whether a run starting inside it is long enough. ``sparse`` forces one of the two ways of
    reading the equalities (tests); by default the count of equal pairs picks."""
    n = len(ids)
    # A cycle of length L needs threshold * L events, so longer ones cannot fit.
    max_len = min(window, n // threshold)
    if max_len < 1:
        return None
    # Pad with values no real id takes (ids are >= 0) so comparisons past the end are false.
    padded = np.concatenate([ids, np.full(max_len, -1, dtype=ids.dtype)])
    # shifts[L-1] is the trace moved L to the left: one contiguous row per length (as_strided
    # directly: sliding_window_view's checks cost 15 us, a tenth of a search that stops early).
    step = padded.strides[0]
    shifts = np.lib.stride_tricks.as_strided(padded[1:], shape=(max_len, n),
                                             strides=(step, step), writeable=False)
    reach = (threshold - 1) * max_len  # the events after a start that its hit depends on
    if first_block is None:  # two blocks when the first and what it reads are well under n
        first_block = n // 10 if 2 * (n // 10 + reach) <= n else 0
    blocks = [(0, first_block), (first_block, n)] if 0 < first_block < n else [(0, n)]
    for lo, hi in blocks:
        end = min(n, hi + reach)
        size = end - lo
        eq = np.zeros((max_len, size + 1), dtype=bool)  # the false last column ends every run
        np.equal(shifts[:, lo:end], ids[lo:end], out=eq[:, :size])
        use_sparse = 8 * np.count_nonzero(eq) <= eq.size if sparse is None else sparse
        found = (_sparse_hit(eq, hi - lo, threshold, min_length) if use_sparse
                 else _dense_hit(eq[:, :size].T, hi - lo, threshold, min_length))
        if found is not None:
            start, length = lo + found[0], found[1]
            # The whole run of equalities from start at this length: repeats to its end.
            differs = ids[start:n - length] != ids[start + length:]
            run = int(np.argmax(differs)) if differs.any() else len(differs)
            repeats = 1 + run // length
            return Span(start=start, end=start + repeats * length - 1, cycle_length=length,
                        repeats=repeats)
    return None


def _sparse_hit(eq: np.ndarray, starts: int, threshold: int,
                min_length: int) -> tuple[int, int] | None:
    """The earliest start below ``starts``, then the shortest length, of a block repeated
    ``threshold`` times, from the runs of consecutive true cells of ``eq`` (lengths x events,
    its last column false). The earliest start of a long enough run is the run's first cell;
    a run cut at the block's end is still at least as long as a start inside the block needs."""
    cells = np.flatnonzero(eq)
    if cells.size == 0:
        return None
    # Plain slicing rather than np.diff (its overhead is a tenth of a search that stops early).
    first = np.empty(cells.size, dtype=bool)  # a cell that begins a run
    first[0] = True
    np.not_equal(cells[1:] - cells[:-1], 1, out=first[1:])
    begins = np.flatnonzero(first)
    run = np.empty_like(begins)
    run[:-1] = begins[1:] - begins[:-1]
    run[-1] = cells.size - begins[-1]
    length, start = np.divmod(cells[begins], eq.shape[1])
    length += 1
    ok = (run >= (threshold - 1) * length) & (start < starts)
    if min_length > 1:
        ok &= length >= min_length
    if not ok.any():
        return None
    width = eq.shape[0] + 1
    best = int((start[ok] * width + length[ok]).min())  # earliest start, then shortest length
    return divmod(best, width)


def _dense_hit(eq: np.ndarray, starts: int, threshold: int,
               min_length: int) -> tuple[int, int] | None:
    """``_sparse_hit`` over every cell of ``eq`` (events x lengths here, no padding column)."""
    size, max_len = eq.shape
    # The smallest index type that holds the rows: less memory traffic, 20-40% faster.
    index = np.int16 if size <= np.iinfo(np.int16).max else np.int32
    lengths = np.arange(1, max_len + 1, dtype=index)
    # run[i, L-1]: how many equalities in a row from i, i.e. (next false index) - i; cut at
    # the block's end, which is at least ``need`` past every start of the block.
    rows = np.arange(size, dtype=index)[:, None]
    next_false = np.where(eq, index(size), rows)
    next_false = np.minimum.accumulate(next_false[::-1], axis=0)[::-1]
    run = (next_false - rows)[:starts]
    need = (threshold - 1) * lengths  # equalities required after a start
    hit = run >= need[None, :]
    if min_length > 1:
        hit[:, :min_length - 1] = False  # shorter blocks are another rule's business
    flat = int(np.argmax(hit))  # row-major: earliest start, then shortest length
    if not hit.flat[flat]:
        return None
    start, col = divmod(flat, max_len)
    return start, col + 1
