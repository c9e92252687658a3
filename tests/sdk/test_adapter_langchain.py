"""The LangChain / LangGraph adapter with the real packages (langchain 1.5, langgraph 1.2) and
LangChain's own fake chat model, through a running `loopsense serve`: a scripted agent repeating
the same call and result is nudged (the model's next input carries the nudge) and then stopped
(raised out of invoke and ainvoke, or ended gracefully); a polling agent whose job changes is
never nudged; plain LangGraph's ToolNode wrapper stops the graph; importing the SDK never loads
LangChain."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from typing import Any

import pytest

pytest.importorskip("langchain", reason="the langchain extra is not installed")

from langchain.agents import create_agent  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langgraph.graph import START, MessagesState, StateGraph  # noqa: E402
from langgraph.prebuilt import ToolNode, tools_condition  # noqa: E402
from loopsense_sdk import AgentLoopDetected, Client  # noqa: E402
from loopsense_sdk.adapters.langchain import LoopsenseMiddleware, ToolCallWrapper  # noqa: E402

from tests.e2e.server import DEV_KEY, Server  # noqa: E402

STATUS = {"n": 0}


@tool
def export_status(job: int) -> dict[str, Any]:
    """The export job's status."""
    return {"state": "pending"}


@tool
def job_progress(job: int) -> dict[str, Any]:
    """The job's progress: it moves on each time."""
    STATUS["n"] += 1
    return {"done_pct": STATUS["n"] * 10}


class ScriptedModel(GenericFakeChatModel):
    """LangChain's fake chat model with the bind_tools create_agent needs; keeps each input."""

    seen: list[list[Any]] = []

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
        return self

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def calls(name: str, n: int, final: str = "done") -> ScriptedModel:
    script = [AIMessage(content="", tool_calls=[{"name": name, "args": {"job": 42},
                                                  "id": f"c{i}", "type": "tool_call"}])
              for i in range(n)]
    return ScriptedModel(messages=iter([*script, AIMessage(content=final)]), seen=[])


def nudged_inputs(model: ScriptedModel) -> list[int]:
    """The model calls (1-based) whose input carried a loopsense nudge."""
    return [i + 1 for i, messages in enumerate(model.seen)
            if any("[loopsense]" in str(m.content) for m in messages)]


def tracker(server: Server, policy: str = "stop") -> Any:
    run = "lc:" + uuid.uuid4().hex[:12]
    return Client(DEV_KEY, server.url).runs.track(run, agent_id="ari", policy=policy)  # type: ignore[arg-type]


def test_a_looping_agent_is_nudged_then_stopped(server: Server) -> None:
    model = calls("export_status", 20)
    agent = create_agent(model, tools=[export_status],
                         middleware=[LoopsenseMiddleware(tracker(server))])
    with pytest.raises(AgentLoopDetected) as stopped:
        agent.invoke({"messages": [("user", "export job 42")]})
    assert "export_status" in stopped.value.reason
    nudged = nudged_inputs(model)
    assert nudged and nudged[0] == 5  # the 4th identical call's result carried the nudge
    assert len(model.seen) < 10


def test_under_ainvoke_and_ended_gracefully(server: Server) -> None:
    model = calls("export_status", 20)
    agent = create_agent(model, tools=[export_status],
                         middleware=[LoopsenseMiddleware(tracker(server), stop="end")])
    result = asyncio.run(agent.ainvoke({"messages": [("user", "export job 42")]}))
    last = result["messages"][-1]
    assert isinstance(last, AIMessage) and last.content.startswith("[loopsense] stopped:")
    assert nudged_inputs(model)[0] == 5 and len(model.seen) < 10


def test_a_polling_agent_is_never_nudged(server: Server) -> None:
    STATUS["n"] = 0
    model = calls("job_progress", 9, final="The export finished.")
    agent = create_agent(model, tools=[job_progress],
                         middleware=[LoopsenseMiddleware(tracker(server))])
    result = agent.invoke({"messages": [("user", "wait for job 42")]})
    assert result["messages"][-1].content == "The export finished."
    assert nudged_inputs(model) == [] and len(model.seen) == 10


def test_plain_langgraph_tool_node_wrapper_stops_the_graph(server: Server) -> None:
    model = calls("export_status", 20)
    wrapper = ToolCallWrapper(tracker(server))
    graph = StateGraph(MessagesState)
    graph.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    graph.add_node("tools", ToolNode([export_status], wrap_tool_call=wrapper.wrap,
                                     awrap_tool_call=wrapper.awrap))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    with pytest.raises(AgentLoopDetected):
        graph.compile().invoke({"messages": [("user", "export job 42")]})
    assert nudged_inputs(model)[0] == 5


def test_the_sdk_core_never_imports_langchain() -> None:
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, loopsense_sdk; print(sorted(sys.modules))"],
        capture_output=True, text=True, check=True, timeout=60).stdout
    assert "'langchain" not in loaded and "'langgraph" not in loaded
