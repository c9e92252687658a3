"""Every code block of README.md runs against a running `loopsense serve` (the `server` fixture).

The convention, for whoever edits the README (an HTML comment on the line right before a fence;
it does not show when rendered):

- A fenced block with no marker RUNS: each line is a shell command (a trailing `\\` joins the
  next line), run from the repository root. `$ ` lines are commands followed by their output.
  A trailing `# -> X` comment is the command's output. A command with no output shown must
  exit 0 and, if it prints JSON, not an error envelope.
- `<!-- readme-test: output -->` before a block: that block is the output of the block before.
- `<!-- readme-test: skip (why) -->` before a block: not run (the set-up commands themselves,
  illustrative envelopes, commands that need AWS).

What the README writes is what a user types: the test substitutes only the server's addresses
(`http://127.0.0.1:3000`, the store's `http://127.0.0.1:8000`), this venv's `.venv/bin/`, and
the ids a previous command printed (`t_...`, `key_...`). Outputs are compared as JSON where
they are JSON, with the parts that differ per call made equal: UUIDs (executionId, requestId),
`t_...` tenant ids and `key_...` key ids. `export NAME=VALUE` sets NAME for the commands after.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.server import Server

REPO_ROOT = Path(__file__).resolve().parents[2]
README = REPO_ROOT / "README.md"
BIN = Path(sys.executable).parent
MARKER = re.compile(r"^<!-- readme-test: (skip|output)\b.*-->$")
VARIABLE = [(re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"),
             "<uuid>"),
            (re.compile(r"\bt_[A-Za-z0-9_-]+"), "t_..."),
            (re.compile(r"\bkey_[A-Za-z0-9_-]+"), "key_...")]


@dataclass
class Command:
    line: str
    expected: list[str] = field(default_factory=list)


@dataclass
class Block:
    line: int  # of its opening fence in README.md
    text: str
    skip: bool
    output: str | None = None  # the block marked as its output

    def commands(self) -> list[Command]:
        joined: list[str] = []
        for raw in self.text.splitlines():
            if joined and joined[-1].endswith("\\"):
                joined[-1] = joined[-1][:-1] + " " + raw.strip()
            else:
                joined.append(raw)
        commands: list[Command] = []
        dollar = any(line.startswith("$ ") for line in joined)
        for line in joined:
            if dollar and not line.startswith("$ "):
                commands[-1].expected.append(line)
            elif line.strip():
                command, _, shown = line.removeprefix("$ ").partition("# -> ")
                commands.append(Command(command.strip(), [shown.strip()] if shown else []))
        if self.output is not None:
            commands[-1].expected = self.output.splitlines()
        return commands


def readme_blocks() -> list[Block]:
    lines = README.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        if not lines[index].startswith("```"):
            index += 1
            continue
        end = next(j for j in range(index + 1, len(lines)) if lines[j].startswith("```"))
        marker = MARKER.match(lines[index - 1].strip()) if index else None
        text = "\n".join(lines[index + 1:end])
        if marker and marker[1] == "output":
            assert blocks and blocks[-1].output is None, f"README.md:{index + 1}: output of what?"
            blocks[-1].output = text
        else:
            blocks.append(Block(index + 1, text, bool(marker)))
        index = end + 1
    return blocks


def normalized(text: str) -> Any:
    for pattern, replacement in VARIABLE:
        text = pattern.sub(replacement, text)
    try:
        return json.loads(text)
    except ValueError:
        return text.strip()


class Shell:
    """Runs README lines as a user would in one shell session against the fixture's server."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.env = dict(os.environ)
        self.ids: dict[str, str] = {}  # "t_..." / "key_..." -> the id a command printed

    def substitute(self, line: str) -> str:
        line = line.replace("http://127.0.0.1:3000", self.server.url)
        line = line.replace("http://127.0.0.1:8000", self.server.store())
        line = re.sub(r"(?<![\w/])\.venv/bin/", f"{BIN}/", line)
        for placeholder, value in self.ids.items():
            line = line.replace(placeholder, value)
        return line

    def run(self, command: Command, where: str) -> None:
        line = self.substitute(command.line)
        exported = re.fullmatch(r"export (\w+)=(\S+)(\s+#.*)?", line)
        if exported:
            self.env[exported[1]] = exported[2]
            return
        done = subprocess.run(["bash", "-c", line], cwd=REPO_ROOT, env=self.env,
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, f"{where}: {command.line}\n{done.stdout}{done.stderr}"
        printed = done.stdout.strip()
        try:
            answer = json.loads(printed) if printed else None
        except ValueError:
            answer = None
        if isinstance(answer, dict):
            assert "error" not in answer, f"{where}: {command.line}\n{printed}"
            for key, placeholder in (("tenantId", "t_..."), ("keyId", "key_...")):
                if isinstance(answer.get(key), str):
                    self.ids[placeholder] = answer[key]
        if command.expected:
            assert normalized(printed) == normalized("\n".join(command.expected)), (
                f"{where}: {command.line}\nprinted:\n{printed}")


BLOCKS = readme_blocks()


@pytest.fixture(scope="module")
def shell(server: Server) -> Shell:
    return Shell(server)


def test_the_readme_has_blocks_that_run_and_blocks_marked_not_to():
    assert sum(not b.skip for b in BLOCKS) >= 4 and any(b.skip for b in BLOCKS)
    assert any(b.output is not None for b in BLOCKS)


@pytest.mark.parametrize("block", [b for b in BLOCKS if not b.skip],
                         ids=lambda b: f"README.md:{b.line}")
def test_readme_block_runs_and_prints_what_it_shows(shell: Shell, block: Block):
    commands = block.commands()
    assert commands, f"README.md:{block.line}: an empty block"
    for command in commands:
        shell.run(command, f"README.md:{block.line}")
