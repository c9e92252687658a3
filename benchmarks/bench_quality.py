"""Precision and recall of the run monitor on the quality corpus (benchmarks/quality/), at its
defaults, beside the peers' rules (identical consecutive tool calls x2, x3, x5).

    .venv/bin/python benchmarks/bench_quality.py

Each trace goes through the run monitor as the runs API applies it (one state per agent, one
view of the run's calls: POST /v1/runs/{id}/steps), step by step. A trace is flagged when a loop
rule (LOOP_RULES: repeated_call, cycle, ..., run_repeated_call) fires at any step (ever_flagged;
the stuck rules, error_streak and stagnation, and novelty and drift are not loop verdicts). The
peers: a tool call identical (tool and canonical arguments) to the agent's previous N-1 tool
calls, other steps between them aside, as CrewAI (x2), Roo Code / OpenCode / AG2 (x3) and
Gemini CLI / Cline (x5) refuse or warn.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "shared"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from loopsense.core.canonical import canonical_json  # noqa: E402
from loopsense.core.monitor.config import LOOP_RULES  # noqa: E402
from loopsense.core.monitor.monitor import new_state, observe  # noqa: E402
from loopsense.core.monitor.run_view import agent_tag, new_view  # noqa: E402
from loopsense.skills.run_monitor import resolve_config  # noqa: E402

CORPUS = ROOT / "benchmarks" / "quality" / "corpus.json"


def loopsense_flags(steps: list[dict[str, Any]]) -> bool:
    config = resolve_config({}, {}, "config")
    states: dict[str, dict[str, Any]] = {}
    view = new_view()
    for step in steps:
        agent = step["agentId"]
        state = states.setdefault(agent, new_state())
        _, answer = observe(state, step, config, view=view, agent=agent_tag(agent))
        if any(f.rule in LOOP_RULES for f in answer.findings):
            return True
    return False


def consecutive(n: int) -> Callable[[list[dict[str, Any]]], bool]:
    def flags(steps: list[dict[str, Any]]) -> bool:
        last: dict[str, tuple[str, int]] = {}
        for step in steps:
            if step["kind"] != "tool_call":
                continue
            key = canonical_json([step["action"], step.get("args")])
            seen, count = last.get(step["agentId"], ("", 0))
            count = count + 1 if key == seen else 1
            last[step["agentId"]] = (key, count)
            if count >= n:
                return True
        return False
    return flags


RULES: dict[str, Callable[[list[dict[str, Any]]], bool]] = {
    "loopsense (defaults)": loopsense_flags, "identical x2 (CrewAI)": consecutive(2),
    "identical x3 (AG2, Roo Code, OpenCode)": consecutive(3),
    "identical x5 (Gemini CLI, Cline)": consecutive(5)}


def figures(traces: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per rule: flagged traces per shape, precision, recall."""
    out = {}
    for name, rule in RULES.items():
        per_shape: dict[str, list[int]] = {}
        tp = fp = fn = 0
        for trace in traces:
            hit = rule(trace["steps"])
            shape = per_shape.setdefault(trace["shape"], [0, 0])
            shape[0] += hit
            shape[1] += 1
            looping = trace["label"] == "looping"
            tp += hit and looping
            fp += hit and not looping
            fn += looping and not hit
        out[name] = {"shapes": per_shape, "precision": tp / (tp + fp) if tp + fp else 1.0,
                     "recall": tp / (tp + fn) if tp + fn else 1.0}
    return out


def main() -> int:
    data = json.loads(CORPUS.read_text())
    traces = data["traces"]
    labels = {t["shape"]: t["label"] for t in traces}
    result = figures(traces)
    names = list(RULES)
    print(f"{len(traces)} traces, {sum(t['label'] == 'looping' for t in traces)} looping "
          f"(seed {data['seed']})\n")
    print(f"{'shape':24} {'label':8} " + " ".join(f"{n[:22]:>22}" for n in names))
    for shape, label in labels.items():
        cells = []
        for name in names:
            hit, total = result[name]["shapes"][shape]
            cells.append(f"{hit / total:>22.2f}")
        kind = "recall" if label == "looping" else "flagged"
        print(f"{shape:24} {kind:8} " + " ".join(cells))
    for figure in ("precision", "recall"):
        print(f"{'overall ' + figure:33} " + " ".join(f"{result[n][figure]:>22.3f}"
                                                       for n in names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
