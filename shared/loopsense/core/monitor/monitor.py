"""The run monitor: state in, step in -> state out, answer out.

The state is a plain JSON object (the stateful runs API stores it per agent), bounded by
``history_size``: the current segment's entries (steps since the last reset point, thoughts
excluded), the open text stream, the nudges recommended since the reset and the last
recommendation. One step costs the same whatever the run's length: rules read the bounded
segment, never the run.

``index`` counts the segment's keys (tool calls, queries, novelty keys; ``exempt`` the exempt
tool calls; ``call`` and ``query`` the latest keys; ``fails`` the trailing run of failed calls
among the ``known`` outcomes; ``results`` the result hashes, ``empty`` the calls whose result
carries nothing, ``result``/``nothing`` the latest call's; ``checks`` and ``check`` the
checkpoints' states), kept with the entries, so a step asks "has this key been seen,
how often" in O(1): the rules that need a pass over the segment run only when the counts say
they can fire, and the answers are the same as evaluating every rule at every step
(tests/reference_monitor.py). A state stored by an older version is brought up to date when
read (``upgrade``).

``observe`` updates the state it is given (and returns it); ``reset`` makes a reset point
(a circuit break, POST .../reset); a ``user_message`` is one too unless the config says not,
or it repeats the segment's previous one (``user``, its text key: "continue" again and again
does not hide a loop). ``flagged`` keeps, for the whole run, the first step at which each rule
fired and the highest severity it reached (a finished trace judged after the fact).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from loopsense.core.monitor import (
    content,
    embeddings,
    lookalike,
    repetition,
    revisits,
    run_view,
    streaks,
)
from loopsense.core.monitor.config import MonitorConfig
from loopsense.core.monitor.findings import CRITICAL, Finding
from loopsense.core.monitor.signal import CONTINUE, Answer, recommend
from loopsense.core.monitor.steps import THOUGHT, entry, novelty_key, user_key

# 1: no index; 2: a tool call's novelty key was a digest of its keys, entries kept their
# similarity (s) rather than their novelty (u); 3: no words (t), empty results (z), user
# message (user), flags (flagged); 4: now.
STATE_VERSION = 4
Entry = dict[str, Any]


def new_state() -> dict[str, Any]:
    return {"version": STATE_VERSION, "next": 0, "segmentStart": 0, "entries": [],
            "index": new_index(), "stream": None, "nudges": {}, "last": None, "user": None,
            "flagged": {}}


def reset(state: dict[str, Any]) -> dict[str, Any]:
    """A reset point: the signals start afresh; the step count goes on."""
    state.update(segmentStart=state["next"], entries=[], index=new_index(), stream=None,
                 nudges={}, last=None, user=None)
    return state


def new_index() -> dict[str, Any]:
    return {"calls": {}, "queries": {}, "novelty": {}, "exempt": 0, "call": None, "query": None,
            "known": 0, "fails": 0, "results": {}, "empty": 0, "result": None, "nothing": False,
            "checks": {}, "check": None}


def build_index(entries: list[Entry]) -> dict[str, Any]:
    index = new_index()
    for e in entries:
        add(index, e)
    return index


def add(index: dict[str, Any], e: Entry) -> None:
    """Count ``e``, the segment's newest entry, in the index."""
    if "x" in e:
        index["exempt"] += 1
        return
    kind = e["k"]
    if kind == "tool_call":
        key = index["call"] = e["c"]
        calls = index["calls"]
        calls[key] = calls.get(key, 0) + 1
        outcome = e["o"]
        if outcome is not None:  # the trailing run of failures among the known outcomes
            index["known"] += 1
            index["fails"] = index["fails"] + 1 if outcome == "neg" else 0
        result = index["result"] = e["r"]
        if result is not None:
            results = index["results"]
            results[result] = results.get(result, 0) + 1
        nothing = index["nothing"] = "z" in e
        if nothing:
            index["empty"] += 1
    elif kind == revisits.CHECKPOINT:
        key = index["check"] = e["n"]
        checks = index["checks"]
        checks[key] = checks.get(key, 0) + 1
    elif kind in repetition.QUERY_KINDS:
        key = index["query"] = e["c"]
        queries = index["queries"]
        queries[key] = queries.get(key, 0) + 1
    novelty = index["novelty"]
    novelty[e["n"]] = novelty.get(e["n"], 0) + 1


def remove(index: dict[str, Any], e: Entry) -> None:
    """Count ``e``, the segment's oldest entry, out of the index; keys counted to zero go."""
    if "x" in e:
        index["exempt"] -= 1
        return
    kind = e["k"]
    if kind == "tool_call":
        if not _drop(index["calls"], e["c"]):  # the latest call is the last to leave
            index.update(call=None, result=None, nothing=False)
        if e["o"] is not None:  # the failure run is at most the known outcomes left
            known = index["known"] = index["known"] - 1
            index["fails"] = min(index["fails"], known)
        if e["r"] is not None:
            _drop(index["results"], e["r"])
        if "z" in e:
            index["empty"] -= 1
    elif kind == revisits.CHECKPOINT:
        if not _drop(index["checks"], e["n"]):
            index["check"] = None
    elif kind in repetition.QUERY_KINDS and not _drop(index["queries"], e["c"]):
        index["query"] = None
    _drop(index["novelty"], e["n"])


