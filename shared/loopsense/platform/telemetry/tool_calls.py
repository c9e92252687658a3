"""The tool-call failure class of streaming telemetry (class ``tool_calls``): the run monitor's
repeated_call and cycle rules (loopsense.core.monitor.repetition) over an execution's
``tool_call`` events, in order, as the run monitor would have seen them arrive.

Each rule is asked after every tool call, over the last ``history_size`` calls, with the
execution's thresholds (repeat_warn, repeat_critical, poll_warn, cycle_window, cycle_repeats:
the tenant's run-monitor settings when the execution started). A finding of either severity
fires once per execution and subject:
- ``tool_calls/repeated_call_<8 hex>``: the key of the repeated ``[name, arguments]`` (the run
  monitor's canonical call key), so every execution stuck on that call lands in one group;
- ``tool_calls/cycle_<8 hex>``: the SHA-256 of the cycle's call keys from its smallest rotation
  (the same cycle entered at another call is the same group).
A tool call without a name (nothing to say which tool repeats), or whose arguments were
redacted, is not counted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from loopsense.core.canonical import CanonicalError
from loopsense.core.monitor.config import DEFAULTS, MonitorConfig
from loopsense.core.monitor.findings import Finding
from loopsense.core.monitor.steps import entry

CLASS = "tool_calls"
PLAYBOOK = "tool_calls"
USED = ("repeat_warn", "repeat_critical", "poll_warn", "cycle_window", "cycle_repeats",
        "history_size")


def _config(thresholds: Mapping[str, Any]) -> MonitorConfig:
    return MonitorConfig(thresholds={name: thresholds.get(name, DEFAULTS[name])
                                     for name in USED})


def _suffix(finding: Finding) -> str:
    if finding.rule == "repeated_call":
        return finding.subject[:8]
    keys = finding.subject.split(":")
    smallest = min(keys[i:] + keys[:i] for i in range(len(keys)))
    return hashlib.sha256(":".join(smallest).encode("ascii")).hexdigest()[:8]


def signatures(events: Sequence[Mapping[str, Any]], thresholds: Mapping[str, Any]) -> list[str]:
    """The tool_calls signatures an execution's events fire, sorted."""
    # Here, not at the top: the cycle rule's search imports numpy, which a telemetry function
    # needs only when an execution is evaluated, not at every cold start (tests/infra/test_layer).
    from loopsense.core.monitor.repetition import cycle, repeated_call

    config = _config(thresholds)
    history = config.integer("history_size")
    entries: list[dict[str, Any]] = []
    found: set[str] = set()
    for index, event in enumerate(events):
        if (event.get("type") != "tool_call" or event.get("redacted")
                or not isinstance(event.get("name"), str)):
            continue
        step: dict[str, Any] = {"kind": "tool_call", "action": event.get("name"),
                                "args": event.get("arguments")}
        if "result" in event:
            step["result"] = event["result"]
        try:
            entries.append(entry(step, index, config))
        except CanonicalError:
            continue  # no canonical form: not comparable, like the run monitor refuses it
        window = entries[-history:]
        for rule in (repeated_call, cycle):
            finding = rule(window, config)
            if finding is not None:
                found.add(f"{CLASS}/{finding.rule}_{_suffix(finding)}")
    return sorted(found)
