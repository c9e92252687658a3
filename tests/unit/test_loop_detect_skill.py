"""agent.loop_detect against its contract: outputs, every error code, no echoed values."""

from __future__ import annotations

import json
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopsense import jsonio
from loopsense.errors import LoopsenseError
from loopsense.skills import loop_detect
from loopsense.skills.limits import input_size, objects_input_size
from loopsense.skills.loop_detect import MAX_INPUT_BYTES, run

MARK = "SECRET-MARKER-7f3a"


def ev(action, target=None, state=None, outcome=None):
    event = {"action": action}
    for name, value in (("target", target), ("stateFingerprint", state), ("outcome", outcome)):
        if value is not None:
            event[name] = value
    return event


SEARCH_CLICK = [ev("search", "box", "s1", "ok"), ev("click", "result", "s2", "ok")] * 3


def error_of(raw) -> LoopsenseError:
    with pytest.raises(LoopsenseError) as caught:
        run(raw)
    return caught.value


def test_spec_example_exact():
    assert jsonio.dumps(run({"events": SEARCH_CLICK})) == (
        '{"loopDetected": true, "similarity": "EXACT", "window": 20, "repeatThreshold": 3, '
        '"cycleLength": 2, "confidence": "MEDIUM", "eventIndices": [0, 1, 2, 3, 4, 5], '
        '"spans": [{"start": 0, "end": 5, "cycleLength": 2, "repeats": 3}]}'
    )


def test_changing_state_is_not_an_exact_loop_but_is_an_action_target_loop():
    events = [ev("scroll", "page", f"state-{i}") for i in range(6)]
    assert run({"events": events}) == {
        "loopDetected": False, "similarity": "EXACT", "window": 20, "repeatThreshold": 3,
        "cycleLength": 0, "confidence": "NONE", "eventIndices": [], "spans": [],
    }
    found = run({"events": events, "similarity": "ACTION_TARGET"})
    assert found["loopDetected"] is True
    assert found["cycleLength"] == 1
    assert found["spans"] == [{"start": 0, "end": 5, "cycleLength": 1, "repeats": 6}]
    assert found["confidence"] == "HIGH"  # 6 >= 2 * 3


def test_three_identical_actions():
    out = run({"events": [{"action": "a"}] * 3})
    assert out["cycleLength"] == 1
    assert (out["spans"][0]["repeats"], out["eventIndices"]) == (3, [0, 1, 2])


def test_null_means_absent_and_empty_string_is_a_value():
    assert run({"events": [ev("a"), {"action": "a", "target": None}, ev("a")]})["loopDetected"]
    assert not run({"events": [ev("a", ""), ev("a"), ev("a", "")]})["loopDetected"]


def test_comparison_is_case_sensitive():
    assert not run({"events": [ev("a"), ev("A"), ev("a")]})["loopDetected"]


def test_confidence_boundary():
    assert run({"events": [ev("a")] * 5})["confidence"] == "MEDIUM"  # 5 < 6
    assert run({"events": [ev("a")] * 6})["confidence"] == "HIGH"  # 6 >= 6


def test_parameters_applied_are_echoed_after_defaulting():
    out = run({"events": SEARCH_CLICK, "window": 2, "repeatThreshold": 2,
               "similarity": "ACTION_TARGET"})
    assert (out["window"], out["repeatThreshold"], out["similarity"]) == (2, 2, "ACTION_TARGET")
    assert list(out) == ["loopDetected", "similarity", "window", "repeatThreshold",
                         "cycleLength", "confidence", "eventIndices", "spans"]


def test_output_is_byte_identical_for_identical_input():
    body = json.dumps({"events": SEARCH_CLICK * 50, "window": 7})
    assert len({jsonio.dumps(run(jsonio.loads(body))) for _ in range(5)}) == 1


def test_output_never_contains_submitted_strings():
    events = [ev(MARK, MARK, MARK, MARK)] * 4
    assert MARK not in jsonio.dumps(run({"events": events}))


def deep_junk(depth: int):
    value: object = MARK
    for _ in range(depth):
        value = {MARK: [value]}
    return value


