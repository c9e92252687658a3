"""Both SDKs' own test suites in a copy of the repository with nothing beside it (no ../shared,
no build output): what a new contributor's clone holds. The copy is the files git tracks, as
they are in the working tree; node_modules is linked from this checkout (no network).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.sdk.npm import NPM, PACKAGE, ROOT, install_and_build, node_test_summary, run


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             check=True, timeout=60).stdout.decode().split("\0")
    copy = tmp_path_factory.mktemp("alone") / "loopsense"
    for name in filter(None, tracked):
        if (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    return copy


@pytest.mark.skipif(NPM is None, reason="npm is not installed")
def test_the_typescript_suite_passes_alone(clone: Path) -> None:
    assert NPM is not None
    install_and_build()  # this checkout's node_modules, which the copy links to
    package = clone / "sdk" / "typescript"
    (package / "node_modules").symlink_to(PACKAGE / "node_modules", target_is_directory=True)
    run(NPM, "run", "build", cwd=package)
    done = run(NPM, "test", cwd=package, timeout=120)
    summary = node_test_summary(done.stdout)
    assert summary.get("fail") == 0 and summary.get("pass", 0) >= 80, summary


def test_the_python_unit_suites_pass_alone(clone: Path) -> None:
    source = os.pathsep.join(str(clone / p) for p in ("sdk/python/src", "shared", "local"))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "tests/sdk/test_python_sdk_unit.py", "tests/sdk/test_python_sdk_typing.py"],
        cwd=clone, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "PYTHONPATH": source})
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-5000:]
    assert " passed" in done.stdout and "skipped" not in done.stdout, done.stdout[-2000:]
