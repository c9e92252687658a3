"""The two surfaces of the run monitor give the same verdict for the same steps: the stateless
skill agent.run_monitor over a whole trace, and the runs API fed the trace in random batches
(state through the store between batches), on seeded generated traces.

Only the words differ: stateless answers never name a tool (spec: no submitted content), the
stateful ones do; everything else must be equal.
"""

from __future__ import annotations

import json
import random
import uuid
from typing import Any

import pytest

from loopsense.platform.http.auth import Identity
from loopsense.skills import run_monitor
from tests.integration.runs.test_runs_service import service

TRACES = 60
ACTIONS = ("read_file", "export_status", "search")
KINDS = ("tool_call",) * 6 + ("message", "thought", "text_chunk", "llm_call", "recall",
                              "user_message", "condensation", "checkpoint", "custom")


def generated_step(rng: random.Random, dims: int | None) -> dict[str, Any]:
    kind = rng.choice(KINDS)
    step: dict[str, Any] = {"kind": kind}
    if kind == "tool_call":
        step.update(action=rng.choice(ACTIONS), args={"id": rng.randrange(2)},
                    result={"v": rng.randrange(2), "durationMs": rng.randrange(99)},
                    outcome=rng.choice(("positive", "negative", "neutral", "error")))
    elif kind == "checkpoint":
        step["metadata"] = {"s": rng.randrange(2)}
    elif kind != "thought" and kind != "condensation":
        # "again same": the words of "same again", another text (a near-identical message)
        step["text"] = rng.choice(("same again ", "Same  again", "again same", "other text",
                                   "x" * 60))
    if dims and rng.random() < 0.7:
        step["embedding"] = [rng.uniform(-1, 1) for _ in range(dims)]
    return step


def generated(seed: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    rng = random.Random(seed)
    dims = rng.choice((None, 3))
    steps = [generated_step(rng, dims) for _ in range(rng.randrange(1, 70))]
    config: dict[str, Any] = rng.choice((
        {}, {"repeat_warn": 3, "repeat_critical": 4}, {"cycle_repeats": 2, "history_size": 10},
        {"tools": {"export_status": {"poll": True}}, "reset_on_user_message": False},
        {"disabled_rules": ["novelty", "stagnation"], "nudges_before_break": 0},
        {"monologue_limit": 2, "monologue_run": 3}))
    return steps, config


def stateless_run(steps: list[dict[str, Any]], config: dict[str, Any],
                  objective: list[float] | None) -> dict[str, Any]:
    extra = {"objective_embedding": objective} if objective else {}
    return run_monitor.run({"steps": steps, "config": {**config, **extra}})


def words_out(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in f.items() if k != "rationale"} for f in findings]


def comparable(signal: dict[str, Any]) -> dict[str, Any]:
    """The verdict without its words (rationales and nudges)."""
    out = {k: v for k, v in signal.items()
           if k not in ("rationale", "steps", "segmentStart", "timeline")}
    out["findings"] = words_out(signal["findings"])
    out["recommendation"] = signal["recommendation"]["action"]
    return out


@pytest.mark.parametrize("seed", range(TRACES))
def test_the_stateless_skill_and_the_runs_api_agree(client, seed):  # noqa: F811 - fixture
    steps, config = generated(seed)
    objective = [0.5, -0.25, 1.0] if any("embedding" in s for s in steps) else None
    stateless = stateless_run(steps, config, objective)

    runs, _ = service(client)
    who = Identity(f"t-{uuid.uuid4().hex[:8]}", "key_1", "team", ("*",), {})
    run = f"seed-{seed}"
    runs.set_config(who, run, config)
    if objective:
        runs.register(who, run, {"agentId": "ari", "objectiveEmbedding": objective})
    rng = random.Random(seed + 1000)
    position, answer = 0, None
    while position < len(steps):
        size = rng.randrange(1, 9)
        batch = [{**s, "agentId": "ari"} for s in steps[position:position + size]]
        body = json.dumps({"steps": batch}).encode()
        answer = runs.steps(who, run, json.loads(body), body, None)
        position += size
        # After every batch: the skill over the steps so far gives the same answer.
        so_far = stateless_run(steps[:position], config, objective)
        assert answer["signals"] == {
            "repeated": so_far["is_looping"], "stagnant": so_far["is_stuck"],
            "drift_score": so_far["drift_score"], "novelty_score": so_far["novelty_score"]}
        assert words_out(answer["findings"]) == words_out(so_far["findings"])
        assert answer["recommendation"]["action"] == so_far["recommendation"]["action"]
    assert answer is not None
    verdict = runs.signal(who, run, "ari")

    assert verdict["sequence"] == stateless["steps"] == len(steps)
    assert verdict["segmentStart"] == stateless["segmentStart"]
    assert comparable(verdict["signal"]) == comparable(stateless)
