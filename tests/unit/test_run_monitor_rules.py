"""The run monitor's core, rule by rule (spec/loop_safety.md): a trace built to raise a rule
raises it (warning and critical where both exist), a healthy trace of the same length raises
nothing, and every rule can be switched off."""

from __future__ import annotations

import pytest

from loopsense.core.monitor.config import RULES, STATEFUL_RULES
from tests.unit.monitor_traces import (
    answers,
    call,
    chunk,
    config,
    distinct_calls,
    ever,
    last,
    rules,
    say,
    step,
)

LYON = ["population of Lyon 2020", "Lyon population in 2020", "2020 population of Lyon France",
        "Lyon France population 2020", "population Lyon 2020 census", "what was the population "
        "of Lyon in 2020"]
SENTENCE = "The export is still running, I will check the status again now. "
# Three messages a word apart (word Jaccard 0.875 and 1.0 >= monologue_similar 0.8).
NEAR_IDENTICAL = ["I will check the export status now.",
                  "I will check the export status again now.",
                  "I will now check the export status."]


def axis(i: int, dim: int = 8) -> list[float]:
    return [1.0 if j == i else 0.0 for j in range(dim)]


def near(i: int, noise: float, dim: int = 8) -> list[float]:
    v = axis(0, dim)
    v[1 + i % (dim - 1)] = noise
    return v


# rule -> (trace raising a warning, trace raising a critical finding, config); None: no level
RAISING = {
    "repeated_call": (
        [call("status", {"id": 7}, {"s": r}) for r in ("a", "a", "b", "b")],
        [call("status", {"id": 7}, {"s": "pending"})] * 6, {}),
    "cycle": (
        [call(a, {"q": 1}, {"n": i}) for i in range(3) for a in ("search", "open")],
        [call(a, {"q": 1}, {"n": 1}) for _ in range(3) for a in ("search", "open")], {}),
    "error_streak": (
        [call(a, {}, {"error": a}, "negative") for a in ("build", "test", "lint")],
        [call("build", {}, {"error": f"line {i}"}, "error") for i in range(3)], {}),
    "monologue": ([say(t) for t in NEAR_IDENTICAL], [say("Same plan.")] * 3, {}),
    "content_loop": (None, [chunk(SENTENCE[i:i + 7]) for i in range(0, len(SENTENCE), 7)] * 15,
                     {}),
    "repeated_query": ([step("recall", text=t) for t in ("Ticket 2214", " ticket  2214",
                                                         "TICKET 2214", "ticket 2214 ")],
                       None, {}),
    "stagnation": ([call(a, {}, {"e": 1}, "negative") for a in ("a", "b", "c")], None, {}),
    "condensation_loop": (None, [s for i in range(10)
                                 for s in (step("condensation"), call("read", {"p": i}))], {}),
    "drift": ([call(f"t{i}", {}, embedding=axis(5)) for i in range(5)], None,
              {"objective": axis(0)}),
    "novelty": ([call(f"t{i}", {}, embedding=near(i, 0.01)) for i in range(6)], None, {}),
    "similar_call": (
        [call("web_search", {"query": q}, {"hits": ["lyon.fr/stats"]}) for q in LYON[:4]],
        [call("web_search", {"query": q}, {"results": []}) for q in LYON], {}),
    "same_result": ([call("search", {"query": q}, {"results": [], "total": 0})
                     for q in ("refund policy", "returns", "money back", "cancel order")],
                    None, {}),
    "state_revisit": (
        [s for i in range(4) for s in (step("checkpoint", metadata={"url": "/cart"}),
                                       call("click", {"n": i}),
                                       step("checkpoint", metadata={"url": "/help"}))][:-1],
        [s for i in range(3) for s in (call("click", {"n": i}),
                                       step("checkpoint", metadata={"url": "/cart"}))], {}),
}
# Rules of the stateful surface only (tests/integration/test_runs_service.py tests them).
CORE_RULES = [r for r in RULES if r not in STATEFUL_RULES]


def healthy(n: int) -> list[dict]:
    return distinct_calls(n)


@pytest.mark.parametrize("rule", CORE_RULES)
def test_rule_raises_warning_and_critical(rule):
    warning, critical, extra = RAISING[rule]
    cfg = config(**extra)
    for trace, severity in ((warning, "warning"), (critical, "critical")):
        if trace is None:
            continue
        assert rules(last(trace, cfg)).get(rule) == severity


@pytest.mark.parametrize("rule", CORE_RULES)
def test_healthy_trace_of_the_same_length_raises_nothing(rule):
    warning, critical, extra = RAISING[rule]
    for trace in (warning, critical):
        if trace is None:
            continue
        calm = healthy(len(trace))
        if rule == "drift":
            calm = [call(f"t{i}", {}, embedding=near(i, 0.2)) for i in range(len(trace))]
        elif rule == "novelty":
            calm = [call(f"t{i}", {}, embedding=axis(i % 8)) for i in range(len(trace))]
        assert ever(calm, config(**extra)) == {}


