"""The rules of the house (docs/architecture.md, "What may import what"), checked on every import
of the layer, the functions and the local tooling, lazy ones inside functions included.

- core/ imports nothing of the project but core/.
- errors, jsonio, validation, settings, observability (the base) import only core/ and the base.
- skills/ import core/, the base and the catalog (platform/access/catalog.py), never the store.
- store/ imports core/, the base and store/.
- platform/http/ and platform/access/ (shared by every feature) import no feature.
- a feature (every other folder of platform/: execute, runs, telemetry ...) imports no other
  feature;
  platform/wiring.py, which builds each Lambda's objects, may import them all.
- the layer (shared/) never imports the local tooling (loopsense_local) or the tests.
- functions/<name>/app.py import the layer only.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BASE = ("errors", "jsonio", "validation", "settings", "observability")
CATALOG = "loopsense.platform.access.catalog"


@cache
def _modules() -> dict[str, str]:
    """Every module of the layer, the local tooling and the functions -> its source."""
    found: dict[str, str] = {}
    for top, base in (("loopsense", ROOT / "shared"), ("loopsense_local", ROOT / "local")):
        for path in sorted((base / top).rglob("*.py")):
            parts = path.relative_to(base).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path.read_text(encoding="utf-8")
    for path in sorted((ROOT / "functions").glob("*/app.py")):
        found[f"functions.{path.parent.name}"] = path.read_text(encoding="utf-8")
    return found


@cache
def imports(source: str, known: frozenset[str]) -> frozenset[str]:
    """The project modules a source imports (``from a.b import c`` is a.b.c when c is one)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            subs = {f"{node.module}.{a.name}" for a in node.names} & known
            out.update(subs or {node.module})
    return frozenset(m for m in out if m.split(".")[0] in ("loopsense", "loopsense_local", "tests"))


def _part(module: str) -> tuple[str, ...]:
    """Where a module stands: ("core",), ("base",), ("feature", "runs"), ("wiring",) ..."""
    parts = module.split(".")
    if parts[0] != "loopsense":
        return (parts[0],)
    if len(parts) == 1 or parts[1] in BASE:
        return ("base",)
    if parts[1] in ("core", "skills", "store", "playbooks"):
        return (parts[1],)
    if parts[1] == "platform":
        if len(parts) == 2 or parts[2] == "wiring":
            return ("wiring",)
        if parts[2] in ("http", "access"):
            return ("shared",)
        return ("feature", parts[2])  # every other folder of platform/ is a feature
    return ("other",)


def allowed(importer: str, imported: str) -> bool:
    me, it = _part(importer), _part(imported)
    if it[0] in ("loopsense_local", "tests"):
        return me[0] in ("loopsense_local", "tests")
    if me[0] in ("loopsense_local", "tests", "functions", "wiring"):
        return True
    if me[0] == "core":
        return it[0] == "core"
    if me[0] == "base":
        return it[0] in ("core", "base")
    if me[0] in ("skills", "playbooks"):
        return it[0] in ("core", "base", me[0]) or imported == CATALOG
    if me[0] == "store":
        return it[0] in ("core", "base", "store")
    if me[0] == "shared":
        return it[0] in ("core", "base", "skills", "store", "playbooks", "shared")
    if me[0] == "feature":
        return it[0] in ("core", "base", "skills", "store", "playbooks", "shared") or it == me
    return False


def violations(modules: dict[str, str]) -> list[str]:
    known = frozenset(modules)
    return sorted(f"{name} imports {target}" for name, source in modules.items()
                  for target in imports(source, known) if not allowed(name, target))


def test_every_import_of_the_project_keeps_the_rules_of_the_house():
    modules = _modules()
    assert "loopsense.platform.runs.monitor" in modules and "functions.execute" in modules
    assert violations(modules) == []


@pytest.mark.parametrize(("module", "source"), [
    ("loopsense.core.cycles", "from loopsense.errors import LoopsenseError"),
    ("loopsense.core.monitor.steps", "import loopsense.platform.wiring"),
    ("loopsense.platform.runs.monitor", "from loopsense.platform.telemetry.ingest import x"),
    ("loopsense.platform.telemetry.routes", "from loopsense.platform.settings import service"),
    ("loopsense.platform.access.gate", "from loopsense.platform.runs.monitor import Runs"),
    ("loopsense.platform.http.answer", "def f():\n    from loopsense.platform.execute import x"),
    ("loopsense.store.accounts", "from loopsense.platform.access.plans import find_plan"),
    ("loopsense.skills.loops", "from loopsense.store.dynamo import Dynamo"),
    ("loopsense.platform.wiring", "from loopsense_local.serve import serve"),
    ("functions.execute", "from loopsense_local.gateway import Gateway"),
])
def test_an_import_that_breaks_a_rule_is_named(module, source):
    modules = {**_modules(), module: source}
    assert [v for v in violations(modules) if v.startswith(f"{module} ")], source


def test_what_the_rules_allow_is_not_named():
    modules = {**_modules(),
               "loopsense.platform.runs.recover": "from loopsense.platform.runs.store import x\n"
                                                  "from loopsense.platform.access.gate import y",
               "loopsense.platform.wiring": "from loopsense.platform.telemetry import otlp"}
    assert violations(modules) == []


def test_every_path_of_the_layer_the_docs_name_exists():
    """A module moved or renamed takes its docs' paths with it (README, docs/, SDK READMEs)."""
    pattern = re.compile(
        r"(?<![\w/])(?:shared/loopsense/)?((?:platform|store|core|skills)/[a-z_/]+\.py)")
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")),
            *sorted((ROOT / "sdk").glob("*/README.md"))]
    named = {(doc.name, path) for doc in docs
             for path in pattern.findall(doc.read_text(encoding="utf-8"))}
    assert len(named) > 10
    assert sorted(n for n in named if not (ROOT / "shared" / "loopsense" / n[1]).is_file()) == []
