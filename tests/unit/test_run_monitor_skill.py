"""agent.run_monitor against its contract: the verdict and timeline, strict input, its error
codes, config and tenant thresholds with bounds, no submitted content in any answer."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from loopsense.errors import LoopsenseError
from loopsense.skills.run_monitor import MAX_STEPS, run
from tests.unit.monitor_traces import answers, call, config, distinct_calls, say, step
from tests.unit.test_run_monitor_state import mixed_trace

ROOT = Path(__file__).resolve().parents[2]
MARK = "SECRET-MARKER-91c4"
SIX = [call("export_status", {"job": 3}, {"state": "pending"})] * 6
SIGNAL_FIELDS = {"is_looping", "is_stuck", "is_drifting", "is_novelty_starved", "loop_score",
                 "drift_score", "novelty_score", "confidence", "source", "rationale",
                 "findings", "recommendation", "first_flagged", "ever_flagged"}


def nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


def error_of(raw, tenant=None) -> LoopsenseError:
    with pytest.raises(LoopsenseError) as caught:
        run(raw, tenant)
    return caught.value


def test_six_identical_calls():
    out = run({"steps": SIX})
    assert SIGNAL_FIELDS | {"steps", "segmentStart", "timeline"} == out.keys()
    assert out["is_looping"] and out["confidence"] >= 0.7 and out["source"] == "rule"
    assert out["recommendation"]["action"] == "nudge"
    assert out["findings"][0] == {
        "rule": "repeated_call", "severity": "critical", "count": 6,
        "rationale": "the tool of step 0 called 6 times with identical arguments and identical "
                     "results",
        "stepIndices": [0, 1, 2, 3, 4, 5]}
    assert [t["index"] for t in out["timeline"]] == [3, 4, 5]
    assert out["timeline"][0] == {"index": 3, "action": "nudge",
                                  "findings": [{"rule": "repeated_call", "severity": "warning",
                                                "stepIndices": [0, 1, 2, 3]}]}
    assert out["first_flagged"] == 3
    assert out["ever_flagged"] == {"repeated_call": {"step": 3, "severity": "critical"},
                                   "novelty": {"step": 5, "severity": "warning"}}
    assert run({"steps": [*SIX, SIX[0]]})["recommendation"]["action"] == "break"


def test_a_one_step_run_answers():
    out = run({"steps": [say("hello")]})
    assert out["findings"] == [] and out["recommendation"] == {"action": "continue"}
    assert out["rationale"] and out["confidence"] == 0.0 and out["drift_score"] == -1


def test_the_skill_equals_the_core_fed_through_json():
    trace = mixed_trace(7, 300)
    expected = answers(trace, config(), round_trip=True)[-1]
    from dataclasses import replace
    unnamed = answers(trace, replace(config(), name_tools=False), round_trip=True)[-1]
    out = run({"steps": trace})
    assert {k: out[k] for k in SIGNAL_FIELDS} == unnamed.signal()
    assert [f["rule"] for f in out["findings"]] == [f.rule for f in expected.findings]


def lookalike_trace(seed: int, n: int = 200) -> list[dict]:
    """Many distinct arguments, results drawn from a small pool (flat, nested, empty, failed)
    or unique: what the skill's skipped digests must not change."""
    rng = random.Random(seed)
    pool = [{"results": []}, {"state": "ok"}, {"rows": [1, 2]}, {"a": {"b": 1}}, "", None,
            {"hits": 0, "note": " "}, {"STATE": "OK "}, [], 7]
    out = []
    for i in range(n):
        result = rng.choice(pool) if rng.random() < 0.6 else {"n": i, "t": "x" * (i % 3)}
        out.append(call(rng.choice(("search", "fetch")),
                        {"q": f"lyon population {rng.randrange(6)} census"}, result,
                        rng.choice(("negative", "positive", None))))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_the_skill_equals_the_core_on_lookalike_calls(seed):
    trace = lookalike_trace(seed)
    tools = {"fetch": {"same_result": True}} if seed % 2 else {}
    disabled = (("similar_call",), ("same_result",), ())[seed % 3]
    from dataclasses import replace
    cfg = replace(config(tools=tools, disabled=disabled), name_tools=False)
    expected = answers(trace, cfg)
    out = run({"steps": trace, "config": {"tools": tools, "disabled_rules": list(disabled)}})
    assert {k: out[k] for k in SIGNAL_FIELDS} == expected[-1].signal()
    timeline = [a.index for a in expected if a.findings]
    assert [t["index"] for t in out["timeline"]] == timeline
    assert set(out["ever_flagged"]) >= {"similar_call", "same_result"} - set(disabled)


