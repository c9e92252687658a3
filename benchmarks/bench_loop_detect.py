"""Benchmark for agent.loop_detect: the cycle search and the whole skill call.

Run from the repository root:

    .venv/bin/python benchmarks/bench_loop_detect.py           # full run (about 30 s)
    .venv/bin/python benchmarks/bench_loop_detect.py --quick   # smoke run (a few seconds)

Three parts, each compared with a baseline timed in the same process, on the same input,
interleaved round by round (so a noisy neighbour slows both sides alike):

1. Core search: ``find_cycle`` (numpy) vs ``tests/naive_cycles.naive_find_cycle`` (pure Python)
   on 5,000 loop-free events, window 200, repeatThreshold 3. Target: speed-up >= 30x.
2. Skill call: ``jsonio.dumps(run(jsonio.loads(body)))`` vs ``json.loads(body)`` on the same
   request bytes. Target: ratio of medians <= 8x. Broken down into its stages.
3. The same skill call on a trace whose loop starts early (for information).

Everything is deterministic (fixed seeds); only the timings vary between runs.
See benchmarks/README.md for what each figure means.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "shared"):  # tests.naive_cycles, and loopsense without installing
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import numpy as np  # noqa: E402
import pydantic  # noqa: E402

from benchmarks.harness import measure, paired_ratio, table, verdict  # noqa: E402
from loopsense import jsonio  # noqa: E402
from loopsense.core.cycles import find_cycle, find_cycle_ids, symbol_ids  # noqa: E402
from loopsense.skills import loop_detect  # noqa: E402
from loopsense.skills.limits import input_size  # noqa: E402
from tests.naive_cycles import naive_find_cycle  # noqa: E402

N_EVENTS = 5_000
WINDOW = 200
THRESHOLD = 3
N_ACTIONS = 3_000
SEED_NO_LOOP = 20_240_601
SEED_LOOP = 20_240_602

CORE_TARGET = 30.0  # find_cycle must be at least this many times faster than the naive search
SKILL_TARGET = 8.0  # the skill call may take at most this many times json.loads


# --------------------------------------------------------------------------------------------
# Inputs


_OUTCOMES = (
    "ok", "ok", "ok", "ok", "ok: 200", "ok: 3 results", "empty",
    "error: timeout", "error: not found", "error: element not visible", "error: 429",
)
_HOSTS = ("app.example.com", "docs.example.org", "api.example.net", "shop.example.com")


def random_event(rng: random.Random) -> dict[str, str]:
    """One plausible agent step: a tool, what it acted on, a page/state hash and the result."""
    tool = rng.randrange(N_ACTIONS)
    kind = rng.randrange(3)
    if kind == 0:
        target = f"https://{rng.choice(_HOSTS)}/items/{rng.randrange(100_000)}?page={rng.randrange(20)}"
    elif kind == 1:
        target = f"#main > div.result:nth-child({rng.randrange(1, 50)}) > button.action-{tool % 17}"
    else:
        target = f"/workspace/src/module_{rng.randrange(400)}/file_{rng.randrange(60)}.py"
    return {
        "action": f"tool_{tool}",
        "target": target,
        "stateFingerprint": f"sha256:{rng.getrandbits(64):016x}",
        "outcome": rng.choice(_OUTCOMES),
    }


def no_loop_events(n: int = N_EVENTS) -> list[dict[str, str]]:
    rng = random.Random(SEED_NO_LOOP)
    return [random_event(rng) for _ in range(n)]


def early_loop_events(n: int = N_EVENTS) -> list[dict[str, str]]:
    """Random steps, except that events 10..21 are a 3-step block repeated 4 times."""
    rng = random.Random(SEED_LOOP)
    events = [random_event(rng) for _ in range(n)]
    block = [random_event(rng) for _ in range(3)]
    for i in range(12):
        events[10 + i] = dict(block[i % 3])
    return events


def body_of(events: list[dict[str, str]]) -> bytes:
    """The request body as a client would send it: compact UTF-8 JSON."""
    doc = {"events": events, "window": WINDOW, "repeatThreshold": THRESHOLD}
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode()


def keys_of(events: list[dict[str, Any]]) -> list[tuple[str | None, ...]]:
    """The EXACT comparison keys, the tuples the skill hands to the search."""
    return [
        (e["action"], e.get("target"), e.get("stateFingerprint"), e.get("outcome"))
        for e in events
    ]


def span_tuple(span: Any) -> tuple[int, int, int, int] | None:
    return None if span is None else (span.start, span.end, span.cycle_length, span.repeats)


# --------------------------------------------------------------------------------------------
# Timing


# --------------------------------------------------------------------------------------------
# Parts


def core_search(reps_fast: int, reps_naive: int, warmup_naive: int) -> tuple[float, bool]:
    events = no_loop_events()
    trace = keys_of(events)
    fast, naive = span_tuple(find_cycle(trace, WINDOW, THRESHOLD)), naive_find_cycle(
        trace, WINDOW, THRESHOLD)
    print(f"\n1. Core search: {len(trace)} events, {len({e['action'] for e in events})} distinct "
          f"actions, {len(set(trace))} distinct events, window {WINDOW}, "
          f"repeatThreshold {THRESHOLD}")
    print(f"   answers: find_cycle -> {fast}, naive_find_cycle -> {naive}")
    if fast != naive or fast is not None:
        raise SystemExit("the two searches disagree (or found a loop): timings would be void")

    # The naive search takes over a second a call, so it gets few rounds; each round also times
    # find_cycle once (interleaved), then find_cycle alone makes up the rest of its samples.
    both = measure({"naive": lambda: naive_find_cycle(trace, WINDOW, THRESHOLD),
                    "fast": lambda: find_cycle(trace, WINDOW, THRESHOLD)},
                   reps=reps_naive, warmup=warmup_naive)
    more = measure({"fast": lambda: find_cycle(trace, WINDOW, THRESHOLD)},
                   reps=max(0, reps_fast - reps_naive), warmup=3)
    naive_times, fast_times = both["naive"], both["fast"] + more["fast"]
    table(f"   median of {reps_fast} (find_cycle) and {reps_naive} (naive) calls",
          [("naive_find_cycle (pure Python, baseline)", naive_times),
           ("find_cycle (numpy)", fast_times)], baseline="naive_find_cycle (pure Python, baseline)")
    speedup = statistics.median(naive_times) / statistics.median(fast_times)
    print(f"   speed-up (median naive / median find_cycle): {speedup:.1f}x")
    return speedup, speedup >= CORE_TARGET


def early_stop(reps: int) -> tuple[float, float]:
    """find_cycle on the trace whose loop starts at event 10 against the whole search of the
    loop-free trace (the issue's target: at most a quarter), and the loop-free search in two
    blocks against one (``first_block=0``: the search before the early stop), interleaved."""
    early = symbol_ids(keys_of(early_loop_events()))
    none = symbol_ids(keys_of(no_loop_events()))
    found = find_cycle_ids(early, WINDOW, THRESHOLD)
    if found != find_cycle_ids(early, WINDOW, THRESHOLD, first_block=0) or found is None:
        raise SystemExit("the early stop changed the answer: timings would be void")
    times = measure({
        "no loop, whole search (one block)": lambda: find_cycle_ids(none, WINDOW, THRESHOLD,
                                                                    first_block=0),
        "no loop, two blocks (default)": lambda: find_cycle_ids(none, WINDOW, THRESHOLD),
        "loop at 10, one block": lambda: find_cycle_ids(early, WINDOW, THRESHOLD, first_block=0),
        "loop at 10, early stop (default)": lambda: find_cycle_ids(early, WINDOW, THRESHOLD),
    }, reps=reps, warmup=3)
    table(f"\n4. Early stop: find_cycle_ids on {len(early)} events, {reps} interleaved rounds",
          list(times.items()), baseline="no loop, whole search (one block)")
    whole = times["no loop, whole search (one block)"]
    stop = paired_ratio(times["loop at 10, early stop (default)"], whole)
    cost = paired_ratio(times["no loop, two blocks (default)"], whole)
    print(f"   loop at 10 with the early stop / whole search (median of rounds' ratios): "
          f"{stop:.3f}x; no loop, two blocks / one: {cost:.3f}x")
    return stop, cost


def skill_call(label: str, events: list[dict[str, str]], reps: int, with_naive: bool = False
               ) -> float:
    body = body_of(events)
    full = lambda: jsonio.dumps(loop_detect.run(jsonio.loads(body)))  # noqa: E731
    answer = json.loads(full())
    print(f"\n{label}: body {len(body):,} bytes, {len(events)} events, window {WINDOW}, "
          f"repeatThreshold {THRESHOLD}")
    print(f"   answer: loopDetected={answer['loopDetected']} cycleLength={answer['cycleLength']} "
          f"confidence={answer['confidence']} spans={answer['spans']}")

    # The stages of the call, each fed the previous stage's result (computed once, up front).
    raw = jsonio.loads(body)
    parsed = loop_detect.parse(raw)
    result = loop_detect.detect(parsed)
    dumped = result.model_dump()
    keys = (loop_detect._keys(parsed) if hasattr(loop_detect, "_keys")
            else keys_of([e.model_dump() for e in parsed.events]))
    assert jsonio.dumps(dumped) == jsonio.dumps(answer)
    model = loop_detect.LoopDetectInput
    cases: dict[str, Callable[[], Any]] = {
        "json.loads(body) (baseline)": lambda: json.loads(body),
        "whole skill call": full,
        "a. parse JSON: jsonio.loads": lambda: jsonio.loads(body),
        "b. parse(): shape and size check": lambda: loop_detect.parse(raw),
        "     (schema's way: input_size)": lambda: input_size(raw),
        "     (schema's way: model_validate)": lambda: model.model_validate(raw),
        "c. detect(): keys + search + output model": lambda: loop_detect.detect(parsed),
        "     of which keys (built by parse)": (
            (lambda: loop_detect._keys(parsed)) if hasattr(loop_detect, "_keys")
            else (lambda: keys_of([e.model_dump() for e in parsed.events]))),
        "     of which find_cycle": lambda: find_cycle(keys, parsed.window,
                                                       parsed.repeatThreshold),
        "d. model_dump()": lambda: result.model_dump(),
        "e. serialize: jsonio.dumps": lambda: jsonio.dumps(dumped),
    }
    if with_naive:  # only where it is quick: it stops at the first loop, find_cycle does not
        assert span_tuple(find_cycle(keys, WINDOW, THRESHOLD)) == naive_find_cycle(
            keys, WINDOW, THRESHOLD)
        cases["  (info) naive_find_cycle, same keys"] = lambda: naive_find_cycle(
            keys, parsed.window, parsed.repeatThreshold)
    times = measure(cases, reps=reps, warmup=5)
    base_name = "json.loads(body) (baseline)"
    table(f"   {reps} interleaved rounds; ratios are medians against json.loads of the same bytes",
          list(times.items()), baseline=base_name)
    stages = ("a.", "b.", "c.", "d.", "e.")
    parts = {name: statistics.median(v) for name, v in times.items() if name.startswith(stages)}
    total = sum(parts.values())
    whole = statistics.median(times["whole skill call"])
    print(f"   sum of stage medians a..e: {total * 1e3:.3f} ms (whole call median "
          f"{whole * 1e3:.3f} ms); shares:")
    for name, value in sorted(parts.items(), key=lambda kv: -kv[1]):
        print(f"     {name.split(':')[0].split('(')[0].strip():<40} {100 * value / total:5.1f}%")
    return whole / statistics.median(times[base_name])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: few repetitions")
    args = parser.parse_args(argv)
    if args.quick:
        reps_fast, reps_naive, warmup_naive, reps_skill = 5, 1, 0, 10
    else:
        reps_fast, reps_naive, warmup_naive, reps_skill = 31, 5, 1, 100

    print("agent.loop_detect benchmark" + (" (QUICK: too few repetitions to quote)"
                                           if args.quick else ""))
    print(f"  date {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}; "
          f"Python {platform.python_version()}; numpy {np.__version__}; "
          f"pydantic {pydantic.VERSION}; {platform.machine()} {platform.system()}, "
          f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}")

    speedup, core_ok = core_search(reps_fast, reps_naive, warmup_naive)
    ratio = skill_call("2. Skill call, no loop", no_loop_events(), reps_skill)
    ratio_loop = skill_call("3. Skill call, loop found early (for information)",
                            early_loop_events(), reps_skill, with_naive=True)

    stop, cost = early_stop(reps_fast * 3)

    print("\nTargets")
    verdict("core search speed-up >= 30x", core_ok, f"{speedup:.1f}x")
    verdict("skill call <= 8x json.loads (no loop)", ratio <= SKILL_TARGET, f"{ratio:.2f}x")
    print(f"  [info] skill call, early loop: {ratio_loop:.2f}x json.loads")
    verdict("early loop <= 0.25x the whole search", stop <= 0.25, f"{stop:.3f}x")
    print(f"  [info] the loop-free search in two blocks: {cost:.3f}x one block")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
