"""Skill agent.run_monitor v1.0.0: the run monitor over a whole trace, for callers who keep
their own state (spec/loop_safety.md). The same core as the runs API (loopsense.core.monitor):
the steps are fed one by one and the answer is the verdict after the last step, with the
timeline of the steps that raised findings (indices and rules only).

Stateless answers never carry submitted content, so rationales and nudges refer to a tool by
the step that first called it ("the tool of step 3", "this tool"), never by its name.

``config`` overrides the tenant's settings for this call: any threshold by name (bounds in
skills/thresholds.py), ``tools`` (per-tool policy), ``disabled_rules``,
``reset_on_user_message``, ``reset_on_repeated_user_message``, ``ignore_keys`` and
``objective_embedding`` (the stateless stand-in for registering an agent's objective; without
it drift is unknown, -1).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any, Literal, NotRequired

from pydantic import BaseModel, Field, FiniteFloat, StringConstraints, with_config
from typing_extensions import TypedDict

from loopsense.core.canonical import MAX_KEY_LENGTH, CanonicalError, canonical_key
from loopsense.core.monitor.config import (
    DEFAULTS,
    RULES,
    TOOL_THRESHOLDS,
    MonitorConfig,
    ToolPolicy,
)
from loopsense.core.monitor.monitor import new_state, observe
from loopsense.core.monitor.steps import (
    THOUGHT,
    entry,
    fingerprint,
    message_words,
    settle,
    words,
)
from loopsense.errors import validation_error
from loopsense.skills.limits import check_event_count, check_input_size
from loopsense.skills.thresholds import effective
from loopsense.validation import ANSWER, STRICT, validate

MIN_STEPS = 1
MAX_STEPS = 5_000
SCHEMA_MAX_STEPS = 10_001
MAX_INPUT_BYTES = 2 * 1024 * 1024
MAX_EMBEDDING = 4_096
MAX_KEYS = 64
MAX_TOOLS = 256

INVALID = "RUN_STEPS_INVALID"
LIMIT = "RUN_STEP_LIMIT_EXCEEDED"
CONFIG = "input.config"

Key = Annotated[str, StringConstraints(max_length=MAX_KEY_LENGTH)]
# A rule's name: any string passes the model (resolve_config names an unknown one); the
# document lists them.
Rule = Annotated[str, Field(json_schema_extra={"enum": list(RULES)})]
Embedding = Annotated[list[FiniteFloat], Field(min_length=1, max_length=MAX_EMBEDDING)]


@with_config(STRICT)
class Step(TypedDict):
    """Validated as plain dicts (5,000 model instances cost twice as much, benchmarks/)."""

    kind: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    agentId: NotRequired[str]
    action: NotRequired[Annotated[str, StringConstraints(min_length=1, max_length=256)]]
    args: NotRequired[Any]
    result: NotRequired[Any]
    outcome: NotRequired[Literal["positive", "negative", "neutral", "error"] | None]
    model: NotRequired[str]
    text: NotRequired[str]
    metadata: NotRequired[Any]
    embedding: NotRequired[Embedding]


@with_config(STRICT)
class ToolConfig(TypedDict):
    exempt: NotRequired[bool]
    poll: NotRequired[bool]
    repeat_warn: NotRequired[Any]  # Any: checked against the thresholds' bounds
    repeat_critical: NotRequired[Any]
    poll_warn: NotRequired[Any]
    similar_warn: NotRequired[Any]
    similar_critical: NotRequired[Any]
    same_result_warn: NotRequired[Any]
    run_repeat_warn: NotRequired[Any]
    same_result: NotRequired[bool]
    ignore_keys: NotRequired[Annotated[list[Key], Field(max_length=MAX_KEYS)]]


class Settings(BaseModel):
    """``config`` without the thresholds (checked by name, against their bounds)."""

    model_config = STRICT
    tools: dict[Annotated[str, StringConstraints(max_length=256)], ToolConfig] = Field(
        default_factory=dict, max_length=MAX_TOOLS)
    disabled_rules: list[Rule] = Field(default_factory=list, max_length=len(RULES))
    reset_on_user_message: bool = True
    reset_on_repeated_user_message: bool = False
    ignore_keys: list[Key] = Field(default_factory=list, max_length=MAX_KEYS)
    objective_embedding: Embedding | None = None


class RunMonitorInput(BaseModel):
    model_config = STRICT
    steps: list[Step] = Field(max_length=SCHEMA_MAX_STEPS)
    config: dict[str, Any] | None = None


# The answer's shapes (the monitor's signal, core/monitor/signal.py, as every answer showing it
# has it: this skill's, and the runs API's).
Severity = Literal["warning", "critical"]


@with_config(ANSWER)
class MonitorFinding(TypedDict):
    rule: Rule
    severity: Severity
    count: int
    rationale: str
    stepIndices: list[int]


@with_config(ANSWER)
class Recommendation(TypedDict):
    action: Literal["continue", "nudge", "break"]
    nudge: NotRequired[str]  # what to tell the agent (nudge and break)


@with_config(ANSWER)
class Flagged(TypedDict):
    step: int
    severity: Severity


@with_config(ANSWER)
class SignalSummary(TypedDict):
    """The signal without its findings and recommendation (a listing of runs shows it)."""

    is_looping: bool
    is_stuck: bool
    is_drifting: bool
    is_novelty_starved: bool
    loop_score: float
    drift_score: float
    novelty_score: float
    confidence: float
    source: Literal["rule"]
    rationale: str
    first_flagged: int | None
    ever_flagged: dict[Rule, Flagged]


@with_config(ANSWER)
class Signal(SignalSummary):
    findings: list[MonitorFinding]
    recommendation: Recommendation


@with_config(ANSWER)
class TimelineFinding(TypedDict):
    rule: Rule
    severity: Severity
    stepIndices: list[int]


@with_config(ANSWER)
class TimelineEntry(TypedDict):
    index: int
    findings: list[TimelineFinding]
    action: Literal["continue", "nudge", "break"]


@with_config(ANSWER)
class RunMonitorOutput(Signal):
    steps: int
    segmentStart: int
    timeline: list[TimelineEntry]


SETTINGS = tuple(Settings.model_fields)
CONFIG_NAMES = (*DEFAULTS, *SETTINGS)


def resolve_config(raw: Mapping[str, Any] | None, tenant: Mapping[str, Any] | None,
                   where: str = CONFIG) -> MonitorConfig:
    """``config`` (at ``where``: the runs API checks a run's config the same way) over the
    tenant's settings, or VALIDATION_ERROR naming the field and its bounds."""
    raw = raw or {}
    if any(name not in CONFIG_NAMES for name in raw):
        # Never echo the caller's unknown name: list the known ones.
        raise validation_error(where, "names something that is not a setting "
                                       f"({', '.join(CONFIG_NAMES)})")
    thresholds = {name: effective(name, raw, tenant, where) for name in DEFAULTS}
    settings = validate(Settings, {k: v for k, v in raw.items() if k in SETTINGS}, where,
                        {"tools": "<tool>"})
    unknown_rules = [r for r in settings.disabled_rules if r not in RULES]
    if unknown_rules:
        raise validation_error(f"{where}.disabled_rules",
                               f"must name rules among {', '.join(RULES)}")
    tools = {}
    for name, policy in settings.tools.items():
        own = {t: effective(t, policy, None, f"{where}.tools.<tool>") for t in TOOL_THRESHOLDS
               if t in policy}
        tools[name] = ToolPolicy(
            exempt=policy.get("exempt", False), poll=policy.get("poll", False), thresholds=own,
            same_result=policy.get("same_result", False),
            ignore_keys=frozenset(canonical_key(k) for k in policy.get("ignore_keys", ())))
    objective = settings.objective_embedding
    return MonitorConfig(
        thresholds=thresholds, tools=tools, disabled_rules=frozenset(settings.disabled_rules),
        reset_on_user_message=settings.reset_on_user_message,
        reset_on_repeated_user_message=settings.reset_on_repeated_user_message,
        ignore_keys=frozenset(canonical_key(k) for k in settings.ignore_keys),
        objective=tuple(objective) if objective else None, name_tools=False)


def parse(raw: Any, tenant: Mapping[str, Any] | None = None
          ) -> tuple[RunMonitorInput, MonitorConfig]:
    check_input_size(raw, MAX_INPUT_BYTES, LIMIT)
    check_event_count(raw, MAX_STEPS, LIMIT, "steps")
    parsed = validate(RunMonitorInput, raw)
    steps = parsed.steps
    if len(steps) < MIN_STEPS:
        raise validation_error("input.steps", f"must have at least {MIN_STEPS} step", INVALID)
    config = resolve_config(parsed.config, tenant)
    agents = set()
    dimensions = {len(config.objective)} if config.objective else set()
    for index, step in enumerate(steps):
        if step["kind"] == "tool_call" and "action" not in step:
            raise validation_error(f"input.steps.{index}.action",
                                   "is required for a tool_call", INVALID)
        if "agentId" in step:
            agents.add(step["agentId"])
        if "embedding" in step:
            dimensions.add(len(step["embedding"]))
    if len(agents) > 1:
        raise validation_error("input.steps", "must all be of one agent (one agentId)", INVALID)
    if len(dimensions) > 1:
        raise validation_error("input.steps", "embeddings (and objective_embedding) must all "
                                              "have the same length", INVALID)
    if config.objective and not math.fsum(v * v for v in config.objective):
        raise validation_error(f"{CONFIG}.objective_embedding", "must not be all zeros")
    return parsed, config


def entries(steps: list[Step], config: MonitorConfig) -> list[dict[str, Any] | None]:
    """Every step's entry (none for thoughts) before any is observed: this skill has the whole
    trace, so a result is digested only if some rule may compare it (its call is made more than
    once in the trace; or another call of its tool may have an equal result, by the results'
    fingerprints, and similar_call is on, or same_result is on and it failed or its tool's
    policy says so; or it carries nothing and similar_call is on), and a call's argument
    words are kept only if similar_call may compare them: its result carries nothing, or another
    call of its tool with other arguments got the same result; a message's words only if it is
    next to another message (a run monologue may compare). The answers are the runs API's,
    which keeps everything (tests/integration/test_runs_match_the_skill.py). A step without a
    canonical form is a VALIDATION_ERROR."""
    # Counted as each entry is made (while it is in the cache): one pass over the trace, one
    # over its tool calls to digest and drop results, one over the calls whose words may count.
    made: list[dict[str, Any] | None] = []
    tool_calls = []
    texts = []  # each call's argument text
    prints = []  # each call's (tool, result fingerprint)
    calls: dict[str, int] = {}
    groups: dict[tuple[Any, Any], int] = {}
    before = None  # the entry before (thoughts are skipped by every rule)
    for index, step in enumerate(steps):
        if step["kind"] == THOUGHT:
            made.append(None)
            continue
        try:
            e = entry(step, index, config, later=True)
        except CanonicalError as exc:
            raise validation_error(f"input.steps.{index}", exc.issue) from None
        made.append(e)
        kind = e["k"]
        if kind == "tool_call":
            tool_calls.append(e)
            texts.append(e.pop("w"))
            key = e["c"]
            calls[key] = calls.get(key, 0) + 1
            # Across arguments a result is compared only with an equal one of the same tool
            # (or, by similar_call, with any other that carries nothing): one alone in its
            # (tool, form) group needs no digest. A form without a cheap fingerprint is always
            # digested.
            pending = e.get("f")
            group = (e["a"], fingerprint(pending[0] if pending is not None else None))
            prints.append(group)
            if group[1] is not None:
                groups[group] = groups.get(group, 0) + 1
        # A message's words only if it is next to another (monologue compares a run's).
        if before is not None and before["k"] == "message" and "w" in before:
            if kind == "message":
                before["t"] = message_words(before.pop("w"))
            else:
                del before["w"]
        if kind == "message" and before is not None and before["k"] == "message":
            e["t"] = message_words(e.pop("w"))
        before = e
    if before is not None and "w" in before and before["k"] == "message":
        del before["w"]
    similar, same = config.on("similar_call"), config.on("same_result")
    answered: dict[tuple[str, str], set[str]] = {}  # the arguments each (tool, result) got
    kept = []  # the calls similar_call may compare, and their texts
    for e, group, text in zip(tool_calls, prints, texts, strict=True):
        across = group[1] is None or groups[group] > 1
        compared = calls[e["c"]] > 1 or similar and ("z" in e or across) or same and across and (
            "z" in e or e["o"] == "neg" or config.policy(e["a"]).same_result)
        try:
            settle(e, compared)
        except CanonicalError as exc:
            raise validation_error(f"input.steps.{e['i']}", exc.issue) from None
        if similar and e["r"] is not None:  # a call that carries nothing is compared
            answered.setdefault((e["a"], e["r"]), set()).add(e["c"])
            kept.append((e, text))
    for e, text in kept:
        if "z" in e or len(answered[(e["a"], e["r"])]) > 1:
            e["t"] = words(text)
    return made


def run(raw: Any, tenant_thresholds: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Validate ``input``, feed its steps to the monitor; the verdict after the last step and
    the timeline. Thresholds: ``config`` > the tenant's setting > the default."""
    parsed, config = parse(raw, tenant_thresholds)
    made = entries(parsed.steps, config)
    state = new_state()
    timeline = []
    answer = None
    final = len(parsed.steps) - 1  # the one step whose whole signal is read
    for index, step in enumerate(parsed.steps):
        state, answer = observe(state, step, config, made[index], signal=index == final)
        if answer.findings:
            timeline.append({"index": index,
                             "findings": [{"rule": f.rule, "severity": f.severity,
                                           "stepIndices": f.indices}
                                          for f in answer.findings],
                             "action": answer.recommendation["action"]})
    assert answer is not None  # at least one step
    return {"steps": len(parsed.steps), "segmentStart": state["segmentStart"],
            **answer.signal(), "timeline": timeline}
