"""The Claude Agent SDK (``pip install "loopsense-sdk[claude]"``; spec/integrations.md, checked
against claude-agent-sdk 0.2): hook callbacks that report each tool call to a run tracker and
apply its policy.

    from claude_agent_sdk import ClaudeAgentOptions, query
    from loopsense_sdk import Client
    from loopsense_sdk.adapters.claude import loopsense_hooks

    tracker = Client().runs.track("run-42", agent_id="claude", policy="stop")
    options = ClaudeAgentOptions(hooks=loopsense_hooks(tracker))

- ``PostToolUse`` reports the call with its result; a nudge is given to the model as the hook's
  ``additionalContext``. Failed calls reach only ``PostToolUseFailure``: reported as errors (the
  error-streak rule), their nudge given the same way.
- With policy ``stop``, a break (after a nudge) answers ``{"continue_": False, "stopReason":
  reason}``: the run ends (``terminal_reason == "hook_stopped"``), and ``PreToolUse`` denies any
  call still coming. A deny alone would only block that call, and a raise in a hook fails open,
  so neither is used to stop.
- The hooks run the tracker in a thread (bounded by its timeout): the SDK's event loop never
  blocks, and when loopsense is slow or down the hook answers ``{}`` (the call goes on).
"""

from __future__ import annotations

import asyncio
from typing import Any

from claude_agent_sdk import HookMatcher

from loopsense_sdk.tracker import AgentLoopDetected, StepAnswer, Tracker

__all__ = ["ClaudeHooks", "loopsense_hooks"]


class ClaudeHooks:
    """The three hook callbacks (plain ``async (input, tool_use_id, context) -> dict``)."""

    def __init__(self, tracker: Tracker) -> None:
        self.tracker = tracker
        self.stopped: AgentLoopDetected | None = None

    async def pre_tool_use(self, data: Any, tool_use_id: str | None, context: Any,
                           ) -> dict[str, Any]:
        if self.stopped is None:
            return {}
        reason = self.stopped.reason
        return {"continue_": False, "stopReason": reason,
                "hookSpecificOutput": {"hookEventName": "PreToolUse",
                                       "permissionDecision": "deny",
                                       "permissionDecisionReason": reason}}

    async def post_tool_use(self, data: Any, tool_use_id: str | None, context: Any,
                            ) -> dict[str, Any]:
        answer = await asyncio.to_thread(self._step, data, data.get("tool_response"), False)
        return self._output("PostToolUse", answer)

    async def post_tool_use_failure(self, data: Any, tool_use_id: str | None, context: Any,
                                    ) -> dict[str, Any]:
        answer = await asyncio.to_thread(self._step, data, {"error": data.get("error")}, True)
        return self._output("PostToolUseFailure", answer)

    def _step(self, data: Any, result: Any, failed: bool) -> StepAnswer | AgentLoopDetected:
        try:
            return self.tracker.tool_call(str(data.get("tool_name", "")), data.get("tool_input"),
                                          result=result, outcome="error" if failed else None)
        except AgentLoopDetected as stop:
            return stop

    def _output(self, event: str, answer: StepAnswer | AgentLoopDetected) -> dict[str, Any]:
        if isinstance(answer, AgentLoopDetected):
            self.stopped = answer
            return {"continue_": False, "stopReason": answer.reason}
        if answer.inject:
            return {"hookSpecificOutput": {"hookEventName": event,
                                           "additionalContext": answer.inject}}
        return {}


def loopsense_hooks(tracker: Tracker) -> dict[str, list[HookMatcher]]:
    """``ClaudeAgentOptions(hooks=...)``: the tracker on every tool (matcher None)."""
    hooks = ClaudeHooks(tracker)
    return {"PreToolUse": [HookMatcher(hooks=[hooks.pre_tool_use])],  # type: ignore[list-item]
            "PostToolUse": [HookMatcher(hooks=[hooks.post_tool_use])],  # type: ignore[list-item]
            "PostToolUseFailure": [HookMatcher(
                hooks=[hooks.post_tool_use_failure])]}  # type: ignore[list-item]
