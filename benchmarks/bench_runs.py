"""Benchmark for the runs API: is a step's cost flat in the run's length, and how many store
requests does a step batch make?

Run from the repository root:

    .venv/bin/python benchmarks/bench_runs.py            # the recorded run (about a minute)
    .venv/bin/python benchmarks/bench_runs.py --quick    # smoke run (do not quote)

1. Over HTTP: `loopsense serve` (embedded DynamoDB, enterprise dev tenant so the rate limit
   does not interfere), one kept-alive connection. Three agents of one run get 10, 1,000 and
   10,000 prior steps (batches of 500), then one step at a time is sent to each, interleaved
   (so machine noise hits the three alike): median and p95 per-step latency, and the ratio of
   each to the 10-step agent (the baseline, same process, same rounds).
2. In-process: the same service (loopsense.platform.runs.monitor) on the embedded engine, its
   DynamoDB client wrapped to count requests: requests per step batch (1 step and 500 steps) on
   the hot path, besides the authorizer's key and tenant lookups (which the gateway makes before).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_platform import KEY, start_server, stats  # noqa: E402
from bench_platform import Client as PlatformClient  # noqa: E402

RUN = "/v1/runs/bench"
PRIORS = (10, 1_000, 10_000)


def step(agent: str, rng: random.Random) -> dict[str, Any]:
    """A plausible step: one of 40 tools on one of 1,000 targets, a result, an outcome."""
    return {"agentId": agent, "kind": "tool_call", "action": f"tool_{rng.randrange(40)}",
            "args": {"path": f"/src/file_{rng.randrange(1000)}.py", "line": rng.randrange(500)},
            "result": {"lines": rng.randrange(10_000), "durationMs": rng.randrange(90)},
            "outcome": rng.choice(("positive", "neutral", "negative"))}


class Client(PlatformClient):
    """bench_platform's client (one kept-alive connection), posting step batches."""

    def steps(self, body: Any) -> float:
        data = json.dumps(body).encode()
        started = time.perf_counter()
        self.conn.request("POST", f"{RUN}/steps", body=data, headers={
            "Authorization": f"Bearer {KEY}", "Content-Type": "application/json"})
        answer = self.conn.getresponse()
        payload = answer.read()
        elapsed = time.perf_counter() - started
        if answer.status != 200:
            raise RuntimeError(f"HTTP {answer.status}: {payload[:300]!r}")
        return elapsed


def over_http(rounds: int) -> None:
    process, host, port = start_server()
    try:
        client = Client(host, port)
        rng = random.Random(7)
        for prior in PRIORS:
            agent = f"prior-{prior}"
            for start in range(0, prior, 500):
                client.steps({"steps": [step(agent, rng) for _ in range(min(500, prior - start))]})
        times: dict[int, list[float]] = {prior: [] for prior in PRIORS}
        for _ in range(5):  # warm-up
            for prior in PRIORS:
                client.steps(step(f"prior-{prior}", rng))
        for _ in range(rounds):
            for prior in PRIORS:
                times[prior].append(client.steps(step(f"prior-{prior}", rng)))
        base, _ = stats(times[PRIORS[0]])
        print(f"1. one step over HTTP, {rounds} rounds, interleaved")
        print("   prior steps | median ms | p95 ms | median vs 10 prior")
        for prior in PRIORS:
            median, p95 = stats(times[prior])
            print(f"   {prior:>11,} | {median:9.2f} | {p95:6.2f} | {median / base:.2f}x")
    finally:
        process.send_signal(2)
        process.wait(timeout=15)


def store_requests() -> None:
    from bench_recover import service  # the same counted, in-process store

    rec, counting, who = service()
    runs = rec.runs
    rng = random.Random(3)
    runs.set_config(who, "r", {"repeat_warn": 5})  # a run config: read on every batch too
    print("2. store requests per step batch (in-process, the embedded engine, counted)")
    runs.steps(who, "r", step("ari", rng), b"warm", None)  # the plan is cached from here on
    one = [step("ari", rng)]
    cases = (("1 step", [step("ari", rng)], None), ("500 steps", [step("ari", rng)
                                                                   for _ in range(500)], None),
             ("1 step with an Idempotency-Key", one, "idem-1"),
             ("the same, retried (answered from the agent item)", one, "idem-1"))
    for label, batch, key in cases:
        body = json.dumps({"steps": batch}).encode()
        counting.calls.clear()
        runs.steps(who, "r", {"steps": batch}, body, key)
        print(f"   {label:<50} {sum(counting.calls.values())} {dict(counting.calls)}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    over_http(rounds=20 if args.quick else 300)
    store_requests()


if __name__ == "__main__":
    main()
