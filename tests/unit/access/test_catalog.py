"""One catalog drives every list: each list kept elsewhere (errors.py, skills/thresholds.py, the
playbook files, the plans, events/, docs/, the skill modules' own code) is checked against
loopsense.platform.access.catalog here, so adding or renaming a skill in one place and not the
others fails a test (docs/adding-a-skill.md). template.yaml: tests/infra/test_template.py.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
from pathlib import Path

import pytest

from loopsense.errors import ERRORS, PLATFORM_ERRORS, SKILL_ERRORS
from loopsense.platform.access.catalog import (
    ALL_PLANS,
    PLANS,
    ROUTE_SETTINGS,
    SKILLS,
    playbook_names,
    used_by,
)
from loopsense.platform.access.plans import PLAN_NAMES, default_plan
from loopsense.platform.telemetry.failure_groups import playbook_name
from loopsense.playbooks import NAMES, playbook
from loopsense.skills.thresholds import THRESHOLDS

REPO_ROOT = Path(__file__).resolve().parents[3]
PLATFORM_FUNCTIONS = ("authorizer", "contract", "dashboard", "execute", "failure_groups",
                      "playbooks", "runs", "settings", "telemetry_ingest", "telemetry_otlp",
                      "telemetry_sweeper", "usage")


def _strings(module: str) -> set[str]:
    """Every string literal in a module's source."""
    source = Path(importlib.import_module(module).__file__ or "").read_text(encoding="utf-8")
    return {node.value for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)}


def _owned(attribute: str) -> list[str]:
    return [name for skill in SKILLS for name in getattr(skill, attribute)]


# ---- errors.py -----------------------------------------------------------------------------------
def test_every_skill_error_code_belongs_to_exactly_one_skill():
    owned = _owned("errors")
    assert len(owned) == len(set(owned)), "a code is declared by two skills"
    assert set(owned) == set(SKILL_ERRORS)
    assert not set(PLATFORM_ERRORS) & set(SKILL_ERRORS)
    assert ERRORS == {**PLATFORM_ERRORS, **SKILL_ERRORS}


@pytest.mark.parametrize("skill", SKILLS, ids=lambda s: s.key)
def test_a_skill_raises_platform_codes_and_its_own_only(skill):
    used = _strings(skill.module) & set(ERRORS)
    assert used - set(PLATFORM_ERRORS) <= set(skill.errors), f"{skill.key} uses others' codes"
    assert set(skill.errors) <= used | _strings("loopsense.skills.limits"), (
        f"{skill.key} declares codes its module never names")


# ---- skills/thresholds.py and tenant_settings --------------------------------------------------
def test_every_threshold_is_applied_by_exactly_one_skill():
    owned = _owned("thresholds")
    assert len(owned) == len(set(owned)), "a threshold is declared by two skills"
    assert set(owned).isdisjoint(ROUTE_SETTINGS), "a setting is both a skill's and a route's"
    assert set(owned) | set(ROUTE_SETTINGS) == set(THRESHOLDS)
    assert used_by("monitor_disabled") == "the runs API"
    assert used_by("revisit_threshold") == "agent.semantic_loop"
    assert used_by("similar_call_min_cluster_size") == "agent.loops similar_call"


@pytest.mark.parametrize("skill", SKILLS, ids=lambda s: s.key)
def test_a_skill_module_names_no_other_skills_threshold(skill):
    assert _strings(skill.module) & set(THRESHOLDS) <= set(skill.thresholds)


# ---- playbooks -----------------------------------------------------------------------------------
def test_the_playbook_files_are_the_catalogs_playbooks():
    files = {p.stem for p in (REPO_ROOT / "shared" / "loopsense" / "playbooks").glob("*.md")}
    assert files == set(playbook_names()) == set(NAMES)
    for name in NAMES:
        assert playbook(name)["title"]


def test_the_skills_findings_name_their_own_playbooks():
    for skill in SKILLS:
        sample = json.loads((REPO_ROOT / "events" / "samples" / f"{skill.name}.json").read_text(
            encoding="utf-8"))
        findings = skill.runner()(sample, None).get("findings", [])
        named = {f["playbook"] for f in findings if "playbook" in f}
        assert named <= set(skill.playbooks), skill.key
        if skill.playbooks and not named:  # semantic_loop: its failure groups name its playbook
            assert (playbook_name({"class": skill.name, "sub": ""}),) == skill.playbooks
        elif skill.playbooks:  # the sample shows every one
            assert named == set(skill.playbooks), skill.key
            assert {t.part for t in skill.thresholds.values()} <= set(skill.playbooks)


# ---- plans ---------------------------------------------------------------------------------------
def test_plans_are_named_once():
    assert set(PLAN_NAMES) == set(PLANS) == ALL_PLANS
    for skill in SKILLS:
        assert skill.plans <= ALL_PLANS, skill.key
    for name in PLAN_NAMES:
        plan = default_plan(name)
        assert plan is not None
        assert plan.skills == tuple(sorted(s.key for s in SKILLS if name in s.plans))
        assert plan.max_time_budget_ms == PLANS[name].max_time_budget_ms


# ---- events/ -------------------------------------------------------------------------------------
@pytest.mark.parametrize("skill", SKILLS, ids=lambda s: s.key)
def test_each_skill_has_its_event_and_sample_and_answers_them(skill):
    event = json.loads((REPO_ROOT / "events" / f"{skill.name}.json").read_text(encoding="utf-8"))
    sample = json.loads((REPO_ROOT / "events" / "samples" / f"{skill.name}.json").read_text(
        encoding="utf-8"))
    for raw in (event["input"], sample):
        assert isinstance(skill.runner()(raw, None), dict)


def test_events_are_for_skills_and_platform_functions_only():
    expected = {s.name for s in SKILLS} | set(PLATFORM_FUNCTIONS)
    assert {p.stem for p in (REPO_ROOT / "events").glob("*.json")} == expected
    assert {p.stem for p in (REPO_ROOT / "events" / "samples").glob("*.json")} == {
        s.name for s in SKILLS}
    assert {p.parent.name for p in (REPO_ROOT / "functions").glob("*/app.py")} == expected


# ---- docs/ ---------------------------------------------------------------------------------------
def test_each_skill_has_its_doc_naming_its_error_codes():
    docs = REPO_ROOT / "docs" / "skills"
    assert {p.stem for p in docs.glob("*.md")} == {s.name for s in SKILLS}
    for skill in SKILLS:
        text = (docs / f"{skill.name}.md").read_text(encoding="utf-8")
        for code in skill.errors:
            assert code in text, f"docs/skills/{skill.name}.md does not name {code}"


def test_the_readme_lists_each_skill_with_its_version_and_doc():
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `([a-z_.]+)` ([0-9.]+) \|.*\((docs/skills/[a-z_]+\.md)\) \|$",
                      readme, re.MULTILINE)
    assert sorted(rows) == sorted((s.key, s.version, f"docs/skills/{s.name}.md")
                                  for s in SKILLS)


def test_every_threshold_is_documented_in_docs_thresholds_or_its_skills_doc():
    text = (REPO_ROOT / "docs" / "thresholds.md").read_text(encoding="utf-8")
    owner = {name: skill.name for skill in SKILLS for name in skill.thresholds}
    for name in THRESHOLDS:
        doc = REPO_ROOT / "docs" / "skills" / f"{owner.get(name, '')}.md"
        assert f"`{name}`" in text or (name in owner and name in doc.read_text(
            encoding="utf-8")), name
