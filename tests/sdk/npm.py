"""npm for the TypeScript SDK's tests: install its dev dependencies, build it, run its scripts."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "sdk" / "typescript"
NPM = shutil.which("npm")
NODE = shutil.which("node")


def run(*args: str, cwd: Path = PACKAGE, env: dict[str, str] | None = None,
        timeout: float = 300, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run a command; with ``check``, fail the test with its output unless it exits 0."""
    done = subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, check=False)
    if check:
        output = (done.stdout + done.stderr)[-20_000:]
        assert done.returncode == 0, f"{' '.join(args)} exited {done.returncode}:\n{output}"
    return done


@functools.cache  # once per test run: the sources do not change under it
def install_and_build() -> None:
    """`npm ci` unless node_modules already holds what package-lock.json says, then build."""
    assert NPM is not None
    lock = PACKAGE / "package-lock.json"
    installed = PACKAGE / "node_modules" / ".package-lock.json"  # npm writes it on install
    if not installed.exists() or installed.stat().st_mtime < lock.stat().st_mtime:
        run(NPM, "ci", "--no-audit", "--no-fund")
    run(NPM, "run", "build")


def node_test_summary(output: str) -> dict[str, int]:
    """The counts `node --test` prints last (`# pass 80`, `# fail 0`, ...)."""
    summary: dict[str, int] = {}
    for line in output.splitlines():
        words = line.split()
        if line.startswith("# ") and len(words) == 3 and words[2].isdigit():
            summary[words[1]] = int(words[2])
    return summary
