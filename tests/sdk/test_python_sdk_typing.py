"""The Python SDK's types under ``mypy --strict``: what a user writes, checked as a user's code is.

Each snippet below is a file; one mypy run checks them all. The good ones must pass clean; each
bad one must be reported (a misspelt skill key, an untyped or wrong input, a misspelt output
field): before issue 12, a catch-all ``execute(str, Mapping[str, Any])`` overload accepted all of
them and typed the answer ``Any``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SDK_SOURCE = REPO_ROOT / "sdk" / "python" / "src"

HEADER = "from loopsense_sdk import *\n\nclient = Client('k')\n"

GOOD = {
    "literal_input": """
answer = client.execute("agent.loop_detect", {"events": [{"action": "a"}, {"action": "b"}]})
length: int = answer["output"]["cycleLength"]
spans: list[LoopDetectSpan] = answer["output"]["spans"]
""",
    "typed_variable": """
payload: LoopDetectInput = {"events": [{"action": "a"}] * 2, "similarity": "ACTION_TARGET"}
found: bool = client.execute("agent.loop_detect", payload)["output"]["loopDetected"]
semantic: SemanticLoopInput = {"events": [checkpoint("plan", step=1)]}
groups: list[SemanticLoopGroup] = client.semantic_loop(semantic["events"])["output"]["groups"]
fired: bool = client.execute("agent.semantic_loop", semantic)["output"]["fired"]
loops: LoopsInput = {"events": [{"type": "llm_call", "user_message": "hi"}], "durationMs": 5}
findings: list[LoopsFinding] = client.execute("agent.loops", loops)["output"]["findings"]
stats: LoopsStats = client.loops([{"type": "step"}])["output"]["stats"]
run: RunMonitorInput = {"steps": [{"kind": "tool_call", "action": "a"}],
                        "config": {"repeat_warn": 5, "tools": {"a": {"poll": True}}}}
signal: RunMonitorOutput = client.execute("agent.run_monitor", run)["output"]
looping: bool = signal["is_looping"]
rules: list[RunRule] = [f["rule"] for f in client.run_monitor(run["steps"])["output"]["findings"]]
""",
    "runs": """
signal = client.runs.signal("run-1", agent_id="ari")
if signal.is_looping and signal.confidence >= 0.7:
    rule: RunRule = signal.findings[0].rule
batch: StepsResult = client.runs.steps("run-1", [{"kind": "tool_call", "action": "a"}],
                                       agent_id="ari", idempotency_key="k")
nudge: str | None = batch.recommendation.nudge
client.runs.config("run-1", repeat_warn=5, disabled_rules=["novelty"])
""",
    "file_input": """
from typing import Any
ref: str = client.upload([{"action": "a"}, {"action": "b"}])
found: bool = client.execute("agent.loop_detect",
                             {"fileRef": ref, "window": 5})["output"]["loopDetected"]
steps: RunMonitorFileInput = {"fileRef": client.upload("{}\\n"), "config": {"repeat_warn": 5}}
looping: bool = client.execute("agent.run_monitor", steps)["output"]["is_looping"]
kept: ExecuteResponse[Any] = client.execute_any("test.large", {"count": 9}, fetch_output=False)
""",
    "any_skill": """
from typing import Any
other: ExecuteResponse[Any] = client.execute_any("test.sleep", {"ms": 1})
""",
    "errors": """
import builtins
from typing import assert_type
try:
    client.loop_detect([{"action": "a"}])
except APIConnectionError as error:
    retry_after: float | None = error.retry_after
except ConnectionError as failure:  # the builtin: the star import does not shadow it
    assert_type(failure, builtins.ConnectionError)
""",
}

BAD = {
    "misspelt_skill_key": 'client.execute("agent.loop_detec", {"events": [{"action": "a"}]})\n',
    "untyped_variable": (
        'payload = {"events": [{"action": "a"}, {"action": "b"}]}\n'
        'client.execute("agent.loop_detect", payload)\n'
    ),
    "misspelt_input_field": 'client.execute("agent.loop_detect", {"event": [{"action": "a"}]})\n',
    "wrong_skill_input": 'client.execute("agent.loops", {"events": [{"action": "a"}]})\n',
    "misspelt_output_field": (
        'answer = client.execute("agent.loop_detect", {"events": [{"action": "a"}]})\n'
        'print(answer["output"]["loopDetectd"])\n'
    ),
    "misspelt_run_config": (
        'client.execute("agent.run_monitor", {"steps": [{"kind": "thought"}],\n'
        '                                     "config": {"repeat_warning": 5}})\n'
    ),
    "unknown_run_rule": 'client.run_monitor([], config={"disabled_rules": ["loops"]})\n',
    "misspelt_run_setting": 'client.runs.config("run-1", repeat_warning=5)\n',
    "misspelt_signal_attribute": 'client.runs.signal("run-1", agent_id="a").is_lopping\n',
    "file_ref_not_text": 'client.execute("agent.loop_detect", {"fileRef": 7})\n',
    "file_input_misspelt_param": (
        'client.execute("agent.loop_detect", {"fileRef": "file_x", "windw": 5})\n'),
    "output_is_not_any": (
        'answer = client.execute("agent.semantic_loop", {"events": [{"type": "checkpoint"}]})\n'
        'count: str = answer["output"]["checkpoints"]\n'
    ),
}


@pytest.fixture(scope="module")
def mypy_errors(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """mypy --strict over every snippet at once: the error lines by snippet name."""
    folder = tmp_path_factory.mktemp("snippets")
    for name, body in {**GOOD, **BAD}.items():
        (folder / f"{name}.py").write_text(HEADER + body, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--hide-error-context",
         "--cache-dir", str(folder / ".mypy_cache"), "."],
        cwd=folder, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "MYPYPATH": str(SDK_SOURCE)},
    )
    errors: dict[str, list[str]] = {name: [] for name in {**GOOD, **BAD}}
    for line in done.stdout.splitlines():
        if re.match(r"\w+\.py:\d+: note: ", line):
            continue
        match = re.match(r"(\w+)\.py:\d+: error: ", line)
        assert match, f"mypy said something else:\n{done.stdout}{done.stderr}"
        errors[match.group(1)].append(line)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return errors


@pytest.mark.parametrize("name", sorted(GOOD))
def test_correct_use_type_checks_clean(name: str, mypy_errors: dict[str, list[str]]) -> None:
    assert mypy_errors[name] == []


@pytest.mark.parametrize("name", sorted(BAD))
def test_misuse_is_a_type_error(name: str, mypy_errors: dict[str, list[str]]) -> None:
    assert mypy_errors[name], f"mypy --strict accepted {name}:\n{BAD[name]}"
