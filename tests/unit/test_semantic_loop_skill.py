"""agent.semantic_loop against its contract: the spec's example, grouping, thresholds,
ignoreKeys, every bad input of the issue with its code, and no echoed values."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopsense import jsonio
from loopsense.core.canonical import canonical_hash
from loopsense.errors import ERRORS, LoopsenseError
from loopsense.platform.access.catalog import CATALOG
from loopsense.platform.access.plans import default_plan
from loopsense.skills.semantic_loop import MAX_EVENTS, run

MARK = "SECRET-MARKER-5e1a"
HASH_97 = "97a932d811c4d8463c6be2fe84f1476a086c9544324d28f7f68b73c634083be6"


def cp(metadata=None, name="plan", **extra):
    event = {"type": "checkpoint", "name": name, **extra}
    if metadata is not None:
        event["metadata"] = metadata
    return event


def other(kind="tool_call", **extra):
    return {"type": kind, **extra}


# The spec's output example: 7 checkpoints, 2 other events, one state revisited at 0, 3, 6.
SPEC_EVENTS = [
    cp({"userId": 7, "Plan": "  Retry Search  "}),
    other("tool_call", tool="web_search", timestamp=1795953600000),
    cp({"userId": 7, "plan": "book flight"}),
    cp({"USERID": 7.0, "plan": "retry search"}, name="replan"),
    other("llm_call", model="m", user_message="try again"),
    cp({"userId": 8, "plan": "retry search"}),
    cp({"UserId": 7, "PLAN": "Retry Search\n"}, name="recover"),
    cp({"userId": 7, "plan": "give up"}),
    cp({"userId": 7, "plan": "ask the user"}),
]


def error_of(raw, tenant=None) -> LoopsenseError:
    with pytest.raises(LoopsenseError) as caught:
        run(raw, tenant)
    return caught.value


def test_spec_example_exact():
    assert jsonio.dumps(run({"events": SPEC_EVENTS})) == (
        '{"fired": true, "revisitThreshold": 3, "checkpoints": 7, "skipped": 2, '
        '"groups": [{"signature": "semantic_loop:97a932d8", "hash": "' + HASH_97 + '", '
        '"count": 3, "eventIndices": [0, 3, 6]}]}'
    )


def test_events_file_and_sample_give_the_spec_answer():
    from tests.conftest import EVENTS_DIR, load_event

    assert run(load_event("semantic_loop")["input"]) == run({"events": SPEC_EVENTS})
    sample = json.loads((EVENTS_DIR / "samples" / "semantic_loop.json").read_text())
    assert run(sample) == run({"events": SPEC_EVENTS})


def test_nothing_fires_below_the_threshold_and_groups_are_only_those_that_reach_it():
    out = run({"events": SPEC_EVENTS[:4]})
    assert out == {"fired": False, "revisitThreshold": 3, "checkpoints": 3, "skipped": 1,
                   "groups": []}


def test_groups_in_order_of_first_occurrence_with_every_index():
    a, b = {"s": "a"}, {"s": "b"}
    events = [cp(b), cp(a), cp(b), other(), cp(a), cp(b), cp(a), cp({"s": "c"}), cp(a)]
    out = run({"events": events})
    assert [g["eventIndices"] for g in out["groups"]] == [[0, 2, 5], [1, 4, 6, 8]]
    assert [g["count"] for g in out["groups"]] == [3, 4]
    assert [g["hash"] for g in out["groups"]] == [canonical_hash(b), canonical_hash(a)]
    assert all(g["signature"] == "semantic_loop:" + g["hash"][:8] for g in out["groups"])
    assert (out["checkpoints"], out["skipped"]) == (8, 1)


def test_output_keys_are_exactly_the_spec_fields():
    out = run({"events": SPEC_EVENTS})
    assert list(out) == ["fired", "revisitThreshold", "checkpoints", "skipped", "groups"]
    assert list(out["groups"][0]) == ["signature", "hash", "count", "eventIndices"]


def test_revisit_threshold_per_call_then_tenant_then_default():
    events = [cp({"a": 1})] * 2
    assert not run({"events": events})["fired"]
    assert run({"events": events}, {"revisit_threshold": 2})["fired"]
    out = run({"events": events * 2, "thresholds": {"revisit_threshold": 5}},
              {"revisit_threshold": 2})
    assert (out["fired"], out["revisitThreshold"]) == (False, 5)
    assert run({"events": events, "thresholds": {}})["revisitThreshold"] == 3
    assert run({"events": events, "thresholds": None})["revisitThreshold"] == 3
    assert run({"events": [cp({})] * 1000, "thresholds": {"revisit_threshold": 1000}})["fired"]


def test_a_bad_tenant_threshold_is_refused_by_the_one_rule():
    error = error_of({"events": [cp({})]}, {"revisit_threshold": 1})
    assert (error.code, error.details[0].path) == ("VALIDATION_ERROR",
                                                   "tenant.revisit_threshold")


def test_checkpoint_without_metadata_hashes_as_empty_object():
    out = run({"events": [cp(), cp({}), cp(name="x", metadata={})]})
    assert out["groups"][0]["hash"] == canonical_hash({})
    assert out["groups"][0]["eventIndices"] == [0, 1, 2]


@pytest.mark.parametrize("metadata", ["  Some State ", 7, 7.001, None, [], [1, "A"], True, ""])
def test_metadata_of_any_json_type_is_hashed_as_a_value(metadata):
    out = run({"events": [cp(metadata=metadata) if metadata is not None
                          else {"type": "checkpoint", "metadata": None}] * 3})
    assert out["groups"][0]["hash"] == canonical_hash(metadata)
    assert out["checkpoints"] == 3


def test_null_metadata_is_the_value_null_not_an_empty_object():
    events = [{"type": "checkpoint", "metadata": None}, cp({}), cp()]
    out = run({"events": events, "thresholds": {"revisit_threshold": 2}})
    assert [g["eventIndices"] for g in out["groups"]] == [[1, 2]]


def test_only_checkpoints_count_and_other_types_are_skipped_whatever_they_hold():
    events = [other("Checkpoint", metadata={}), other("checkpoint ", metadata={}),
              other("llm_call", name=5, metadata={"deep": [[[[{}]]]]}), cp({}), cp({}), cp({})]
    out = run({"events": events})
    assert (out["checkpoints"], out["skipped"]) == (3, 3)
    assert out["groups"][0]["eventIndices"] == [3, 4, 5]


def test_extra_event_fields_are_ignored():
    out = run({"events": [cp({"a": 1}, timestamp="2026-11-29T12:00:00Z", runId=MARK)] * 3})
    assert out["fired"]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(max_size=20)), min_size=3, max_size=6),
       st.dictionaries(st.text(max_size=4), st.integers() | st.text(max_size=4), max_size=4))
def test_a_checkpoint_name_never_affects_the_signature(names, metadata):
    events = []
    for name in names:
        event = {"type": "checkpoint", "metadata": metadata}
        if name is not None:
            event["name"] = name
        events.append(event)
    out = run({"events": events})
    assert out["groups"] == [{"signature": "semantic_loop:" + canonical_hash(metadata)[:8],
                              "hash": canonical_hash(metadata), "count": len(names),
                              "eventIndices": list(range(len(names)))}]


def test_ignore_keys_drop_volatile_fields_at_any_depth_matched_after_lowercasing():
    events = [cp({"step": 1, "MessageId": f"m{i}", "inner": [{"TS": i, "q": "x"}]})
              for i in range(3)]
    assert not run({"events": events})["fired"]
    out = run({"events": events, "ignoreKeys": ["messageid", "Ts"]})
    assert out["groups"][0]["eventIndices"] == [0, 1, 2]
    assert out["groups"][0]["hash"] == canonical_hash({"step": 1, "inner": [{"q": "x"}]})


def test_ignore_keys_are_keys_not_trimmed():
    events = [cp({"ts": i}) for i in range(3)]
    assert not run({"events": events, "ignoreKeys": [" ts"]})["fired"]
    assert run({"events": events, "ignoreKeys": ["TS"]})["fired"]


def test_64_ignore_keys_and_1024_character_keys_are_accepted():
    keys = [f"k{i}" for i in range(63)] + ["K" * 1024]
    events = [cp({"k" * 1024: i, "s": 1}) for i in range(3)]
    assert run({"events": events, "ignoreKeys": keys})["fired"]


def test_5000_events_are_accepted():
    out = run({"events": [cp({"i": i % 10}) for i in range(MAX_EVENTS)]})
    assert out["checkpoints"] == 5000 and len(out["groups"]) == 10


def test_64_levels_of_metadata_are_accepted():
    assert run({"events": [cp(nested(64))] * 3})["fired"]


def test_output_is_byte_identical_for_identical_input():
    body = json.dumps({"events": SPEC_EVENTS * 100})
    assert len({jsonio.dumps(run(jsonio.loads(body))) for _ in range(3)}) == 1


def test_output_never_contains_submitted_content():
    events = [cp({MARK: MARK, "n": [MARK]}, name=MARK)] * 4
    text = jsonio.dumps(run({"events": events, "ignoreKeys": [MARK]}))
    assert MARK not in text and MARK.lower() not in text


def test_catalog_and_plans():
    skill = CATALOG["agent.semantic_loop"]
    assert (skill.version, skill.cost, skill.function) == ("1.0.0", 1, "SemanticLoopFunction")
    assert skill.plans == {"hobby", "team", "enterprise"}
    for plan in ("hobby", "team", "enterprise"):
        found = default_plan(plan)
        assert found is not None and "agent.semantic_loop" in found.skills
    kind = ERRORS["SEMANTIC_LOOP_EVENT_LIMIT_EXCEEDED"]
    assert (kind.status, kind.retryable) == (429, False)
    assert "5,000" in kind.next


# ---- bad input ------------------------------------------------------------------------------


def nested(depth: int, leaf: object = MARK) -> object:
    value = leaf
    for _ in range(depth):
        value = {MARK: value}
    return value


def nested_arrays(depth: int) -> object:
    value: object = MARK
    for _ in range(depth):
        value = [value]
    return value


LIMIT = "SEMANTIC_LOOP_EVENT_LIMIT_EXCEEDED"
META = "input.events.0.metadata"

BAD_INPUTS = {
    "array instead of object": ([cp({})], "VALIDATION_ERROR", "input"),
    "string instead of object": (MARK, "VALIDATION_ERROR", "input"),
    "events missing": ({}, "VALIDATION_ERROR", "input.events"),
    "events empty": ({"events": []}, "VALIDATION_ERROR", "input.events"),
    "events not an array": ({"events": {"type": MARK}}, "VALIDATION_ERROR", "input.events"),
    "5,001 events": ({"events": [cp({})] * 5001}, LIMIT, "input.events"),
    "5,001 other events": ({"events": [other()] * 5001}, LIMIT, "input.events"),
    "10 MB string": ({"events": [cp({"s": MARK * (10 * 1024 * 1024 // len(MARK))})]}, LIMIT,
                     "input"),
    "65-deep metadata": ({"events": [cp(nested(65))]}, "VALIDATION_ERROR", META),
    "65-deep metadata, arrays": ({"events": [cp(nested_arrays(65))]}, "VALIDATION_ERROR",
                                 META),
    "300-deep metadata": ({"events": [cp({}), cp(nested(300))]}, "VALIDATION_ERROR",
                          "input"),
    "10,000-character key": ({"events": [cp({MARK * 10_000: 1})]}, "VALIDATION_ERROR", META),
    "1,025-character key deep down": ({"events": [cp({"a": [{"k" * 1025: MARK}]})]},
                                      "VALIDATION_ERROR", META),
    "infinity (1e400)": ({"events": [cp({"x": float("inf")})]}, "VALIDATION_ERROR", META),
    "nan": ({"events": [cp([float("nan")])]}, "VALIDATION_ERROR", META),
    "lone surrogate": ({"events": [cp({"s": "\ud800" + MARK})]}, "VALIDATION_ERROR", "input"),
    "event not an object": ({"events": [cp({}), MARK]}, "VALIDATION_ERROR", "input.events.1"),
    "event without type": ({"events": [{"name": MARK, "metadata": {}}]}, "VALIDATION_ERROR",
                           "input.events.0.type"),
    "type not a string": ({"events": [{"type": 5}]}, "VALIDATION_ERROR", "input.events.0.type"),
    "type null": ({"events": [{"type": None}]}, "VALIDATION_ERROR", "input.events.0.type"),
    "checkpoint name a number": ({"events": [cp({}, name=5)]}, "VALIDATION_ERROR",
                                 "input.events.0.name"),
    "unknown top-level field": ({"events": [cp({})], MARK: 1}, "VALIDATION_ERROR", "input"),
    "ignoreKeys not an array": ({"events": [cp({})], "ignoreKeys": MARK}, "VALIDATION_ERROR",
                                "input.ignoreKeys"),
    "ignoreKeys 65": ({"events": [cp({})], "ignoreKeys": [MARK] * 65}, "VALIDATION_ERROR",
                      "input.ignoreKeys"),
    "ignoreKey a number": ({"events": [cp({})], "ignoreKeys": [5]}, "VALIDATION_ERROR",
                           "input.ignoreKeys.0"),
    "ignoreKey of 1,025 characters": ({"events": [cp({})], "ignoreKeys": ["k" * 1025]},
                                      "VALIDATION_ERROR", "input.ignoreKeys.0"),
    "thresholds not an object": ({"events": [cp({})], "thresholds": 3}, "VALIDATION_ERROR",
                                 "input.thresholds"),
    "unknown threshold": ({"events": [cp({})], "thresholds": {MARK: 3}}, "VALIDATION_ERROR",
                          "input.thresholds"),
    "threshold from another skill": ({"events": [cp({})],
                                      "thresholds": {"step_count_threshold": 10}},
                                     "VALIDATION_ERROR", "input.thresholds"),
    "revisit_threshold 1": ({"events": [cp({})], "thresholds": {"revisit_threshold": 1}},
                            "VALIDATION_ERROR", "input.thresholds.revisit_threshold"),
    "revisit_threshold 1001": ({"events": [cp({})], "thresholds": {"revisit_threshold": 1001}},
                               "VALIDATION_ERROR", "input.thresholds.revisit_threshold"),
    "revisit_threshold string": ({"events": [cp({})], "thresholds": {"revisit_threshold": "3"}},
                                 "VALIDATION_ERROR", "input.thresholds.revisit_threshold"),
    "revisit_threshold float": ({"events": [cp({})], "thresholds": {"revisit_threshold": 3.0}},
                                "VALIDATION_ERROR", "input.thresholds.revisit_threshold"),
    "revisit_threshold bool": ({"events": [cp({})], "thresholds": {"revisit_threshold": True}},
                               "VALIDATION_ERROR", "input.thresholds.revisit_threshold"),
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input_gets_its_code_names_the_field_and_echoes_nothing(name):
    raw, code, path = BAD_INPUTS[name]
    error = error_of(raw)
    assert error.code == code
    assert error.details[0].path == path
    text = json.dumps([error.message, [d.as_dict() for d in error.details]])
    assert MARK not in text and MARK.lower() not in text
    assert "k" * 100 not in text


def test_error_details_name_the_limits():
    assert error_of(BAD_INPUTS["5,001 events"][0]).details[0].issue == (
        "must have at most 5000 events")
    assert error_of(BAD_INPUTS["10 MB string"][0]).details[0].issue == (
        "must be at most 2097152 bytes as JSON")
    assert error_of(BAD_INPUTS["65-deep metadata"][0]).details[0].issue == (
        "is nested deeper than 64 levels")
    assert error_of(BAD_INPUTS["10,000-character key"][0]).details[0].issue == (
        "contains a key longer than 1024 characters")
    assert error_of(BAD_INPUTS["infinity (1e400)"][0]).details[0].issue == (
        "contains a number that is not finite")
    assert "1000" in error_of(BAD_INPUTS["revisit_threshold 1001"][0]).details[0].issue


def test_the_failing_event_is_named_by_its_index():
    error = error_of({"events": [cp({}), other(), cp({"a": nested(70)})]})
    assert error.details[0].path == "input.events.2.metadata"


@pytest.mark.parametrize("body", [
    '{"events": [{"type": "checkpoint", "metadata": {"x": NaN}}]}',
    '{"events": [{"type": "checkpoint", "metadata": {"x": Infinity}}]}',
    '{"events": [{"type": "checkpoint", "metadata": [-Infinity]}]}',
])
def test_nan_and_infinity_in_the_body_are_refused_by_the_parser(body):
    with pytest.raises(LoopsenseError) as caught:
        run(jsonio.loads(body, path="input"))
    assert (caught.value.code, caught.value.details[0].path) == ("VALIDATION_ERROR", "input")


def test_1e400_in_the_body_is_refused_when_parsed_and_by_the_skill():
    with pytest.raises(LoopsenseError) as caught:  # the API's one JSON policy (jsonio)
        jsonio.loads('{"events": [{"type": "checkpoint", "metadata": {"x": 1e400}}]}')
    assert caught.value.details[0].issue == jsonio.NOT_FINITE
    error = error_of({"events": [{"type": "checkpoint", "metadata": {"x": float("inf")}}]})
    assert (error.code, error.details[0].path) == ("VALIDATION_ERROR", META)
