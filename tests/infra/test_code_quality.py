"""ruff and mypy, as configured in pyproject.toml, report nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600,
                          check=False)


def test_ruff_is_clean():
    done = run(str(BIN / "ruff"), "check", "shared", "local", "functions", "tests", "benchmarks",
               "sdk/python")
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_is_clean():
    done = run(str(BIN / "mypy"))
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_strict_is_clean_on_the_python_sdk():
    done = run(str(BIN / "mypy"), "--strict", "sdk/python/src/loopsense_sdk")
    assert done.returncode == 0, done.stdout + done.stderr
