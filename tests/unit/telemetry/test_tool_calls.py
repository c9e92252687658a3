"""The tool_calls failure class (platform/telemetry/tool_calls.py): the run monitor's
repeated_call and cycle over an execution's tool_call events."""

from __future__ import annotations

from loopsense.core.monitor.steps import call_key
from loopsense.platform.telemetry.tool_calls import signatures


def _call(name: str, city: str, result: str | None = "none") -> dict:
    event = {"type": "tool_call", "name": name, "arguments": {"city": city}}
    if result is not None:
        event["result"] = result
    return event


def _key(name: str, city: str) -> str:
    return call_key(name, {"city": city}, frozenset())[:8]


def test_a_call_repeated_repeat_warn_times_fires_once_with_its_key():
    events = [_call("search", "Paris"), {"type": "llm_call"}] * 4
    assert signatures(events, {}) == [f"tool_calls/repeated_call_{_key('search', 'Paris')}"]
    assert signatures(events[:-2], {}) == []  # three: under repeat_warn (4)
    assert signatures(events[:4], {"repeat_warn": 2}) == [
        f"tool_calls/repeated_call_{_key('search', 'Paris')}"]


def test_canonical_arguments_are_the_same_call():
    events = [_call("search", c) for c in ("Paris", "paris ", " PARIS", "Paris")]
    assert len(signatures(events, {})) == 1


def test_polling_counts_only_from_poll_warn():
    events = [_call("status", "Paris", result=f"{n}%") for n in range(6)]
    assert signatures(events, {}) == []  # results change each time: polling (poll_warn 15)
    assert signatures(events, {"poll_warn": 5}) != []


def test_a_cycle_is_one_group_whichever_call_it_starts_with():
    ab = [_call("open", "Paris"), _call("close", "Paris")] * 3
    ba = [_call("close", "Paris"), _call("open", "Paris")] * 3
    found, again = signatures(ab, {}), signatures(ba, {})
    assert found == again and [s.rsplit("_", 1)[0] for s in found] == ["tool_calls/cycle"]


def test_nameless_redacted_and_other_events_are_not_counted():
    assert signatures([{"type": "tool_call"}] * 10, {}) == []
    assert signatures([{"type": "tool_call", "name": "t", "redacted": True}] * 10, {}) == []
    assert signatures([{"type": "span", "name": "t"}] * 10, {}) == []
