"""The SDK READMEs' code blocks, run as written against a real `loopsense serve`: docs that
cannot rot.

How a README marks its blocks (the fence's language tag):

- ```python  runs with this venv's Python, on its own (a block defines everything it uses);
- ```ts      is compiled by `tsc --strict` in a new ES module project ("type": "module") that
             has the built SDK as @loopsense/sdk, then run with node, each block on its own;
- ```js      runs with node as a CommonJS script (.cjs) in that project;
- ```output  right under a block that runs: what that block must print. `...` stands for any
             text; trailing spaces are ignored;
- any other tag (```sh, ```text, none) is not run: install lines, tables of options.

Every block runs with LOOPSENSE_API_KEY (the development key) and LOOPSENSE_BASE_URL (the
server) set, as the READMEs tell a user to do.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.server import DEV_KEY, Server
from tests.sdk.npm import NODE, NPM, PACKAGE, ROOT, install_and_build, run

READMES = {"python": ROOT / "sdk" / "python" / "README.md", "typescript": PACKAGE / "README.md"}
RUNNABLE = {"python", "ts", "js"}
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)


@dataclass(frozen=True)
class Block:
    readme: str
    line: int
    language: str
    code: str
    expected: str | None  # the ```output block under it

    @property
    def name(self) -> str:
        return f"{self.readme}-line{self.line}-{self.language}"


def blocks(readme: str) -> list[Block]:
    text = READMES[readme].read_text(encoding="utf-8")
    found: list[Block] = []
    previous_end = -1
    for match in FENCE.finditer(text):
        language, code = match.group(1), match.group(2)
        line = text.count("\n", 0, match.start()) + 1
        if language == "output":
            between = text[previous_end:match.start()]
            assert found and found[-1].expected is None and not between.strip(), (
                f"{readme} README line {line}: an output block not right under a block that runs")
            last = found.pop()
            found.append(Block(last.readme, last.line, last.language, last.code, code))
        elif language in RUNNABLE:
            found.append(Block(readme, line, language, code, None))
        previous_end = match.end()
    return found


def check_output(block: Block, stdout: str) -> None:
    if block.expected is None:
        return
    got = "\n".join(line.rstrip() for line in stdout.strip().splitlines())
    want = "\n".join(line.rstrip() for line in block.expected.strip().splitlines())
    pattern = ".*?".join(re.escape(piece) for piece in want.split("..."))
    assert re.fullmatch(pattern, got, re.S), f"{block.name} printed:\n{got}\n\nREADME says:\n{want}"


def environment(server: Server) -> dict[str, str]:
    return {"LOOPSENSE_API_KEY": DEV_KEY, "LOOPSENSE_BASE_URL": server.url}


PYTHON_BLOCKS = blocks("python")
TYPESCRIPT_BLOCKS = blocks("typescript")


def test_each_readme_has_blocks_that_run_and_outputs_to_compare() -> None:
    for found in (PYTHON_BLOCKS, TYPESCRIPT_BLOCKS):
        assert len(found) >= 3 and sum(b.expected is not None for b in found) >= 3


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=lambda b: b.name)
def test_python_readme_block(block: Block, server: Server, tmp_path: Path) -> None:
    script = tmp_path / "block.py"
    script.write_text(block.code, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path, check=False,
                          env={**os.environ, **environment(server)})
    assert done.returncode == 0, f"{block.name} failed:\n{done.stdout}{done.stderr}"
    check_output(block, done.stdout)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An ES module project with the built SDK (and `ai`), every ts block compiled (one tsc run)
    into out/, every js block as a .cjs file."""
    if NPM is None or NODE is None:
        pytest.skip("npm is not installed")
    install_and_build()
    folder = tmp_path_factory.mktemp("readme_project")
    (folder / "package.json").write_text(json.dumps({"private": True, "type": "module"}))
    modules = folder / "node_modules"
    (modules / "@loopsense").mkdir(parents=True)
    (modules / "@loopsense" / "sdk").symlink_to(PACKAGE, target_is_directory=True)
    # The Vercel AI SDK block's `ai`: the version npm installs on Node 20 (the dev dependency
    # alias ai6; its own dependencies resolve from where it really is).
    (modules / "ai").symlink_to(PACKAGE / "node_modules" / "ai6", target_is_directory=True)
    (modules / "@types").mkdir()
    (modules / "@types" / "node").symlink_to(PACKAGE / "node_modules" / "@types" / "node",
                                             target_is_directory=True)
    sources = []
    for index, block in enumerate(TYPESCRIPT_BLOCKS):
        if block.language == "ts":
            sources.append(f"block{index}.ts")
            (folder / sources[-1]).write_text(block.code, encoding="utf-8")
        else:
            (folder / f"block{index}.cjs").write_text(block.code, encoding="utf-8")
    (folder / "tsconfig.json").write_text(json.dumps({"compilerOptions": {
        "module": "NodeNext", "moduleResolution": "NodeNext", "target": "ES2022",
        "strict": True, "types": ["node"], "rootDir": ".", "outDir": "out",
        "skipLibCheck": True}, "files": sources}))  # as `tsc --init` sets it (ai's .d.ts need it)
    run(NODE, str(PACKAGE / "node_modules" / "typescript" / "bin" / "tsc"), "-p", ".",
        cwd=folder)
    yield folder


@pytest.mark.parametrize("index", range(len(TYPESCRIPT_BLOCKS)),
                         ids=[b.name for b in TYPESCRIPT_BLOCKS])
def test_typescript_readme_block(index: int, project: Path, server: Server) -> None:
    assert NODE is not None
    block = TYPESCRIPT_BLOCKS[index]
    script = f"out/block{index}.js" if block.language == "ts" else f"block{index}.cjs"
    done = run(NODE, script, cwd=project, env=environment(server), timeout=120, check=False)
    assert done.returncode == 0, f"{block.name} failed:\n{done.stdout}{done.stderr}"
    check_output(block, done.stdout)
