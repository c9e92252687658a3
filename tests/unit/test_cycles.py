"""The vectorized cycle search agrees with a plain brute-force search, and with the spec."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopsense.core.cycles import find_cycle, find_cycle_ids, symbol_ids
from tests.naive_cycles import naive_find_cycle


def as_tuple(span):
    return None if span is None else (span.start, span.end, span.cycle_length, span.repeats)


@settings(max_examples=3000, deadline=None)
@given(
    trace=st.lists(st.integers(0, 3), max_size=60),
    window=st.integers(1, 25),
    threshold=st.integers(2, 7),
)
def test_agrees_with_brute_force_on_small_alphabets(trace, window, threshold):
    assert as_tuple(find_cycle(trace, window, threshold)) == naive_find_cycle(
        trace, window, threshold
    )


@settings(max_examples=400, deadline=None)
@given(
    trace=st.lists(st.integers(0, 3), max_size=50),
    window=st.integers(1, 20),
    threshold=st.integers(2, 6),
)
def test_the_early_stop_at_any_split_agrees_with_brute_force(trace, window, threshold):
    """The search in two blocks (the starts before the split first) finds what the whole
    search finds, wherever the split falls."""
    expected = naive_find_cycle(trace, window, threshold)
    ids = symbol_ids(trace)
    for split in range(1, len(trace)):
        for sparse in (True, False):
            assert as_tuple(find_cycle_ids(ids, window, threshold, first_block=split,
                                           sparse=sparse)) == expected


@settings(max_examples=1500, deadline=None)
@given(
    trace=st.lists(st.integers(0, 5), max_size=70),
    window=st.integers(1, 25),
    threshold=st.integers(2, 7),
    min_length=st.integers(1, 3),
)
def test_both_ways_of_reading_the_equalities_agree_with_brute_force(trace, window, threshold,
                                                                    min_length):
    """The sparse reading (true cells only) and the dense one (every cell) each find what the
    brute-force search finds, whichever the count of equal pairs would pick."""
    expected = naive_find_cycle(trace, window, threshold, min_length)
    ids = symbol_ids(trace)
    for sparse in (True, False):
        assert as_tuple(find_cycle_ids(ids, window, threshold, min_length,
                                       sparse=sparse)) == expected


@settings(max_examples=500, deadline=None)
@given(
    block=st.lists(st.sampled_from("abc"), min_size=1, max_size=6),
    copies=st.integers(1, 8),
    prefix=st.lists(st.sampled_from("abcd"), max_size=10),
    suffix=st.lists(st.sampled_from("abcd"), max_size=10),
    threshold=st.integers(2, 5),
)
def test_agrees_on_planted_cycles(block, copies, prefix, suffix, threshold):
    trace = prefix + block * copies + suffix
    for window in (1, len(block), 20):
        assert as_tuple(find_cycle(trace, window, threshold)) == naive_find_cycle(
            trace, window, threshold
        )


def test_spec_search_click_three_times():
    trace = ["search", "click"] * 3
    assert as_tuple(find_cycle(trace, 20, 3)) == (0, 5, 2, 3)


def test_three_identical_events_are_a_length_one_loop():
    assert as_tuple(find_cycle(["a"] * 3, 20, 3)) == (0, 2, 1, 3)


def test_earliest_start_beats_shorter_cycle_later():
    trace = ["a", "b"] * 3 + ["c"] * 5
    assert as_tuple(find_cycle(trace, 20, 3)) == (0, 5, 2, 3)


def test_shortest_length_wins_at_the_same_start():
    # At start 0 both L=1 and L=2 repeat; L=1 is chosen and counts all copies.
    assert as_tuple(find_cycle(["x"] * 8, 20, 3)) == (0, 7, 1, 8)


def test_cycle_longer_than_window_is_not_found():
    trace = list("abc") * 3
    assert find_cycle(trace, 2, 3) is None
    assert as_tuple(find_cycle(trace, 3, 3)) == (0, 8, 3, 3)


def test_no_loop_in_distinct_events():
    assert find_cycle(list(range(100)), 20, 2) is None


def test_short_trace_returns_none():
    assert find_cycle([], 20, 3) is None
    assert find_cycle(["a", "a"], 20, 3) is None


@pytest.mark.parametrize(("window", "threshold"), [(0, 3), (5, 1)])
def test_rejects_meaningless_parameters(window, threshold):
    with pytest.raises(ValueError):
        find_cycle(["a"], window, threshold)
