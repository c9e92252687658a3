"""The run monitor agrees with its peers on their own test scenarios, with each peer's thresholds
configured. The scenarios are rebuilt from the peers' public test suites (read, not copied):

- OpenHands StuckDetector: All-Hands-AI/OpenHands openhands/controller/stuck.py and
  tests/unit/controller/test_is_stuck.py (the suite the brief calls tests/unit/test_stuck.py).
- Gemini CLI LoopDetectionService: google-gemini/gemini-cli
  packages/core/src/services/loopDetectionService.ts and loopDetectionService.test.ts
  (tool-call and content loops; the LLM-judged checks have no rule equivalent).
- OpenClaw tool-loop detection: openclaw/openclaw src/agents/tool-loop-detection.ts and
  src/agents/tool-loop-detection.test.ts.

How each peer's verdict maps onto the monitor's (after the scenario's last step):
- OpenHands ``is_stuck`` <=> a critical finding (its scenarios all demand identical
  observations, identical messages or repeated errors: "no progress at all").
- Gemini ``count > 0`` <=> any finding (it has one level).
- OpenClaw ``{stuck, level}`` <=> the highest severity among the findings. OpenClaw asks about
  the call about to be made; the monitor gets it as a last step without a result (pending).

Not mirrored, by design (spec/loop_safety.md has no such rule): OpenClaw's global circuit
breaker over argument churn ("blocks repeated stable argument churn ..." and "... despite
bounded singleton probes": it blocks a new call because earlier different calls made no
progress; the monitor judges the latest call), OpenClaw's run-id scoping and update_plan
normalisation, OpenHands' IPython-specific parsing beyond comparing whole observations, and
Gemini's LLM checks.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from loopsense.core.monitor.config import RULES
from tests.unit.monitor_traces import answers, config, step


def off(*kept: str) -> tuple[str, ...]:
    return tuple(r for r in RULES if r not in kept)


def severity(answer) -> str | None:
    levels = {f.severity for f in answer.findings}
    return "critical" if "critical" in levels else "warning" if levels else None


# ---- OpenHands -------------------------------------------------------------------------------

OPENHANDS = dict(repeat_critical=4, cycle_window=2, cycle_repeats=3, error_streak=3,
                 monologue_limit=3, condensation_limit=10,
                 disabled=off("repeated_call", "cycle", "error_streak", "monologue",
                              "condensation_loop"))


def oh_cmd(command: str, output: str = "", exit_code: int = 0) -> dict[str, Any]:
    # CmdRunAction + CmdOutputObservation (command_id, the pid, ignored as OpenHands does)
    return step("tool_call", action="run", args={"command": command},
                result={"content": output, "exit_code": exit_code})


def oh_error(command: str, error: str) -> dict[str, Any]:
    return step("tool_call", action="run", args={"command": command}, result={"error": error},
                outcome="error")


def oh_read(path: str, content: str) -> dict[str, Any]:
    return step("tool_call", action="read", args={"path": path}, result={"content": content})


def oh_ipython(output: str) -> dict[str, Any]:
    code = "edit_file_by_replace(\n    'book_store.py',\n    to_replace=\"\"\"def total(basket):"
    return step("tool_call", action="ipython", args={"code": code}, result={"content": output})


def agent(text: str) -> dict[str, Any]:
    return step("message", text=text)


def user(text: str) -> dict[str, Any]:
    return step("user_message", text=text)


def syntax_errors(message: str, random_line: bool, incidents: int = 4) -> list[dict[str, Any]]:
    out = []
    for i in range(incidents):
        line = (i + 1) * 10 if random_line else 42
        extra = "\n" * (i + 1) if random_line else ""
        out.append(oh_ipython(f"  Cell In[1], line {line}\nto_replace=...\n            ^\n"
                              f"{message}{extra}\n[Jupyter current working directory:"
                              "\n[Jupyter Python interpreter:"))
    return out


OPENHANDS_SCENARIOS: list[tuple[str, list[dict[str, Any]], bool, bool]] = [
    # (name, trace, headless, OpenHands is_stuck)
    ("history_too_short", [user("Hello"), oh_cmd("ls", "file1.txt\nfile2.txt")], True, False),
    ("repeating_action_observation_3", [agent("Hello"), oh_cmd("ls"), oh_cmd("ls"),
                                        user("Done"), oh_cmd("ls")], True, False),
    ("repeating_action_observation_4", [agent("Hello"), oh_cmd("ls"), oh_cmd("ls"),
                                        user("Done"), oh_cmd("ls"), oh_cmd("ls")], True, True),
    ("repeating_action_error", [agent("Hello"), oh_error("invalid_command", "Command not found"),
                                oh_error("invalid_command", "Command still not found"),
                                user("Done"), oh_error("invalid_command", "Different error"),
                                oh_error("invalid_command", "Command not found")], True, True),
    ("invalid_syntax_error", syntax_errors("SyntaxError: invalid syntax. Perhaps you forgot a "
                                           "comma?", False), True, True),
    ("invalid_syntax_error_random_lines", syntax_errors("SyntaxError: invalid syntax. Perhaps "
                                                        "you forgot a comma?", True), True, False),
    ("invalid_syntax_error_three_incidents", syntax_errors("SyntaxError: invalid syntax.", True,
                                                           3), True, False),
    ("incomplete_input_error", syntax_errors("SyntaxError: incomplete input", False), True,
     True),
    ("incomplete_input_random_lines", syntax_errors("SyntaxError: incomplete input", True),
     True, False),
    ("unterminated_string_two_incidents", syntax_errors("SyntaxError: unterminated string "
                                                        "literal (detected at line 1)", False, 2),
     True, False),
    ("syntax_error_not_at_end", [oh_ipython(f"SyntaxError: unterminated string literal "
                                            f"(detected at line {n})\n{tail}")
                                 for n, tail in ((1, "additional output"), (1, "too much"),
                                                 (3, "Enough"), (2, "Last line"))], True, False),
    ("action_observation_pattern", [user("Come on"), oh_cmd("ls", "file1.txt\nfile2.txt"),
                                    oh_read("file1.txt", "File content"),
                                    oh_cmd("ls", "file1.txt\nfile2.txt"),
                                    oh_read("file1.txt", "File content"), user("Come on"),
                                    oh_cmd("ls", "file1.txt\nfile2.txt"),
                                    oh_read("file1.txt", "File content")], True, True),
    ("not_stuck", [agent("Hello"), oh_cmd("ls", "file1.txt\nfile2.txt"),
                   oh_read("file1.txt", "File content"), oh_cmd("pwd", "/home/user"),
                   oh_read("file2.txt", "Another file content"), user("Done"),
                   oh_cmd("pwd", "/home/user"), oh_read("file2.txt", "Another file content")],
     True, False),
    ("monologue", [user("Hi there!"), agent("Hi there!"), user("How are you?"),
                   step("tool_call", action="run", args={"command": "echo 42"}),
                   *[agent("I'm doing well, thanks for asking.")] * 3], True, True),
    ("monologue_broken_by_an_observation", [
        user("Hi there!"), agent("Hi there!"), user("How are you?"),
        step("tool_call", action="run", args={"command": "echo 42"}),
        *[agent("I'm doing well, thanks for asking.")] * 3,
        step("observation", text="OK, I was stuck, but no more."),
        *[agent("I'm doing well, thanks for asking.")] * 2], True, False),
    ("context_window_error_loop", [user("Hello"), *[step("condensation")] * 10], True, True),
    ("context_window_less_than_ten", [user("Hello"), *[step("condensation")] * 9], True, False),
    ("context_window_with_other_events", [user("Hello")] + [
        s for i in range(10) for s in ([step("condensation")] + (
            [oh_cmd(f"ls {i}", "file1.txt")] + ([oh_read(f"file{i}.txt", f"c{i}")]
                                                if i % 2 == 0 else []) if i < 9 else []))],
     True, False),
    ("context_window_with_user_messages", [user("Hello")] + [
        s for i in range(10) for s in ([step("condensation")] + ([user(f"m{i}")] if i < 9
                                                                  else []))], True, True),
    ("interactive_four_identical", [oh_cmd("ls")] * 4, False, True),
    ("interactive_reset_by_user_message", [oh_cmd("ls")] * 4 + [user("Hello")], False, False),
    ("interactive_two_after_reset", [oh_cmd("ls")] * 4 + [user("Hello")] + [oh_cmd("ls")] * 2,
     False, False),
    ("interactive_four_after_reset", [oh_cmd("ls")] * 4 + [user("Hello")] + [oh_cmd("ls")] * 4,
     False, True),
    ("headless_user_message_does_not_reset", [oh_cmd("ls")] * 4 + [user("Hello")], True, True),
]


@pytest.mark.parametrize(("name", "trace", "headless", "stuck"), OPENHANDS_SCENARIOS,
                         ids=[s[0] for s in OPENHANDS_SCENARIOS])
def test_openhands_stuck_detector_scenarios(name, trace, headless, stuck):
    cfg = config(reset_on_user_message=not headless, **OPENHANDS)
    assert (severity(answers(trace, cfg)[-1]) == "critical") is stuck


# ---- Gemini CLI ------------------------------------------------------------------------------

GEMINI = dict(repeat_warn=5, repeat_critical=5, poll_warn=5, content_chunk_chars=50,
              content_repeats=10, disabled=off("repeated_call", "content_loop"))


def gem_call(name: str = "testTool", **args: Any) -> dict[str, Any]:
    return step("tool_call", action=name, args=args or {"param": "value"})


def content(text: str) -> dict[str, Any]:
    return step("text_chunk", text=text)


def repetitive(ident: int, length: int) -> str:
    base = f"This is a unique sentence, id={ident}. "
    return (base * (length // len(base) + 1))[:length]


def random_text(rng: random.Random, length: int) -> str:
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    return "".join(rng.choice(alphabet) for _ in range(length))


def detected_at(trace: list[dict[str, Any]]) -> int | None:
    """The index of the first step with a finding (Gemini's count > 0), or None."""
    for answer in answers(trace, config(**GEMINI)):
        if answer.findings:
            return answer.index
    return None


REP = repetitive(1, 50)
RNG = random.Random(20251130)
USER_PATTERN_1 = ("I will not output any text.\n  I will just end the turn.\n  I am done.\n"
                  "  I will not do anything else.\n  I will wait for the user's next command.\n")
USER_PATTERN_2 = ("I have added all the requested logs and verified the test file. I will now "
                  "mark the task as complete.\n  ")
GEMINI_SCENARIOS: list[tuple[str, list[dict[str, Any]], int | None]] = [
    # (name, trace, index of the first step Gemini reports a loop at, or None)
    ("fewer_than_threshold_identical_calls", [gem_call()] * 4, None),
    ("threshold_th_identical_call", [gem_call()] * 5, 4),
    ("subsequent_identical_calls", [gem_call()] * 6, 4),
    ("different_tool_calls", [gem_call(param="value1"), gem_call(param="value2"),
                              gem_call("anotherTool", param="value1")] * 3, None),
    ("other_events_do_not_reset_the_counter", [gem_call()] * 4 + [step("thought")] +
     [gem_call()], 5),
    ("random_content", [content(random_text(RNG, 10)) for _ in range(1000)], None),
    ("chunk_repeats_consecutively", [content(REP)] * 10, 9),
    ("list_with_a_long_shared_prefix", [content("".join(
        f"- projects/my-google-cloud-project-12345/locations/us-central1/services/{i}\n"
        for i in range(15)))], None),
    ("repetitions_far_apart", [s for _ in range(10)
                               for s in (content(REP), content(random_text(RNG, 2000)))], None),
    ("longer_repeating_pattern_150", [content(repetitive(1, 150))] * 30, 9),
    ("user_example_1", [content(USER_PATTERN_1)] * 30, 9),
    ("user_example_2", [content(USER_PATTERN_2)] * 30, 9),
    ("alternating_short_phrases", [content("Thinking... Done. ")] * 100, 30),
    ("repeated_complex_thought", [content("I need to check the file. The file does not exist. "
                                          "I will create the file. ")] * 30, 9),
    ("inside_a_code_block", [content("```\n")] + [content(REP)] * 10 + [content("\n```")],
     None),
    ("transition_into_a_code_block", [content(REP)] * 8 + [content("```javascript\n")] +
     [content(REP)] * 10, None),
    ("already_inside_a_code_block", [content("Here is some code:\n```\n")] +
     [content(REP)] * 15, None),
    ("multiple_fence_transitions", [content("Normal text "), content("```\n")] +
     [content(REP)] * 5 + [content("```\n"), content("```python\n")], None),
    ("loop_outside_a_closed_code_block", [content("```"), content("\nsome code\n"),
                                          content("```")] + [content(REP)] * 10, 12),
    ("multiple_code_blocks_no_loop", [content("```\ncode1\n```"), content("\nsome text\n"),
                                      content("```\ncode2\n```")], None),
    ("long_code_block_repeating_tokens", [content("```\n")] +
     [content("for (let i = 0; i < 10; i++) { console.log(i); }")] * 20 +
     [content("\n```")], None),
    ("code_fence_resets_tracking", [content(REP)] * 9 + [content("```")] +
     [content(REP)] * 10, None),
    ("table_resets_tracking", [content(REP)] * 9 + [content("| Column 1 | Column 2 |")] +
     [content(REP)] * 9, None),
    ("list_item_resets_tracking", [content(REP)] * 9 + [content("* List item")] +
     [content(REP)] * 9, None),
    ("heading_resets_tracking", [content(REP)] * 9 + [content("## Heading")] +
     [content(REP)] * 9, None),
    ("blockquote_resets_tracking", [content(REP)] * 9 + [content("> Quote text")] +
     [content(REP)] * 9, None),
    *[(f"list_format_{i}_resets_tracking", [content(REP)] * 9 + [content("\n" + f)] +
       [content(repetitive(i + 100, 50))] * 9, None)
      for i, f in enumerate(["* item", "- item", "+ item", "1. item", "42. item"])],
    ("tool_call_resets_content", [content("Some content.")] * 9 + [gem_call()] +
     [content("Fresh content.")], None),
    ("divider_content", [content("-" * 50)] * 15, None),
]


@pytest.mark.parametrize(("name", "trace", "expected"), GEMINI_SCENARIOS,
                         ids=[s[0] for s in GEMINI_SCENARIOS])
def test_gemini_loop_detection_scenarios(name, trace, expected):
    found = detected_at(trace)
    if expected is None or name.startswith(("longer", "user_example", "alternating",
                                             "repeated_complex")):
        # Gemini's own assertions: "no loop", or "a loop within the sent chunks"
        assert (found is None) is (expected is None)
    else:
        assert found == expected


def test_gemini_disabled_for_session_is_disabled_rules():
    cfg = config(**{**GEMINI, "disabled": RULES})
    assert all(not a.findings for a in answers([gem_call()] * 8, cfg))


# ---- OpenClaw --------------------------------------------------------------------------------

OPENCLAW = dict(history_size=30, repeat_warn=10, repeat_critical=20, poll_warn=10,
                cycle_window=2, cycle_repeats=5, error_streak=10,
                # a known poll tool whose output changes is progress, never a warning
                tools={"process": {"poll_warn": 31}},
                disabled=off("repeated_call", "cycle", "error_streak"))


def claw(tool: str, params: Any, result: Any = None, error: str | None = None):
    """A recorded call: recordToolCall (+ recordToolCallOutcome when a result or error)."""
    if error is not None:
        return step("tool_call", action=tool, args=params, result={"error": error},
                    outcome="error")
    if result is None:
        return step("tool_call", action=tool, args=params)
    return step("tool_call", action=tool, args=params, result=result)


def text_result(text: str, **details: Any) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "details": details}


