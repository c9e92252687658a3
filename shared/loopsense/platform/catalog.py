"""The one catalog of skills: the single source of truth for the router, the CLI, the template
test and the docs. Skill modules are imported only when a skill runs (numpy costs cold start).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from loopsense.errors import validation_error

ALL_PLANS = frozenset({"hobby", "team", "enterprise"})


@dataclass(frozen=True, slots=True)
class Skill:
    key: str
    version: str
    cost: int  # credits per successful call
    plans: frozenset[str]
    function: str  # the function's logical id in template.yaml
    module: str  # loopsense.skills.<name>, with run(input, tenant_thresholds) -> output
    timeout_ms: int = 10_000

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
    ),
    Skill(
        key="agent.semantic_loop",
        version="1.0.0",
        cost=1,
        plans=ALL_PLANS,
        function="SemanticLoopFunction",
        module="loopsense.skills.semantic_loop",
    ),
    Skill(
        key="agent.loops",
        version="1.0.0",
        cost=1,
        plans=ALL_PLANS,
        function="LoopsFunction",
        module="loopsense.skills.loops",
    ),
    Skill(
        key="agent.run_monitor",
        version="1.0.0",
        cost=1,
        plans=frozenset({"team", "enterprise"}),
        function="RunMonitorFunction",
        module="loopsense.skills.run_monitor",
    ),
)

CATALOG: dict[str, Skill] = {s.key: s for s in SKILLS}


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
