"""Benchmark for "recover, don't kill" (docs/recover.md): is the circuit break flat in the size
of working memory, how many DynamoDB requests and writes does it make, and what does a context
briefing over 1,000 lessons cost?

Run from the repository root:

    .venv/bin/python benchmarks/bench_recover.py            # the recorded run (under a minute)
    .venv/bin/python benchmarks/bench_recover.py --quick    # smoke run (do not quote)

In-process: the service (loopsense.platform.runs.recover) on the embedded DynamoDB engine with
template.yaml's tables, its client wrapped to count requests and the items of each transaction.

1. The break at 10 and at 10,000 working-memory entries (two runs of one tenant, one agent
   each with 6 steps). The entries are written once by the PUT route's own store actions
   (MemoryStore.put_entry, one PutItem each) with the head set to their count. Before each
   timed break, the head is put back to the generation holding them (the break froze it, it
   is still there): every round breaks a memory of the same size, without rewriting it. The
   two sizes are timed interleaved (the re-arm untimed), with the ratio of medians to 10.
2. The requests one break makes at each size, by operation, and the items of its transaction.
3. POST .../context (query, budget 1,500 tokens) over 1,000 lessons of about 25 words, and
   over 10 lessons as the baseline; interleaved.
4. Restore of a snapshot of 10 and of 10,000 entries (written as in 1, frozen by a break):
   each restore copies them into a new generation (BatchWriteItem, 25 a call) and switches;
   interleaved, with the requests of one restore by operation.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from harness import measure, table, verdict  # noqa: E402

from loopsense.platform.http.auth import Identity  # noqa: E402
from loopsense.platform.runs.memory_store import HEAD  # noqa: E402
from loopsense.platform.runs.monitor import Runs  # noqa: E402
from loopsense.platform.runs.recover import Recover  # noqa: E402
from loopsense.platform.runs.store import RunStore, partition  # noqa: E402
from loopsense.settings import Settings  # noqa: E402
from loopsense.store.accounts import Accounts, Plan  # noqa: E402
from loopsense.store.dynamo import Dynamo, to_item  # noqa: E402
from loopsense.store.metering import Metering  # noqa: E402
from loopsense_local.embedded import EmbeddedDynamoDB  # noqa: E402
from loopsense_local.tables import create_tables, use_local_tables  # noqa: E402

SIZES = (10, 10_000)
WORDS = [
    "export", "ticket", "customer", "invoice", "retry", "timeout", "attachment", "queue",
    "worker", "status", "pending", "failed", "refund", "email", "phone", "escalate", "priority",
    "account", "billing", "shipment", "carrier", "label", "address", "warehouse", "inventory",
]


class Counting:
    def __init__(self, client: Any) -> None:
        self.client, self.calls, self.items = client, Counter(), []

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.client, name)

        def call(**kwargs: Any) -> Any:
            self.calls[name] += 1
            if name == "transact_write_items":
                self.items.append(len(kwargs["TransactItems"]))
            return method(**kwargs)

        return call


def service() -> tuple[Recover, Counting, Identity]:
    use_local_tables()  # table names have no defaults: the local store's
    config = Settings(dynamodb_endpoint="http://embedded.invalid")
    engine = EmbeddedDynamoDB("127.0.0.1", 0).client()
    create_tables(engine, config)
    counting = Counting(engine)
    db = Dynamo(counting)
    accounts = Accounts(db, config)
    accounts.set_plan(Plan("bench", 10**12, 1_000_000, ("*",), 600_000))  # no limit in the way
    runs = Runs(RunStore(db, config.runs_table), accounts, Metering(db, config))
    return Recover(runs), counting, Identity("bench", "key", "bench", ("*",), {})


def fill(rec: Recover, who: Identity, run: str, n: int) -> str:
    """n entries in the run's live generation (as PUT writes them); returns that generation."""
    call = {"agentId": "ari", "kind": "tool_call", "action": "export_status",
            "args": {"job": 42}, "result": "same", "outcome": "neutral"}
    body = json.dumps({"steps": [call] * 6}).encode()
    rec.runs.steps(who, run, json.loads(body), body, None)
    head = rec.store.head(who.tenant_id, run, int(rec.runs.clock().timestamp()))
    rng = random.Random(n)
    for i in range(n):
        value = json.dumps({"note": " ".join(rng.choice(WORDS) for _ in range(8)), "i": i})
        action = rec.store.put_entry(who.tenant_id, run, head.generation, f"k{i:05d}", value,
                                     "2026-11-30T00:00:00.000Z", 4_000_000_000, None)
        rec.store.db.call("put_item", **action["Put"])
    rearm(rec, who, run, head.generation, n)
    return head.generation


