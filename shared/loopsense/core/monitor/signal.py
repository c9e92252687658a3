"""The answer to a step: the findings, the recommendation (continue, nudge, break) and the
run signal (is_looping, is_stuck, ..., loop_score, confidence).

Recommendation: findings the latest step is part of are fresh evidence. For each, the nudges
already recommended for it (per rule, severity and subject, since the last reset) decide: fewer
than ``nudges_before_break`` -> nudge; a critical one past its nudges -> break; a warning past
its nudges -> nothing more. A step that brings no fresh evidence while findings still stand
(a thought, a message after the repeated call) repeats the last recommendation, uncounted.

Scores: a finding's strength is 0.5..0.69 for a warning and 0.8..0.99 for a critical one,
growing with its count past the threshold that raised it. ``confidence`` is the strongest
finding's; ``loop_score`` combines the loop findings (1 - product of (1 - strength)), kept
below 0.7 while they are all warnings. Both only grow with more evidence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from loopsense.core.monitor import embeddings
from loopsense.core.monitor.config import LOOP_RULES, RULES, STUCK_RULES, MonitorConfig
from loopsense.core.monitor.findings import CRITICAL, Finding, nudge, rationale

Entry = dict[str, Any]
CONTINUE = {"action": "continue"}
WARNING_CEILING = 0.69
NOTHING = "no repetitive pattern in the current segment"


@dataclass(slots=True)  # not frozen: built at every step, and a frozen init costs 4x
class Answer:
    index: int
    findings: list[Finding]
    recommendation: dict[str, Any]
    window: Sequence[Entry]  # the novelty window's entries, for the score when it is read
    drift_score: float | int
    name_tools: bool
    score: float | None = None  # the novelty score, if evaluating the rules needed it
    # The run's flags (the state's ``flagged``, shared: the step's own findings are flagged
    # into it after evaluation), so every answer that shows a signal shows them.
    flagged: Mapping[str, list[Any]] = field(default_factory=dict)

    @property
    def novelty_score(self) -> float:
        """Computed when read: of the steps of a batch, only the last answer's is."""
        if self.score is None:
            self.score = embeddings.window_score(self.window)
        return self.score

    def signals(self) -> dict[str, Any]:
        """The lightweight per-step signals."""
        rules = {f.rule for f in self.findings}
        return {"repeated": bool(rules & LOOP_RULES), "stagnant": bool(rules & STUCK_RULES),
                "drift_score": self.drift_score, "novelty_score": self.novelty_score}

    def signal(self) -> dict[str, Any]:
        """The run signal."""
        rules = {f.rule for f in self.findings}
        loops = [f.strength for f in self.findings if f.rule in LOOP_RULES]
        remaining = 1.0
        for strength in loops:
            remaining *= 1.0 - strength
        loop_score = 1.0 - remaining if loops else 0.0
        if not any(f.severity == CRITICAL for f in self.findings if f.rule in LOOP_RULES):
            loop_score = min(loop_score, WARNING_CEILING)
        strongest = _strongest(self.findings)
        return {
            "is_looping": bool(rules & LOOP_RULES),
            "is_stuck": bool(rules & STUCK_RULES),
            "is_drifting": "drift" in rules,
            "is_novelty_starved": "novelty" in rules,
            "loop_score": round(loop_score, 4),
            "drift_score": self.drift_score,
            "novelty_score": self.novelty_score,
            "confidence": strongest.strength if strongest else 0.0,
            "source": "rule",
            "rationale": rationale(strongest, self.name_tools) if strongest else NOTHING,
            "findings": [f.as_dict(self.name_tools) for f in self.findings],
            "recommendation": self.recommendation,
            **flags(self.flagged),
        }


def flags(flagged: Mapping[str, list[Any]]) -> dict[str, Any]:
    """``first_flagged`` (the first step at which any rule fired, or None) and ``ever_flagged``
    (each rule that fired: its first step and the highest severity it reached, in RULES
    order), from a state's ``flagged``."""
    ever = {rule: {"step": flagged[rule][0], "severity": flagged[rule][1]}
            for rule in RULES if rule in flagged}
    first = min((v["step"] for v in ever.values()), default=None)
    return {"first_flagged": first, "ever_flagged": ever}


def _rank(f: Finding) -> tuple[float, int]:
    return (-f.strength, RULES.index(f.rule))


def _strongest(findings: list[Finding]) -> Finding | None:
    return min(findings, key=_rank) if findings else None


def recommend(state: dict[str, Any], answer: Answer, config: MonitorConfig) -> Answer:
    """``answer`` (from evaluate, for the step just observed) with its recommendation; counts
    the nudges it makes in ``state``."""
    findings = answer.findings
    if not findings:  # most steps: continue, as evaluate left it
        return answer
    index = answer.index
    fresh = [f for f in findings if f.indices and f.indices[-1] == index]
    recommendation: dict[str, Any]
    if not fresh:
        recommendation = state["last"] or CONTINUE
    else:
        allowed = config.integer("nudges_before_break")
        nudges = state["nudges"]
        breaking = [f for f in fresh
                    if f.severity == CRITICAL and nudges.get(f.nudge_key, 0) >= allowed]
        nudging = [f for f in fresh if nudges.get(f.nudge_key, 0) < allowed]
        if breaking:
            top = _strongest(breaking)
            assert top is not None
            recommendation = {"action": "break", "nudge": nudge(top, config.name_tools)}
        elif nudging:
            top = _strongest(nudging)
            assert top is not None
            recommendation = {"action": "nudge", "nudge": nudge(top, config.name_tools)}
            for f in nudging:
                nudges[f.nudge_key] = nudges.get(f.nudge_key, 0) + 1
        else:
            recommendation = CONTINUE
        state["last"] = recommendation
    answer.recommendation = dict(recommendation)
    return answer
