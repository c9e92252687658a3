"""Benchmark for agent.run_monitor and the run monitor core.

Run from the repository root:

    .venv/bin/python benchmarks/bench_run_monitor.py           # full run (under half a minute)
    .venv/bin/python benchmarks/bench_run_monitor.py --quick   # smoke run (a few seconds)

1. Skill call: ``jsonio.dumps(run(jsonio.loads(body)))`` vs ``json.loads(body)`` on the same
   5,000-step request (tool calls with arguments, results and outcomes; messages, thoughts,
   LLM calls). Target: <= 10x, as the median over rounds of each round's ratio (both timed back
   to back; the ratios of the medians and of the minimums are printed too). Broken down into
   parse+validate and the steps.
2. Per-step cost of the core (``observe``) after 10, 1,000 and 10,000 prior steps, history_size
   at its default (50): the next 200 steps of the same run, from the stored (JSON) state. Target:
   flat (the 10,000 case within 1.5x of the 10 case).

Deterministic inputs (fixed seeds); only the timings vary. Cases are interleaved round by round
(benchmarks/harness.py), so a noisy neighbour slows all of them alike.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "shared"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from benchmarks.harness import measure, paired_ratio, table, verdict  # noqa: E402
from loopsense import jsonio  # noqa: E402
from loopsense.core.monitor.monitor import new_state, observe  # noqa: E402
from loopsense.skills import run_monitor  # noqa: E402

N_STEPS = 5_000
SEED = 20_261_130
SKILL_TARGET = 10.0
FLAT_TARGET = 1.5
NEXT_STEPS = 200
BASELINE = "json.loads(body) (baseline)"


def trace(n: int, seed: int = SEED) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    tools = ["read_file", "search", "run_tests", "list_dir", "fetch_url", "write_file"]
    steps: list[dict[str, Any]] = []
    for _ in range(n):
        r = rng.random()
        if r < 0.7:
            steps.append({
                "kind": "tool_call", "action": rng.choice(tools),
                "args": {"path": f"src/module_{rng.randint(0, 300)}.py",
                         "line": rng.randint(0, 500), "flags": ["--quiet"]},
                "result": {"ok": True, "lines": rng.randint(0, 900),
                           "durationMs": rng.randint(1, 90), "summary": "x" * rng.randint(0, 80)},
                "outcome": rng.choice(["positive", "neutral", "negative"])})
        elif r < 0.8:
            steps.append({"kind": "message", "text": f"Looking at module {rng.randint(0, 300)}."})
        elif r < 0.9:
            steps.append({"kind": "thought", "text": "Next, the tests."})
        else:
            steps.append({"kind": "llm_call", "model": "m",
                          "text": f"summarize file {rng.randint(0, 300)}"})
    return steps


def skill_call(quick: bool) -> tuple[str, bool]:
    body = json.dumps({"steps": trace(N_STEPS)}).encode()
    raw = json.loads(body)
    answer = run_monitor.run(raw)
    print(f"\n1. Skill call: body {len(body):,} bytes, {N_STEPS:,} steps; answer: "
          f"{len(answer['timeline'])} steps with findings, action "
          f"{answer['recommendation']['action']}")
    parsed = run_monitor.parse(raw)

    def steps_only() -> None:
        state = new_state()
        for s in parsed[0].steps:
            observe(state, s, parsed[1])

    cases = {
        BASELINE: lambda: json.loads(body),
        "whole skill call (loads + run + dumps)":
            lambda: jsonio.dumps(run_monitor.run(jsonio.loads(body))),
        "  parse(): size check + validation": lambda: run_monitor.parse(json.loads(body)),
        "  the steps through observe()": steps_only,
    }
    times = measure(cases, reps=3 if quick else 15, warmup=1)
    table("   medians over interleaved rounds", list(times.items()), BASELINE)
    whole, base = times["whole skill call (loads + run + dumps)"], times[BASELINE]
    ratio = paired_ratio(whole, base)
    print(f"   whole call / json.loads: median of the rounds' ratios {ratio:.2f}x, ratio of "
          f"medians {statistics.median(whole) / statistics.median(base):.2f}x, of minimums "
          f"{min(whole) / min(base):.2f}x")
    return verdict(f"skill call <= {SKILL_TARGET:g}x json.loads (median of the rounds' ratios)",
                   ratio <= SKILL_TARGET, f"{ratio:.2f}x"), ratio <= SKILL_TARGET


def per_step(quick: bool) -> tuple[str, bool]:
    priors = (10, 1_000, 10_000)
    steps = trace(max(priors) + NEXT_STEPS, SEED + 1)
    config = run_monitor.parse({"steps": [{"kind": "thought"}]})[1]
    saved = {}
    state = new_state()
    done = 0
    for prior in priors:
        for s in steps[done:prior]:
            observe(state, s, config)
        done = prior
        saved[prior] = json.dumps(state)
    print(f"\n2. Core per step: the next {NEXT_STEPS} steps after N prior steps "
          f"(stored state: {', '.join(f'{len(saved[p]):,} B' for p in priors)})")
    rounds = 5 if quick else 25
    results: dict[int, list[float]] = {p: [] for p in priors}
    for _ in range(rounds):
        for prior in priors:
            state = json.loads(saved[prior])
            nxt = steps[prior:prior + NEXT_STEPS]
            t0 = time.perf_counter()
            for s in nxt:
                observe(state, s, config)
            results[prior].append((time.perf_counter() - t0) / NEXT_STEPS)
    base = statistics.median(results[priors[0]])
    print(f"   {'prior steps':>12} {'median us/step':>15} {'p95 us/step':>12} {'x 10 prior':>11}")
    for prior in priors:
        values = sorted(results[prior])
        med = statistics.median(values)
        high = values[int(0.95 * (len(values) - 1))]
        print(f"   {prior:>12,} {med * 1e6:>15.1f} {high * 1e6:>12.1f} {med / base:>10.2f}x")
    worst = statistics.median(results[priors[-1]]) / base
    return verdict(f"per-step cost flat (10,000 prior within {FLAT_TARGET}x of 10)",
                   worst <= FLAT_TARGET, f"{worst:.2f}x"), worst <= FLAT_TARGET


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    quick = parser.parse_args().quick
    lines = [skill_call(quick)[0], per_step(quick)[0]]
    print("\nverdicts:\n" + "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
