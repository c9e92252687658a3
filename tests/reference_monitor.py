"""The run monitor as first written (before the index, benchmarks/bench_run_monitor.py): every
rule over the whole segment at every step. The reference the fast monitor is checked against
(tests/unit/test_run_monitor_reference.py); it shares the rules' functions, not the shortcuts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loopsense.core.monitor import content, embeddings, repetition, streaks
from loopsense.core.monitor.config import MonitorConfig
from loopsense.core.monitor.findings import Finding
from loopsense.core.monitor.signal import CONTINUE, Answer, recommend
from loopsense.core.monitor.steps import THOUGHT, entry

Entry = dict[str, Any]


def new_state() -> dict[str, Any]:
    return {"next": 0, "segmentStart": 0, "entries": [], "stream": None, "nudges": {},
            "last": None}


def evaluate(state: Mapping[str, Any], config: MonitorConfig) -> Answer:
    entries = state["entries"]
    tool_calls = repetition.calls(entries)
    streak = streaks.failures(entries)
    counted = [e for e in entries if "x" not in e]  # exempt when they came: never counted
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
    )
    return Answer(state["next"] - 1, [f for f in candidates if isinstance(f, Finding)],
                  dict(CONTINUE), [], drift_score, config.name_tools, novelty_score)


def observe(state: dict[str, Any], step: Mapping[str, Any], config: MonitorConfig) -> Answer:
    index = state["next"]
    state["next"] = index + 1
    kind = step.get("kind")
    if kind == "user_message" and config.reset_on_user_message:
        state.update(segmentStart=index + 1, entries=[], stream=None, nudges={}, last=None)
        return recommend(state, evaluate(state, config), config)
    if kind == THOUGHT:
        return recommend(state, evaluate(state, config), config)
    new = entry(step, index, config)
    entries = state["entries"]
    if "x" not in new:
        counted = [e for e in entries if "x" not in e]
        new["u"] = 1.0 - embeddings.highest_similarity(new, counted)
    entries.append(new)
    excess = len(entries) - config.integer("history_size")
    if excess > 0:
        del entries[:excess]
    content.follow(state, step, index, config)
    return recommend(state, evaluate(state, config), config)
