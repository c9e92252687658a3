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
"""

from __future__ import annotations

import numpy as np

BLOCK_ROWS = 512
# Below this many multiply-adds a block is computed with einsum's own loops instead of BLAS:
# as fast for small executions, and it never wakes BLAS worker threads, whose spinning costs
# more than the product itself when the CPU is shared (docs/benchmarks.md: 100-call runs).
SMALL_GRAM = 1 << 24


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
                       block_rows: int = BLOCK_ROWS) -> np.ndarray:
    """Component label (the smallest member index) of each row of ``vectors`` (unit or zero
    float32 rows) in the graph whose edges are pairs at cosine distance < ``threshold``."""
    n = vectors.shape[0]
    parent = np.arange(n, dtype=np.int64)
    limit = np.float32(threshold)
    one = np.float32(1.0)
    for start in range(0, n, block_rows):
        stop = min(n, start + block_rows)
        rows, cols = vectors[start:stop], vectors[start:]
        if rows.shape[0] * cols.shape[0] * vectors.shape[1] <= SMALL_GRAM:
            gram = np.einsum("ik,jk->ij", rows, cols, optimize=False)
        else:
            gram = rows @ cols.T
        close = (one - gram) < limit
        diagonal = np.arange(stop - start)
        close[diagonal, diagonal] = False  # a vector is not its own edge
        rows = np.flatnonzero(close.any(axis=1))
        if rows.size == 0:
            continue
        cols = np.flatnonzero(close[rows].any(axis=0))
        edges = close[np.ix_(rows, cols)]
        parent = _merge(parent, start + rows, start + cols, edges)
    return _compress(parent)
