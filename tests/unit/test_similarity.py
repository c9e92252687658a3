"""Blocked Gram matrix + vectorized union-find == union-find over every pair in Python."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from loopsense.core.similarity import similar_components
from tests.naive_lexvec import naive_components


def unit_rows(seed: int, n: int, dims: int, clusters: int, noise: float) -> np.ndarray:
    """n rows around ``clusters`` random centres (plus some isolated rows and zero rows)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((max(clusters, 1), dims))
    rows = centres[rng.integers(0, len(centres), n)] + noise * rng.standard_normal((n, dims))
    rows[rng.random(n) < 0.1] = rng.standard_normal(dims)  # strays
    rows[rng.random(n) < 0.05] = 0.0  # messages without features
    norms = np.linalg.norm(rows, axis=1)
    rows[norms > 0] /= norms[norms > 0, None]
    return rows.astype(np.float32)


def near_threshold(vectors: np.ndarray, threshold: float) -> bool:
    """Whether some pair sits so close to the threshold that summation order could flip it."""
    distance = 1.0 - vectors.astype(np.float64) @ vectors.astype(np.float64).T
    return bool(np.any(np.abs(distance - threshold) < 1e-4))


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(0, 70), dims=st.sampled_from([2, 3, 8, 64]),
       clusters=st.integers(0, 6), noise=st.sampled_from([0.05, 0.2, 0.5]),
       threshold=st.sampled_from([0.05, 0.2, 0.5]), block=st.sampled_from([1, 3, 16, 512]))
def test_agrees_with_union_find_over_all_pairs(seed, n, dims, clusters, noise, threshold, block):
    vectors = unit_rows(seed, n, dims, clusters, noise)
    assume(not near_threshold(vectors, threshold))
    expected = naive_components(vectors, threshold)
    for prune in (None, True, False):  # the Cauchy-Schwarz bound first, or every pair
        labels = similar_components(vectors, threshold, block_rows=block, prune=prune)
        assert labels.tolist() == expected, prune


def test_a_chain_joins_end_to_end_even_when_its_ends_are_far_apart():
    angles = np.radians(np.arange(0, 200, 15.0))  # 15 degrees apart: cos 0.966, distance 0.034
    chain = np.stack([np.cos(angles), np.sin(angles)], axis=1).astype(np.float32)
    rng = np.random.default_rng(3)
    shuffled = rng.permutation(len(chain))
    labels = similar_components(chain[shuffled], 0.05, block_rows=2)
    assert set(labels.tolist()) == {0}
    assert float(chain[0] @ chain[-1]) < 0  # the two ends point in opposite directions


def test_the_threshold_is_strict():
    a = np.array([1.0, 0.0], dtype=np.float32)
    b = np.array([0.75, np.sqrt(1 - 0.75**2)], dtype=np.float32)  # cos 0.75: distance 0.25
    vectors = np.stack([a, b])
    distance = np.float32(1.0) - np.float32(vectors[0] @ vectors[1])
    assert similar_components(vectors, float(distance)).tolist() == [0, 1]  # not below: apart
    assert similar_components(vectors, float(distance) + 1e-6).tolist() == [0, 0]


def test_zero_rows_are_similar_to_nothing_not_even_each_other():
    vectors = np.zeros((4, 8), dtype=np.float32)
    assert similar_components(vectors, 0.5).tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("n", [0, 1])
def test_tiny_inputs(n):
    assert similar_components(np.ones((n, 4), dtype=np.float32) / 2, 0.2).tolist() == \
        list(range(n))


def test_labels_are_the_smallest_member_and_blocks_do_not_matter():
    vectors = unit_rows(11, 700, 16, 5, 0.05)
    expected = similar_components(vectors, 0.2, block_rows=700)
    for block in (1, 7, 64, 512, 1000):
        assert np.array_equal(similar_components(vectors, 0.2, block_rows=block), expected)
    for label in np.unique(expected):
        assert label == np.flatnonzero(expected == label).min()


@pytest.mark.parametrize("seed", range(5))
def test_blas_and_einsum_blocks_agree(seed, monkeypatch):
    from loopsense.core import similarity

    vectors = unit_rows(seed, 300, 64, 8, 0.2)
    if near_threshold(vectors, 0.2):
        pytest.skip("a pair sits on the threshold: summation order could flip it")
    monkeypatch.setattr(similarity, "SMALL_GRAM", 0)  # every block through BLAS
    with_blas = similar_components(vectors, 0.2, block_rows=64)
    monkeypatch.setattr(similarity, "SMALL_GRAM", 1 << 40)  # every block through einsum
    with_einsum = similar_components(vectors, 0.2, block_rows=64)
    assert with_blas.tolist() == with_einsum.tolist() == naive_components(vectors, 0.2)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 40), dims=st.sampled_from([2, 9, 64, 512]),
       skew=st.sampled_from([0.0, 1.0, 2.0]))
def test_the_pruning_bound_is_never_below_a_dot_product(seed, n, dims, skew):
    """The head of most energy plus the tail parts' norms bound every pair's dot product, on
    coordinates of even or Zipfian energy (which is what makes the head worth choosing)."""
    from loopsense.core.similarity import _bound_rows

    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((n, dims)) / (1.0 + rng.permutation(dims)) ** skew
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    vectors = rows.astype(np.float32)
    bound = _bound_rows(vectors).astype(np.float64)
    exact = vectors.astype(np.float64)
    assert np.all(bound @ bound.T >= exact @ exact.T - 1e-6)
