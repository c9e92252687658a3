"""The OpenAI Agents SDK adapter with the real package (openai-agents 0.24) and its own scripted
model (agents.testing.ScriptedModel: no network, no key), through a running `loopsense serve`:
a scripted agent repeating the same call and result is nudged (the model's next input carries
the nudge) and then stopped (LoopStopped out of Runner.run, unchanged); a polling agent whose
job changes is never nudged; the user's own RunHooks still see every event; importing the SDK
never loads the agents package."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from typing import Any

import pytest

pytest.importorskip("agents", reason="the openai-agents extra is not installed")

from agents import Agent, RunHooks, Runner, function_tool, set_tracing_disabled  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402
from loopsense_sdk import AgentLoopDetected, Client  # noqa: E402
from loopsense_sdk.adapters.openai_agents import LoopsenseHooks, LoopStopped  # noqa: E402

from tests.e2e.server import DEV_KEY, Server  # noqa: E402

set_tracing_disabled(True)
STATUS = {"n": 0, "runs": 0}


@function_tool
def export_status(job: int) -> str:
    """The export job's status."""
    STATUS["runs"] += 1
    return json.dumps({"state": "pending"})


@function_tool
def job_progress(job: int) -> str:
    """The job's progress: it moves on each time."""
    STATUS["n"] += 1
    return json.dumps({"done_pct": STATUS["n"] * 10})


class Counting(RunHooks[Any]):
    """The user's own hooks: the adapter must still call them."""

    def __init__(self) -> None:
        self.events: list[str] = []

    async def on_llm_start(self, context: Any, agent: Any, system_prompt: Any,
                           input_items: Any) -> None:
        self.events.append("llm_start")

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
        self.events.append("tool_end")


def script(name: str, n: int, final: str = "done") -> ScriptedModel:
    steps = [[function_call(name, {"job": 42}, call_id=f"call_{i}")] for i in range(n)]
    return ScriptedModel([*steps, [assistant_message(final)]])


def nudged_inputs(model: ScriptedModel) -> list[int]:
    """The model calls (1-based) whose input carried a loopsense nudge."""
    return [i + 1 for i, call in enumerate(model.calls)
            if "[loopsense]" in json.dumps(call.input, default=str)]


def hooks(server: Server, policy: str = "stop", own: RunHooks[Any] | None = None,
          ) -> LoopsenseHooks:
    run = "oa:" + uuid.uuid4().hex[:12]
    tracker = Client(DEV_KEY, server.url).runs.track(run, agent_id="ari", policy=policy)  # type: ignore[arg-type]
    return LoopsenseHooks(tracker, hooks=own)


def test_a_looping_agent_is_nudged_then_stopped(server: Server) -> None:
    STATUS["runs"] = 0
    model = script("export_status", 20)
    own = Counting()
    loopsense = hooks(server, own=own)
    agent = loopsense.wrap(Agent(name="ari", model=model, tools=[export_status]))
    with pytest.raises(LoopStopped) as stopped:
        asyncio.run(Runner.run(agent, "export job 42", hooks=loopsense, max_turns=30))
    assert isinstance(stopped.value, AgentLoopDetected)
    assert "export_status" in stopped.value.reason
    nudged = nudged_inputs(model)
    assert nudged and nudged[0] == 5  # the 4th identical call's result carried the nudge
    assert nudged == list(range(5, len(model.calls) + 1))  # nudged before stopped
    assert len(model.calls) < 10 and STATUS["runs"] == len(model.calls)  # stopped before call 8
    assert own.events.count("tool_end") == STATUS["runs"]  # the user's hooks still ran
    assert own.events.count("llm_start") == len(model.calls) + 1  # the last one stopped it
    # the nudge was added to the tool's real output (reject_content replaces it)
    last = json.dumps(model.calls[-1].input, default=str)
    assert "pending" in last


def test_a_polling_agent_is_never_nudged(server: Server) -> None:
    STATUS["n"] = 0
    model = script("job_progress", 9, final="The export finished.")
    loopsense = hooks(server)
    agent = loopsense.wrap(Agent(name="ari", model=model, tools=[job_progress]))
    result = asyncio.run(Runner.run(agent, "wait for job 42", hooks=loopsense, max_turns=30))
    assert result.final_output == "The export finished."
    assert nudged_inputs(model) == [] and len(model.calls) == 10
    assert loopsense.tracker.sent == 9


def test_unwrapped_tools_are_reported_from_on_tool_end(server: Server) -> None:
    model = script("export_status", 20)
    loopsense = hooks(server)
    agent = Agent(name="ari", model=model, tools=[export_status])  # no guardrail: no nudge
    with pytest.raises(LoopStopped):
        asyncio.run(Runner.run(agent, "export job 42", hooks=loopsense, max_turns=30))
    assert nudged_inputs(model) == [] and len(model.calls) < 10


def test_the_sdk_core_never_imports_agents() -> None:
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, loopsense_sdk; print(sorted(sys.modules))"],
        capture_output=True, text=True, check=True, timeout=60).stdout
    assert "'agents'" not in loaded and "'openai'" not in loaded
