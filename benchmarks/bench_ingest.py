"""Benchmark for streaming telemetry ingestion and failure groups (docs/failure-groups.md).

Run from the repository root:

    .venv/bin/python benchmarks/bench_ingest.py           # full run (a minute or two)
    .venv/bin/python benchmarks/bench_ingest.py --quick   # smoke run (do not quote)

It starts `loopsense serve` (embedded DynamoDB, enterprise plan) on free ports and measures over
real HTTP, kept-alive connections:

1. sustained events per second ingested from 4 concurrent writers (threads, one connection
   each) sending batches of 50 events (each writer its own executions of 200 events: a looping
   agent's llm_calls, tool calls and checkpoints), next to the same writers sending a request
   that passes the same gateway and authorizer but touches no table (GET /v1/playbooks/...);
2. the latency a batch adds: median and p95 of one writer's batch POST, interleaved with the
   baseline GET on the same connection; the difference is what ingestion adds;
3. DynamoDB writes per event (amortized), counted in this process on the embedded engine for
   the same workload: write requests (PutItem, UpdateItem, TransactWriteItems) and items
   written (a transaction counts each item; DynamoDB bills a transactional item twice);
4. GET /v1/failure-groups latency (limit 50, and a class filter) for a tenant with 10,000 groups
   (written straight through the server's store endpoint), next to a tenant with 10.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "shared", ROOT / "local"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from benchmarks.harness import p95  # noqa: E402
from tests.e2e.server import DEV_KEY as KEY  # noqa: E402
from tests.e2e.server import start_server  # noqa: E402

BATCH = 50
EXECUTION_EVENTS = 200
WRITERS = 4


def execution_events(seed: int) -> list[dict[str, Any]]:
    """A looping agent: ask, call a tool, checkpoint the plan; the question repeats every third
    round, the plan every fourth, timestamps one second apart."""
    events: list[dict[str, Any]] = []
    for i in range(EXECUTION_EVENTS // 4):
        stamp = 1_700_000_000_000 + (seed * 1_000 + i) * 1_000
        events += [
            {"type": "llm_call", "model": "gpt-4o-mini", "timestamp": stamp,
             "user_message": f"find flights {seed} option {i % 3} for the user's trip"},
            {"type": "tool_call", "name": "search", "timestamp": stamp + 1},
            {"type": "checkpoint", "name": "plan", "timestamp": stamp + 2,
             "metadata": {"step": i % 4, "city": "Oslo", "budget": 1200.5}},
            {"type": "message", "timestamp": stamp + 3},
        ]
    return events


class Client:
    def __init__(self, host: str, port: int) -> None:
        self.conn = http.client.HTTPConnection(host, port, timeout=120)

    def call(self, method: str, path: str, body: bytes = b"",
             extra: dict[str, str] | None = None) -> tuple[int, bytes]:
        headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json",
                   **(extra or {})}
        self.conn.request(method, path, body=body or None, headers=headers)
        answer = self.conn.getresponse()
        return answer.status, answer.read()


def writer_batches(writer: int, executions: int, run: str) -> list[tuple[str, bytes, str]]:
    out = []
    for e in range(executions):
        execution = f"{run}-w{writer}-e{e}"
        events = execution_events(writer * 1_000 + e)
        for n in range(0, len(events), BATCH):
            body = json.dumps({"events": events[n:n + BATCH]}).encode()
            out.append((f"/v1/executions/{execution}/events", body, f"{execution}-{n}"))
    return out


def throughput(host: str, port: int, executions: int, run: str) -> tuple[float, float]:
    """(events per second, baseline requests per second) with WRITERS concurrent clients."""
    plans = [writer_batches(w, executions, run) for w in range(WRITERS)]
    clients = [Client(host, port) for _ in range(WRITERS)]

    def ingest(w: int) -> None:
        for path, body, key in plans[w]:
            status, answer = clients[w].call("POST", path, body, {"Idempotency-Key": key})
            assert status == 200, answer

    def baseline(w: int) -> None:
        for _ in plans[w]:
            status, _ = clients[w].call("GET", "/v1/playbooks/step_count")
            assert status == 200

    rates = []
    for work in (ingest, baseline):
        barrier = threading.Barrier(WRITERS)

        def run_one(w: int, work: Any = work, barrier: Any = barrier) -> None:
            barrier.wait()
            work(w)

        started = time.perf_counter()
        with ThreadPoolExecutor(WRITERS) as pool:
            list(pool.map(run_one, range(WRITERS)))
        rates.append(time.perf_counter() - started)
    batches = sum(len(p) for p in plans)
    return batches * BATCH / rates[0], batches / rates[1]


def latency(host: str, port: int, executions: int, run: str) -> tuple[list[float], list[float]]:
    client = Client(host, port)
    batch_times, base_times = [], []
    for path, body, key in writer_batches(9, executions, run):
        t0 = time.perf_counter()
        status, _ = client.call("POST", path, body, {"Idempotency-Key": key})
        batch_times.append(time.perf_counter() - t0)
        assert status == 200
        t0 = time.perf_counter()
        client.call("GET", "/v1/playbooks/step_count")
        base_times.append(time.perf_counter() - t0)
    return batch_times, base_times


class CountingClient:
    """An embedded-engine client that counts write requests and items written."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.requests = 0
        self.items = 0

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.inner, name)
        if name in ("put_item", "update_item", "delete_item", "transact_write_items"):
            def counted(**kwargs: Any) -> Any:
                self.requests += 1
                self.items += len(kwargs.get("TransactItems", [None]))
                return method(**kwargs)
            return counted
        return method


