"""docs/adding-a-skill.md holds: a throw-away skill added through its steps only, in a copy of
the repository, passes the catalog, derived-template, template and SDK drift tests there.

The copy is the files git tracks (or would), as they are in the working tree. The steps are the
doc's: six files by hand (the doc's table names them), the SDK's execute overload and error
classes, then `python -m loopsense_local.derive` and scripts/openapi's generators (the document,
the SDKs' types). The drift tests run in a subprocess on the copy (its code first on the
path), without cfn-lint, `sam validate` and `sam build` (tests/infra runs those on the real tree;
they take most of its time).
"""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "adding-a-skill.md"

SKILL = '''"""agent.tally: how many items a call sends (a throw-away skill of tests/infra)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

from loopsense.skills.limits import check_input_size
from loopsense.skills.thresholds import effective
from loopsense.validation import STRICT, validate


class TallyInput(BaseModel):
    model_config = STRICT
    items: list[str] = Field(max_length=100)


class TallyOutput(BaseModel):
    count: int
    over: bool


def run(raw: Any, tenant_thresholds: Mapping[str, Any] | None = None) -> dict[str, Any]:
    check_input_size(raw, 10_000, "TALLY_INPUT_TOO_LARGE")
    parsed = validate(TallyInput, raw)
    limit = effective("tally_limit", None, tenant_thresholds)
    return TallyOutput(count=len(parsed.items), over=len(parsed.items) > limit).model_dump()
'''

ENTRY = '''    Skill(
        key="agent.tally",
        version="1.0.0",
        cost=1,
        plans=ALL_PLANS,
        function="TallyFunction",
        module="loopsense.skills.tally",
        summary="how many items a call sends",
        errors={"TALLY_INPUT_TOO_LARGE": ErrorKind(429, False, "send at most 10,000 bytes")},
        thresholds=thresholds(Threshold("tally_limit", 5, 1, 100)),
    ),
'''

APP = '''"""Lambda for agent.tally: wiring only (see loopsense.platform.execute.skill_handler)."""

from loopsense.platform.access.catalog import CATALOG
from loopsense.platform.execute.skill_handler import skill_lambda_handler

SKILL = CATALOG["agent.tally"]
lambda_handler = skill_lambda_handler(SKILL)
'''

PY_OVERLOAD = '''    @overload
    def execute(self, skill_key: Literal["agent.tally"], input: TallyInput, *,
                version: str | None = None, idempotency_key: str | None = None,
                ) -> ExecuteResponse[TallyOutput]: ...

'''

def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, (path, old)
    path.write_text(text.replace(old, new), encoding="utf-8")


def _copy(to: Path) -> None:
    tracked = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], cwd=ROOT, capture_output=True,
                             check=True).stdout.decode().split("\0")
    for name in filter(None, tracked):
        source = ROOT / name
        if source.is_file():
            (to / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, to / name)


def _add_the_skill(repo: Path) -> None:
    # 1-6: the doc's table
    (repo / "shared/loopsense/skills/tally.py").write_text(SKILL, encoding="utf-8")
    end = "\n)\n\nCATALOG: dict[str, Skill]"
    _edit(repo / "shared/loopsense/platform/access/catalog.py", end, "\n" + ENTRY.rstrip() + end)
    (repo / "functions/tally").mkdir()
    (repo / "functions/tally/app.py").write_text(APP, encoding="utf-8")
    (repo / "events/tally.json").write_text(
        '{"requestId": "tally-1", "input": {"items": ["a", "b"]}}\n', encoding="utf-8")
    (repo / "events/samples/tally.json").write_text('{"items": ["a", "b", "c"]}\n',
                                                    encoding="utf-8")
    (repo / "docs/skills/tally.md").write_text(
        "# agent.tally\n\nCounts `items`; `over` when more than `tally_limit` (5).\n\n"
        "Errors: TALLY_INPUT_TOO_LARGE (429) past 10,000 bytes.\n", encoding="utf-8")
    # the SDKs' types are generated (scripts/openapi, after derive); by hand: the overload
    client = repo / "sdk/python/src/loopsense_sdk/client.py"
    _edit(client, "    SkillKey,\n", "    SkillKey,\n    TallyInput,\n    TallyOutput,\n")
    _edit(client, "    def execute(self, skill_key: SkillKey,",
          PY_OVERLOAD + "    def execute(self, skill_key: SkillKey,")
    # its error code, in the class of the SDKs' other limit codes
    _edit(repo / "sdk/python/src/loopsense_sdk/errors.py",
          '    "LOOPS_EVENT_LIMIT_EXCEEDED": EventLimitExceededError,\n',
          '    "LOOPS_EVENT_LIMIT_EXCEEDED": EventLimitExceededError,\n'
          '    "TALLY_INPUT_TOO_LARGE": EventLimitExceededError,\n')
    _edit(repo / "sdk/typescript/src/errors.ts",
          "  LOOPS_EVENT_LIMIT_EXCEEDED: EventLimitExceededError,\n",
          "  LOOPS_EVENT_LIMIT_EXCEEDED: EventLimitExceededError,\n"
          "  TALLY_INPUT_TOO_LARGE: EventLimitExceededError,\n")


def _changed(copy: Path) -> set[str]:
    changed = set()
    for path in copy.rglob("*"):
        name = path.relative_to(copy).as_posix()
        if path.is_file() and "__pycache__" not in name and (
                not (ROOT / name).is_file() or not filecmp.cmp(ROOT / name, path, shallow=False)):
            changed.add(name)
    return changed


def test_a_skill_added_by_the_documented_steps_passes_the_drift_tests(tmp_path):
    repo = tmp_path / "repo"
    _copy(repo)
    _add_the_skill(repo)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        str(repo / p) for p in ("shared", "local", "sdk/python/src", "."))}
    derive = subprocess.run([sys.executable, "-m", "loopsense_local.derive", "--root", str(repo)],
                            cwd=repo, env=env, capture_output=True, text=True, timeout=60)
    assert derive.returncode == 0, derive.stderr
    for generator in ("loopsense_local.openapi", "loopsense_local.sdk_types"):  # scripts/openapi
        made = subprocess.run([sys.executable, "-m", generator], cwd=repo, env=env,
                              capture_output=True, text=True, timeout=120)
        assert made.returncode == 0, made.stderr
    by_hand = _changed(repo) - {"template.yaml", "README.md",  # derived, generated
                                "shared/loopsense/platform/contract/openapi.json"}
    sdk = {n for n in by_hand if n.startswith("sdk/")}
    assert len(by_hand - sdk) <= 6 and "shared/loopsense/skills/tally.py" in by_hand
    table = DOC.read_text(encoding="utf-8")
    for name in by_hand - sdk:
        assert f"`{name.replace('tally', '<name>')}`" in table, name  # the doc names each
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x",
         "tests/unit/access/test_catalog.py", "tests/infra/test_derived.py",
         "tests/infra/test_template.py", "tests/sdk/test_sdk_matches_catalog.py",
         "tests/sdk/test_sdk_types.py",
         "tests/unit/test_openapi.py::test_the_committed_document_is_what_the_code_builds",
         "--deselect", "tests/infra/test_template.py::test_cfn_lint_reports_nothing",
         "--deselect", "tests/infra/test_template.py::test_sam_validate_lint_passes",
         "--deselect", "tests/infra/test_template.py::"
                       "test_sam_build_layer_has_loopsense_and_a_lambda_compatible_numpy"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "agent.tally" in (repo / "README.md").read_text(encoding="utf-8")
    assert "TallyFunction" in (repo / "template.yaml").read_text(encoding="utf-8")
