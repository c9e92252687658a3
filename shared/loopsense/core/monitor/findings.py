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


# Words per (rule, variant): the variant is the severity, or (warnings) "polling" or "similar".
# Fields: {n} the count, {tool} ("tool X" or "the tool of step 3"), {called} ("X" or "this
# tool"), and the facts.
RATIONALES = {
    ("repeated_call", CRITICAL): "{tool} called {n} times with identical arguments and "
                                 "identical results",
    ("repeated_call", "polling"): "{tool} called {n} times with identical arguments and a "
                                  "different result each time (polling)",
    ("repeated_call", WARNING): "{tool} called {n} times with identical arguments",
    ("cycle", CRITICAL): "a cycle of {length} tool calls repeated {n} times back to back with "
                         "identical results",
    ("cycle", WARNING): "a cycle of {length} tool calls repeated {n} times back to back",
    ("error_streak", CRITICAL): "{tool} failed {n} times in a row",
    ("error_streak", WARNING): "the last {n} tool calls failed",
    ("stagnation", WARNING): "the last {n} actions had negative outcomes",
    ("monologue", CRITICAL): "{n} identical messages in a row without a tool call",
    ("monologue", WARNING): "{n} messages in a row without a tool call",
    ("monologue", "similar"): "{n} near-identical messages without a tool call",
    ("content_loop", CRITICAL): "a chunk of {chars} characters recurred {n} times in one "
                                "streamed message",
    ("repeated_query", WARNING): "the same query sent {n} times",
    ("condensation_loop", CRITICAL): "the context was condensed {n} times with at most one step "
                                     "between",
    ("drift", WARNING): "the last {n} steps are at cosine distance {score} from the objective",
    ("novelty", WARNING): "the last {n} steps had novelty {score}",
    ("similar_call", CRITICAL): "{tool} called {n} times with near-identical arguments and "
                                "identical results",
    ("similar_call", WARNING): "{tool} called {n} times with near-identical arguments and "
                               "results that add nothing",
    ("same_result", WARNING): "{tool} gave the same empty or failed result {n} times to "
                              "different arguments",
    ("state_revisit", CRITICAL): "the same state checkpointed {n} times with nothing changed "
                                 "between",
    ("state_revisit", WARNING): "the same state checkpointed {n} times with no new state "
                                "between",
    ("run_repeated_call", WARNING): "{tool} called {n} times with identical arguments by "
                                    "{agents} agents of this run",
}
_FAILED = ("Your last {n} actions failed. Stop retrying; read the errors, change the approach, "
           "or report that you are blocked.")
NUDGES = {
    ("repeated_call", CRITICAL): "You have called {called} {n} times with the same arguments and "
                                 "got the same result. Do not call it again with these "
                                 "arguments; try a different approach or report that you are "
                                 "blocked.",
    ("repeated_call", WARNING): "You have called {called} {n} times with the same arguments. If "
                                "this is not making progress, try a different approach.",
    ("cycle", None): "You are repeating the same sequence of {length} tool calls ({n} times). "
                     "Break the cycle: try a different approach or report that you are blocked.",
    ("error_streak", None): _FAILED,
    ("stagnation", None): _FAILED,
    ("monologue", None): "You have written {n} messages without acting. Take a concrete action "
                         "or report that you are blocked.",
    ("content_loop", None): "Your output is repeating itself. Stop repeating and continue or "
                            "finish the answer.",
    ("repeated_query", None): "You have sent the same query {n} times. Use the answer you "
                              "already have or ask something different.",
    ("condensation_loop", None): "Your context has been condensed {n} times in a row. Load less "
                                 "into context and work in smaller steps.",
    ("drift", None): "Your recent steps are drifting away from the objective. Re-read it and "
                     "refocus.",
    ("novelty", None): "Your recent steps surface nothing new. Try a different approach or "
                       "report what you have found.",
    ("similar_call", None): "You have called {called} {n} times with nearly the same arguments "
                            "and learned nothing new. Rewording will not help; try a different "
                            "approach or report that you are blocked.",
    ("same_result", None): "{Called} has given the same empty or failed answer {n} times. Stop "
                           "asking it variations; use another source or report what is "
                           "missing.",
    ("state_revisit", None): "You have come back to the same state {n} times without getting "
                             "anywhere new. Try a different approach or report that you are "
                             "blocked.",
    ("run_repeated_call", None): "The agents of this run have called {called} {n} times with "
                                 "the same arguments and got the same result. Use the result "
                                 "already found (share it between agents) instead of calling "
                                 "it again.",
}


def _fields(f: Finding, name_tools: bool) -> dict[str, Any]:
    named = name_tools and f.tool is not None
    return {"n": f.count, "tool": f"tool {f.tool}" if named else f"the tool of step {f.first}",
            "called": f.tool if named else "this tool",
            "Called": f"Tool {f.tool}" if named else "This tool", **f.facts}


def rationale(f: Finding, name_tools: bool) -> str:
    variant = f.severity
    if variant == WARNING and f.facts:
        variant = "polling" if f.facts.get("polling") else "similar" if f.facts.get(
            "similar") else variant
    return RATIONALES[(f.rule, variant)].format(**_fields(f, name_tools))


def nudge(f: Finding, name_tools: bool) -> str:
    template = NUDGES.get((f.rule, f.severity)) or NUDGES[(f.rule, None)]
    return template.format(**_fields(f, name_tools))