READ = ("read", {"path": "/same.txt"}, text_result("same output", ok=True))
POLL = ("process", {"action": "poll", "sessionId": "sess-1"},
        text_result("(no new output)\n\nProcess still running.", status="running",
                    aggregated="steady"))


def repeated(fixture, count):
    return [claw(*fixture)] * count


def ping_pong(count, text):
    return [claw("read", {"path": "/a.txt"}, text_result(text("read", i), ok=True)) if i % 2 == 0
            else claw("list", {"dir": "/workspace"}, text_result(text("list", i), ok=True))
            for i in range(count)]


UNKNOWN = [{"command": "ls"}, {"command": "pwd"}, {"input": "whoami"}, {"cmd": "env"},
           {"shell": "bash -lc ls"}, {"command": "printf ok"}, {"cwd": "/tmp", "command": "ls"},
           {"args": ["ls", "/tmp"]}, {"command": "find . -maxdepth 1"}, {"text": "run ls"},
           {"command": "uname -a"}, {"command": "id"}, {"command": "date"}, {"command": "ps"},
           {"command": "df -h"}, {"command": "free -m"}, {"command": "ls /tmp"},
           {"command": "ls -la"}, {"command": "cat /etc/hostname"}, {"command": "echo done"}]

OPENCLAW_SCENARIOS: list[tuple[str, list[dict[str, Any]], dict[str, Any], str | None]] = [
    # (name, recorded history + the call asked about, extra config, OpenClaw level)
    ("unique_tool_calls", [claw("read", {"path": f"/file{i}.txt"}) for i in range(15)]
     + [claw("read", {"path": "/new-file.txt"})], {}, None),
    ("generic_repeat_warning", [claw("read", {"path": "/same.txt"})] * 11, {}, "warning"),
    ("generic_no_progress_critical", repeated(READ, 20) + [claw(*READ[:2])], {}, "critical"),
    ("known_poll_no_progress_warning", repeated(POLL, 10) + [claw(*POLL[:2])], {}, "warning"),
    ("known_poll_no_progress_critical", repeated(POLL, 20) + [claw(*POLL[:2])], {},
     "critical"),
    ("known_poll_progressing", [claw("process", POLL[1], text_result(
        f"line {i}", status="running", aggregated=f"line {i}")) for i in range(25)]
     + [claw(*POLL[:2])], {}, None),
    ("global_breaker_30_identical", repeated(READ, 30) + [claw(*READ[:2])], {}, "critical"),
    ("one_shot_batch_of_distinct_arguments", [claw(
        "write", {"path": f"/tmp/file-{i}.md", "content": "same content"},
        text_result("write complete", ok=True)) for i in range(30)]
     + [claw("write", {"path": "/tmp/next.md", "content": "same content"})], {}, None),
    ("legitimate_two_pass_batch", [claw(
        "write", {"path": f"/tmp/batch-{i % 15}.md", "content": "same content"},
        text_result(f"wrote /tmp/batch-{i % 15}.md", ok=True, path=f"/tmp/batch-{i % 15}.md"))
        for i in range(30)]
     + [claw("write", {"path": "/tmp/next.md", "content": "same content"})], {}, None),
    ("argument_churn_with_progress", [claw(
        "write", {"path": "/tmp/a.md" if i % 2 == 0 else "/tmp/b.md", "content": "same content"},
        text_result(f"write revision {i}", ok=True, revision=i)) for i in range(30)]
     + [claw("write", {"path": "/tmp/c.md", "content": "same content"})], {}, None),
    ("completed_exec_with_volatile_details", [claw(
        "exec", {"command": "grafana-api.sh datasources"}, text_result(
            "Loki\nPrometheus", status="completed", exitCode=0, durationMs=100 + i,
            cwd=f"/tmp/run-{i}", aggregated="Loki\nPrometheus")) for i in range(20)]
     + [claw("exec", {"command": "grafana-api.sh datasources"})], {}, "critical"),
    # OpenClaw hashes a running exec by status and tail only; the monitor's equivalent is a
    # per-tool ignore list for the volatile parts (its text, session, start time).
    ("running_exec_with_volatile_session", [claw(
        "exec", {"command": "tail -f /var/log/app.log", "yieldMs": 1000}, text_result(
            f"Command still running (session sess-{i}, pid {1000 + i})", status="running",
            sessionId=f"sess-{i}", pid=1000 + i, startedAt=1_700_000_000 + i,
            cwd=f"/tmp/run-{i}", tail="(no new output)")) for i in range(20)]
     + [claw("exec", {"command": "tail -f /var/log/app.log", "yieldMs": 1000})],
     {"exec": {"ignore_keys": ["content", "startedAt"]}}, "critical"),
    ("changing_exec_output", [claw("exec", {"command": "date"}, text_result(
        f"tick {i}", status="completed", exitCode=0, durationMs=100 + i,
        aggregated=f"tick {i}")) for i in range(30)] + [claw("exec", {"command": "date"})],
     {}, "warning"),
    ("changing_failed_exec_output", [claw("exec", {"command": "openclaw flaky-helper"},
                                          text_result(f"Runtime failed before spawn: attempt {i}",
                                                      status="failed", exitCode=None,
                                                      durationMs=100 + i, aggregated=""))
                                     for i in range(30)]
     + [claw("exec", {"command": "openclaw flaky-helper"})], {}, "warning"),
    ("unknown_tool_below_threshold", [claw("exec", {"command": f"echo {i}"},
                                           error="Tool exec not found") for i in range(9)]
     + [claw("exec", {"command": "echo still allowed"})], {}, None),
    ("unknown_tool_with_changing_args", [claw("exec", p, error="Tool exec not found")
                                         for p in UNKNOWN]
     + [claw("exec", {"command": "echo still looping"})], {}, "critical"),
    ("ping_pong_warning", [claw("read", {"path": "/a.txt"}) if i % 2 == 0
                           else claw("list", {"dir": "/workspace"}) for i in range(9)]
     + [claw("list", {"dir": "/workspace"})], {}, "warning"),
    ("ping_pong_critical", ping_pong(19, lambda tool, i: f"{tool} stable")
     + [claw("list", {"dir": "/workspace"})], {}, "critical"),
    ("ping_pong_progressing", ping_pong(19, lambda tool, i: f"{tool} {i}")
     + [claw("list", {"dir": "/workspace"})], {}, "warning"),
    ("ping_pong_alternation_broken", [claw("read", {"path": "/a.txt"}),
                                      claw("list", {"dir": "/workspace"}),
                                      claw("read", {"path": "/a.txt"}),
                                      claw("write", {"path": "/tmp/out.txt"}),
                                      claw("list", {"dir": "/workspace"})], {}, None),
]


@pytest.mark.parametrize(("name", "trace", "tools", "level"), OPENCLAW_SCENARIOS,
                         ids=[s[0] for s in OPENCLAW_SCENARIOS])
def test_openclaw_tool_loop_detection_scenarios(name, trace, tools, level):
    settings = {**OPENCLAW, "tools": {**OPENCLAW["tools"], **tools}}
    assert severity(answers(trace, config(**settings))[-1]) == level
