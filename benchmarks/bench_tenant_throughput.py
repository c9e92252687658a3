"""Benchmark: what one tenant reaches when its callers contend, with DynamoDB's conflicts.

Run from the repository root:

    .venv/bin/python benchmarks/bench_tenant_throughput.py           # the recorded run (~1 min)
    .venv/bin/python benchmarks/bench_tenant_throughput.py --quick   # smoke run (do not quote)

One tenant (a plan with no rate or credit limit in the way: the store is what is measured), N
concurrent callers for N = 8, 64, 256, each for a fixed time. Caller i loops over the three
metered writes of the hot path: an execute (agent.loop_detect, run in the caller's thread, with
an Idempotency-Key), a step batch of 5 steps for its own agent (10 agents a run, as
sim_tenant_dynamodb.py assumes: the agents of one run share its view of their calls, ``CALLS``),
a working-memory write in its own run. ``--one-run`` puts every agent in one run instead.
What the callers share is the tenant's: the rate counter of the second and the month's credits,
which every one of those writes changes (execute's charge and the runs API's transactions), one
shard of each since issue 23 (docs/tenant-throughput.md).

The service objects are the platform's own (execute's pipeline, loopsense.platform.runs) on the
embedded engine in-process, in its conflict mode (each TransactWriteItems holds its items
``--hold-ms``, 10 by default: DynamoDB publishes no transaction latency; a transaction is two
round trips over its items, prepare and commit, of single-digit milliseconds each), and, as
the baseline in the same run, serialized (conflicts off: what every local test saw before).

Per N: calls completed per second (all three kinds), the refused (by error code), the store's
conflict rate (requests it refused for meeting a transaction in flight, over the write
requests), the retries (the pauses of the platform's retry loop), and the p50/p99 latency of a
completed call. The machine's two cores and Python's GIL bound the serialized figure; the
conflict mode's figure is bounded by the hold on the hot items instead, as on DynamoDB.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from loopsense.errors import LoopsenseError  # noqa: E402
from loopsense.observability import logger  # noqa: E402
from loopsense.platform.access import retry  # noqa: E402
from loopsense.platform.access.idempotency import Idempotency  # noqa: E402
from loopsense.platform.execute.pipeline import Execute  # noqa: E402
from loopsense.platform.execute.skill_handler import call_skill  # noqa: E402
from loopsense.platform.http.auth import Identity, authorizer_context  # noqa: E402
from loopsense.platform.http.request import Request  # noqa: E402
from loopsense.platform.runs.monitor import Runs  # noqa: E402
from loopsense.platform.runs.recover import Recover  # noqa: E402
from loopsense.platform.runs.store import RunStore  # noqa: E402
from loopsense.settings import Settings  # noqa: E402
from loopsense.store.accounts import Accounts, Plan  # noqa: E402
from loopsense.store.dynamo import Dynamo  # noqa: E402
from loopsense.store.metering import Metering  # noqa: E402
from loopsense_local.embedded import EmbeddedDynamoDB  # noqa: E402
from loopsense_local.tables import create_tables, use_local_tables  # noqa: E402

CALLERS = (8, 64, 256)
AGENTS_PER_RUN = 10
TENANT = "bench"
LOOP = {"events": [{"action": a} for a in "abcabcabcd"]}
WRITES = ("put_item", "update_item", "delete_item", "transact_write_items", "batch_write_item")


class Counting:
    """The client, counting its requests (thread-safe)."""

    def __init__(self, client: Any) -> None:
        self.client, self.calls, self.lock = client, Counter[str](), threading.Lock()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.client, name)

        def call(**kwargs: Any) -> Any:
            with self.lock:
                self.calls[name] += 1
            return method(**kwargs)

        return call


class Pauses:
    """retry's ``time`` module, counting the pauses of lost races (each one a retry)."""

    def __init__(self) -> None:
        self.count, self.lock = 0, threading.Lock()

    def sleep(self, seconds: float) -> None:
        with self.lock:
            self.count += 1
        time.sleep(seconds)


class InThread:
    def invoke(self, skill: Any, raw_input: Any, request_id: str,
               tenant_thresholds: Any = None) -> dict[str, Any]:
        return call_skill(skill, raw_input, request_id, tenant_thresholds)


