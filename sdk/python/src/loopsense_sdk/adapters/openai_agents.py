"""The OpenAI Agents SDK (``pip install "loopsense-sdk[openai-agents]"``; spec/integrations.md,
checked against openai-agents 0.24): run hooks that report each tool call to a run tracker and
apply its policy.

    from agents import Agent, Runner
    from loopsense_sdk import Client
    from loopsense_sdk.adapters.openai_agents import LoopsenseHooks

    tracker = Client().runs.track("run-42", agent_id="ari", policy="stop")
    hooks = LoopsenseHooks(tracker, hooks=my_hooks)   # my_hooks: optional, still called
    result = await Runner.run(hooks.wrap(agent), "export job 42", hooks=hooks)

- ``hooks.wrap(agent)`` gives each function tool a tool **output** guardrail (guardrails attach
  per tool, not per agent). It reports the call with its result; on a nudge it answers
  ``reject_content`` with the tool's output *plus* the nudge (``reject_content`` replaces the
  output, so the original is kept in it): that is what the model reads next. A tool without the
  guardrail (not a function tool, or not wrapped) is reported from ``on_tool_end`` (no nudge).
- With policy ``stop``, a break (after a nudge) ends the run before the next model call:
  ``on_llm_start`` (and ``on_tool_start``) raise ``LoopStopped``, an ``AgentLoopDetected``
  that is also an ``agents.exceptions.AgentsException``, so ``Runner.run`` raises it unchanged
  (a plain exception from a tool step would arrive wrapped in ``UserError``).
- ``hooks=`` of ``Runner.run`` is one slot: the user's own ``RunHooks`` are chained (called
  first, for every event).
- The tracker runs in a thread (bounded by its timeout): the event loop never blocks, and when
  loopsense is slow or down the tool output goes on unchanged.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Any

from agents import (
    Agent,
    FunctionTool,
    RunHooks,
    ToolGuardrailFunctionOutput,
    ToolOutputGuardrail,
)
from agents.exceptions import AgentsException

from loopsense_sdk.tracker import AgentLoopDetected, StepAnswer, Tracker

__all__ = ["LoopStopped", "LoopsenseHooks"]

PREFIX = "[loopsense] "


class LoopStopped(AgentLoopDetected, AgentsException):
    """The stop, raised out of ``Runner.run`` unchanged (an ``AgentsException`` is not
    wrapped by the runner)."""

    def __init__(self, stop: AgentLoopDetected) -> None:
        AgentLoopDetected.__init__(self, stop.answer)
        self.run_data = None  # what AgentsException carries; the runner may fill it in


class LoopsenseHooks(RunHooks[Any]):
    """``Runner.run(..., hooks=LoopsenseHooks(tracker, hooks=yours))``; ``wrap(agent)`` adds
    the per-tool output guardrail that carries the nudge."""

    def __init__(self, tracker: Tracker, *, hooks: RunHooks[Any] | None = None) -> None:
        self.tracker = tracker
        self.hooks = hooks
        self.stopped: AgentLoopDetected | None = None
        self._reported: set[str] = set()  # tool call ids the guardrail already reported
        self.guardrail: ToolOutputGuardrail[Any] = ToolOutputGuardrail(
            guardrail_function=self._check_output, name="loopsense")

    # ---- the tools ---------------------------------------------------------------------------
    def wrap(self, agent: Agent[Any]) -> Agent[Any]:
        """A copy of ``agent`` whose function tools carry the loopsense output guardrail
        (added after their own)."""
        return agent.clone(tools=[self.wrap_tool(tool) for tool in agent.tools])

    def wrap_tool(self, tool: Any) -> Any:
        if not isinstance(tool, FunctionTool):
            return tool
        own = list(tool.tool_output_guardrails or [])
        if self.guardrail in own:
            return tool
        return dataclasses.replace(tool, tool_output_guardrails=[*own, self.guardrail])

    async def _check_output(self, data: Any) -> ToolGuardrailFunctionOutput:
        ctx = data.context
        call_id = getattr(ctx, "tool_call_id", None)
        if call_id:
            self._reported.add(call_id)
        answer = await asyncio.to_thread(self._step, ctx.tool_name, ctx.tool_arguments,
                                         data.output)
        if isinstance(answer, StepAnswer) and answer.inject:
            return ToolGuardrailFunctionOutput.reject_content(
                _with_text(data.output, answer.inject), output_info=answer.action)
        return ToolGuardrailFunctionOutput.allow()

    def _step(self, name: str, arguments: Any, output: Any) -> StepAnswer | AgentLoopDetected:
        try:
            args = json.loads(arguments) if isinstance(arguments, str) and arguments else None
        except ValueError:
            args = arguments  # not JSON: its text is what is compared
        try:
            return self.tracker.tool_call(name, args, result=_plain(output))
        except AgentLoopDetected as stop:
            self.stopped = stop
            return stop

    def _raise_if_stopped(self) -> None:
        if self.stopped is not None:
            raise LoopStopped(self.stopped)

    # ---- RunHooks, each chained to the user's own --------------------------------------------
    async def on_llm_start(self, context: Any, agent: Any, system_prompt: Any,
                           input_items: Any) -> None:
        if self.hooks is not None:
            await self.hooks.on_llm_start(context, agent, system_prompt, input_items)
        self._raise_if_stopped()

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        if self.hooks is not None:
            await self.hooks.on_llm_end(context, agent, response)

    async def on_agent_start(self, context: Any, agent: Any) -> None:
        if self.hooks is not None:
            await self.hooks.on_agent_start(context, agent)

    async def on_agent_end(self, context: Any, agent: Any, output: Any) -> None:
        if self.hooks is not None:
            await self.hooks.on_agent_end(context, agent, output)

    async def on_handoff(self, context: Any, from_agent: Any, to_agent: Any) -> None:
        if self.hooks is not None:
            await self.hooks.on_handoff(context, from_agent, to_agent)

    async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
        if self.hooks is not None:
            await self.hooks.on_tool_start(context, agent, tool)
        self._raise_if_stopped()

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
        if self.hooks is not None:
            await self.hooks.on_tool_end(context, agent, tool, result)
        call_id = getattr(context, "tool_call_id", None)
        if call_id in self._reported:
            self._reported.discard(call_id)
            return
        name = str(getattr(context, "tool_name", None) or getattr(tool, "name", "tool"))
        await asyncio.to_thread(self._step, name, getattr(context, "tool_arguments", None),
                                result)


def _plain(output: Any) -> Any:
    """A tool output as the tracker hashes it: JSON values as they are, anything else as text."""
    if output is None or isinstance(output, str | int | float | bool | list | dict):
        return output
    return str(output)


def _with_text(output: Any, text: str) -> str:
    """What the model reads instead of the output: the output, then the nudge."""
    shown = output if isinstance(output, str) else json.dumps(_plain(output), default=str)
    return f"{shown}\n\n{PREFIX}{text}" if shown else PREFIX + text
