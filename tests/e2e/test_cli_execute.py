"""`loopsense execute SKILL FILE`: output JSON and exit 0, or the error envelope and non-zero."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from loopsense_local.cli import main

ROOT = Path(__file__).resolve().parents[2]
MARK = "SECRET-MARKER-c41d"
LOOP = {"events": [{"action": "search"}, {"action": "click"}] * 3}


def execute(capsys, tmp_path, body: bytes | str, skill="agent.loop_detect"):
    path = tmp_path / "input.json"
    path.write_bytes(body.encode() if isinstance(body, str) else body)
    code = main(["execute", skill, str(path)])
    out, err = capsys.readouterr()
    return code, out, err


def test_prints_output_and_exits_zero(capsys, tmp_path):
    code, out, _ = execute(capsys, tmp_path, json.dumps(LOOP))
    assert code == 0
    assert json.loads(out)["spans"] == [{"start": 0, "end": 5, "cycleLength": 2, "repeats": 3}]


@pytest.mark.parametrize(
    ("body", "code", "path"),
    [
        (f"not json {MARK}", "VALIDATION_ERROR", "input"),
        (json.dumps([MARK]), "VALIDATION_ERROR", "input"),
        ('{"events": [{"action": "a"}, {"action": NaN}]}', "VALIDATION_ERROR", "input"),
        ("[" * 100_000 + "]" * 100_000, "VALIDATION_ERROR", "input"),
        (json.dumps({"events": [{"action": MARK}]}), "LOOP_EVENTS_INVALID", "input.events"),
    ],
    ids=["not-json", "array", "nan", "nested-100k", "one-event"],
)
def test_bad_input_prints_the_envelope_and_exits_non_zero(capsys, tmp_path, body, code, path):
    exit_code, out, err = execute(capsys, tmp_path, body)
    assert exit_code == 1
    envelope = json.loads(out)
    assert envelope["error"]["code"] == code
    assert envelope["error"]["details"][0]["path"] == path
    assert set(envelope) == {"error", "requestId"}
    assert MARK not in out + err


def test_unknown_skill_is_skill_not_found(capsys, tmp_path):
    exit_code, out, _ = execute(capsys, tmp_path, json.dumps(LOOP), skill="agent.nope")
    assert exit_code == 1
    assert json.loads(out)["error"]["code"] == "SKILL_NOT_FOUND"


def test_missing_file_is_a_usage_error(capsys):
    assert main(["execute", "agent.loop_detect", "/nonexistent/input.json"]) == 2


def test_installed_command_reads_stdin():
    done = subprocess.run(
        [str(Path(sys.executable).parent / "loopsense"), "execute", "agent.loop_detect", "-"],
        input=json.dumps(LOOP).encode(), capture_output=True, check=False, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["loopDetected"] is True
    assert done.stderr == b""


def test_many_calls_in_one_process_print_only_their_answers(capsys, tmp_path):
    """Powertools prints a metric's values on stdout once it holds a hundred; a skill called
    in-process (the CLI, the package imported) records none, so stdout is a clean JSON pipe."""
    from loopsense.platform.access.catalog import find_skill
    from loopsense.platform.execute.skill_handler import call_skill

    for i in range(120):  # the library: a hundred and twenty calls, nothing printed
        assert call_skill(find_skill("agent.loop_detect"), LOOP, f"r{i}")["output"]["loopDetected"]
    assert capsys.readouterr().out == ""
    path = tmp_path / "input.json"
    path.write_text(json.dumps(LOOP))
    for _ in range(110):  # the CLI, run in one process: one answer a line, nothing else
        assert main(["execute", "agent.loop_detect", str(path)]) == 0
    outs = capsys.readouterr().out.splitlines()
    assert len(outs) == 110
    assert all(json.loads(line)["loopDetected"] is True for line in outs)


def test_a_local_call_loads_no_xray_sdk():
    """The X-Ray SDK (a quarter of a second of `loopsense execute`'s start) serves Lambda's
    tracer only; a local call never imports it."""
    code = ("import sys, json; from loopsense_local.cli import main; "
            "main(['execute', 'agent.loop_detect', '-']); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'aws_xray_sdk'))")
    done = subprocess.run([sys.executable, "-c", code], input=json.dumps(LOOP).encode(),
                          capture_output=True, check=True, timeout=60)
    assert done.stdout.decode().splitlines()[-1] == "[]"
