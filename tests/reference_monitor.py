"""The run monitor as first written (before the index, benchmarks/bench_run_monitor.py): every
rule over the whole segment at every step. The reference the fast monitor is checked against
(tests/unit/test_run_monitor_reference.py); it shares the rules' functions, not the shortcuts.
The rules added since (similar_call, same_result, state_revisit) and the repeated user message
are written here again the slow, obvious way: every pair of calls compared, every checkpoint
walked."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loopsense.core.monitor import content, embeddings, repetition, streaks
from loopsense.core.monitor.config import MonitorConfig
from loopsense.core.monitor.findings import CRITICAL, WARNING, Finding
from loopsense.core.monitor.signal import CONTINUE, Answer, recommend
from loopsense.core.monitor.steps import THOUGHT, entry, normal_text

Entry = dict[str, Any]


def new_state() -> dict[str, Any]:
    return {"next": 0, "segmentStart": 0, "entries": [], "stream": None, "nudges": {},
            "last": None, "user": None, "flagged": {}}


def jaccard(a: Entry, b: Entry) -> float:
    if a["c"] == b["c"]:
        return 1.0
    left, right = set(a.get("t") or ()), set(b.get("t") or ())
    if not left or not right:
        return 0.0
    return len(left & right) / len(left | right)


def similar_call(tool_calls: list[Entry], config: MonitorConfig) -> Finding | None:
    if not tool_calls or tool_calls[-1]["r"] is None:
        return None
    latest = tool_calls[-1]
    action = latest["a"]
    if config.policy(action).poll:
        return None
    empty = "z" in latest
    group = [e for e in tool_calls if e["a"] == action and e["r"] is not None
             and (("z" in e) if empty else e["r"] == latest["r"])]
    # The connected component of the latest call, grown until nothing joins.
    cluster = [latest]
    grown = True
    while grown:
        grown = False
        for e in group:
            if all(e is not c for c in cluster) and any(
                    jaccard(e, c) >= config.value("similar_args") for c in cluster):
                cluster.append(e)
                grown = True
    cluster.sort(key=lambda e: e["i"])
    if len({e["c"] for e in cluster}) < 2:
        return None
    indices = [e["i"] for e in cluster]
    if (len(cluster) >= config.tool_int(action, "similar_critical")
            and len({e["r"] for e in cluster}) == 1):
        return Finding("similar_call", CRITICAL, len(cluster), indices,
                       config.tool_int(action, "similar_critical"), subject=latest["c"],
                       tool=action, first=indices[0])
    if len(cluster) >= config.tool_int(action, "similar_warn"):
        return Finding("similar_call", WARNING, len(cluster), indices,
                       config.tool_int(action, "similar_warn"), subject=latest["c"],
                       tool=action, first=indices[0])
    return None


def same_result(tool_calls: list[Entry], config: MonitorConfig) -> Finding | None:
    def nothing(e: Entry) -> bool:
        return "z" in e or e["o"] == "neg" or config.policy(e["a"]).same_result

    if not tool_calls or tool_calls[-1]["r"] is None:
        return None
    latest = tool_calls[-1]
    if config.policy(latest["a"]).poll or not nothing(latest):
        return None
    same = [e for e in tool_calls
            if e["a"] == latest["a"] and e["r"] == latest["r"] and nothing(e)]
    warn = config.tool_int(latest["a"], "same_result_warn")
    if len(same) < warn or len({e["c"] for e in same}) < 2:
        return None
    return Finding("same_result", WARNING, len(same), [e["i"] for e in same], warn,
                   subject=latest["r"], tool=latest["a"], first=same[0]["i"])


def state_revisit(entries: list[Entry], config: MonitorConfig) -> Finding | None:
    """Every visit of the latest checkpoint's state, then the tail of them with no state new
    to the segment between consecutive ones."""
    checkpoints = [e for e in entries if e["k"] == "checkpoint"]
    if not checkpoints:
        return None
    state = checkpoints[-1]["n"]
    positions = [p for p, e in enumerate(checkpoints) if e["n"] == state]
    first_seen = {}
    for p, e in enumerate(checkpoints):
        first_seen.setdefault(e["n"], p)
    counted = [positions[-1]]
    for before, after in reversed(list(zip(positions, positions[1:], strict=False))):
        if any(first_seen[checkpoints[p]["n"]] == p for p in range(before + 1, after)):
            break
        counted.insert(0, before)
    if len(counted) < config.integer("revisit_threshold"):
        return None
    stayed = all(checkpoints[p]["n"] == state for p in range(counted[0], counted[-1] + 1))
    indices = [checkpoints[p]["i"] for p in counted]
    return Finding("state_revisit", CRITICAL if stayed else WARNING, len(indices), indices,
                   config.integer("revisit_threshold"), subject=state, first=indices[0])


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
        on("similar_call") and similar_call(tool_calls, config),
        on("same_result") and same_result(tool_calls, config),
        on("state_revisit") and state_revisit(entries, config),
    )
    return Answer(state["next"] - 1, [f for f in candidates if isinstance(f, Finding)],
                  dict(CONTINUE), [], drift_score, config.name_tools, novelty_score,
                  state["flagged"])


def observe(state: dict[str, Any], step: Mapping[str, Any], config: MonitorConfig) -> Answer:
    index = state["next"]
    state["next"] = index + 1
    kind = step.get("kind")
    if kind == "user_message" and config.reset_on_user_message:
        text = step.get("text")
        said = normal_text(text) if isinstance(text, str) else ""
        if config.reset_on_repeated_user_message or said != state["user"]:
            state.update(segmentStart=index + 1, entries=[], stream=None, nudges={}, last=None,
                         user=said)
            return flagged(state, recommend(state, evaluate(state, config), config))
    if kind == THOUGHT:
        return flagged(state, recommend(state, evaluate(state, config), config))
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
    return flagged(state, recommend(state, evaluate(state, config), config))


def flagged(state: dict[str, Any], answer: Answer) -> Answer:
    flags = dict(state["flagged"])  # a copy: earlier answers keep theirs
    for f in answer.findings:
        first, severity = flags.get(f.rule, (answer.index, f.severity))
        flags[f.rule] = (first, CRITICAL if CRITICAL in (severity, f.severity) else WARNING)
    state["flagged"] = answer.flagged = flags
    return answer
