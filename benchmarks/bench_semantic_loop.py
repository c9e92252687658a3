"""Benchmark for agent.semantic_loop: the canonical form + SHA-256, and the whole skill call.

Run from the repository root:

    .venv/bin/python benchmarks/bench_semantic_loop.py           # full run (about a minute)
    .venv/bin/python benchmarks/bench_semantic_loop.py --quick   # smoke run (a few seconds)

Two parts, each compared with a baseline timed in the same process, on the same data,
interleaved round by round (so a noisy neighbour slows both sides alike):

1. Canonicalize + hash 5,000 checkpoints of realistic nested metadata (about 1 KB each):
   ``canonical_hash(m)`` for every metadata ``m`` vs the floor any canonical form must pay,
   ``hashlib.sha256(json.dumps(m, sort_keys=True).encode()).hexdigest()``. Target: ratio of
   medians <= 4x. Broken down (normalize, serialize, hash) and compared with the reference
   (pure-Python) writer of the same form.
2. Skill call: ``jsonio.dumps(run(jsonio.loads(body)))`` vs ``json.loads(body)`` on the same
   request bytes, for information, with its stages. The input limit is 2 MiB, so the trace
   holds as many of those checkpoints as fit (about 1,900), with tool calls in between.

Everything is deterministic (fixed seed); only the timings vary between runs.
See benchmarks/README.md for what each figure means.
"""

from __future__ import annotations

import argparse
import hashlib
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
for path in (ROOT, ROOT / "shared"):  # loopsense without installing
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import pydantic  # noqa: E402

from benchmarks.harness import measure, table, verdict  # noqa: E402
from loopsense import jsonio  # noqa: E402
from loopsense.core import canonical  # noqa: E402
from loopsense.skills import semantic_loop  # noqa: E402
from loopsense.skills.limits import input_size  # noqa: E402

N_CHECKPOINTS = 5_000
SEED = 20_261_129
TARGET = 4.0  # canonicalize + hash may take at most this many times json.dumps + sha256

# --------------------------------------------------------------------------------------------
# Inputs

_TOOLS = ("web_search", "read_file", "write_file", "run_tests", "http_get", "sql_query",
          "browser.click", "browser.type", "calendar.lookup")
_GOALS = ("Find a Flight to Zürich under €400", "Summarize the Q3 report",
          "Fix the failing test in parser.py", "Book a table for 4 at 19:30",
          "Compare three laptops under $1,200", "Draft a reply to the customer")
_WORDS = ("alpha", "Beta", "search", "Retry", "results", "page", "error", "timeout", "draft",
          "plan", "review", "Résumé", "naïve", "cache", "index", "Query", "filter", "merge")


def _phrase(rng: random.Random, n: int) -> str:
    words = " ".join(rng.choice(_WORDS) for _ in range(n))
    return rng.choice(("", " ", "  ")) + words + rng.choice(("", " ", "\n"))


def realistic_metadata(rng: random.Random) -> dict[str, Any]:
    """A planner/search agent's checkpoint state: camelCase keys, nested objects and arrays,
    floats with noise, ids, a few non-ASCII strings, volatile fields. About 1 KB as JSON."""
    step = rng.randrange(200)
    return {
        "step": step,
        "Goal": rng.choice(_GOALS),
        "planVersion": rng.randrange(5),
        "currentPlan": [
            {"Action": rng.choice(_TOOLS), "args": {"query": _phrase(rng, 3),
                                                    "limit": rng.choice((5, 10, 20))},
             "done": rng.random() < 0.5}
            for _ in range(3)
        ],
        "searchState": {
            "Query": _phrase(rng, 4),
            "filters": {"maxPrice": rng.choice((400, 400.0, 1200.5)), "currency": "EUR",
                        "Stops": rng.randrange(3), "cabin": rng.choice(("Economy", "economy "))},
            "page": rng.randrange(1, 6),
            "resultIds": [f"res_{rng.getrandbits(32):08x}" for _ in range(6)],
            "scores": [round(rng.random(), rng.choice((2, 4, 17))) for _ in range(6)],
        },
        "visited": [f"node-{rng.randrange(500)}" for _ in range(8)],
        "confidence": rng.random(),
        "lastTool": {"name": rng.choice(_TOOLS), "ok": rng.random() < 0.8,
                     "latencyMs": rng.randrange(20, 4000), "error": None},
        "messageId": f"msg_{rng.getrandbits(64):016x}",
        "timestamp": (f"2026-11-29T12:{rng.randrange(60):02d}:{rng.randrange(60):02d}."
                      f"{rng.randrange(1000):03d}Z"),
        "notes": _phrase(rng, 6),
    }


