"""Connected components of the "similar" graph of unit vectors, without a Python loop over pairs.

Two vectors are similar when their cosine distance ``1 - dot`` (computed in float32) is strictly
below the threshold. The Gram matrix is computed one block of rows at a time, upper triangle
only (rows ``a:b`` against columns ``a:``), so memory stays at ``block x n`` floats whatever
``n`` is; small blocks use einsum's own loops rather than BLAS (``SMALL_GRAM``). Each block's
edges are merged into a parent array by vectorized union-find: every root that touches a
smaller root through an edge is hooked under the smallest such root, then paths are compressed
by pointer jumping, until every edge of the block joins equal roots. Roots only ever point to
smaller indices, so there are no cycles, and each round removes at least one root, so it ends
(in a few rounds in practice).

Large blocks are pruned first (``_candidates``): by Cauchy-Schwarz, ``u.v <= u_h.v_h +
sum_k |u_k| |v_k|`` for any split of the coordinates into a head ``h`` and tail parts ``k``. The
head is the ``PRUNE_HEAD`` share of the coordinates that hold the most energy (sum of squares
over all rows: text features are Zipfian, so a few coordinates carry the common ones), and the
tail parts' norms are ``PRUNE_PARTS`` more coordinates; that one product (about a quarter of the
work) rules out almost every pair, and only the pairs that remain get their dot product. Which
coordinates form the head changes only the speed: the bound holds for any choice.
"""

from __future__ import annotations

import numpy as np

BLOCK_ROWS = 512
# Below this many multiply-adds a block is computed with einsum's own loops instead of BLAS:
# as fast for small executions, and it never wakes BLAS worker threads, whose spinning costs
# more than the product itself when the CPU is shared (docs/benchmarks.md: 100-call runs).
SMALL_GRAM = 1 << 24
PRUNE_HEAD = 1 / 4  # the share of the coordinates in the pruning product
PRUNE_PARTS = 8  # the tail's norms in this many parts: a tighter bound for 8 more coordinates
# Above this share of pairs left by the bound, the full product of the block is cheaper than
# the pairs' own dot products (gathered rows, no BLAS), PAIR_CHUNK pairs at a time.
PRUNE_DENSE = 1 / 64
PAIR_CHUNK = 4096
# The bound is computed in float32 too: a margin far above its rounding keeps every close pair.
PRUNE_MARGIN = 1e-3


def _compress(parent: np.ndarray) -> np.ndarray:
    """Every index pointing straight at its root (pointer jumping)."""
    while True:
        grand = parent[parent]
        if np.array_equal(grand, parent):
            return parent
        parent = grand


def _merge(parent: np.ndarray, rows: np.ndarray, cols: np.ndarray,
           edges: np.ndarray) -> np.ndarray:
    """Union the pairs (rows[i], cols[j]) where ``edges[i, j]``; returns the compressed parents."""
    big = parent.size
    while True:
        parent = _compress(parent)
        row_root, col_root = parent[rows], parent[cols]
        row_min = np.where(edges, col_root[None, :], big).min(axis=1)
        row_max = np.where(edges, col_root[None, :], -1).max(axis=1)
        col_min = np.where(edges, row_root[:, None], big).min(axis=0)
        has_edge = row_max >= 0
        if np.all((row_min[has_edge] == row_root[has_edge])
                  & (row_max[has_edge] == row_root[has_edge])):
            return parent
        lower_row = row_min < row_root
        lower_col = col_min < col_root
        np.minimum.at(parent, row_root[lower_row], row_min[lower_row])
        np.minimum.at(parent, col_root[lower_col], col_min[lower_col])


def similar_components(vectors: np.ndarray, threshold: float,
                       block_rows: int = BLOCK_ROWS, prune: bool | None = None) -> np.ndarray:
    """Component label (the smallest member index) of each row of ``vectors`` (unit or zero
    float32 rows) in the graph whose edges are pairs at cosine distance < ``threshold``.
    ``prune`` forces the bound on or off (tests); by default it serves the BLAS blocks."""
    n, dims = vectors.shape
    parent = np.arange(n, dtype=np.int64)
    limit = np.float32(threshold)
    one = np.float32(1.0)
    head: np.ndarray | None = None
    for start in range(0, n, block_rows):
        stop = min(n, start + block_rows)
        rows, cols = vectors[start:stop], vectors[start:]
        small = rows.shape[0] * cols.shape[0] * dims <= SMALL_GRAM
        bounded = not small if prune is None else prune
        found = None
        if bounded:
            head = _bound_rows(vectors) if head is None else head
            found = _candidates(head, start, stop, one - limit - np.float32(PRUNE_MARGIN))
        if found is not None:
            pair_rows, pair_cols = found
            near = np.empty(pair_rows.size, dtype=bool)
            for at in range(0, pair_rows.size, PAIR_CHUNK):  # gathered rows: bounded memory
                part = slice(at, at + PAIR_CHUNK)
                dots = np.einsum("ij,ij->i", rows[pair_rows[part]], cols[pair_cols[part]])
                near[part] = (one - dots) < limit
            pair_rows, pair_cols = pair_rows[near], pair_cols[near]
            if pair_rows.size == 0:
                continue
            at_rows, row_at = np.unique(pair_rows, return_inverse=True)
            at_cols, col_at = np.unique(pair_cols, return_inverse=True)
            close = np.zeros((at_rows.size, at_cols.size), dtype=bool)
            close[row_at, col_at] = True
        else:
            gram = (np.einsum("ik,jk->ij", rows, cols, optimize=False) if small
                    else rows @ cols.T)
            close = (one - gram) < limit
            at_rows, at_cols = np.arange(stop - start), np.arange(n - start)
            close[at_rows, at_rows] = False  # a vector is not its own edge
        keep_rows = np.flatnonzero(close.any(axis=1))
        if keep_rows.size == 0:
            continue
        keep_cols = np.flatnonzero(close[keep_rows].any(axis=0))
        edges = close[np.ix_(keep_rows, keep_cols)]
        parent = _merge(parent, start + at_rows[keep_rows], start + at_cols[keep_cols], edges)
    return _compress(parent)


def _bound_rows(vectors: np.ndarray) -> np.ndarray:
    """Each row as the coordinates of the bound: its head, then its tail parts' norms."""
    n, dims = vectors.shape
    split = int(dims * PRUNE_HEAD)
    squares = np.square(vectors)
    order = np.argsort(-squares.sum(axis=0), kind="stable")
    parts = np.zeros((dims, PRUNE_PARTS), dtype=np.float32)
    for k, part in enumerate(np.array_split(order[split:], PRUNE_PARTS)):
        parts[part, k] = 1.0
    bound = np.empty((n, split + PRUNE_PARTS), dtype=np.float32)
    np.take(vectors, order[:split], axis=1, out=bound[:, :split])
    np.sqrt(squares @ parts, out=bound[:, split:])
    return bound


def _candidates(head: np.ndarray, start: int, stop: int,
                least: np.float32) -> tuple[np.ndarray, np.ndarray] | None:
    """The pairs (row, column in block coordinates, a vector never with itself) of rows
    ``start:stop`` against ``start:`` whose bound on the dot product exceeds ``least``; None
    where the bound leaves too many pairs to be worth it."""
    bound = head[start:stop] @ head[start:].T
    diagonal = np.arange(stop - start)
    bound[diagonal, diagonal] = -np.inf
    found = np.flatnonzero(bound > least)
    if found.size > PRUNE_DENSE * bound.size:
        return None
    return np.divmod(found, bound.shape[1])
