"""The monitor with its index and shortcuts answers exactly as the first monitor, which ran
every rule over the whole segment at every step (tests/reference_monitor.py), on a seeded random
corpus: every step's signal, under configs that exercise exempt and polling tools, per-tool
thresholds, disabled rules, a small history, an objective; and with the state through JSON,
sometimes as an older version stored it (monitor.upgrade)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from loopsense.core.monitor.config import RULES, STATEFUL_RULES, MonitorConfig
from loopsense.core.monitor.monitor import new_state, observe
from loopsense.core.monitor.signal import flags
from loopsense.core.monitor.steps import digest
from loopsense.skills import run_monitor
from tests import reference_monitor
from tests.unit.monitor_traces import call, chunk, config, say, step

WORDS = ["population", "lyon", "2020", "france", "census", "of"]
LOOPING = "Again and again the same words come out of the stream here. "


def corpus(seed: int, n: int = 300) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    outcomes = ["positive", "negative", "neutral", "error", None]

    def tool() -> dict[str, Any]:
        result = rng.choice([{"r": rng.randint(0, 2), "durationMs": rng.randint(0, 9)},
                             {"r": rng.randint(0, 2), "durationMs": rng.randint(0, 9)},
                             {"hits": [], "total": 0}, [], None, {"r": rng.randint(0, 2)}])
        extra = {"embedding": [rng.random() for _ in range(3)]} if rng.random() < 0.1 else {}
        # Arguments that differ by a word or two: near-identical for similar_call.
        args = {"q": rng.randint(0, 2), "text": " ".join(rng.sample(WORDS, rng.randint(2, 4)))}
        return call(rng.choice("aabcpsx"), args if rng.random() < 0.5 else {"q": args["q"]},
                    result if rng.random() < 0.8 else None, rng.choice(outcomes), **extra)

    kinds = [
        tool, tool, tool, tool,
        lambda: say(rng.choice(["same", "other"])),
        lambda: chunk(LOOPING[: rng.randint(20, 60)]),
        lambda: step(rng.choice(["recall", "llm_call"]), text=rng.choice(["q1", "q2", "Q1 "])),
        lambda: step("condensation"),
        lambda: step("thought", text="t"),
        lambda: step("user_message", text=rng.choice(["u", "continue", "Continue "]))
        if rng.random() < 0.2 else step("checkpoint", metadata={"s": rng.randint(0, 3)}),
        lambda: step("checkpoint", metadata={"s": rng.randint(0, 1)}),
    ]
    trace: list[dict[str, Any]] = []
    while len(trace) < n:
        if rng.random() < 0.03:  # a streamed message repeating itself
            trace.extend(chunk(LOOPING) for _ in range(rng.randint(5, 15)))
        elif rng.random() < 0.1:  # a burst: one call repeated, or a short cycle
            block = [tool() for _ in range(rng.randint(1, 3))]
            trace.extend(block * rng.randint(2, 5))
        else:
            trace.append(rng.choice(kinds)())
    return trace[:n]


CONFIGS = {
    "defaults": config(),
    "small history, low thresholds": config(history_size=10, repeat_warn=2, repeat_critical=3,
                                            cycle_repeats=2, monologue_limit=2,
                                            condensation_limit=2, error_streak=2),
    "exempt and polling tools": config(tools={"x": {"exempt": True},
                                              "p": {"poll": True, "poll_warn": 3},
                                              "a": {"repeat_warn": 2, "repeat_critical": 9}}),
    "rules off, no reset, objective": config(disabled=("novelty", "cycle", "content_loop"),
                                             reset_on_user_message=False,
                                             objective=[1.0, 0.0, 0.0], novelty_window=3),
    "lookalikes tuned, repeated user messages reset": config(
        tools={"s": {"same_result": True, "similar_warn": 2, "same_result_warn": 2},
               "p": {"poll": True}},
        similar_warn=3, similar_critical=3, similar_args=0.3, same_result_warn=2,
        revisit_threshold=2, reset_on_repeated_user_message=True,
        disabled=("repeated_call",)),
}


def reference_flags(reference: dict[str, Any]) -> dict[str, Any]:
    ever = {rule: {"step": reference["flagged"][rule][0],
                   "severity": reference["flagged"][rule][1]}
            for rule in RULES if rule in reference["flagged"]}
    return {"first_flagged": min((v["step"] for v in ever.values()), default=None),
            "ever_flagged": ever}


def test_the_corpus_raises_every_rule_of_the_core() -> None:
    fired: set[str] = set()
    for cfg in CONFIGS.values():
        for seed in range(4):
            fired.update(f.rule for s in [answers_of(corpus(seed), cfg)] for f in s)
    assert fired == set(RULES) - STATEFUL_RULES


def answers_of(steps: list[dict[str, Any]], cfg: MonitorConfig) -> list[Any]:
    state = new_state()
    out = []
    for s in steps:
        state, answer = observe(state, s, cfg)
        out.extend(answer.findings)
    return out


def stored_by(version: int, state: dict[str, Any]) -> dict[str, Any]:
    """``state`` as version 1 (no index) or 2 (a tool call's novelty key a digest of its keys)
    would have stored it."""
    for e in state["entries"]:
        if e["k"] == "tool_call":
            e["n"] = digest(f"{e['c']}:{e['r']}")
        if "u" in e:
            e["s"] = 1.0 - e.pop("u")
    if version == 1:
        del state["index"]
    state["version"] = version
    return state


@pytest.mark.parametrize("name", CONFIGS)
def test_the_fast_monitor_answers_as_the_reference(name: str) -> None:
    cfg: MonitorConfig = CONFIGS[name]
    fired: set[str] = set()
    for seed in range(4):
        rng = random.Random(seed)
        state, reference = new_state(), reference_monitor.new_state()
        for s in corpus(seed):
            if rng.random() < 0.2:  # stored and read back, as the runs API does
                state = json.loads(json.dumps(state))
                if rng.random() < 0.3:
                    state = stored_by(rng.choice((1, 2, 3)), state)
            state, answer = observe(state, s, cfg)
            expected = reference_monitor.observe(reference, s, cfg)
            assert answer.signal() == expected.signal()
            assert answer.signals() == expected.signals()
            fired.update(f.rule for f in answer.findings)
        assert flags(state["flagged"]) == reference_flags(reference)
    assert len(fired) >= 4  # the corpus exercises the rules (all of the core's across CONFIGS)


def test_a_config_changed_mid_run_answers_as_the_reference() -> None:
    """A run's config may change between batches (PUT .../config): a tool exempt when its steps
    came stays uncounted after it no longer is, and the window and thresholds follow the new
    config. (Un-exempting a tool used to crash the next step.)"""
    configs = list(CONFIGS.values())
    for seed in range(3):
        rng = random.Random(seed)
        state, reference = new_state(), reference_monitor.new_state()
        cfg = configs[2]  # exempt and polling tools
        for s in corpus(seed):
            if rng.random() < 0.05:
                cfg = rng.choice(configs)
            state, answer = observe(state, s, cfg)
            assert answer.signal() == reference_monitor.observe(reference, s, cfg).signal()


@pytest.mark.parametrize("name", CONFIGS)
def test_a_trace_entered_up_front_answers_as_the_reference(name: str) -> None:
    """agent.run_monitor makes a whole trace's entries first and digests only the results of
    calls made more than once in it (run_monitor.entries): every step's answer is still the
    reference's, with calls made once among the repeated ones."""
    cfg: MonitorConfig = CONFIGS[name]
    for seed in range(4):
        rng = random.Random(seed)
        steps = [call("u", {"n": i}, {"r": rng.randint(0, 1)}, rng.choice(["negative", None]))
                 if rng.random() < 0.2 else s for i, s in enumerate(corpus(seed))]
        made = run_monitor.entries(steps, cfg)
        assert any(e and e["k"] == "tool_call" and ("t" not in e or e["r"] is None
                                                    and "result" in steps[e["i"]])
                   for e in made)  # some results never digested, or some words never kept
        state, reference = new_state(), reference_monitor.new_state()
        for index, s in enumerate(steps):
            state, answer = observe(state, s, cfg, made[index])
            assert answer.signal() == reference_monitor.observe(reference, s, cfg).signal()