def _drop(counts: dict[str, int], key: str) -> int:
    """One ``key`` less in ``counts``; how many keys remain."""
    left = counts[key] - 1
    if left:
        counts[key] = left
    else:
        del counts[key]
    return len(counts)


def _counted(entries: list[Entry], index: Mapping[str, Any]) -> list[Entry]:
    """The entries the rules count: not those of a tool exempt when its step came (a run's
    config may change since; the entry keeps what it was)."""
    return [e for e in entries if "x" not in e] if index["exempt"] else entries


def upgrade(state: dict[str, Any]) -> dict[str, Any]:
    """A state stored by an older version (``version`` below STATE_VERSION), in place: tool
    calls' novelty keys as they are made now, each step's novelty kept rather than its
    similarity, and the index rebuilt from the entries. Entries stored before version 4 have
    no words and no empty mark: similar_call and same_result do not count them (the results
    they were sent with are gone)."""
    for e in state["entries"]:
        if e["k"] == "tool_call":
            e["n"] = novelty_key(e["c"], e["r"])
        if "s" in e:
            e["u"] = 1.0 - e.pop("s")
    state["index"] = build_index(state["entries"])
    state.setdefault("user", None)
    state.setdefault("flagged", {})
    state["version"] = STATE_VERSION
    return state


def evaluate(state: Mapping[str, Any], config: MonitorConfig,
             view: Mapping[str, Any] | None = None, signal: bool = True) -> Answer:
    """Every enabled rule over the state's segment, in RULES order: the answer for the latest
    step, recommending continue (``recommend`` decides). A rule that cannot fire (its count in
    the index, or the segment's last steps, say so) is not run. ``view``: the run's view of its
    agents' calls (run_view; the runs API's), for run_repeated_call. ``signal`` False: the
    caller reads only the findings, and a step without any answers the shared ``QUIET`` (an
    answer per step is a fifth of a step's cost)."""
    entries = state["entries"]
    index = state["index"]
    off = config.disabled_rules
    values = config.values
    findings: list[Finding] = []
    repeats = index["calls"].get(index["call"], 0)  # the latest call's copies (none: 0)
    tool_calls = None
    if repeats >= 2:  # the latest call was made before: a repeat or a cycle is possible
        tool_calls = repetition.calls(entries)
        if ("repeated_call" not in off and repeats >= config.least_repeat
                and (f := repetition.repeated_call(tool_calls, config))):
            findings.append(f)
        if ("cycle" not in off and len(tool_calls) > 3
                and (f := repetition.cycle(tool_calls, config))):
            findings.append(f)
    streak = streaks.failures(entries) if index["fails"] >= config.least_streak else None
    if streak and "error_streak" not in off and (f := streaks.error_streak(streak, config)):
        findings.append(f)
    last = entries[-1]["k"] if entries else None
    if last == "message" and "monologue" not in off and (f := streaks.monologue(entries,
                                                                                  config)):
        findings.append(f)
    stream = state["stream"]
    if (stream is not None and stream["hit"] is not None and "content_loop" not in off):
        findings.append(content.finding(stream["hit"], config))
    query = index["query"]
    if (query is not None and index["queries"][query] >= values["repeat_warn"]
            and "repeated_query" not in off
            and (f := repetition.repeated_query(entries, config))):
        findings.append(f)
    if streak and "stagnation" not in off and (f := streaks.stagnation(streak, config)):
        findings.append(f)
    if ((last == "condensation" or len(entries) > 1 and entries[-2]["k"] == "condensation")
            and "condensation_loop" not in off
            and (f := streaks.condensation_loop(entries, config))):
        findings.append(f)
    counted = _counted(entries, index)
    drift_score: float | int = embeddings.UNKNOWN
    if config.objective is not None:
        drift_score = embeddings.drift_score(counted, config)
        if (drift_score != embeddings.UNKNOWN and "drift" not in off
                and (f := embeddings.drift(counted, drift_score, config))):
            findings.append(f)
    size = config.integer("novelty_window")
    window = counted[-size:]
    score = None  # computed here only if the novelty rule may fire; else when read
    if (len(counted) >= size and "novelty" not in off
            and not (window[-1]["u"] == 1.0 and config.one_new_step_suffices)):
        score = embeddings.window_score(window)
        if f := embeddings.novelty(counted, score, config):
            findings.append(f)
    result = index["result"]
    if result is not None:  # the latest call's result: does it repeat, or carry nothing?
        shared = index["results"][result]
        if ("similar_call" not in off and (shared >= config.least_similar or index["nothing"]
                                            and index["empty"] >= config.least_similar)):
            tool_calls = tool_calls if tool_calls is not None else repetition.calls(entries)
            if f := lookalike.similar_call(tool_calls, config):
                findings.append(f)
        if "same_result" not in off and shared >= config.least_same:
            tool_calls = tool_calls if tool_calls is not None else repetition.calls(entries)
            if f := lookalike.same_result(tool_calls, config):
                findings.append(f)
    check = index["check"]
    if (check is not None and index["checks"][check] >= values["revisit_threshold"]
            and "state_revisit" not in off and (f := revisits.state_revisit(entries, config))):
        findings.append(f)
    if (view is not None and index["call"] is not None and "run_repeated_call" not in off
            and (f := run_view.run_repeated_call(view, index["call"], entries, config))):
        findings.append(f)
    if not findings and not signal:
        return QUIET
    return Answer(state["next"] - 1, findings, CONTINUE.copy(), window, drift_score,
                  config.name_tools, score, state["flagged"])


