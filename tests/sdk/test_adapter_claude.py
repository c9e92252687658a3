"""The Claude Agent SDK adapter with the real package (claude-agent-sdk 0.2), its hook callbacks
called directly as the SDK calls them (a plain async function of the hook input), through a
running `loopsense serve`: a call repeated with the same input and result gets the nudge as
additionalContext, then a stop (continue_ False, and PreToolUse denies what comes next); a
polling call whose result changes is left alone; a failing call counts as an error. And the
bundled CLI end to end, against a fake Messages API on 127.0.0.1 (tests/sdk/fake_anthropic.py):
a looping agent's next model input carries the nudge, then the run ends ``hook_stopped``; a
polling agent that finishes is never nudged."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("claude_agent_sdk", reason="the claude extra is not installed")

from claude_agent_sdk import (  # noqa: E402
    ClaudeAgentOptions,
    ResultMessage,
    create_sdk_mcp_server,
    query,
    tool,
)
from loopsense_sdk import Client  # noqa: E402
from loopsense_sdk.adapters.claude import ClaudeHooks, loopsense_hooks  # noqa: E402

from tests.e2e.server import DEV_KEY, Server  # noqa: E402
from tests.sdk.fake_anthropic import FakeAnthropic  # noqa: E402

BASE = {"session_id": "s", "transcript_path": "/dev/null", "cwd": "/tmp"}


def hooks(server: Server, policy: str = "stop") -> ClaudeHooks:
    run = "claude:" + uuid.uuid4().hex[:12]
    tracker = Client(DEV_KEY, server.url).runs.track(run, agent_id="claude", policy=policy)  # type: ignore[arg-type]
    return ClaudeHooks(tracker)


def post(i: int, response: Any) -> dict[str, Any]:
    return {**BASE, "hook_event_name": "PostToolUse", "tool_name": "mcp__jobs__export_status",
            "tool_input": {"job": 42}, "tool_response": response, "tool_use_id": f"toolu_{i}"}


def test_a_looping_call_is_nudged_then_stopped(server: Server) -> None:
    claude = hooks(server)

    async def scenario() -> list[dict[str, Any]]:
        out = []
        for i in range(10):
            if (await claude.pre_tool_use({}, f"toolu_{i}", {"signal": None})).get("continue_") \
                    is False:
                out.append({"denied": True})
                break
            out.append(await claude.post_tool_use(post(i, [{"type": "text", "text": "pending"}]),
                                                   f"toolu_{i}", {"signal": None}))
        return out

    outputs = asyncio.run(scenario())
    nudges = [o for o in outputs if "hookSpecificOutput" in o]
    assert nudges and "export_status" in nudges[0]["hookSpecificOutput"]["additionalContext"]
    assert nudges[0]["hookSpecificOutput"]["hookEventName"] == "PostToolUse"
    stop = next(o for o in outputs if o.get("continue_") is False)
    assert stop["stopReason"].startswith("You have called mcp__jobs__export_status")
    assert outputs.index(stop) > outputs.index(nudges[0])  # nudged first
    assert outputs[-1] == {"denied": True}  # what comes after the stop is denied


def test_a_polling_call_is_left_alone_and_failures_count_as_errors(server: Server) -> None:
    claude = hooks(server)

    async def scenario() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        polled = [await claude.post_tool_use(post(i, {"done_pct": i * 10}), f"toolu_{i}", {})
                  for i in range(10)]
        failed = [await claude.post_tool_use_failure(
            {**BASE, "hook_event_name": "PostToolUseFailure", "tool_name": "deploy",
             "tool_input": {"env": "prod"}, "tool_use_id": f"toolu_f{i}", "error": "denied",
             "agent_id": "a", "agent_type": "main"}, f"toolu_f{i}", {}) for i in range(4)]
        return polled, failed

    polled, failed = asyncio.run(scenario())
    assert polled == [{}] * 10
    assert any(o.get("hookSpecificOutput", {}).get("hookEventName") == "PostToolUseFailure"
               for o in failed)  # the error streak is nudged on the failure hook


def test_the_hooks_plug_into_the_sdk_options(server: Server) -> None:
    registered = loopsense_hooks(hooks(server).tracker)
    options = ClaudeAgentOptions(hooks=registered)  # type: ignore[arg-type]
    assert set(options.hooks or {}) == {"PreToolUse", "PostToolUse", "PostToolUseFailure"}


# ---- the bundled CLI end to end --------------------------------------------------------------
TOOL = "mcp__jobs__job"  # the in-process MCP server "jobs", its tool "job"


def cli_run(server: Server, tmp_path: Path, script: Any, answer: Any) -> tuple[
        FakeAnthropic, Any, list[Any]]:
    """One `query` of the real bundled CLI against a fake Messages API, the tool answering
    ``answer(n)``, with loopsense's hooks (policy stop): the fake, the ResultMessage, the
    tool's inputs."""
    fake = FakeAnthropic(TOOL, script)
    ran: list[Any] = []

    @tool("job", "The export job's status", {"job": int})
    async def job(args: dict[str, Any]) -> dict[str, Any]:
        ran.append(args)
        return {"content": [{"type": "text", "text": json.dumps(answer(len(ran)))}]}

    tracker = Client(DEV_KEY, server.url).runs.track("claude:" + uuid.uuid4().hex[:12],
                                                     agent_id="claude", policy="stop")
    options = ClaudeAgentOptions(
        mcp_servers={"jobs": create_sdk_mcp_server("jobs", tools=[job])},
        allowed_tools=[TOOL], tools=[], setting_sources=[], max_turns=30, cwd=str(tmp_path),
        model="claude-sonnet-4-5", hooks=loopsense_hooks(tracker),  # type: ignore[arg-type]
        env={"ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "sk-ant-fake",
             "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
             "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1",
             "CLAUDE_CONFIG_DIR": str(tmp_path / "config"), "TMPDIR": str(tmp_path)})

    async def scenario() -> Any:
        result = None
        async for message in query(prompt="export job 42", options=options):
            if isinstance(message, ResultMessage):
                result = message
        return result

    try:
        result = asyncio.run(asyncio.wait_for(scenario(), 60))
    finally:
        fake.close()
    return fake, result, ran


def shown(request: dict[str, Any]) -> str:
    return json.dumps(request.get("messages"))


def test_the_bundled_cli_is_nudged_then_stopped_by_the_hooks(server: Server,
                                                               tmp_path: Path) -> None:
    fake, result, ran = cli_run(server, tmp_path, lambda n: {"job": 42},
                                lambda n: {"state": "pending"})
    assert result is not None and getattr(result, "terminal_reason", None) == "hook_stopped"
    nudged = [i for i, r in enumerate(fake.requests) if "You have called " + TOOL in shown(r)]
    assert nudged and nudged[0] >= 2, nudged  # the model's next input carried the nudge
    assert len(ran) < 10 and len(fake.requests) == len(ran)  # stopped: no model call after it


def test_the_bundled_cli_polling_a_job_that_finishes_is_never_nudged(server: Server,
                                                                    tmp_path: Path) -> None:
    fake, result, ran = cli_run(server, tmp_path,
                                lambda n: {"job": 7} if n <= 8 else "The export finished.",
                                lambda n: {"done_pct": n * 12})
    assert result is not None and result.result == "The export finished."
    assert getattr(result, "terminal_reason", None) != "hook_stopped"
    assert len(ran) == 8 and not any("You have called" in shown(r) for r in fake.requests)
