"""A finding, its strength, and the words for it: the rationale (one sentence naming what
repeated and how often) and the nudge (what an orchestrator can tell the agent). Neither ever
quotes arguments, results or texts; tools are named only when the config allows it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

WARNING, CRITICAL = "warning", "critical"
# Strength (confidence) tiers: warnings stay in [0.5, 0.69), criticals in [0.8, 0.99); both
# grow with the count past the threshold that raised them.
_BASE = {WARNING: 0.5, CRITICAL: 0.8}
_SPAN = 0.19


@dataclass(frozen=True, slots=True)
class Finding:
    rule: str
    severity: str
    count: int
    indices: list[int]
    threshold: int  # the count that raised it (strength grows from here)
    subject: str = ""  # what repeated (a key): nudges are counted per rule, severity, subject
    tool: str | None = None  # the tool's name, for words only
    first: int = 0  # the index of the first step involved, to refer to an unnamed tool
    facts: dict[str, Any] = field(default_factory=dict)  # e.g. the cycle length

    @property
    def strength(self) -> float:
        ratio = self.threshold / self.count if self.count > 0 else 1.0
        return round(_BASE[self.severity] + _SPAN * max(0.0, 1.0 - ratio), 4)

    @property
    def nudge_key(self) -> str:
        return f"{self.rule}:{self.severity}:{self.subject}"

    def as_dict(self, name_tools: bool) -> dict[str, Any]:
        return {"rule": self.rule, "severity": self.severity, "count": self.count,
                "rationale": rationale(self, name_tools), "stepIndices": self.indices}


def _tool(f: Finding, name_tools: bool) -> str:
    if name_tools and f.tool is not None:
        return f"tool {f.tool}"
    return f"the tool of step {f.first}"


def _called(f: Finding, name_tools: bool) -> str:
    return f.tool if name_tools and f.tool is not None else "this tool"


def rationale(f: Finding, name_tools: bool) -> str:
    n, tool = f.count, _tool(f, name_tools)
    if f.rule == "repeated_call":
        if f.severity == CRITICAL:
            return f"{tool} called {n} times with identical arguments and identical results"
        if f.facts.get("polling"):
            return (f"{tool} called {n} times with identical arguments and a different result "
                    "each time (polling)")
        return f"{tool} called {n} times with identical arguments"
    if f.rule == "cycle":
        same = " with identical results" if f.severity == CRITICAL else ""
        return (f"a cycle of {f.facts['length']} tool calls repeated {n} times back to back"
                f"{same}")
    if f.rule == "error_streak":
        if f.severity == CRITICAL:
            return f"{tool} failed {n} times in a row"
        return f"the last {n} tool calls failed"
    if f.rule == "stagnation":
        return f"the last {n} actions had negative outcomes"
    if f.rule == "monologue":
        same = " identical" if f.severity == CRITICAL else ""
        return f"{n}{same} messages in a row without a tool call"
    if f.rule == "content_loop":
        return (f"a chunk of {f.facts['chars']} characters recurred {n} times in one streamed "
                "message")
    if f.rule == "repeated_query":
        return f"the same query sent {n} times"
    if f.rule == "condensation_loop":
        return f"the context was condensed {n} times with at most one step between"
    if f.rule == "drift":
        return (f"the last {n} steps are at cosine distance {f.facts['score']} from the "
                "objective")
    return f"the last {n} steps had novelty {f.facts['score']}"  # novelty


def nudge(f: Finding, name_tools: bool) -> str:
    n, tool = f.count, _called(f, name_tools)
    if f.rule == "repeated_call":
        if f.severity == CRITICAL:
            return (f"You have called {tool} {n} times with the same arguments and got the same "
                    "result. Do not call it again with these arguments; try a different approach "
                    "or report that you are blocked.")
        return (f"You have called {tool} {n} times with the same arguments. If this is not "
                "making progress, try a different approach.")
    if f.rule == "cycle":
        return (f"You are repeating the same sequence of {f.facts['length']} tool calls ({n} "
                "times). Break the cycle: try a different approach or report that you are "
                "blocked.")
    if f.rule in ("error_streak", "stagnation"):
        return (f"Your last {n} actions failed. Stop retrying; read the errors, change the "
                "approach, or report that you are blocked.")
    if f.rule == "monologue":
        return (f"You have written {n} messages without acting. Take a concrete action or "
                "report that you are blocked.")
    if f.rule == "content_loop":
        return "Your output is repeating itself. Stop repeating and continue or finish the answer."
    if f.rule == "repeated_query":
        return (f"You have sent the same query {n} times. Use the answer you already have or "
                "ask something different.")
    if f.rule == "condensation_loop":
        return (f"Your context has been condensed {n} times in a row. Load less into context and "
                "work in smaller steps.")
    if f.rule == "drift":
        return "Your recent steps are drifting away from the objective. Re-read it and refocus."
    return ("Your recent steps surface nothing new. Try a different approach or report what you "
            "have found.")