# The answer to a step without findings, for a caller that reads only the findings.
QUIET = Answer(-1, [], CONTINUE, [], embeddings.UNKNOWN, False)


def observe(state: dict[str, Any], step: Mapping[str, Any], config: MonitorConfig,
            made: Entry | None = None, view: dict[str, Any] | None = None,
            agent: str = "", signal: bool = True) -> tuple[dict[str, Any], Answer]:
    """Add one step to ``state`` (updated in place) and answer for it. ``made``: the step's
    entry if made already (agent.run_monitor makes a whole trace's first). ``view``: the run's
    view of its agents' calls, which counts this step's call as made by the agent tagged
    ``agent`` (run_view.agent_tag; the runs API's). ``signal``: as for ``evaluate``."""
    if state["version"] != STATE_VERSION:
        upgrade(state)
    index = state["next"]
    state["next"] = index + 1
    kind = step.get("kind")
    if kind == "user_message" and config.reset_on_user_message:
        said = user_key(step)
        if config.reset_on_repeated_user_message or said != state["user"]:
            reset(state)
            state.update(segmentStart=index + 1, user=said)
            return state, answer(state, config, view, signal)
        # the same message again ("continue"): a step of the segment, not a reset point
    if kind == THOUGHT:  # skipped by every rule: it breaks no run of copies
        return state, answer(state, config, view, signal)
    new = entry(step, index, config) if made is None else made
    entries = state["entries"]
    keys = state["index"]
    if "x" not in new:
        if "e" not in new:  # the index counts exactly the counted entries' novelty keys
            new["u"] = 0.0 if new["n"] in keys["novelty"] else 1.0
        else:
            new["u"] = 1.0 - embeddings.highest_similarity(new, _counted(entries, keys))
    entries.append(new)
    add(keys, new)
    history = config.values["history_size"]
    while len(entries) > history:
        remove(keys, entries.pop(0))
    if kind == content.CHUNK or state["stream"] is not None:
        content.follow(state, step, index, config)
    if view is not None and run_view.counts(new, config):
        run_view.count(view, new, agent)
    return state, answer(state, config, view, signal)


def answer(state: dict[str, Any], config: MonitorConfig,
           view: Mapping[str, Any] | None = None, signal: bool = True) -> Answer:
    """The answer for the step just observed, its recommendation counted, its findings
    flagged."""
    out = evaluate(state, config, view, signal)
    if out.findings:  # most steps have none: continue, as evaluate left it
        recommend(state, out, config)
        out.flagged = flag(state, out.findings, out.index)
    return out


def flag(state: dict[str, Any], findings: list[Finding], index: int) -> dict[str, Any]:
    """The state's ``flagged`` with ``findings``: a new object when they change it (rarely),
    so the one an earlier answer holds stays as it was at that step."""
    flagged = state["flagged"]
    changed = None
    for f in findings:
        seen = (changed or flagged).get(f.rule)
        if seen is None or f.severity == CRITICAL and seen[1] != CRITICAL:
            changed = changed or dict(flagged)
            changed[f.rule] = [index if seen is None else seen[0], f.severity]
    if changed is not None:
        state["flagged"] = changed
        return changed
    return flagged


def inspect(state: Mapping[str, Any], config: MonitorConfig,
            view: Mapping[str, Any] | None = None) -> Answer:
    """Re-inspect without a new step (GET .../signal): the rules over the state as it is, with
    the last recommendation (none counted). ``state`` and ``view`` are not changed."""
    if state["version"] != STATE_VERSION:
        state = upgrade(copy.deepcopy(dict(state)))
    answer = evaluate(state, config, view)
    if answer.findings:
        answer.recommendation = dict(state["last"] or CONTINUE)
    return answer
