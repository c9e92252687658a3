"""agent.loops against its contract (spec/loops.md, docs/skills/loops.md): the four
sub-signatures, their suffixes and order, thresholds, the time budget's sources, the vectors
used, every bad input of the issue, and no submitted content in any answer."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest

from loopsense import jsonio
from loopsense.errors import LoopsenseError
from loopsense.skills.loops import MAX_INPUT_BYTES, run

ROOT = Path(__file__).resolve().parents[2]
MARK = "SECRET-MARKER-91c2"
GPT = "gpt-4o"


def llm(message, model=GPT, **fields):
    return {"type": "llm_call", "model": model, "user_message": message, **fields}


def tool(name="search", **fields):
    return {"type": "tool_call", "name": name, **fields}


def subs(out):
    return [f["sub"] for f in out["findings"]]


def only(out, sub):
    found = [f for f in out["findings"] if f["sub"] == sub]
    return found


def error_of(raw, tenant=None) -> LoopsenseError:
    with pytest.raises(LoopsenseError) as caught:
        run(raw, tenant)
    return caught.value


def spec_hash8(model, text):
    """The spec's suffix, computed independently: json.dumps escapes exactly as rule 6."""
    doc = json.dumps([model, text], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(doc.encode("utf-8")).hexdigest()[:8]


DRIFT = [llm(f"Extract the invoice total from the text below. Attempt {i} of 5.\n\nText: "
             "Northwind Traders, invoice INV-2291, total due GBP 1,688.40.") for i in (1, 2, 3)]


# ---- output shape -----------------------------------------------------------------------------


def test_nothing_fires_on_a_short_varied_run():
    out = run({"events": [llm("What is the capital of France?"), tool(),
                          llm("Summarize the open pull requests of acme/billing.")]})
    assert out == {
        "fired": False,
        "findings": [],
        "stats": {"events": 3, "llmCalls": 2, "llmCallsSkipped": 0, "vectors": "lexical",
                  "embeddingsIgnored": None, "timestamps": 0, "timestampsOutOfOrder": 0,
                  "durationMs": None, "durationSource": None, "timeBudgetEvaluated": False,
                  "timeBudgetNotEvaluatedReason": "no durationMs, no startedAt/endedAt, and "
                                                  "fewer than two event timestamps"},
        "thresholds": {"step_count_threshold": 10, "identical_call_min_repeats": 3,
                       "similar_call_distance_threshold": 0.2,
                       "similar_call_min_cluster_size": 3, "time_budget_ms": 60_000},
    }


def test_the_sample_fires_all_four_in_the_spec_order():
    sample = json.loads((ROOT / "events/samples/loops.json").read_text(encoding="utf-8"))
    out = run(sample)
    assert subs(out) == ["step_count", "identical_call", "similar_call", "time_budget"]
    assert out["fired"] is True
    for finding in out["findings"]:
        assert finding["playbook"] == finding["sub"]
        assert finding["signature"].startswith(f"loops/{finding['sub']}_")
        assert list(finding)[:2] == ["signature", "sub"] and list(finding)[-1] == "playbook"


def test_output_is_byte_identical_for_identical_input():
    body = json.dumps({"events": DRIFT * 3 + [tool(timestamp=1_700_000_000_000 + i)
                                              for i in range(5)]})
    assert len({jsonio.dumps(run(jsonio.loads(body))) for _ in range(4)}) == 1


def test_no_submitted_content_is_returned():
    events = [llm(f"{MARK} try {i}", model=MARK, embedding=None) for i in range(4)]
    events += [llm(f"{MARK} again", model=MARK)] * 3
    events += [{"type": MARK, MARK: MARK, "timestamp": 1_700_000_000_000}] * 10
    out = jsonio.dumps(run({"events": events, "durationMs": 61_000}))
    assert MARK not in out
    assert json.loads(out)["fired"] is True


# ---- step_count -------------------------------------------------------------------------------


@pytest.mark.parametrize(("events", "suffix"), [
    (9, None), (10, "10+"), (49, "10+"), (50, "50+"), (99, "50+"), (100, "100+"), (499, "100+"),
    (500, "500+"), (4_999, "500+"), (5_000, "5000+"), (10_000, "5000+"),
])
def test_step_count_buckets(events, suffix):
    out = run({"events": [tool()] * events})
    found = only(out, "step_count")
    if suffix is None:
        assert found == []
        return
    assert found == [{"signature": f"loops/step_count_{suffix}", "sub": "step_count",
                      "count": events, "eventIndices": [9], "playbook": "step_count"}]


def test_step_count_under_ten_is_bucket_2_plus_and_every_event_type_counts():
    events = [tool(), {"type": "checkpoint", "name": "x", "metadata": {"a": [1]}}, llm("hi")]
    found = only(run({"events": events, "thresholds": {"step_count_threshold": 2}}),
                 "step_count")
    assert found == [{"signature": "loops/step_count_2+", "sub": "step_count", "count": 3,
                      "eventIndices": [1], "playbook": "step_count"}]


# ---- identical_call ---------------------------------------------------------------------------


def test_identical_call_groups_by_exact_model_and_message():
    a, b = "Summarize the PRs.", "summarize the PRs."
    events = [llm(a), llm(b), llm(a), tool(), llm(a, model="claude"), llm(a), llm(b), llm(b),
              llm(a + " ")]
    found = only(run({"events": events}), "identical_call")
    assert found == [
        {"signature": f"loops/identical_call_{spec_hash8(GPT, a)}", "sub": "identical_call",
         "count": 3, "eventIndices": [0, 2, 5], "playbook": "identical_call"},
        {"signature": f"loops/identical_call_{spec_hash8(GPT, b)}", "sub": "identical_call",
         "count": 3, "eventIndices": [1, 6, 7], "playbook": "identical_call"},
    ]


def test_identical_call_suffix_escapes_as_rule_6_and_keeps_non_ascii():
    message = 'Résumé "quoted" \\ back\nline\ttab\x01\x1f\x7f \u2028 日本 😀'
    found = only(run({"events": [llm(message, model="mödel")] * 3}), "identical_call")
    expected = hashlib.sha256(
        ('["mödel","Résumé \\"quoted\\" \\\\ back\\nline\\ttab\\u0001\\u001f\x7f \u2028 日本 😀"]'
         ).encode("utf-8")).hexdigest()[:8]
    assert expected == spec_hash8("mödel", message)
    assert found[0]["signature"] == f"loops/identical_call_{expected}"


def test_identical_call_min_repeats_per_call_and_per_tenant():
    events = [llm("same")] * 2
    assert only(run({"events": events}), "identical_call") == []
    assert only(run({"events": events, "thresholds": {"identical_call_min_repeats": 2}}),
                "identical_call")
    assert only(run({"events": events}, {"identical_call_min_repeats": 2}), "identical_call")
    assert only(run({"events": events, "thresholds": {"identical_call_min_repeats": 3}},
                    {"identical_call_min_repeats": 2}), "identical_call") == []


# ---- similar_call -----------------------------------------------------------------------------


def test_a_drifting_counter_is_one_similar_call_cluster_and_not_identical():
    out = run({"events": [DRIFT[0], tool(), DRIFT[1], tool(), DRIFT[2]]})
    assert only(out, "identical_call") == []
    template = ("extract the invoice total from the text below. attempt # of #. text: "
                "northwind traders, invoice inv-#, total due gbp #,#.#.")
    assert only(out, "similar_call") == [
        {"signature": f"loops/similar_call_{spec_hash8(GPT, template)}", "sub": "similar_call",
         "count": 3, "eventIndices": [0, 2, 4], "distinctMessages": 3,
         "playbook": "similar_call"}]


def test_the_same_drifting_loop_gets_the_same_signature_in_another_execution():
    other = [llm(m["user_message"].replace(f"Attempt {i}", f"Attempt {i + 10}")
                 .replace("of 5", "of 12")) for i, m in enumerate(DRIFT, start=1)]
    first = only(run({"events": DRIFT}), "similar_call")[0]["signature"]
    second = only(run({"events": [tool()] + other[::-1]}), "similar_call")[0]["signature"]
    assert first == second


def test_all_identical_clusters_are_left_to_identical_call():
    out = run({"events": [DRIFT[0]] * 4})
    assert subs(out) == ["identical_call"]


def test_identical_and_similar_can_both_fire_on_one_cluster():
    out = run({"events": [DRIFT[0], DRIFT[0], DRIFT[0], DRIFT[1]]})
    assert only(out, "identical_call")[0]["eventIndices"] == [0, 1, 2]
    similar = only(out, "similar_call")[0]
    assert (similar["eventIndices"], similar["distinctMessages"]) == ([0, 1, 2, 3], 2)


def test_clusters_are_per_model():
    events = [DRIFT[0], llm(DRIFT[1]["user_message"], model="claude"), DRIFT[2],
              llm(DRIFT[0]["user_message"], model="claude")]
    assert only(run({"events": events}), "similar_call") == []


def test_different_questions_do_not_cluster_and_cluster_size_is_tunable():
    events = [llm("What is the shipping time to Germany?"), llm("Do boots come in half sizes?"),
              llm("Which payment methods do you accept?")]
    assert only(run({"events": events}), "similar_call") == []
    assert only(run({"events": DRIFT[:2]}), "similar_call") == []
    assert only(run({"events": DRIFT[:2], "thresholds": {"similar_call_min_cluster_size": 2}}),
                "similar_call")


def test_the_distance_threshold_is_applied_per_call():
    paraphrases = [llm("What is the refund policy for orders shipped to Canada?"),
                   llm("Tell me the refund policy for orders shipped to Canada."),
                   llm("What is the refund policy for orders shipped to Canada, please?")]
    assert only(run({"events": paraphrases}), "similar_call") == []
    loose = run({"events": paraphrases,
                 "thresholds": {"similar_call_distance_threshold": 0.5}})
    assert only(loose, "similar_call")[0]["count"] == 3
    assert loose["thresholds"]["similar_call_distance_threshold"] == 0.5


def test_clusters_are_ordered_by_first_event_index():
    other = [llm(f"Poll job-7731: status RUNNING, progress {p}%. Done yet?") for p in (3, 9, 15)]
    events = [other[0], DRIFT[0], DRIFT[1], other[1], other[2], DRIFT[2]]
    found = only(run({"events": events}), "similar_call")
    assert [f["eventIndices"] for f in found] == [[0, 3, 4], [1, 2, 5]]


def test_client_embeddings_are_used_when_every_llm_call_has_one_of_one_dimension():
    unrelated = ["What is the capital of France?", "Write a haiku about rain.",
                 "List three prime numbers."]
    same_direction = [llm(m, embedding=[1.0, 0.01 * i, 0.0]) for i, m in enumerate(unrelated)]
    out = run({"events": same_direction + [tool()]})
    assert out["stats"]["vectors"] == "embedding"
    assert only(out, "similar_call")[0]["eventIndices"] == [0, 1, 2]
    orthogonal = [llm(m, embedding=e) for m, e in
                  zip(["retry 1", "retry 2", "retry 3"], ([1, 0, 0], [0, 1, 0], [0, 0, 1]),
                      strict=True)]
    out = run({"events": orthogonal})
    assert (out["stats"]["vectors"], only(out, "similar_call")) == ("embedding", [])


def test_a_zero_embedding_is_similar_to_nothing():
    out = run({"events": [llm(f"x{i}", embedding=[0.0, 0.0]) for i in range(3)]})
    assert only(out, "similar_call") == []


@pytest.mark.parametrize(("events", "reason"), [
    ([llm("retry 1", embedding=[1.0, 0.0]), llm("retry 2"), llm("retry 3", embedding=[1, 0])],
     "some llm_calls have no embedding"),
    ([llm("retry 1", embedding=[1.0, 0.0]), llm("retry 2", embedding=[1.0, 0.0, 0.0]),
      llm("retry 3", embedding=[1.0, 0.0])],
     "the embeddings do not all have the same dimension"),
])
def test_otherwise_the_lexical_vectors_are_used_and_the_output_says_why(events, reason):
    out = run({"events": events})
    assert out["stats"]["vectors"] == "lexical"
    assert out["stats"]["embeddingsIgnored"] == reason
    assert only(out, "similar_call")[0]["eventIndices"] == [0, 1, 2]  # "retry #" lexically


def test_llm_calls_without_model_or_message_are_skipped_and_counted():
    events = [{"type": "llm_call", "user_message": "hi"}, {"type": "llm_call", "model": GPT},
              {"type": "llm_call", "model": None, "user_message": None}, *DRIFT,
              {"type": "llm_call", "model": GPT, "user_message": "x", "embedding": [1.0]}]
    out = run({"events": events})
    assert (out["stats"]["llmCalls"], out["stats"]["llmCallsSkipped"]) == (7, 3)
    assert only(out, "similar_call")[0]["eventIndices"] == [3, 4, 5]
    assert out["stats"]["embeddingsIgnored"] == "some llm_calls have no embedding"


def test_no_llm_calls_means_no_vectors():
    out = run({"events": [tool(), {"type": "llm_call"}]})
    assert out["stats"]["vectors"] is None and out["stats"]["llmCallsSkipped"] == 1


def test_other_event_types_and_fields_are_ignored():
    events = [{"type": "tool_call", "model": "x", "user_message": "y"}] * 3 + \
             [llm("a", extra={"nested": [1, 2]}, tokens=17)]
    out = run({"events": events})
    assert (out["stats"]["llmCalls"], out["findings"]) == (1, [])


# ---- time_budget ------------------------------------------------------------------------------


@pytest.mark.parametrize(("duration", "suffix"), [
    (1_001, "1s+"), (9_999, "1s+"), (10_000, "10s+"), (60_001, "60s+"), (599_999, "60s+"),
    (600_000, "10m+"), (3_600_000, "1h+"), (86_400_001, "1h+"),
])
def test_time_budget_buckets(duration, suffix):
    out = run({"events": [tool()], "durationMs": duration,
               "thresholds": {"time_budget_ms": 1_000}})
    assert only(out, "time_budget") == [
        {"signature": f"loops/time_budget_{suffix}", "sub": "time_budget", "durationMs": duration,
         "durationSource": "durationMs", "eventIndices": [], "playbook": "time_budget"}]


def test_time_budget_fires_above_the_budget_not_at_it():
    assert only(run({"events": [tool()], "durationMs": 60_000}), "time_budget") == []
    assert only(run({"events": [tool()], "durationMs": 60_001}), "time_budget")


def test_started_and_ended_with_offsets():
    out = run({"events": [tool()], "startedAt": "2026-03-12T10:00:00.250+02:00",
               "endedAt": "2026-03-12T08:01:30.750Z"})
    assert (out["stats"]["durationMs"], out["stats"]["durationSource"]) == (
        90_500, "startedAt/endedAt")
    assert only(out, "time_budget")[0]["signature"] == "loops/time_budget_60s+"


def test_duration_ms_wins_over_started_and_ended():
    out = run({"events": [tool()], "durationMs": 5, "startedAt": "2026-03-12T10:00:00Z",
               "endedAt": "2026-03-12T12:00:00Z"})
    assert (out["stats"]["durationMs"], out["findings"]) == (5, [])


def test_event_timestamps_iso_with_offsets_and_epoch_ms_mixed():
    base = 1_773_306_843_512  # 2026-03-12T09:14:03.512Z
    events = [tool(timestamp="2026-03-12T10:14:03.512+01:00"), tool(),
              tool(timestamp=base + 30_000), tool(timestamp=float(base + 61_000) + 0.9),
              tool(timestamp="2026-03-12 09:15:00")]
    out = run({"events": events})
    stats = out["stats"]
    assert (stats["timestamps"], stats["durationMs"], stats["durationSource"]) == (
        4, 61_000, "timestamps")
    assert only(out, "time_budget") == [
        {"signature": "loops/time_budget_60s+", "sub": "time_budget", "durationMs": 61_000,
         "durationSource": "timestamps", "eventIndices": [0, 3], "playbook": "time_budget"}]


def test_timestamps_out_of_order_use_earliest_and_latest_and_are_counted():
    events = [tool(timestamp=5_000), tool(timestamp=1_000), tool(timestamp=90_000),
              tool(timestamp=2_000)]
    out = run({"events": events, "thresholds": {"time_budget_ms": 1_000}})
    assert (out["stats"]["timestampsOutOfOrder"], out["stats"]["durationMs"]) == (2, 89_000)
    assert only(out, "time_budget")[0]["eventIndices"] == [1, 2]


@pytest.mark.parametrize("events", [[tool()], [tool(timestamp=1_000), tool()]])
def test_without_a_duration_time_budget_is_not_evaluated_and_says_why(events):
    out = run({"events": events})
    assert out["stats"]["timeBudgetEvaluated"] is False
    assert "fewer than two event timestamps" in out["stats"]["timeBudgetNotEvaluatedReason"]
    assert only(out, "time_budget") == []


def test_the_plan_caps_the_time_budget():
    out = run({"events": [tool()], "durationMs": 700_000,
               "thresholds": {"time_budget_ms": 3_600_000}}, {"max_time_budget_ms": 600_000})
    assert out["thresholds"]["time_budget_ms"] == 600_000
    assert only(out, "time_budget")[0]["signature"] == "loops/time_budget_10m+"


def test_tenant_thresholds_apply_and_unrelated_tenant_settings_are_ignored():
    out = run({"events": [tool()] * 5}, {"step_count_threshold": 5, "revisit_threshold": 7})
    assert out["thresholds"]["step_count_threshold"] == 5
    assert subs(out) == ["step_count"]


# ---- bad input --------------------------------------------------------------------------------


def deep(depth):
    value: object = MARK
    for _ in range(depth):
        value = {MARK: [value]}
    return value


BAD = {
    "not an object": ([llm("a")], "VALIDATION_ERROR", "input"),
    "events missing": ({}, "VALIDATION_ERROR", "input.events"),
    "events empty": ({"events": []}, "VALIDATION_ERROR", "input.events"),
    "events not an array": ({"events": MARK}, "VALIDATION_ERROR", "input.events"),
    "event not an object": ({"events": [MARK]}, "VALIDATION_ERROR", "input.events.0"),
    "type missing": ({"events": [{"model": MARK}]}, "VALIDATION_ERROR", "input.events.0.type"),
    "type not a string": ({"events": [{"type": 7}]}, "VALIDATION_ERROR", "input.events.0.type"),
    "model not a string": ({"events": [llm("a", model=7)]}, "VALIDATION_ERROR",
                           "input.events.0.model"),
    "message not a string": ({"events": [tool(), llm([MARK])]}, "VALIDATION_ERROR",
                             "input.events.1.user_message"),
    "unknown top-level field": ({"events": [tool()], MARK: 1}, "VALIDATION_ERROR", "input"),
    "10,001 events": ({"events": [tool()] * 10_001}, "LOOPS_EVENT_LIMIT_EXCEEDED",
                      "input.events"),
    "NaN in an embedding": ({"events": [llm("a", embedding=[0.1, math.nan])]},
                            "VALIDATION_ERROR", "input.events.0.embedding.1"),
    "infinity in an embedding": ({"events": [llm("a", embedding=[math.inf])]},
                                 "VALIDATION_ERROR", "input.events.0.embedding.0"),
    "string in an embedding": ({"events": [llm("a", embedding=[MARK])]}, "VALIDATION_ERROR",
                               "input.events.0.embedding.0"),
    "empty embedding": ({"events": [llm("a", embedding=[])]}, "VALIDATION_ERROR",
                        "input.events.0.embedding"),
    "embedding too long": ({"events": [llm("a", embedding=[0.5] * 8_193)]}, "VALIDATION_ERROR",
                           "input.events.0.embedding"),
    "unparseable timestamp": ({"events": [tool(timestamp=MARK)]}, "VALIDATION_ERROR",
                              "input.events.0.timestamp"),
    "impossible date": ({"events": [tool(), tool(timestamp="2026-02-30T10:00:00Z")]},
                        "VALIDATION_ERROR", "input.events.1.timestamp"),
    "boolean timestamp": ({"events": [tool(timestamp=True)]}, "VALIDATION_ERROR",
                          "input.events.0.timestamp"),
    "timestamp beyond year 9999": ({"events": [tool(timestamp=10**16)]}, "VALIDATION_ERROR",
                                   "input.events.0.timestamp"),
    "timestamp as an object": ({"events": [tool(timestamp={"at": MARK})]}, "VALIDATION_ERROR",
                               "input.events.0.timestamp"),
    "startedAt alone": ({"events": [tool()], "startedAt": "2026-03-12T10:00:00Z"},
                        "VALIDATION_ERROR", "input.endedAt"),
    "endedAt before startedAt": ({"events": [tool()], "startedAt": "2026-03-12T10:00:00Z",
                                  "endedAt": "2026-03-12T09:59:59Z"}, "VALIDATION_ERROR",
                                 "input.endedAt"),
    "startedAt unparseable": ({"events": [tool()], "startedAt": MARK,
                               "endedAt": "2026-03-12T09:59:59Z"}, "VALIDATION_ERROR",
                              "input.startedAt"),
    "startedAt as a number": ({"events": [tool()], "startedAt": 1_700_000_000_000,
                               "endedAt": "2026-03-12T09:59:59Z"}, "VALIDATION_ERROR",
                              "input.startedAt"),
    "durationMs negative": ({"events": [tool()], "durationMs": -1}, "VALIDATION_ERROR",
                            "input.durationMs"),
    "durationMs float": ({"events": [tool()], "durationMs": 1.5}, "VALIDATION_ERROR",
                         "input.durationMs"),
    "durationMs string": ({"events": [tool()], "durationMs": "60000"}, "VALIDATION_ERROR",
                          "input.durationMs"),
    "unknown threshold": ({"events": [tool()], "thresholds": {MARK: 3}}, "VALIDATION_ERROR",
                          "input.thresholds"),
    "a semantic_loop threshold": ({"events": [tool()], "thresholds": {"revisit_threshold": 3}},
                                  "VALIDATION_ERROR", "input.thresholds"),
    "threshold out of bounds": ({"events": [tool()],
                                 "thresholds": {"similar_call_distance_threshold": 0.9}},
                                "VALIDATION_ERROR",
                                "input.thresholds.similar_call_distance_threshold"),
    "threshold of the wrong type": ({"events": [tool()],
                                     "thresholds": {"step_count_threshold": "10"}},
                                    "VALIDATION_ERROR", "input.thresholds.step_count_threshold"),
    "time budget under 1 s": ({"events": [tool()], "thresholds": {"time_budget_ms": 999}},
                              "VALIDATION_ERROR", "input.thresholds.time_budget_ms"),
    "nested 10,000 deep": ({"events": [{"type": "checkpoint", "metadata": deep(10_000)}]},
                           "VALIDATION_ERROR", "input"),
    "lone surrogate": ({"events": [llm("\ud800" + MARK)]}, "VALIDATION_ERROR", "input"),
    "over 5 MiB": ({"events": [llm(MARK * (MAX_INPUT_BYTES // len(MARK) + 1))]},
                   "LOOPS_EVENT_LIMIT_EXCEEDED", "input"),
}


@pytest.mark.parametrize(("raw", "code", "path"), BAD.values(), ids=BAD.keys())
def test_bad_input_gets_its_code_names_the_field_and_echoes_nothing(raw, code, path):
    error = error_of(raw)
    assert (error.code, error.details[0].path) == (code, path)
    assert MARK not in error.message + json.dumps([d.as_dict() for d in error.details])


def test_the_event_limit_is_429_and_not_retryable():
    error = error_of({"events": [tool()] * 10_001})
    assert (error.status, error.kind.retryable, error.retry_after_seconds()) == (429, False, None)
    assert run({"events": [tool()] * 10_000})["stats"]["events"] == 10_000


def test_a_bad_tenant_value_is_refused_naming_the_tenant_setting():
    error = error_of({"events": [tool()]}, {"step_count_threshold": 1})
    assert error.details[0].path == "tenant.step_count_threshold"


def test_a_one_megabyte_user_message_is_accepted_and_not_returned():
    big = (MARK + " lorem ipsum dolor sit amet ") * 28_000
    assert len(big) > 1_000_000
    out = run({"events": [llm(big), llm(big), llm(big + "!"), llm(big)]})
    assert subs(out) == ["identical_call", "similar_call"]
    assert MARK not in jsonio.dumps(out)


def test_json_with_nan_never_reaches_the_skill():
    with pytest.raises(LoopsenseError) as caught:
        jsonio.loads('{"events": [{"type": "llm_call", "embedding": [NaN]}]}', path="input")
    assert caught.value.code == "VALIDATION_ERROR"