def rearm(rec: Recover, who: Identity, run: str, generation: str, n: int) -> None:
    """The head back on ``generation`` with its ``n`` entries (what it was before a break)."""
    head = rec.store.head(who.tenant_id, run, int(rec.runs.clock().timestamp()))
    rec.store.db.call("put_item", TableName=rec.store.table, Item=to_item({
        "pk": partition(who.tenant_id, run), "sk": HEAD, "generation": generation, "count": n,
        "events": head.events, "recent": "[]", "expiresAt": 4_000_000_000}))


def breaks(rec: Recover, counting: Counting, who: Identity, reps: int) -> None:
    generations = {n: fill(rec, who, f"size-{n}", n) for n in SIZES}
    times: dict[str, list[float]] = {f"{n:,} entries": [] for n in SIZES}
    for round_ in range(3 + reps):  # 3 warm-up rounds; sizes interleaved in every round
        for n in SIZES:
            rearm(rec, who, f"size-{n}", generations[n], n)  # untimed
            gc.collect()
            started = time.perf_counter()
            answer = rec.circuit_break(who, f"size-{n}", {"reason": "bench", "agentId": "ari"},
                                       b"{}", None)
            elapsed = time.perf_counter() - started
            assert answer["summary"]["entries"] == n, answer
            if round_ >= 3:
                times[f"{n:,} entries"].append(elapsed)
    table(f"1. circuit break, {reps} interleaved rounds", list(times.items()),
          f"{SIZES[0]:,} entries")
    ratio = (statistics.median(times[f"{SIZES[1]:,} entries"])
             / statistics.median(times[f"{SIZES[0]:,} entries"]))
    verdict("flat", ratio <= 1.5, f"10,000 entries / 10 entries = {ratio:.2f}x (target <= 1.5x)")
    print("\n2. requests of one break")
    for n in SIZES:
        rearm(rec, who, f"size-{n}", generations[n], n)
        counting.calls.clear()
        counting.items.clear()
        rec.circuit_break(who, f"size-{n}", {"reason": "bench", "agentId": "ari"}, b"{}", None)
        writes = sum(counting.calls[op] for op in ("transact_write_items", "put_item",
                                                   "update_item", "delete_item"))
        print(f"  {n:>6,} entries: {sum(counting.calls.values())} requests "
              f"{dict(sorted(counting.calls.items()))}, {writes} write request(s), "
              f"transaction items {counting.items}")


def briefings(rec: Recover, who: Identity, reps: int) -> None:
    rng = random.Random(5)
    for count in (10, 1000):
        for _ in range(count):
            text = " ".join(rng.choice(WORDS) for _ in range(25))
            rec.add_lesson(who, f"lessons-{count}", {"text": text, "tags": [rng.choice(WORDS)]})
    body = {"query": "resume ticket 2214: export timed out, customer waiting",
            "max_token_budget": 1500}
    answers: dict[int, dict[str, Any]] = {}

    def case(count: int) -> Any:
        def run() -> None:
            answers[count] = rec.context(who, f"lessons-{count}", body)
        return run

    times = measure({f"{c:,} lessons": case(c) for c in (10, 1000)}, reps, warmup=2)
    table(f"3. context briefing, budget 1,500 tokens, {reps} interleaved rounds",
          list(times.items()), "10 lessons")
    big = answers[1000]
    print(f"  1,000 lessons: {len(big['items'])} items packed, {big['tokens']} tokens "
          f"(<= 1,500)")


def restores(rec: Recover, counting: Counting, who: Identity, reps: int) -> None:
    snapshots = {}
    for n in SIZES:
        fill(rec, who, f"restore-{n}", n)
        snapshots[n] = rec.circuit_break(who, f"restore-{n}", {"reason": "bench",
                                                                "agentId": "ari"},
                                          b"{}", None)["snapshotId"]
    calls: dict[int, dict[str, int]] = {}

    def case(n: int) -> Any:
        def run() -> None:
            counting.calls.clear()
            answer = rec.restore(who, f"restore-{n}", snapshots[n], None, b"", None)
            assert answer["entries"] == n, answer
            calls[n] = dict(sorted(counting.calls.items()))
        return run

    times = measure({f"{n:,} entries": case(n) for n in SIZES}, reps, warmup=1)
    table(f"4. restore, {reps} interleaved rounds", list(times.items()), f"{SIZES[0]:,} entries")
    for n in SIZES:
        print(f"  {n:>6,} entries: {sum(calls[n].values())} requests {calls[n]}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rec, counting, who = service()
    breaks(rec, counting, who, reps=10 if args.quick else 200)
    briefings(rec, who, reps=3 if args.quick else 30)
    restores(rec, counting, who, reps=2 if args.quick else 10)


if __name__ == "__main__":
    main()