def checkpoints(n: int = N_CHECKPOINTS) -> list[dict[str, Any]]:
    rng = random.Random(SEED)
    return [realistic_metadata(rng) for _ in range(n)]


def revisit(meta: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """The same state checkpointed again: new volatile fields, other key case and spacing."""
    again = {k.upper() if k == "Goal" else k: v for k, v in meta.items()}
    again["GOAL"] = "  " + str(again["GOAL"]).upper() + " "
    again["messageId"] = f"msg_{rng.getrandbits(64):016x}"
    again["timestamp"] = f"2026-11-29T13:00:{rng.randrange(60):02d}.000Z"
    return again


def trace(metadata: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """A skill input of at most ``limit`` bytes: checkpoints, every 25th one a revisit of the
    first (so one group fires), and a tool_call after every fifth checkpoint (skipped)."""
    rng = random.Random(SEED + 1)
    events: list[dict[str, Any]] = []
    size = 1_000  # the envelope and ignoreKeys, with room to spare
    for i, meta in enumerate(metadata):
        state = revisit(metadata[0], rng) if i % 25 == 24 else meta
        new = [{"type": "checkpoint", "name": f"plan-{i % 7}", "metadata": state}]
        if i % 5 == 0:
            new.append({"type": "tool_call", "tool": rng.choice(_TOOLS),
                        "timestamp": 1_795_953_600_000 + i})
        size += len(json.dumps(new, ensure_ascii=False, separators=(",", ":")).encode())
        if size > limit:
            break
        events.extend(new)
    return events


# --------------------------------------------------------------------------------------------
# Timing (the same method as bench_loop_detect.py)


# --------------------------------------------------------------------------------------------
# Parts


def floor_hash(m: Any) -> str:
    return hashlib.sha256(json.dumps(m, sort_keys=True).encode()).hexdigest()


def canonical_part(reps: int) -> float:
    data = checkpoints()
    sizes = [len(json.dumps(m, ensure_ascii=False, separators=(",", ":")).encode())
             for m in data]
    ours = [canonical.canonical_hash(m) for m in data]
    reference = [hashlib.sha256(canonical.reference_json(m).encode()).hexdigest() for m in data]
    if ours != reference:
        raise SystemExit("the fast path and the reference disagree: timings would be void")
    print(f"\n1. Canonicalize + hash: {len(data):,} checkpoints, metadata "
          f"{statistics.mean(sizes):,.0f} bytes on average as compact JSON "
          f"({min(sizes)}..{max(sizes)}), "
          f"{sum(sizes) / 1e6:.2f} MB in all; {len(set(ours)):,} distinct hashes")

    normalized = [canonical._normalize(m, (), 0)
                  for m in data]
    texts = [canonical._dumps(n) for n in normalized]
    encoded = [t.encode() for t in texts]
    floor_texts = [json.dumps(m, sort_keys=True).encode() for m in data]
    sha = hashlib.sha256
    base_name = "sha256(json.dumps(m, sort_keys=True)) (floor)"
    cases: dict[str, Callable[[], Any]] = {
        base_name: lambda: [floor_hash(m) for m in data],
        "canonical_hash(m) (the skill's path)": lambda: [canonical.canonical_hash(m)
                                                         for m in data],
        "  a. normalize (Python walk)": lambda: [
            canonical._normalize(m, (), 0)
            for m in data],
        "  b. serialize normalized (json C encoder)": lambda: [canonical._dumps(n)
                                                                for n in normalized],
        "  c. encode + sha256": lambda: [sha(t.encode()).hexdigest() for t in texts],
        "  (floor) json.dumps(sort_keys=True) alone": lambda: [json.dumps(m, sort_keys=True)
                                                                for m in data],
        "  (floor) encode + sha256 alone": lambda: [sha(t).hexdigest() for t in floor_texts],
        "  (info) reference writer (pure Python) + sha256": lambda: [
            sha(canonical.reference_json(m).encode()).hexdigest() for m in data],
    }
    del encoded
    times = measure(cases, reps=reps, warmup=3)
    table(f"   {reps} interleaved rounds; each case processes all {len(data):,} checkpoints",
          list(times.items()), baseline=base_name, width=52)
    ratio = (statistics.median(times["canonical_hash(m) (the skill's path)"])
             / statistics.median(times[base_name]))
    per = statistics.median(times["canonical_hash(m) (the skill's path)"]) / len(data)
    print(f"   throughput: {1 / per:,.0f} checkpoints/s ({per * 1e6:.1f} µs each), "
          f"floor {len(data) / statistics.median(times[base_name]):,.0f} checkpoints/s")
    return ratio


def skill_part(reps: int) -> float:
    data = checkpoints()
    events = trace(data, semantic_loop.MAX_INPUT_BYTES)
    body = json.dumps({"events": events, "ignoreKeys": ["messageId", "timestamp"]},
                      ensure_ascii=False, separators=(",", ":")).encode()
    full = lambda: jsonio.dumps(semantic_loop.run(jsonio.loads(body)))  # noqa: E731
    answer = json.loads(full())
    print(f"\n2. Skill call: body {len(body):,} bytes, {len(events):,} events "
          f"({answer['checkpoints']:,} checkpoints, {answer['skipped']:,} skipped), "
          f"ignoreKeys messageId and timestamp; groups of "
          f"{[g['count'] for g in answer['groups']]} checkpoints")
    raw = jsonio.loads(body)
    parsed = semantic_loop.parse(raw)
    base_name = "json.loads(body) (baseline)"
    cases: dict[str, Callable[[], Any]] = {
        base_name: lambda: json.loads(body),
        "whole skill call": full,
        "  a. parse JSON: jsonio.loads": lambda: jsonio.loads(body),
        "  b. parse(): size check + validation": lambda: semantic_loop.parse(raw),
        "       of which size check (input_size)": lambda: input_size(raw),
        "  c. detect(): canonical hashes + groups": lambda: semantic_loop.detect(parsed, None),
    }
    times = measure(cases, reps=reps, warmup=2)
    table(f"   {reps} interleaved rounds; ratios are medians against json.loads of the same bytes",
          list(times.items()), baseline=base_name, width=52)
    return statistics.median(times["whole skill call"]) / statistics.median(times[base_name])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: few repetitions")
    args = parser.parse_args(argv)
    reps_canonical, reps_skill = (5, 3) if args.quick else (41, 21)

    print("agent.semantic_loop benchmark" + (" (QUICK: too few repetitions to quote)"
                                             if args.quick else ""))
    print(f"  date {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}; "
          f"Python {platform.python_version()}; pydantic {pydantic.VERSION}; "
          f"{platform.machine()} {platform.system()}, {os.cpu_count()} CPUs; "
          f"load average {os.getloadavg()[0]:.2f}")

    ratio = canonical_part(reps_canonical)
    skill_ratio = skill_part(reps_skill)

    print("\nTargets")
    verdict("canonicalize + hash <= 4x sha256(json.dumps(sort_keys=True))", ratio <= TARGET,
            f"{ratio:.2f}x")
    print(f"  [info] skill call: {skill_ratio:.2f}x json.loads")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
