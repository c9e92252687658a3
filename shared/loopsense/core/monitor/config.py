"""What the run monitor applies: its rules, every threshold (default and bounds, the one
definition skills/thresholds.py publishes), per-tool policies and the resolved config.

Pure data: resolving a caller's config against a tenant's settings (and refusing bad values)
is the skills layer's job; the core trusts a MonitorConfig.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

# Every rule, in the order findings are listed (spec/loop_safety.md, Rules).
RULES = ("repeated_call", "cycle", "error_streak", "monologue", "content_loop",
         "repeated_query", "stagnation", "condensation_loop", "drift", "novelty", "similar_call",
         "same_result", "state_revisit", "run_repeated_call")
LOOP_RULES = frozenset({"repeated_call", "cycle", "monologue", "content_loop", "repeated_query",
                        "condensation_loop", "similar_call", "same_result", "state_revisit",
                        "run_repeated_call"})
# Rules of the runs API only: they read the run's other agents (run_view).
STATEFUL_RULES = frozenset({"run_repeated_call"})
STUCK_RULES = frozenset({"error_streak", "stagnation"})

# (name, default, low, high). An int default means an integer threshold.
THRESHOLD_SPECS: tuple[tuple[str, int | float, int | float, int | float], ...] = (
    ("repeat_warn", 4, 2, 100),
    ("repeat_critical", 6, 2, 100),
    ("poll_warn", 15, 2, 1000),
    ("cycle_window", 20, 2, 200),
    ("cycle_repeats", 3, 2, 20),
    ("error_streak", 3, 2, 100),
    ("monologue_limit", 3, 2, 100),
    ("content_chunk_chars", 50, 10, 500),
    ("content_repeats", 10, 2, 100),
    ("stagnation_threshold", 3, 2, 100),
    ("condensation_limit", 10, 2, 100),
    ("drift_threshold", 0.5, 0.01, 2.0),
    ("novelty_window", 5, 2, 100),
    ("novelty_floor", 0.15, 0.0, 1.0),
    ("history_size", 50, 10, 1000),
    ("nudges_before_break", 1, 0, 10),
    ("similar_warn", 4, 2, 100),
    ("similar_critical", 6, 2, 100),
    ("similar_args", 0.5, 0.1, 1.0),
    ("same_result_warn", 4, 2, 100),
    ("revisit_threshold", 3, 2, 1000),
    ("run_repeat_warn", 3, 2, 100),
    # monologue: near-identical messages (word Jaccard, as agent.loops' 0.20 distance), and the
    # run of messages of any text that warns on its own (docs/decisions.md, "monologue").
    ("monologue_similar", 0.8, 0.1, 1.0),
    ("monologue_run", 6, 2, 1000),
)
DEFAULTS: dict[str, int | float] = {name: default for name, default, _, _ in THRESHOLD_SPECS}
# The thresholds a per-tool policy may set for its own calls.
TOOL_THRESHOLDS = ("repeat_warn", "repeat_critical", "poll_warn", "similar_warn",
                   "similar_critical", "same_result_warn", "run_repeat_warn")
REPEAT_THRESHOLDS = ("repeat_warn", "repeat_critical", "poll_warn")  # repeated_call's

# Volatile result fields dropped before hashing, at any depth (canonical, i.e. lowercased).
RESULT_IGNORE_KEYS = frozenset(k.lower() for k in (
    "durationMs", "duration", "elapsed", "timestamp", "time", "ts", "pid", "cwd", "requestId",
    "request_id", "runId", "run_id", "sessionId", "session_id", "messageId", "message_id",
    "traceId", "trace_id"))


@dataclass(frozen=True, slots=True)
class ToolPolicy:
    exempt: bool = False  # never counted by any rule
    poll: bool = False  # always treated as polling: warning at poll_warn, never critical
    thresholds: Mapping[str, int] = field(default_factory=dict)  # TOOL_THRESHOLDS only
    ignore_keys: frozenset[str] = frozenset()  # canonical keys, for args and results
    same_result: bool = False  # any result repeated to differing arguments counts (same_result)


NO_POLICY = ToolPolicy()


@dataclass(frozen=True, slots=True)
class MonitorConfig:
    thresholds: Mapping[str, int | float] = field(default_factory=lambda: dict(DEFAULTS))
    tools: Mapping[str, ToolPolicy] = field(default_factory=dict)
    disabled_rules: frozenset[str] = frozenset()
    reset_on_user_message: bool = True
    # A user message repeating the segment's previous one ("continue") is a reset point too.
    reset_on_repeated_user_message: bool = False
    ignore_keys: frozenset[str] = frozenset()  # canonical keys, for args and results
    objective: tuple[float, ...] | None = None  # the objective embedding (drift)
    # Name tools in rationales and nudges. False for stateless answers, which never return
    # submitted content (a tool's name is the caller's).
    name_tools: bool = True
    # Every threshold resolved once (rules read a dozen per step).
    values: dict[str, int | float] = field(init=False, repr=False, compare=False)
    # The fewest copies of one call that any tool's repeated_call thresholds can flag.
    least_repeat: int = field(init=False, repr=False, compare=False)
    least_similar: int = field(init=False, repr=False, compare=False)  # similar_call
    least_same: int = field(init=False, repr=False, compare=False)  # same_result
    least_streak: int = field(init=False, repr=False, compare=False)  # error_streak, stagnation
    # What a result's hash drops when the tool's policy adds nothing (most calls).
    result_ignore_keys: frozenset[str] = field(init=False, repr=False, compare=False)
    # One wholly new step in a full novelty window scores the floor or above (the score,
    # round(total / window, 4), grows with the total): the window is not novelty-starved.
    one_new_step_suffices: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        resolved = {**DEFAULTS, **self.thresholds}
        values = {name: int(v) if isinstance(DEFAULTS[name], int) else v
                  for name, v in resolved.items()}
        object.__setattr__(self, "values", values)
        for least, names in (("least_repeat", REPEAT_THRESHOLDS),
                             ("least_similar", ("similar_warn", "similar_critical")),
                             ("least_same", ("same_result_warn",))):
            object.__setattr__(self, least, min(
                [int(values[name]) for name in names]
                + [int(v) for p in self.tools.values() for name, v in p.thresholds.items()
                   if name in names]))
        object.__setattr__(self, "least_streak", min(int(values["error_streak"]),
                                                     int(values["stagnation_threshold"])))
        object.__setattr__(self, "result_ignore_keys", self.ignore_keys | RESULT_IGNORE_KEYS)
        object.__setattr__(self, "one_new_step_suffices", round(
            1.0 / values["novelty_window"], 4) >= values["novelty_floor"])

    def value(self, name: str) -> int | float:
        return self.values[name]

    def integer(self, name: str) -> int:
        return self.values[name]  # type: ignore[return-value]  # ints stay ints

    def on(self, rule: str) -> bool:
        return rule not in self.disabled_rules

    def policy(self, action: str | None) -> ToolPolicy:
        return self.tools.get(action, NO_POLICY) if action is not None else NO_POLICY

    def tool_int(self, action: str | None, name: str) -> int:
        own = self.policy(action).thresholds.get(name)
        return int(own) if own is not None else self.integer(name)