@pytest.mark.parametrize("rule", CORE_RULES)
def test_every_rule_can_be_switched_off(rule):
    warning, critical, extra = RAISING[rule]
    trace = critical or warning
    assert rule in rules(last(trace, config(**extra)))
    assert rule not in ever(trace, config(disabled=(rule,), **extra))


def test_six_identical_calls_nudge_then_break():
    trace = [call("export_status", {"job": 3}, {"state": "pending"})] * 7
    out = answers(trace)
    sixth = out[5].signal()
    assert sixth["is_looping"] and sixth["confidence"] >= 0.7
    assert sixth["recommendation"]["action"] == "nudge"
    assert "export_status 6 times" in sixth["recommendation"]["nudge"]
    assert out[6].recommendation["action"] == "break"
    assert [a.recommendation["action"] for a in out[:3]] == ["continue"] * 3


def test_warning_only_evidence_stays_below_0_7():
    polling = [call("status", {"id": 1}, {"progress": i}) for i in range(40)]
    talking = [say(f"thinking about option {i}") for i in range(40)]
    mixed = [call("status", {"id": 1}, {"s": s}) for s in "aabba"]
    for trace in (polling, talking, mixed):
        signal = last(trace).signal()
        assert signal["findings"] and all(f["severity"] == "warning" for f in signal["findings"])
        assert signal["confidence"] < 0.7 and signal["loop_score"] < 0.7


def test_confidence_and_loop_score_grow_with_the_evidence():
    out = answers([call("export_status", {"job": 3}, {"state": "pending"})] * 30)
    confidences = [a.signal()["confidence"] for a in out]
    scores = [a.signal()["loop_score"] for a in out]
    assert confidences == sorted(confidences) and scores == sorted(scores)
    assert confidences[3] > 0 and confidences[-1] > confidences[5]


def test_polling_with_a_changing_result_never_goes_critical_nor_breaks():
    out = answers([call("job_status", {"job": 9}, {"progress": i}) for i in range(30)])
    assert all(f.severity != "critical" for a in out for f in a.findings)
    assert all(a.recommendation["action"] != "break" for a in out)
    assert rules(out[14]) == {"repeated_call": "warning"} and rules(out[13]) == {}


def test_volatile_result_fields_count_as_identical():
    trace = [call("run_tests", {"suite": "unit"},
                  {"passed": 3, "failed": 1, "durationMs": 100 + i, "pid": 4000 + i,
                   "meta": {"requestId": f"r{i}"}}) for i in range(6)]
    assert rules(last(trace))["repeated_call"] == "critical"


def test_ignore_keys_drop_volatile_arguments():
    trace = [call("search", {"q": "x", "nonce": i}, {"hits": 0}) for i in range(6)]
    assert "repeated_call" not in rules(last(trace))
    cfg = config()
    from dataclasses import replace
    assert rules(last(trace, replace(cfg, ignore_keys=frozenset({"nonce"}))))[
        "repeated_call"] == "critical"


def test_an_exempt_tool_never_counts():
    trace = [call("heartbeat", {}, {"ok": True}, "negative")] * 20
    assert ever(trace, config(tools={"heartbeat": {"exempt": True}})) == {}


def test_a_poll_tool_reaches_warning_at_poll_warn_only():
    trace = [call("wait", {"id": 1}, {"s": "same"})] * 20
    seen = ever(trace, config(tools={"wait": {"poll": True}}, disabled=("novelty",)))
    assert seen == {"repeated_call": {"warning"}}
    assert rules(answers(trace, config(tools={"wait": {"poll": True}}))[13]).get(
        "repeated_call") is None


def test_a_tool_can_have_its_own_thresholds():
    trace = [call("export", {"id": 1}, {"s": "p"})] * 3
    assert rules(last(trace, config(tools={"export": {"repeat_warn": 2,
                                                      "repeat_critical": 3}})))[
        "repeated_call"] == "critical"


def test_a_user_message_resets_the_segment():
    same = [call("status", {"id": 1}, {"s": "p"})] * 5
    trace = same + [step("user_message", text="keep going")] + same
    found = last(trace).findings[0]
    assert (found.severity, found.count) == ("warning", 5)  # 5 since the reset, not 10
    assert found.indices == [6, 7, 8, 9, 10]
    kept = config(reset_on_user_message=False)
    assert rules(last(trace, kept))["repeated_call"] == "critical"


def test_thoughts_are_skipped():
    a, b = call("search", {"q": 1}, {"n": 0}), call("open", {"u": 2}, {"n": 0})
    think = step("thought", text="hmm")
    plain = [a, b] * 3
    with_thoughts = [s for pair in zip(plain, [think] * 6, strict=True) for s in pair]
    assert rules(last(with_thoughts)) == rules(last(plain)) == {"cycle": "critical"}
    monologue = [say("same"), think, say("same"), think, say("same")]
    assert rules(last(monologue))["monologue"] == "critical"