def test_the_skill_equals_the_core_on_message_runs():
    """The skill makes a message's words only next to another message: runs of near-identical,
    identical and distinct messages, broken by calls and thoughts, answer as the core does."""
    rng = random.Random(11)
    texts = ["I will check the export status now.", "I will check the export status again now.",
             "I will now check the export status.", "Noted: the schema.", "Noted: a typo."]
    trace = []
    for i in range(240):
        r = rng.random()
        trace.append(say(rng.choice(texts)) if r < 0.6 else step("thought", text="hmm")
                     if r < 0.75 else call("read_file", {"path": f"src/{i}.py"}, {"n": i}))
    from dataclasses import replace
    cfg = replace(config(), name_tools=False)
    expected = answers(trace, cfg)
    out = run({"steps": trace})
    assert {k: out[k] for k in SIGNAL_FIELDS} == expected[-1].signal()
    assert [t["index"] for t in out["timeline"]] == [a.index for a in expected if a.findings]
    assert {f["severity"] for t in out["timeline"] for f in t["findings"]
            if f["rule"] == "monologue"} == {"warning", "critical"}


def test_the_sample_file_runs():
    sample = json.loads((ROOT / "events/samples/run_monitor.json").read_text())
    out = run(sample)
    assert out["is_looping"] and out["is_stuck"] and out["segmentStart"] == 1


def test_no_submitted_content_in_the_answer():
    trace = [call(MARK, {MARK: MARK}, {"v": MARK}, "negative"), say(MARK), step("recall",
                                                                              text=MARK)] * 8
    out = json.dumps(run({"steps": trace, "config": {"tools": {MARK: {"repeat_warn": 2}}}}))
    assert MARK.lower() not in out.lower()


@pytest.mark.parametrize(("raw", "code", "path"), [
    ({"steps": []}, "RUN_STEPS_INVALID", "input.steps"),
    ({"steps": [{"kind": "tool_call"}]}, "RUN_STEPS_INVALID", "input.steps.0.action"),
    ({"steps": [step("message", agentId="a"), step("message", agentId="b")]},
     "RUN_STEPS_INVALID", "input.steps"),
    ({"steps": [step("x", embedding=[1.0, 0.0]), step("x", embedding=[1.0])]},
     "RUN_STEPS_INVALID", "input.steps"),
    ({"steps": [step("x")] * (MAX_STEPS + 1)}, "RUN_STEP_LIMIT_EXCEEDED", "input.steps"),
    ({"steps": [say("x" * 3_000_000)]}, "RUN_STEP_LIMIT_EXCEEDED", "input"),
    ({"steps": [{"kind": "message", MARK: 1}]}, "VALIDATION_ERROR", "input.steps.0"),
    ({"steps": [step("message", text=7)]}, "VALIDATION_ERROR", "input.steps.0.text"),
    ({"steps": [step("tool_call", action="a", outcome=MARK)]}, "VALIDATION_ERROR",
     "input.steps.0.outcome"),
])
def test_bad_input_gets_its_code_and_path(raw, code, path):
    error = error_of(raw)
    assert (error.code, error.details[0].path) == (code, path)
    assert MARK not in json.dumps([error.message, [d.as_dict() for d in error.details]])


def test_status_of_the_codes():
    assert error_of({"steps": []}).status == 400
    limit = error_of({"steps": [step("x")] * (MAX_STEPS + 1)})
    assert (limit.status, limit.kind.retryable) == (429, False)


def test_args_deeper_than_the_canonical_form_allows():
    error = error_of({"steps": [call("a", {"x": nested(70)})]})
    assert error.code == "VALIDATION_ERROR" and error.details[0].path == "input.steps.0"
    assert "args" in error.details[0].issue


