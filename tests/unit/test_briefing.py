"""The briefing's ranking and packing (loopsense.core.briefing): relevance first, recency as
tie-break, deterministic, and the block's token estimate never past the budget."""

from __future__ import annotations

import random

import pytest

from loopsense.core.briefing import HEADER, Item, estimate_tokens, pack, ranked


def lesson(i: int, text: str, created: str | None = None) -> Item:
    return Item("lesson", f"id-{i:03d}", created or f"2026-11-30T12:00:{i:02d}.000Z",
                f"lesson {i}", text)


def snapshot(i: int, lines: list[str]) -> Item:
    return Item("snapshot", f"snap-{i:03d}", f"2026-11-30T12:01:{i:02d}.000Z",
                f"snapshot {i}", "", tuple(lines), ("repeated_tool_call",))


def test_the_token_estimate_is_utf8_bytes_over_four_rounded_up():
    assert [estimate_tokens(t) for t in ("", "a", "abcd", "abcde", "é", "😀" * 2)] == [
        0, 1, 1, 2, 1, 2]


def test_the_most_relevant_comes_first_and_unrelated_items_by_recency():
    items = [lesson(1, "customer prefers email over phone"),
             lesson(2, "the export job for ticket exports times out after 30 seconds"),
             lesson(3, "warehouse inventory counts are nightly")]
    order = [i.id for _, i in ranked("ticket export timed out", items)]
    assert order[0] == "id-002"
    assert order[1:] == ["id-003", "id-001"]  # no overlap: newest first


def test_ties_go_to_the_newer_then_the_smaller_id():
    same = [lesson(i, "identical words", "2026-11-30T12:00:00.000Z") for i in (3, 1, 2)]
    same.append(lesson(9, "identical words", "2026-11-30T13:00:00.000Z"))
    assert [i.id for _, i in ranked("identical words", same)] == [
        "id-009", "id-001", "id-002", "id-003"]


def test_ranking_is_deterministic_and_independent_of_input_order():
    rng = random.Random(4)
    words = ["export", "ticket", "retry", "timeout", "invoice", "customer", "queue", "refund"]
    items = [lesson(i, " ".join(rng.choice(words) for _ in range(8))) for i in range(40)]
    first = ranked("ticket timeout", items)
    shuffled = items[:]
    rng.shuffle(shuffled)
    assert ranked("ticket timeout", shuffled) == first


@pytest.mark.parametrize("budget", [50, 51, 64, 100, 137, 250, 500, 1500])
def test_the_block_never_exceeds_the_budget(budget):
    rng = random.Random(budget)
    words = ["export", "ticket", "retry", "timeout", "invoice", "customer", "queue", "refund",
             "é", "😀"]
    items = [lesson(i, " ".join(rng.choice(words) for _ in range(rng.randrange(3, 60))))
             for i in range(30)]
    items += [snapshot(i, [f"k{j}: {{\"v\": \"{rng.choice(words)}\"}}" for j in range(50)])
              for i in range(3)]
    packed = pack("ticket timeout", items, budget)
    assert packed.tokens == estimate_tokens(packed.block) <= budget
    if packed.items:
        assert packed.block.startswith(HEADER)


def test_a_large_snapshot_keeps_the_entries_that_fit_and_says_so():
    big = snapshot(1, [f"key{j:03d}: {{\"note\": \"ticket {j} export pending\"}}"
                       for j in range(500)])
    packed = pack("ticket export", [big], 300)
    [item] = packed.items
    assert item["type"] == "snapshot" and 0 < item["entries"] < 500
    assert f"({item['entries']} of 500 shown)" in packed.block
    assert packed.tokens <= 300


def test_nothing_fits_nothing_is_returned():
    assert pack("q", [lesson(1, "x" * 1000)], 50).items == []
    assert pack("q", [], 1500).block == ""
