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
from loopsense.errors import validation_error


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
class Skill:
    key: str  # "agent.<name>": functions/<name>/, events/<name>.json, docs/skills/<name>.md
    version: str
    cost: int  # credits per successful call
    plans: frozenset[str]
    function: str  # the function's logical id in template.yaml
    module: str  # loopsense.skills.<name>, with run(input, tenant_thresholds) -> output
    timeout_ms: int = 10_000
    # The error codes only this skill answers with (each defined in errors.ERRORS).
    errors: tuple[str, ...] = ()
    # The thresholds it applies (each defined in skills.thresholds.THRESHOLDS) -> the part of
    # the skill that uses it ("" for the whole skill), shown as `used_by`.
    thresholds: Mapping[str, str] = field(default_factory=dict)
    # The playbooks its findings (or its failure groups) name (shared/loopsense/playbooks/).
    playbooks: tuple[str, ...] = ()

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
        errors=("LOOP_EVENTS_INVALID", "LOOP_EVENT_LIMIT_EXCEEDED"),
    ),
    Skill(
        key="agent.semantic_loop",
        version="1.0.0",
        cost=1,
        plans=ALL_PLANS,
        function="SemanticLoopFunction",
        module="loopsense.skills.semantic_loop",
        errors=("SEMANTIC_LOOP_EVENT_LIMIT_EXCEEDED",),
        thresholds={"revisit_threshold": ""},
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
        errors=("LOOPS_EVENT_LIMIT_EXCEEDED",),
        thresholds={
            "step_count_threshold": "step_count",
            "identical_call_min_repeats": "identical_call",
            "similar_call_distance_threshold": "similar_call",
            "similar_call_min_cluster_size": "similar_call",
            "time_budget_ms": "time_budget",
        },
        playbooks=("identical_call", "similar_call", "step_count", "time_budget"),
    ),
    Skill(
        key="agent.run_monitor",
        version="1.0.0",
        cost=1,
        plans=frozenset({"team", "enterprise"}),
        function="RunMonitorFunction",
        module="loopsense.skills.run_monitor",
        errors=("RUN_STEPS_INVALID", "RUN_STEP_LIMIT_EXCEEDED"),
        # The rules' thresholds are defined with the rules (core/monitor/config.py).
        thresholds={name: "" for name, *_ in MONITOR_THRESHOLDS},
    ),
)

CATALOG: dict[str, Skill] = {s.key: s for s in SKILLS}

# Tenant settings that belong to a route rather than a skill -> the route that applies them.
ROUTE_SETTINGS: dict[str, str] = {
    "run_retention_days": "the runs API",
    "monitor_disabled": "the runs API",
}


def used_by(threshold: str) -> str:
    """Which skill (and which part of it) applies a threshold: GET /v1/detector-thresholds."""
    for skill in SKILLS:
        if threshold in skill.thresholds:
            return f"{skill.key} {skill.thresholds[threshold]}".strip()
    return ROUTE_SETTINGS[threshold]


# Failure classes of streaming telemetry that no skill reports have a playbook too.
TELEMETRY_PLAYBOOKS = ("tool_calls",)


def playbook_names() -> tuple[str, ...]:
    """Every playbook a skill's findings or a failure group may name, sorted."""
    return tuple(sorted({name for skill in SKILLS for name in skill.playbooks}
                        | set(TELEMETRY_PLAYBOOKS)))


def register(skill: Skill) -> None:
    """Add a skill at run time: only the local server's --test-skills uses this."""
    CATALOG[skill.key] = skill


def find_skill(key: str, version: str | None = None) -> Skill:
    skill = CATALOG.get(key)
    if skill is None:
        raise validation_error("skillKey", "names no skill", "SKILL_NOT_FOUND")
    if version is not None and version != skill.version:
        raise validation_error("version", f"is not a version of this skill ({skill.version})",
                               "SKILL_NOT_FOUND")
    return skill