class Tenant:
    def __init__(self, hold_s: float | None, one_run: bool = False) -> None:
        use_local_tables()
        self.one_run = one_run
        self.embedded = EmbeddedDynamoDB("127.0.0.1", 0, transaction_hold_s=hold_s)
        config = Settings(dynamodb_endpoint="http://embedded.invalid", skill_invoker="inprocess")
        raw = self.embedded.client()
        create_tables(raw, config)
        self.counting = Counting(raw)
        db = Dynamo(self.counting)
        accounts = Accounts(db, config)
        accounts.set_plan(Plan("bench", 10**12, 10**9, ("*",), 600_000))
        now = "2026-11-30T00:00:00.000Z"
        accounts.create_tenant(TENANT, "bench", now)
        secret, _ = accounts.issue_key(TENANT, ("*",), now)
        self.context = authorizer_context(f"Bearer {secret}", accounts)
        self.execute = Execute(accounts, Metering(db, config), InThread(),
                               Idempotency(self.counting, config.idempotency_table))
        self.runs = Runs(RunStore(db, config.runs_table), accounts, Metering(db, config))
        self.recover = Recover(self.runs)
        self.who = Identity(TENANT, "key", "bench", ("*",), {})

    def call(self, kind: str, caller: int, n: int) -> None:
        if kind == "execute":
            body = json.dumps({"skillKey": "agent.loop_detect", "input": LOOP}).encode()
            request = Request("POST", "/v1/execute",
                              {"idempotency-key": f"c{caller}-{n}"}, body, str(uuid.uuid4()),
                              self.context)
            answer = self.execute.execute(request)
            if answer["statusCode"] != 200:
                raise LoopsenseError(json.loads(answer["body"])["error"]["code"], "refused")
        elif kind == "steps":
            steps = [{"agentId": f"a{caller}", "kind": "tool_call", "action": f"t{n % 7}",
                      "args": {"i": n, "j": j}, "result": j, "outcome": "neutral"}
                     for j in range(5)]
            body = json.dumps({"steps": steps}).encode()
            run = "shared-run" if self.one_run else f"run-of-ten-{caller // AGENTS_PER_RUN}"
            self.runs.steps(self.who, run, json.loads(body), body, None)
        else:
            self.recover.put(self.who, f"run-{caller}", f"k{n % 50}",
                             json.dumps({"note": "x" * 200, "n": n}).encode())


def drive(hold_s: float | None, callers: int, seconds: float, one_run: bool = False
          ) -> dict[str, Any]:
    tenant = Tenant(hold_s, one_run)
    pauses = Pauses()
    retry.time = pauses  # type: ignore[assignment]
    kinds = ("execute", "steps", "memory")
    latencies: list[float] = []
    refused: Counter[str] = Counter()
    done: Counter[str] = Counter()
    lock = threading.Lock()
    start = threading.Barrier(callers + 1)
    stop = threading.Event()

    def caller(i: int) -> None:
        start.wait()
        n = 0
        while not stop.is_set():
            kind = kinds[(i + n) % 3]
            began = time.perf_counter()
            try:
                tenant.call(kind, i, n)
            except LoopsenseError as error:
                with lock:
                    refused[error.code] += 1
            else:
                elapsed = time.perf_counter() - began
                with lock:
                    latencies.append(elapsed)
                    done[kind] += 1
            n += 1

    threads = [threading.Thread(target=caller, args=(i,)) for i in range(callers)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    retry.time = time  # type: ignore[assignment]
    writes = sum(tenant.counting.calls[w] for w in WRITES)
    latencies.sort()
    return {
        "callers": callers, "per_s": sum(done.values()) / elapsed, "done": dict(done),
        "refused": dict(refused), "conflict_rate": tenant.embedded.engine.conflicts / writes,
        "retries": pauses.count, "calls": sum(done.values()) + sum(refused.values()),
        "p50_ms": statistics.median(latencies) * 1e3 if latencies else float("nan"),
        "p99_ms": latencies[int(0.99 * (len(latencies) - 1))] * 1e3 if latencies else
        float("nan"),
    }


def report(title: str, rows: list[dict[str, Any]], baseline: list[dict[str, Any]]) -> None:
    print(f"\n{title}")
    print(f"  {'callers':>7} {'calls/s':>8} {'x serial':>9} {'conflicts':>9} "
          f"{'retries/call':>12} {'p50 ms':>8} {'p99 ms':>8}  refused")
    for row, base in zip(rows, baseline, strict=True):
        print(f"  {row['callers']:>7} {row['per_s']:8.1f} {row['per_s'] / base['per_s']:8.2f}x "
              f"{row['conflict_rate']:8.1%} {row['retries'] / max(1, row['calls']):12.2f} "
              f"{row['p50_ms']:8.1f} {row['p99_ms']:8.1f}  {row['refused'] or '-'}")


def main() -> None:
    logger.setLevel("WARNING")  # one INFO line per request would drown the figures
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--hold-ms", type=float, default=10.0)
    parser.add_argument("--seconds", type=float, default=None)
    parser.add_argument("--one-run", action="store_true", help="every agent in one run")
    args = parser.parse_args()
    seconds = args.seconds or (1.0 if args.quick else 5.0)
    callers = CALLERS[:2] if args.quick else CALLERS
    serial = [drive(None, n, seconds, args.one_run) for n in callers]
    report(f"serialized (conflicts off), {seconds:g} s each", serial, serial)
    conflicting = [drive(args.hold_ms / 1000, n, seconds, args.one_run) for n in callers]
    report(f"conflict mode, each transaction held {args.hold_ms:g} ms, {seconds:g} s each",
           conflicting, serial)


if __name__ == "__main__":
    main()
