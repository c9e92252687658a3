"""docs/faults.md names real tests: each `tests/...py::test_name` of its table is defined."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
TEST_REF = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")


def test_every_test_the_fault_table_names_exists() -> None:
    text = (REPO_ROOT / "docs" / "faults.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| ") and "::" in line]
    assert len(rows) >= 15
    for row in rows:
        refs = TEST_REF.findall(row)
        assert refs, f"a row names no test: {row[:60]}"
        for path, name in refs:
            tree = ast.parse((REPO_ROOT / path).read_text())
            defined = {node.name for node in ast.walk(tree)
                       if isinstance(node, ast.FunctionDef)}
            assert name in defined, f"{path} has no {name}"
