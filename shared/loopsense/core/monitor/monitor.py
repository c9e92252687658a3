"""The run monitor: state in, step in -> state out, answer out.

The state is a plain JSON object (the stateful runs API stores it per agent), bounded by
``history_size``: the current segment's entries (steps since the last reset point, thoughts
excluded), the open text stream, the nudges recommended since the reset and the last
recommendation. One step costs the same whatever the run's length: rules read the bounded
segment, never the run.

``observe`` updates the state it is given (and returns it); ``reset`` makes a reset point
(a circuit break, POST .../reset); a ``user_message`` is one too unless the config says not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from loopsense.core.monitor import content, embeddings, repetition, streaks
from loopsense.core.monitor.config import MonitorConfig
from loopsense.core.monitor.findings import Finding
from loopsense.core.monitor.signal import CONTINUE, Answer, recommend
from loopsense.core.monitor.steps import THOUGHT, entry

STATE_VERSION = 1


def new_state() -> dict[str, Any]:
    return {"version": STATE_VERSION, "next": 0, "segmentStart": 0, "entries": [],
            "stream": None, "nudges": {}, "last": None}


def reset(state: dict[str, Any]) -> dict[str, Any]:
    """A reset point: the signals start afresh; the step count goes on."""
    state.update(segmentStart=state["next"], entries=[], stream=None, nudges={}, last=None)
    return state


@dataclass(frozen=True, slots=True)
class Evaluation:
    findings: list[Finding]  # in RULES order
    novelty_score: float
    drift_score: float | int


def evaluate(state: Mapping[str, Any], config: MonitorConfig) -> Evaluation:
    """Every enabled rule over the state's segment."""
    entries = state["entries"]
    tool_calls = repetition.calls(entries)
    streak = streaks.failures(tool_calls)
    counted = [e for e in entries if "x" not in e] if config.exempts else entries
    novelty_score = embeddings.novelty_score(counted, config)
    drift_score = embeddings.drift_score(counted, config)
    stream = state["stream"]
    on = config.on
    candidates = (
        on("repeated_call") and repetition.repeated_call(tool_calls, config),
        on("cycle") and len(tool_calls) > 3 and repetition.cycle(tool_calls, config),
        on("error_streak") and streaks.error_streak(streak, config),
        on("monologue") and streaks.monologue(entries, config),
        on("content_loop") and stream is not None and stream["hit"] is not None
        and content.finding(stream["hit"], config),
        on("repeated_query") and repetition.repeated_query(entries, config),
        on("stagnation") and streaks.stagnation(streak, config),
        on("condensation_loop") and streaks.condensation_loop(entries, config),
        on("drift") and embeddings.drift(counted, drift_score, config),
        on("novelty") and embeddings.novelty(counted, novelty_score, config),
    )  # in RULES order
    findings = [f for f in candidates if isinstance(f, Finding)]
    return Evaluation(findings, novelty_score, drift_score)


def observe(state: dict[str, Any], step: Mapping[str, Any],
            config: MonitorConfig) -> tuple[dict[str, Any], Answer]:
    """Add one step to ``state`` (updated in place) and answer for it."""
    index = state["next"]
    state["next"] = index + 1
    kind = step.get("kind")
    if kind == "user_message" and config.reset_on_user_message:
        reset(state)
        state["segmentStart"] = index + 1
        return state, recommend(state, evaluate(state, config), index, config)
    if kind == THOUGHT:  # skipped by every rule: it breaks no run of copies
        return state, recommend(state, evaluate(state, config), index, config)
    new = entry(step, index, config)
    entries = state["entries"]
    if "x" not in new:
        counted = [e for e in entries if "x" not in e] if config.exempts else entries
        new["s"] = embeddings.highest_similarity(new, counted)
    entries.append(new)
    excess = len(entries) - config.integer("history_size")
    if excess > 0:
        del entries[:excess]
    if kind == "text_chunk":
        if state["stream"] is None:
            state["stream"] = content.new_stream()
        text = step.get("text")
        if config.on("content_loop"):
            content.add_chunk(state["stream"], text if isinstance(text, str) else "", index,
                              config)
    else:
        state["stream"] = None  # any other step ends the streamed message
    return state, recommend(state, evaluate(state, config), index, config)


def inspect(state: Mapping[str, Any], config: MonitorConfig) -> Answer:
    """Re-inspect without a new step (GET .../signal): the rules over the state as it is, with
    the last recommendation (none counted). ``state`` is not changed."""
    evaluation = evaluate(state, config)
    recommendation = (state["last"] or CONTINUE) if evaluation.findings else CONTINUE
    return Answer(state["next"] - 1, evaluation.findings, dict(recommendation),
                  evaluation.novelty_score, evaluation.drift_score, config.name_tools)
