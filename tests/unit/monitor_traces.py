"""Trace builders for the run monitor's tests (steps as the skill and the runs API take them)."""

from __future__ import annotations

import json
from typing import Any

from loopsense.core.monitor.config import DEFAULTS, TOOL_THRESHOLDS, MonitorConfig, ToolPolicy
from loopsense.core.monitor.monitor import new_state, observe
from loopsense.core.monitor.signal import Answer


def call(action: str, args: Any = None, result: Any = None, outcome: str | None = None,
         **extra: Any) -> dict[str, Any]:
    step: dict[str, Any] = {"kind": "tool_call", "action": action, "args": args or {}}
    if result is not None:
        step["result"] = result
    if outcome is not None:
        step["outcome"] = outcome
    step.update(extra)
    return step


def say(text: str) -> dict[str, Any]:
    return {"kind": "message", "text": text}


def chunk(text: str) -> dict[str, Any]:
    return {"kind": "text_chunk", "text": text}


def step(kind: str, **fields: Any) -> dict[str, Any]:
    return {"kind": kind, **fields}


def distinct_calls(n: int, start: int = 0) -> list[dict[str, Any]]:
    return [call("read_file", {"path": f"src/file_{i}.py"}, {"lines": i}) for i in
            range(start, start + n)]


def config(tools: dict[str, dict[str, Any]] | None = None, disabled: tuple[str, ...] = (),
           objective: list[float] | None = None, reset_on_user_message: bool = True,
           reset_on_repeated_user_message: bool = False, **thresholds: Any) -> MonitorConfig:
    policies = {
        name: ToolPolicy(exempt=p.get("exempt", False), poll=p.get("poll", False),
                         thresholds={k: v for k, v in p.items() if k in TOOL_THRESHOLDS},
                         same_result=p.get("same_result", False),
                         ignore_keys=frozenset(k.lower() for k in p.get("ignore_keys", ())))
        for name, p in (tools or {}).items()}
    return MonitorConfig(thresholds={**DEFAULTS, **thresholds}, tools=policies,
                         disabled_rules=frozenset(disabled), reset_on_user_message=
                         reset_on_user_message,
                         reset_on_repeated_user_message=reset_on_repeated_user_message,
                         objective=tuple(objective) if objective else None)


def answers(steps: list[dict[str, Any]], cfg: MonitorConfig | None = None,
            round_trip: bool = False) -> list[Answer]:
    """The answer after every step; with ``round_trip`` the state goes through JSON between
    steps, as the stateful API stores it."""
    cfg = cfg or config()
    state = new_state()
    out = []
    for s in steps:
        if round_trip:
            state = json.loads(json.dumps(state))
        state, answer = observe(state, s, cfg)
        out.append(answer)
    return out


def last(steps: list[dict[str, Any]], cfg: MonitorConfig | None = None) -> Answer:
    return answers(steps, cfg)[-1]


def rules(answer: Answer) -> dict[str, str]:
    """rule -> severity of the answer's findings."""
    return {f.rule: f.severity for f in answer.findings}


def ever(steps: list[dict[str, Any]], cfg: MonitorConfig | None = None) -> dict[str, set[str]]:
    """rule -> every severity it reached at any step."""
    seen: dict[str, set[str]] = {}
    for answer in answers(steps, cfg):
        for f in answer.findings:
            seen.setdefault(f.rule, set()).add(f.severity)
    return seen
