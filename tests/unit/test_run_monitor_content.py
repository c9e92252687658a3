"""content_loop: a sentence streamed again and again fires, whatever the chunking; markdown
where repetition is normal (tables, code, lists) does not."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.monitor_traces import answers, call, chunk, ever

SENTENCE = "I am checking the deployment status once more to be sure. "


def chunked(text: str, sizes: list[int]) -> list[dict]:
    out, at, i = [], 0, 0
    while at < len(text):
        size = sizes[i % len(sizes)]
        out.append(chunk(text[at:at + size]))
        at, i = at + size, i + 1
    return out


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=200), min_size=1, max_size=8))
def test_a_sentence_streamed_15_times_fires_in_chunks_of_any_size(sizes):
    seen = ever(chunked(SENTENCE * 15, sizes))
    assert seen.get("content_loop") == {"critical"}


def test_the_finding_names_the_chunks_and_no_text():
    out = answers(chunked(SENTENCE * 15, [13]))
    fired = next(a for a in out if a.findings)
    finding = next(f for f in fired.findings if f.rule == "content_loop")
    assert finding.count == 10 and finding.indices[-1] == fired.index
    assert "deployment" not in repr(fired.signal())


def test_a_stream_is_ended_by_any_other_step():
    half = chunked(SENTENCE * 6, [20])
    trace = half + [call("x", {})] + half
    assert "content_loop" not in ever(trace)


def test_a_long_markdown_table_does_not_fire():
    rows = ["| id | name | status |\n", "|----|------|--------|\n"]
    rows += [f"| {i} | item | pending |\n" for i in range(60)]
    assert "content_loop" not in ever([chunk(r) for r in rows])


def test_a_code_block_with_repeated_lines_does_not_fire():
    lines = ["```python\n"] + ["    assert value == expected_value_for_this_case\n"] * 40
    lines += ["```\n"]
    assert "content_loop" not in ever([chunk(line) for line in lines])


def test_a_list_of_similar_items_does_not_fire():
    items = [f"- Updated the license header in src/module_{i}/handler.py\n" for i in range(40)]
    numbered = [f"{i}. Updated the license header in src/module_{i}/handler.py\n"
                for i in range(40)]
    for trace in (items, numbered):
        assert "content_loop" not in ever([chunk(x) for x in trace])


def test_similar_lines_with_a_shared_prefix_are_not_a_loop():
    # no markdown: the periods between occurrences differ, so it is a list, not a loop
    text = "".join(f"Processed record number {i:04d} of the batch without any problem. "
                   for i in range(40))
    assert "content_loop" not in ever(chunked(text, [17]))


def test_dividers_are_skipped():
    trace = [chunk("─" * 60 + "\n")] * 30 + [chunk("=" * 60)] * 30
    assert "content_loop" not in ever(trace)


def test_after_the_fence_closes_tracking_resumes():
    trace = [chunk("```\n"), chunk("x = 1\n" * 20), chunk("```\n")] + chunked(SENTENCE * 15,
                                                                             [9])
    assert ever(trace).get("content_loop") == {"critical"}