@pytest.mark.parametrize(("result", "path", "issue"), [
    (nested(70), "input.steps.0", "result is nested deeper than 64 levels"),
    ({"k" * 1025: 1}, "input.steps.0", "result contains a key longer than 1024 characters"),
    ({"s": "\ud800"}, "input", "contains a string that is not valid Unicode"),
])
def test_a_result_without_canonical_form_is_refused_even_if_never_compared(result, path, issue):
    """The skill digests a result only when its call is made again (run_monitor.entries), but
    a call made once with a result that has no canonical form is refused all the same: by the
    size check (a lone surrogate cannot be written as UTF-8) or as its entry is made."""
    error = error_of({"steps": [call("a", {"x": 1}, result), call("b", {"x": 2}, {"ok": 1})]})
    assert error.code == "VALIDATION_ERROR"
    assert (error.details[0].path, error.details[0].issue) == (path, issue)


@pytest.mark.parametrize(("config", "path", "issue"), [
    ({"repeat_warn": 1}, "input.config.repeat_warn", "must be from 2 to 100"),
    ({"repeat_warn": 4.5}, "input.config.repeat_warn", "must be an integer from 2 to 100"),
    ({"novelty_floor": 1.5}, "input.config.novelty_floor", "must be from 0.0 to 1.0"),
    ({"history_size": 5}, "input.config.history_size", "must be from 10 to 1000"),
    ({MARK: 1}, "input.config", "names something that is not a setting"),
    ({"disabled_rules": [MARK]}, "input.config.disabled_rules", "must name rules among"),
    ({"tools": {MARK: {"repeat_warn": 0}}}, "input.config.tools.<tool>.repeat_warn",
     "must be from 2 to 100"),
    ({"tools": {MARK: {"silence": True}}}, "input.config.tools.<tool>", "contains a field"),
    ({"reset_on_user_message": "yes"}, "input.config.reset_on_user_message", "boolean"),
])
def test_config_errors_name_the_field_and_its_bounds(config, path, issue):
    error = error_of({"steps": SIX, "config": config})
    assert error.code == "VALIDATION_ERROR"
    assert error.details[0].path == path and issue in error.details[0].issue
    assert MARK not in json.dumps([error.message, [d.as_dict() for d in error.details]])


def test_config_overrides_the_tenant_which_overrides_the_default():
    assert run({"steps": SIX}, {"repeat_critical": 7})["findings"][0]["severity"] == "warning"
    out = run({"steps": SIX, "config": {"repeat_critical": 6}}, {"repeat_critical": 7})
    assert out["findings"][0]["severity"] == "critical"
    with pytest.raises(LoopsenseError) as caught:
        run({"steps": SIX}, {"repeat_critical": 1})
    assert caught.value.details[0].path == "tenant.repeat_critical"


def test_config_switches_and_policies():
    quiet = run({"steps": SIX, "config": {"disabled_rules": ["repeated_call", "novelty"]}})
    assert quiet["findings"] == [] and quiet["recommendation"]["action"] == "continue"
    exempt = run({"steps": SIX, "config": {"tools": {"export_status": {"exempt": True}}}})
    assert exempt["findings"] == []
    polled = run({"steps": SIX * 3, "config": {"tools": {"export_status": {"poll": True}}}})
    assert {f["severity"] for f in polled["findings"]} == {"warning"}
    volatile = [call("s", {"nonce": i}, {"x": 1}) for i in range(6)]
    assert run({"steps": volatile, "config": {"ignore_keys": ["nonce"]}})["findings"]


def test_objective_embedding_gives_drift():
    trace = [call(f"t{i}", {}, embedding=[0.0, 1.0]) for i in range(5)]
    assert run({"steps": trace})["drift_score"] == -1
    out = run({"steps": trace, "config": {"objective_embedding": [1.0, 0.0]}})
    assert out["drift_score"] == 1.0 and out["is_drifting"]
    error = error_of({"steps": trace, "config": {"objective_embedding": [0.0, 0.0]}})
    assert error.details[0].path == "input.config.objective_embedding"


def test_healthy_long_run_is_quiet():
    out = run({"steps": distinct_calls(MAX_STEPS)})
    assert out["findings"] == [] and out["timeline"] == [] and out["steps"] == MAX_STEPS
