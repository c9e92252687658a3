"""The one catalog: every skill and every plan. The single source of truth for the router, the
plans, the thresholds' and playbooks' owners, the CLI, and the tests that check template.yaml,
errors.py, skills/thresholds.py, events/ and docs/ against it (docs/adding-a-skill.md).
Skill modules are imported only when a skill runs (numpy costs cold start).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from loopsense.core.monitor.config import THRESHOLD_SPECS as MONITOR_THRESHOLDS
from loopsense.errors import ErrorKind, declare, validation_error


@dataclass(frozen=True, slots=True)
class PlanDefaults:
    """A plan as the spec sets it, until an operator stores a row of that name (platform.plans)."""

    credits_per_month: int
    requests_per_second: int
    max_time_budget_ms: int


PLANS: dict[str, PlanDefaults] = {
    "hobby": PlanDefaults(1_000, 5, 600_000),
    "team": PlanDefaults(100_000, 50, 3_600_000),
    "enterprise": PlanDefaults(10_000_000, 500, 86_400_000),
}
ALL_PLANS = frozenset(PLANS)


@dataclass(frozen=True, slots=True)
class Threshold:
    """A tenant-settable threshold (spec/thresholds.md): its default and bounds, declared with
    the skill that applies it (or the route that does: ROUTE_SETTINGS)."""

    name: str
    default: int | float
    low: int | float
    high: int | float  # time_budget_ms: the largest plan cap; the tenant's own cap is the plan's
    part: str = ""  # the part of the skill that applies it ("": the whole skill), or the route

    @property
    def kind(self) -> type:
        if isinstance(self.default, bool):
            return bool
        return float if isinstance(self.default, float) else int


def thresholds(*specs: Threshold) -> dict[str, Threshold]:
    return {spec.name: spec for spec in specs}


@dataclass(frozen=True, slots=True)
class Skill:
    key: str  # "agent.<name>": functions/<name>/, events/<name>.json, docs/skills/<name>.md
    version: str
    cost: int  # credits per successful call
    plans: frozenset[str]
    function: str  # the function's logical id in template.yaml
    module: str  # loopsense.skills.<name>, with run(input, tenant_thresholds) -> output
    timeout_ms: int = 10_000
    # README's skills table: what it finds (loopsense_local.derive writes the row).
    summary: str = ""
    # Its function's memory (None: the template's 512 MB) and environment (template.yaml).
    memory_mb: int | None = None
    environment: Mapping[str, str] = field(default_factory=dict)
    # The error codes only this skill answers with: status, retryable, next (declared in
    # errors.ERRORS when the catalog is imported).
    errors: Mapping[str, ErrorKind] = field(default_factory=dict)
    # The thresholds it applies, by name (skills.thresholds.THRESHOLDS gathers them); each
    # one's ``part`` is shown as `used_by` by GET /v1/detector-thresholds.
    thresholds: Mapping[str, Threshold] = field(default_factory=dict)
    # The playbooks its findings (or its failure groups) name (shared/loopsense/playbooks/).
    playbooks: tuple[str, ...] = ()
    # The input field a file input (fileRef, platform/execute/files.py) stands in for.
    items: str = "events"

    @property
    def name(self) -> str:
        return self.key.split(".", 1)[1]

    def runner(self) -> Callable[[Any, Mapping[str, Any] | None], dict[str, Any]]:
        return importlib.import_module(self.module).run  # type: ignore[no-any-return]


SKILLS: tuple[Skill, ...] = (
    Skill(
        key="agent.loop_detect",
        version="1.0.0",
        cost=1,
        plans=ALL_PLANS,
        function="LoopDetectFunction",
        module="loopsense.skills.loop_detect",
        summary="the earliest block of actions repeated back to back",
        errors={
            "LOOP_EVENTS_INVALID": ErrorKind(400, False, "send two or more events"),
            "LOOP_EVENT_LIMIT_EXCEEDED": ErrorKind(
                429, False, "window the trace (send at most 5,000 events)"
            ),
        },
    ),
    Skill(
        key="agent.semantic_loop",
        version="1.0.0",
        cost=1,
        plans=ALL_PLANS,
        function="SemanticLoopFunction",
        module="loopsense.skills.semantic_loop",
        summary=("the same checkpointed state revisited (canonical form + SHA-256, case, "
                 "whitespace and key order ignored)"),
        errors={
            "SEMANTIC_LOOP_EVENT_LIMIT_EXCEEDED": ErrorKind(
                429, False, "send at most 5,000 events and 2 MiB per call (drop other event types "
                            "first)"
            ),
        },
        thresholds=thresholds(Threshold("revisit_threshold", 3, 2, 1000)),
        # Its findings name none: its failure groups do (platform/telemetry/failure_groups.py).
        playbooks=("semantic_loop",),
    ),
    Skill(
        key="agent.loops",
        version="1.0.0",
        cost=1,
        plans=ALL_PLANS,
        function="LoopsFunction",
        module="loopsense.skills.loops",
        # It clusters up to 10,000 messages (a blocked float32 Gram matrix): CPU-bound, so it
        # gets one full vCPU (1,769 MB) and single-threaded BLAS (no spinning helper thread
        # competing with the one it has). See docs/benchmarks.md.
        memory_mb=1769,
        environment={"OPENBLAS_NUM_THREADS": "1"},
        summary=("too many steps, the same or nearly the same LLM call again, an execution over "
                 "its time budget; each finding names its playbook"),
        errors={
            "LOOPS_EVENT_LIMIT_EXCEEDED": ErrorKind(
                429, False, "send at most 10,000 events and 5 MiB per call (split the execution)"
            ),
        },
        thresholds=thresholds(
            Threshold("step_count_threshold", 10, 2, 10_000, "step_count"),
            Threshold("identical_call_min_repeats", 3, 2, 100, "identical_call"),
            Threshold("similar_call_distance_threshold", 0.20, 0.05, 0.50, "similar_call"),
            Threshold("similar_call_min_cluster_size", 3, 2, 100, "similar_call"),
            Threshold("time_budget_ms", 60_000, 1_000, 86_400_000, "time_budget"),
        ),
        playbooks=("identical_call", "similar_call", "step_count", "time_budget"),
    ),
    Skill(
        key="agent.run_monitor",
        version="1.0.0",
        cost=1,
        plans=frozenset({"team", "enterprise"}),
        function="RunMonitorFunction",
        module="loopsense.skills.run_monitor",
        items="steps",
        summary=("team and enterprise plans: the run monitor over a whole trace: repeated calls "
                 "(polling-aware), cycles, error streaks, monologues, streamed text loops, "
                 "repeated queries, condensation loops, drift, no novelty; recommends continue, "
                 "nudge or break"),
        errors={
            "RUN_STEPS_INVALID": ErrorKind(
                400, False, "send 1 to 5,000 steps of one agent, each with a kind (a tool_call "
                            "needs an action), embeddings of one length"
            ),
            "RUN_STEP_LIMIT_EXCEEDED": ErrorKind(
                429, False, "send at most 5,000 steps and 2 MiB per call (or use the runs API)"
            ),
        },
        # The rules' thresholds are defined with the rules (core/monitor/config.py).
        thresholds=thresholds(*(Threshold(*spec) for spec in MONITOR_THRESHOLDS
                                if spec[0] != "revisit_threshold")),  # semantic_loop's, shared
    ),
)

CATALOG: dict[str, Skill] = {s.key: s for s in SKILLS}
for _skill in SKILLS:
    declare(dict(_skill.errors))

# Tenant settings that belong to a route rather than a skill (``part``: the route): how long a
# run's state lives after its last write, and the tenant's off switch for the run monitor.
ROUTE_SETTINGS: dict[str, Threshold] = thresholds(
    Threshold("run_retention_days", 14, 1, 365, "the runs API"),
    Threshold("monitor_disabled", False, False, True, "the runs API"),
)


def used_by(threshold: str) -> str:
    """Which skill (and which part of it) applies a threshold: GET /v1/detector-thresholds."""
    for skill in SKILLS:
        if threshold in skill.thresholds:
            return f"{skill.key} {skill.thresholds[threshold].part}".strip()
    return ROUTE_SETTINGS[threshold].part


# Failure classes of streaming telemetry that no skill reports have a playbook too.
TELEMETRY_PLAYBOOKS = ("tool_calls",)


def playbook_names() -> tuple[str, ...]:
    """Every playbook a skill's findings or a failure group may name, sorted."""
    return tuple(sorted({name for skill in SKILLS for name in skill.playbooks}
                        | set(TELEMETRY_PLAYBOOKS)))


def register(skill: Skill) -> None:
    """Add a skill at run time: only the local server's --test-skills uses this."""
    declare(dict(skill.errors))
    CATALOG[skill.key] = skill


def find_skill(key: str, version: str | None = None) -> Skill:
    skill = CATALOG.get(key)
    if skill is None:
        raise validation_error("skillKey", "names no skill", "SKILL_NOT_FOUND")
    if version is not None and version != skill.version:
        raise validation_error("version", f"is not a version of this skill ({skill.version})",
                               "SKILL_NOT_FOUND")
    return skill