def writes_per_event(executions: int) -> tuple[float, float, int]:
    from loopsense.platform.telemetry.ingest import Ingestion
    from loopsense.platform.telemetry.store import TelemetryStore
    from loopsense.settings import Settings
    from loopsense.store.dynamo import Dynamo
    from loopsense_local.embedded import EmbeddedDynamoDB
    from loopsense_local.tables import create_tables

    embedded = EmbeddedDynamoDB("127.0.0.1", 0).start()
    try:
        counting = CountingClient(embedded.client())
        create_tables(embedded.client(), Settings())
        ingestion = Ingestion(TelemetryStore(Dynamo(counting), Settings().telemetry_table),
                              lambda plan: 3_600_000)
        events = 0
        for path, body, key in [b for w in range(WRITERS)
                                for b in writer_batches(w, executions, "count")]:
            execution = path.split("/")[3]
            events += len(json.loads(body)["events"])
            ingestion.add("bench", "enterprise", {}, execution, json.loads(body), key)
        for w in range(WRITERS):
            for e in range(executions):
                ingestion.end("bench", f"count-w{w}-e{e}", None)
        return counting.requests / events, counting.items / events, events
    finally:
        embedded.stop()


def fill_groups(endpoint: str, tenant: str, count: int) -> None:
    from loopsense.platform.telemetry.store import Fire, TelemetryStore
    from loopsense.settings import Settings
    from loopsense.store.dynamo import Dynamo, make_client

    store = TelemetryStore(Dynamo(make_client(Settings(dynamodb_endpoint=endpoint,
                                                       store_timeout_s=30))),
                           Settings().telemetry_table)
    far = int(time.time()) + 86_400

    def one(n: int) -> None:
        cls = "semantic_loop" if n % 5 == 0 else "loops"
        fire = Fire(f"loops/identical_call_{n:08x}" if cls == "loops" else f"semantic_loop:{n:08x}",
                    cls, "identical_call" if cls == "loops" else "semantic_loop")
        store.fire(tenant, f"x{n}", fire, f"2026-11-30T12:{n // 600 % 60:02d}:{n // 10 % 60:02d}."
                   f"{n % 1000:03d}Z", far, far)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, range(count)))


def listing(host: str, port: int, endpoint: str, groups: int,
            rounds: int) -> dict[str, list[float]]:
    from loopsense.settings import Settings
    from loopsense.store.accounts import Accounts
    from loopsense.store.dynamo import Dynamo, make_client
    from loopsense_local import operator as ops

    config = Settings(dynamodb_endpoint=endpoint, store_timeout_s=30)
    accounts = Accounts(Dynamo(make_client(config)), config)
    results: dict[str, list[float]] = {}
    for count in (10, groups):
        tenant = ops.create_tenant(accounts, "enterprise", None)["tenantId"]
        key = ops.issue_key(accounts, tenant, ["*"])["apiKey"]
        fill_groups(endpoint, tenant, count)
        client = Client(host, port)
        for query in ("?limit=50", "?limit=50&class=semantic_loop"):
            samples = []
            for _ in range(rounds):
                client.conn.request("GET", f"/v1/failure-groups{query}",
                                    headers={"Authorization": f"Bearer {key}"})
                t0 = time.perf_counter()
                answer = client.conn.getresponse()
                body = answer.read()
                samples.append(time.perf_counter() - t0)
                assert answer.status == 200 and len(json.loads(body)["items"]) == min(
                    50, count if "class" not in query else count // 5)
            results[f"{count} groups, {query}"] = samples
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    from loopsense_local.tables import use_local_tables

    use_local_tables()  # the store clients below name the local tables (no defaults)
    executions = 1 if args.quick else 5  # per writer: 4 batches of 50 each
    groups = 1_000 if args.quick else 10_000
    rounds = 10 if args.quick else 20

    server = start_server("--dev-plan", "enterprise")
    host, port = server.url.removeprefix("http://").split(":")[0], int(server.url.rsplit(":", 1)[1])
    try:
        events_s, base_rps = throughput(host, port, executions, "tp")
        print(f"\n1. Sustained ingestion, {WRITERS} writers, batches of {BATCH}, "
              f"{WRITERS * executions * EXECUTION_EVENTS} events")
        print(f"   {events_s:10.0f} events/s  ({events_s / BATCH:.1f} batches/s); baseline "
              f"GET /v1/playbooks: {base_rps:.1f} requests/s -> a batch costs "
              f"{base_rps / (events_s / BATCH):.1f}x a no-store request")
        batch, base = latency(host, port, executions, "lat")
        med_b, med_0 = statistics.median(batch), statistics.median(base)
        print(f"\n2. Latency per batch of {BATCH} (one writer, {len(batch)} batches)")
        print(f"   batch POST  median {med_b * 1e3:8.2f} ms  p95 {p95(batch) * 1e3:8.2f} ms")
        print(f"   baseline    median {med_0 * 1e3:8.2f} ms  p95 {p95(base) * 1e3:8.2f} ms")
        print(f"   added by ingestion: {(med_b - med_0) * 1e3:.2f} ms median "
              f"({med_b / med_0:.1f}x)")
        requests, items, events = writes_per_event(executions)
        print(f"\n3. DynamoDB writes per event ({events} events, /end included)")
        print(f"   {requests:.3f} write requests/event, {items:.3f} items written/event")
        results = listing(host, port, server.store_endpoint, groups, rounds)
        print(f"\n4. GET /v1/failure-groups latency ({rounds} rounds)")
        base_key = "10 groups, ?limit=50"
        for name, samples in results.items():
            print(f"   {name:<42} median {statistics.median(samples) * 1e3:8.2f} ms  "
                  f"p95 {p95(samples) * 1e3:8.2f} ms  "
                  f"{statistics.median(samples) / statistics.median(results[base_key]):5.2f}x")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