def test_a_monologue_repeats_itself_or_runs_long():
    """Distinct messages are narration until monologue_run of them; near-identical ones warn at
    monologue_limit, identical ones are critical there (docs/decisions.md, "monologue")."""
    notes = [say(f"Noted: {topic}.") for topic in ("the schema", "a flaky test", "the api docs",
                                                   "two callers", "the config", "a typo")]
    assert ever(notes[:5]) == {}
    assert rules(last(notes)) == {"monologue": "warning"}
    assert last(notes).findings[0].indices == [0, 1, 2, 3, 4, 5]
    assert rules(last(notes[:3], config(monologue_run=3))) == {"monologue": "warning"}
    near = last([say(t) for t in NEAR_IDENTICAL])
    assert near.signal()["rationale"] == "3 near-identical messages without a tool call"
    assert ever([say(t) for t in NEAR_IDENTICAL], config(monologue_similar=1.0)) == {}
    # The latest message and those like it count; an earlier, different one in the run does not.
    mixed = last([notes[0], *[say("Same plan.")] * 3])
    assert rules(mixed) == {"monologue": "critical"} and mixed.findings[0].indices == [1, 2, 3]
    assert ever([*[say("Same plan.")] * 2, notes[0]]) == {}


def test_non_tool_steps_do_not_break_a_cycle():
    a, b = call("search", {"q": 1}, {"n": 0}), call("open", {"u": 2}, {"n": 0})
    trace = [a, say("again"), b, a, step("llm_call", text="x"), b, a, b]
    assert rules(last(trace, config(reset_on_user_message=True)))["cycle"] == "critical"


def test_a_one_step_run_answers():
    answer = last([call("x", {})])
    assert answer.findings == [] and answer.recommendation == {"action": "continue"}
    assert answer.signal()["novelty_score"] == 1.0


def test_drift_is_unknown_without_an_objective():
    trace = [call(f"t{i}", {}, embedding=axis(5)) for i in range(5)]
    signal = last(trace).signal()
    assert signal["drift_score"] == -1 and not signal["is_drifting"]
    assert last(trace, config(objective=axis(0))).signal()["drift_score"] == 1.0


def test_stuck_now_a_loop_in_the_past_stops_firing():
    trace = [call("status", {"id": 1}, {"s": "p"})] * 6 + distinct_calls(1)
    assert rules(last(trace)) == {}


def test_repeated_call_counts_wherever_it_occurs():
    a = call("status", {"id": 1}, {"s": "p"})
    trace = [a, *distinct_calls(1), a, *distinct_calls(1, 1), a, *distinct_calls(1, 2), a]
    found = last(trace).findings[0]
    assert (found.rule, found.count, found.indices) == ("repeated_call", 4, [0, 2, 4, 6])


def test_the_segment_is_bounded_by_history_size():
    out_state = None
    from loopsense.core.monitor.monitor import new_state, observe
    state = new_state()
    cfg = config(history_size=10)
    for s in distinct_calls(500):
        state, _ = observe(state, s, cfg)
        out_state = state
    assert out_state is not None and len(out_state["entries"]) == 10
    repeated = [call("status", {"id": 1}, {"s": "p"}), *distinct_calls(10)] * 6
    assert "repeated_call" not in ever(repeated, cfg)  # copies 11 steps apart fall out


def test_findings_never_quote_content_when_tools_are_unnamed():
    from dataclasses import replace
    secret = "SECRET-MARKER-7f3a"
    trace = [call(secret, {"k": secret}, {"v": secret})] * 7
    cfg = replace(config(), name_tools=False)
    for answer in answers(trace, cfg):
        assert secret.lower() not in repr(answer.signal()).lower()
    assert secret in repr(last(trace).signal())  # the stateful surface names its tools


def test_calls_without_results_never_go_critical():
    bare = [call("export_status", {"job": 3})] * 12
    assert ever(bare, config(disabled=("novelty",))) == {"repeated_call": {"warning"}}
    pairs = [call(a, {"q": 1}) for _ in range(4) for a in ("search", "open")]
    assert rules(last(pairs))["cycle"] == "warning"


@pytest.mark.parametrize("rule", CORE_RULES)
@pytest.mark.parametrize("named", [True, False])
def test_every_finding_has_words(rule, named):
    from dataclasses import replace
    warning, critical, extra = RAISING[rule]
    for trace in (warning, critical):
        if trace is None:
            continue
        out = answers(trace, replace(config(**extra), name_tools=named))
        for answer in out:
            signal = answer.signal()
            texts = [f["rationale"] for f in signal["findings"]]
            texts.append(signal["recommendation"].get("nudge", ""))
            assert all("{" not in t and "}" not in t for t in texts)
        assert any(f["rule"] == rule and f["rationale"] for f in out[-1].signal()["findings"])


@pytest.mark.parametrize(("allowed", "actions"), [
    (0, ["break", "break"]),
    (1, ["nudge", "break"]),
    (2, ["nudge", "nudge", "break"]),
])
def test_nudges_before_break(allowed, actions):
    trace = [call("export_status", {"job": 3}, {"state": "pending"})] * (5 + len(actions))
    out = answers(trace, config(nudges_before_break=allowed, disabled=("novelty",)))
    assert [a.recommendation["action"] for a in out[5:]] == actions
