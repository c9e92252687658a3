"""The one `sam build` of the infra tests: session-scoped, test_template and test_layer share it."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from tests.infra.test_template import TEMPLATE, _run, _tool, _tool_env


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    env = _tool_env()
    assert shutil.which("python3.11", path=env["PATH"]), (
        "sam build (BuildMethod python3.11) needs `python3.11` on PATH"
    )
    build_dir = tmp_path_factory.mktemp("sam") / "build"
    started = time.perf_counter()
    result = _run(
        [
            _tool("sam"),
            "build",
            "--build-dir",
            str(build_dir),
            "--template",
            str(TEMPLATE),
            "--no-use-container",
            "--no-cached",
        ],
        timeout=900,
    )
    elapsed = time.perf_counter() - started
    assert result.returncode == 0, f"sam build failed:\n{result.stdout}\n{result.stderr}"
    print(f"sam build took {elapsed:.1f} s")
    # Not removed after: pytest prunes its old temporary folders itself (the last three runs
    # stay), and removing this one took up to half a minute at the end of every run.
    return build_dir
