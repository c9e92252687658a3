"""LangChain 1.x and LangGraph (``pip install "loopsense-sdk[langchain]"``): each tool call of an
agent becomes a tracker step, and the tracker's policy is applied the way LangChain users expect
(spec/integrations.md; checked against langchain 1.5 / langgraph 1.2):

    from langchain.agents import create_agent
    from loopsense_sdk import Client
    from loopsense_sdk.adapters.langchain import LoopsenseMiddleware

    tracker = Client().runs.track("run-42", agent_id="ari", policy="stop")
    agent = create_agent(model, tools, middleware=[LoopsenseMiddleware(tracker), ...])

- the tool still runs, so its result is compared (polling is not a loop); on a nudge the nudge
  is appended to that tool's ToolMessage, which is what the model reads next;
- with policy ``stop``, ``AgentLoopDetected`` propagates out of ``invoke``/``ainvoke`` (after a
  nudge); ``stop="end"`` ends the run gracefully instead: the next ``before_model`` jumps to the
  end with an AIMessage giving the reason (``Command(goto=END)`` from a tool wrapper does not
  stop a create_agent loop, so it is not used);
- both ``wrap_tool_call`` and ``awrap_tool_call`` are implemented (a sync-only hook raises
  NotImplementedError under ``ainvoke``); the async one runs the tracker in a thread, so the
  event loop is never blocked (the tracker's own timeout bounds it);
- text-only model turns are ``message`` steps (the monologue rule).

Put loopsense **first** in ``middleware=[...]``: a retry or tool-error middleware listed before it
wraps it and turns its stop into a tool error that the agent then retries.

Plain LangGraph (no create_agent): ``ToolNode(tools, wrap_tool_call=w.wrap, awrap_tool_call=
w.awrap)`` with ``w = ToolCallWrapper(tracker)``; a stop raises out of the graph (a callback's
raise would be swallowed, and ``recursion_limit`` is no backstop).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, hook_config
from langchain_core.messages import AIMessage, ToolMessage

from loopsense_sdk.tracker import AgentLoopDetected, StepAnswer, Tracker

__all__ = ["LoopsenseMiddleware", "ToolCallWrapper"]

PREFIX = "[loopsense] "


class ToolCallWrapper:
    """A tool call wrapper (``request, handler -> ToolMessage``) that reports the call with its
    result and applies the policy: for LangGraph's ``ToolNode`` and for the middleware."""

    def __init__(self, tracker: Tracker) -> None:
        self.tracker = tracker
        self.stopped: AgentLoopDetected | None = None  # set instead of raising (stop="end")
        self.raise_stop = True

    def wrap(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        result = handler(request)
        return self._apply(result, self._report(request, result))

    async def awrap(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        result = await handler(request)
        answer = await asyncio.to_thread(self._report, request, result)
        return self._apply(result, answer)

    def _report(self, request: Any, result: Any) -> StepAnswer | AgentLoopDetected:
        call = request.tool_call
        content = getattr(result, "content", None)
        failed = getattr(result, "status", None) == "error"
        try:
            return self.tracker.tool_call(call["name"], call.get("args"), result=content,
                                          outcome="error" if failed else None)
        except AgentLoopDetected as stop:
            return stop

    def _apply(self, result: Any, answer: StepAnswer | AgentLoopDetected) -> Any:
        if isinstance(answer, AgentLoopDetected):
            if self.raise_stop:
                raise answer
            self.stopped = answer
            return _with_text(result, answer.reason)
        if answer.inject and isinstance(result, ToolMessage):
            return _with_text(result, answer.inject)
        return result


def _with_text(result: Any, text: str) -> Any:
    """The ToolMessage with ``text`` appended to what the tool returned (kept as it was)."""
    if not isinstance(result, ToolMessage):
        return result
    content = result.content
    if isinstance(content, str):
        new: Any = f"{content}\n\n{PREFIX}{text}" if content else PREFIX + text
    else:
        new = [*content, {"type": "text", "text": PREFIX + text}]
    return result.model_copy(update={"content": new})


class LoopsenseMiddleware(AgentMiddleware):
    """The create_agent middleware. ``stop``: ``"raise"`` (default: ``AgentLoopDetected`` out of
    ``invoke``) or ``"end"`` (the run ends with an AIMessage giving the reason)."""

    def __init__(self, tracker: Tracker, *, stop: str = "raise") -> None:
        if stop not in ("raise", "end"):
            raise ValueError('stop must be "raise" or "end"')
        super().__init__()
        self.tracker = tracker
        self._tools = ToolCallWrapper(tracker)
        self._tools.raise_stop = stop == "raise"

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        return self._tools.wrap(request, handler)

    async def awrap_tool_call(self, request: Any,
                              handler: Callable[[Any], Awaitable[Any]]) -> Any:
        return await self._tools.awrap(request, handler)

    @hook_config(can_jump_to=["end"])
    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        stopped = self._tools.stopped
        if stopped is None:
            return None
        self._tools.stopped = None
        return {"jump_to": "end", "messages": [AIMessage(content=PREFIX + "stopped: "
                                                         + stopped.reason)]}

    @hook_config(can_jump_to=["end"])
    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.before_model(state, runtime)

    def after_model(self, state: Any, runtime: Any) -> None:
        self._message(state)

    async def aafter_model(self, state: Any, runtime: Any) -> None:
        await asyncio.to_thread(self._message, state)

    def _message(self, state: Any) -> None:
        last = state["messages"][-1] if state.get("messages") else None
        if isinstance(last, AIMessage) and not last.tool_calls and isinstance(last.content, str) \
                and last.content:
            try:
                self.tracker.message(last.content)
            except AgentLoopDetected as stop:  # talking in circles: stop as a tool loop does
                if self._tools.raise_stop:
                    raise
                self._tools.stopped = stop