BAD_INPUTS = {
    "array instead of object": ([{"action": "a"}], "VALIDATION_ERROR", "input"),
    "events missing": ({}, "VALIDATION_ERROR", "input.events"),
    "events empty": ({"events": []}, "VALIDATION_ERROR", "input.events"),
    "events not an array": ({"events": MARK}, "VALIDATION_ERROR", "input.events"),
    "one event": ({"events": [ev("a")]}, "LOOP_EVENTS_INVALID", "input.events"),
    "5,001 events": ({"events": [ev("a")] * 5001}, "LOOP_EVENT_LIMIT_EXCEEDED", "input.events"),
    "10,002 events": ({"events": [ev("a")] * 10002}, "VALIDATION_ERROR", "input.events"),
    "window 1": ({"events": SEARCH_CLICK, "window": 1}, "VALIDATION_ERROR", "input.window"),
    "window 201": ({"events": SEARCH_CLICK, "window": 201}, "VALIDATION_ERROR", "input.window"),
    "window string": ({"events": SEARCH_CLICK, "window": "20"}, "VALIDATION_ERROR",
                      "input.window"),
    "window float": ({"events": SEARCH_CLICK, "window": 20.0}, "VALIDATION_ERROR",
                     "input.window"),
    "window bool": ({"events": SEARCH_CLICK, "window": True}, "VALIDATION_ERROR",
                    "input.window"),
    "repeatThreshold 21": ({"events": SEARCH_CLICK, "repeatThreshold": 21}, "VALIDATION_ERROR",
                           "input.repeatThreshold"),
    "repeatThreshold 1": ({"events": SEARCH_CLICK, "repeatThreshold": 1}, "VALIDATION_ERROR",
                          "input.repeatThreshold"),
    "similarity lowercase": ({"events": SEARCH_CLICK, "similarity": "exact"},
                             "LOOP_EVENTS_INVALID", "input.similarity"),
    "similarity unknown": ({"events": SEARCH_CLICK, "similarity": "FUZZY"},
                           "LOOP_EVENTS_INVALID", "input.similarity"),
    "similarity not a string": ({"events": SEARCH_CLICK, "similarity": 5}, "VALIDATION_ERROR",
                                "input.similarity"),
    "event without action": ({"events": [ev("a"), {"target": MARK}]}, "VALIDATION_ERROR",
                             "input.events.1.action"),
    "action null": ({"events": [ev("a"), {"action": None}]}, "VALIDATION_ERROR",
                    "input.events.1.action"),
    "action 5": ({"events": [ev("a"), {"action": 5}]}, "VALIDATION_ERROR",
                 "input.events.1.action"),
    "target a number": ({"events": [ev("a"), {"action": "a", "target": 7}]}, "VALIDATION_ERROR",
                        "input.events.1.target"),
    "event not an object": ({"events": [ev("a"), MARK]}, "VALIDATION_ERROR", "input.events.1"),
    "unknown top-level field": ({"events": SEARCH_CLICK, MARK: 1}, "VALIDATION_ERROR", "input"),
    "unknown event field": ({"events": [ev("a"), {"action": "a", MARK: MARK}]},
                            "VALIDATION_ERROR", "input.events.1"),
    "deeply nested junk": ({"events": SEARCH_CLICK, "junk": deep_junk(400)}, "VALIDATION_ERROR",
                           "input"),
    "3 MB input": ({"events": [ev("a" * 3 * 1024 * 1024), ev("b")]},
                   "LOOP_EVENT_LIMIT_EXCEEDED", "input"),
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input_gets_its_code_names_the_field_and_echoes_nothing(name):
    raw, code, path = BAD_INPUTS[name]
    error = error_of(raw)
    assert error.code == code
    assert [d.path for d in error.details][0] == path
    text = json.dumps([error.message, [d.as_dict() for d in error.details]])
    assert MARK not in text
    assert "a" * 100 not in text


def test_error_details_name_the_limit():
    error = error_of({"events": SEARCH_CLICK, "window": 201})
    assert error.details[0].issue == "must be <= 200"
    error = error_of({"events": [ev("a")] * 5001})
    assert "5000" in error.details[0].issue


def test_every_bad_event_is_listed_once_in_order():
    error = error_of({"events": [ev("a"), {"action": 1}, {"action": None}, ev("b")]})
    assert [d.path for d in error.details] == ["input.events.1.action", "input.events.2.action"]


def test_lone_surrogate_is_a_validation_error_not_a_crash():
    error = error_of({"events": [{"action": "\ud800"}, {"action": "a"}]})
    assert (error.code, error.details[0].issue) == (
        "VALIDATION_ERROR", "contains a string that is not valid Unicode")


def test_nesting_past_the_serializer_depth_is_a_validation_error():
    error = error_of({"events": SEARCH_CLICK, "junk": deep_junk(3000)})
    assert (error.code, error.details[0].issue) == ("VALIDATION_ERROR", "is nested too deeply")


# --- parse()'s plain path (no pydantic) and the schema's path give the same answer -------------

_TEXTS = st.sampled_from(["a", "b", "", "é\u2028", 'q"\\', "\x00\n", "\ud800", MARK])
_VALUES = _TEXTS | st.none() | st.integers(-1, 3) | st.booleans() | st.just(["a"])
_EVENT_KEYS = st.sampled_from(["action", "target", "stateFingerprint", "outcome", "junk"])
_EVENTS = st.lists(st.dictionaries(_EVENT_KEYS, _VALUES, max_size=5)
                   | st.fixed_dictionaries({"action": _TEXTS}, optional={
                       "target": _TEXTS, "stateFingerprint": _TEXTS, "outcome": _TEXTS})
                   | st.just("a"), max_size=12)
_INPUTS = st.fixed_dictionaries({"events": _EVENTS | st.just({})}, optional={
    "window": st.sampled_from([1, 2, 3, 20, 200, 201, True, "20", 2.0]),
    "repeatThreshold": st.sampled_from([1, 2, 3, 20, 21, False, "3"]),
    "similarity": st.sampled_from(["EXACT", "ACTION_TARGET", "exact", 3, None]),
    "junk": st.just(1),
}) | st.lists(st.just(1), max_size=1)


def outcome(raw):
    try:
        return run(raw)
    except LoopsenseError as error:
        return error.code, error.message, [d.as_dict() for d in error.details]


@settings(max_examples=600, deadline=None)
@given(_INPUTS)
def test_the_plain_path_answers_and_refuses_as_the_schema_does(raw):
    with patch.object(loop_detect, "_read_plain", return_value=None):
        expected = outcome(raw)
    assert outcome(raw) == expected


def test_the_plain_path_takes_plain_events_and_leaves_the_rest_to_the_schema():
    assert loop_detect._read_plain({"events": SEARCH_CLICK, "window": 5}) is not None
    assert loop_detect._read_plain({"events": [ev("a"), ev("b", "t", "s", "o")]}) is not None
    for events in ([{"action": "a", "target": None}], [{"action": "a", "x": "b"}],
                   [{"target": "a"}], [{"action": 1}], ["a"], []):
        assert loop_detect._read_plain({"events": events}) is None, events
    for extra in ({"window": True}, {"window": 201}, {"repeatThreshold": "3"}, {"x": 1}):
        assert loop_detect._read_plain({"events": SEARCH_CLICK, **extra}) is None, extra


@pytest.mark.parametrize("spare", [-1, 0, 1])
def test_the_size_limit_is_the_same_on_both_paths_to_the_byte(spare):
    """One event's target sized so the input is the limit plus ``spare`` bytes as JSON."""
    events = [ev("a", "x"), ev("b", "é", "s", 'q"')]
    size = input_size({"events": events})
    events[0]["target"] = "x" * (1 + MAX_INPUT_BYTES - size + spare)
    raw = {"events": events}
    assert input_size(raw) == MAX_INPUT_BYTES + spare
    assert loop_detect._read_plain(raw) is not None
    with patch.object(loop_detect, "_read_plain", return_value=None):
        expected = outcome(raw)
    assert outcome(raw) == expected
    refused = isinstance(expected, tuple) and expected[0] == "LOOP_EVENT_LIMIT_EXCEEDED"
    assert refused is (spare > 0)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["action", "target", "k\u00e9y", 'q"']),
                                st.text(max_size=5), min_size=1), max_size=6),
       st.dictionaries(st.sampled_from(["window", "similarity"]), st.integers() | st.text()))
def test_the_size_of_flat_objects_is_input_size(objects, rest):
    raw = {**rest, "events": objects}
    counts: dict[str, int] = {}
    for obj in objects:
        for key in obj:
            counts[key] = counts.get(key, 0) + 1
    values = "".join(v for obj in objects for v in obj.values())
    assert objects_input_size(raw, "events", counts, values) == input_size(raw)
