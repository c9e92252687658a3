"""Benchmark for the execute platform: what `loopsense serve` adds on top of the skill itself.

Run from the repository root:

    .venv/bin/python benchmarks/bench_platform.py           # full run (about a minute)
    .venv/bin/python benchmarks/bench_platform.py --quick   # smoke run (do not quote)

It starts `loopsense serve` (embedded DynamoDB, enterprise plan so no limit interferes) on free
ports, twice in the same run: with its store durable (a SQLite file in a temporary --data-dir,
the default) and with --in-memory, the baseline. For each it measures, over real HTTP with a
kept-alive connection:

1. a 6-event agent.loop_detect call (also with a fresh Idempotency-Key each time, as the SDKs
   send) and a 5,000-event one: median and p95 latency, next to the skill's own in-process time
   on the same input (`jsonio.loads` + `call_skill`), timed interleaved in this process; the
   difference is the platform's overhead;
2. sustained requests per second of small calls from 4 and from 8 concurrent clients (threads,
   one kept-alive connection each), for a fixed number of requests per client;
3. the embedded store's cost per call kind (get, conditional update, transaction): the
   pipeline makes 6 store calls per request (key, tenant, plan, rate counter, quota read,
   charge), durable and in memory, in the same process, and moto in-process (mock_aws), the
   embedded store `loopsense serve` used before its own engine.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
KEY = "ls_local_development_key_0001"
AT = "2026-11-30T00:00:00.000Z"  # a usage record's time (its day and expiry are read from it)


def events(n: int, seed: int) -> list[dict[str, str]]:
    rng = random.Random(seed)
    return [{"action": f"tool_{rng.randrange(3000)}", "target": f"/items/{rng.randrange(10**6)}",
             "stateFingerprint": f"sha256:{rng.getrandbits(64):016x}", "outcome": "ok"}
            for _ in range(n)]


def body_for(n: int) -> bytes:
    payload = {"skillKey": "agent.loop_detect", "input": {"events": events(n, seed=n)}}
    return json.dumps(payload).encode()


def start_server(*store: str) -> tuple[subprocess.Popen[str], str, int]:
    """`loopsense serve` with ``store``: ``--data-dir DIR`` or ``--in-memory``."""
    process = subprocess.Popen(
        [str(BIN / "loopsense"), "serve", "--port", "0", "--store-port", "0",
         "--dev-plan", "enterprise", *store],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT,
    )
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("loopsense: ready "):
            url = line.split()[-1]
            host, port = url.removeprefix("http://").split(":")
            threading.Thread(target=lambda: [None for _ in process.stdout or []],
                             daemon=True).start()  # keep draining its output
            return process, host, int(port)
    raise RuntimeError("loopsense serve did not start")


class Client:
    def __init__(self, host: str, port: int) -> None:
        self.conn = http.client.HTTPConnection(host, port, timeout=60)

    def post(self, body: bytes, idempotent: bool = False) -> float:
        """One call; ``idempotent``: with a fresh Idempotency-Key, as the SDKs send one."""
        headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
        if idempotent:
            headers["Idempotency-Key"] = uuid.uuid4().hex
        started = time.perf_counter()
        self.conn.request("POST", "/v1/execute", body=body, headers=headers)
        answer = self.conn.getresponse()
        answer.read()
        elapsed = time.perf_counter() - started
        if answer.status != 200:
            raise RuntimeError(f"HTTP {answer.status}")
        return elapsed


def in_process(body: bytes) -> float:
    from loopsense import jsonio
    from loopsense.observability import metrics
    from loopsense.platform.access.catalog import find_skill
    from loopsense.platform.execute.skill_handler import call_skill

    started = time.perf_counter()
    envelope = jsonio.loads(body)
    call_skill(find_skill(envelope["skillKey"]), envelope["input"], "bench")
    elapsed = time.perf_counter() - started
    metrics.clear_metrics()  # as a Lambda's flush would; Powertools prints at 100 otherwise
    return elapsed


def stats(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[int(0.95 * (len(ordered) - 1))] * 1000


def latency(client: Client, body: bytes, rounds: int,
            idempotent: bool = False) -> tuple[list[float], list[float]]:
    http_times, local_times = [], []
    for _ in range(3):  # warm-up both sides
        client.post(body, idempotent)
        in_process(body)
    for _ in range(rounds):
        http_times.append(client.post(body, idempotent))
        local_times.append(in_process(body))
    return http_times, local_times


def throughput(host: str, port: int, body: bytes, clients: int, per_client: int) -> float:
    barrier = threading.Barrier(clients + 1)
    errors: list[BaseException] = []

    def work() -> None:
        client = Client(host, port)
        barrier.wait()
        try:
            for _ in range(per_client):
                client.post(body)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(clients)]
    for thread in threads:
        thread.start()
    barrier.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    if errors:
        raise RuntimeError(f"{len(errors)} clients failed: {errors[0]!r}")
    return clients * per_client / elapsed


def store_costs(client: Any, rounds: int, history: int) -> dict[str, float]:
    """Median ms of each kind of store call the pipeline makes, through ``client``; the charge
    again after ``history`` more usage records (it must not grow with them)."""
    from loopsense.settings import Settings
    from loopsense.store.dynamo import Dynamo
    from loopsense.store.metering import Metering, UsageRecord
    from loopsense_local.tables import create_tables, use_local_tables

    use_local_tables()
    config = Settings()
    create_tables(client, config)
    metering = Metering(Dynamo(client), config)
    kinds: dict[str, list[float]] = {"get_item": [], "conditional update": [],
                                     "charge transaction": []}
    for i in range(rounds):
        started = time.perf_counter()
        metering.used("t", "2026-11")
        kinds["get_item"].append(time.perf_counter() - started)
        started = time.perf_counter()
        metering.admit("t", i, 10**6)
        kinds["conditional update"].append(time.perf_counter() - started)
        record = UsageRecord(f"e{i}", "agent.loop_detect", "1.0.0", 1, AT, 1, "ok")
        started = time.perf_counter()
        metering.charge("t", "2026-11", 10**9, record)
        kinds["charge transaction"].append(time.perf_counter() - started)
    if history:
        for i in range(history):
            metering.charge("t", "2026-11", 10**9, UsageRecord(f"h{i}", "agent.loop_detect",
                                                               "1.0.0", 1, AT, 1, "ok"))
        later = f"charge after {history + rounds:,} records"
        kinds[later] = []
        for i in range(rounds):
            record = UsageRecord(f"l{i}", "agent.loop_detect", "1.0.0", 1, AT, 1, "ok")
            started = time.perf_counter()
            metering.charge("t", "2026-11", 10**9, record)
            kinds[later].append(time.perf_counter() - started)
    return {k: statistics.median(v) * 1000 for k, v in kinds.items()}


def compare_stores(rounds: int, history: int) -> None:
    """The embedded engine's in-process client (the server's path), durable and in memory,
    against moto in-process (mock_aws, what `loopsense serve` used before), the same calls in
    this process. moto gets a short history: its transactions copy the whole table, so its
    charge grows with every record (20 ms at first, 360 ms after 2,500) and a long one would
    take many minutes."""
    import boto3
    from moto import mock_aws

    from loopsense_local.embedded import EmbeddedDynamoDB

    costs = {}
    with tempfile.TemporaryDirectory() as data_dir:
        for name, where in (("durable", data_dir), ("in-memory", None)):
            embedded = EmbeddedDynamoDB(port=0, data_dir=where).start()
            try:
                costs[name] = store_costs(embedded.client(), rounds, history)
            finally:
                embedded.stop()
    with mock_aws():
        moto = store_costs(boto3.client("dynamodb", region_name="us-east-1"), rounds, 0)
    print(f"{'store call, median ms':<40}{'durable':>9}{'in-memory':>11}{'ratio':>7}"
          f"{'moto':>9}{'moto/durable':>14}")
    for kind, ms in costs["durable"].items():
        memory, baseline = costs["in-memory"][kind], moto.get(kind)
        print(f"{kind:<40}{ms:>9.3f}{memory:>11.3f}{ms / memory:>6.2f}x"
              + (f"{baseline:>9.2f}{baseline / ms:>13.0f}x" if baseline is not None else ""))


def platform(store: tuple[str, ...], rounds: int, per_client: int) -> dict[str, Any]:
    """The latency cases and the throughput of one server; prints them as it goes."""
    process, host, port = start_server(*store)
    found: dict[str, Any] = {}
    try:
        client = Client(host, port)
        small, large = body_for(6), body_for(5_000)
        print(f"loopsense serve {' '.join(store)}")
        for name, body, idempotent in (("6 events", small, False),
                                       ("6 events, Idempotency-Key", small, True),
                                       ("5,000 events", large, False)):
            over_http, local = latency(client, body, rounds, idempotent)
            (h_med, h_p95), (l_med, _) = stats(over_http), stats(local)
            found[name] = h_med - l_med
            print(f"{'loop_detect ' + name:<40}{h_med:>11.2f}{h_p95:>10.2f}"
                  f"{l_med:>12.2f}{h_med - l_med:>10.2f}{h_med / l_med:>7.1f}x")
        single = 1000 / stats(latency(client, small, rounds)[0])[0]
        for clients in (4, 8):
            rps = throughput(host, port, small, clients=clients, per_client=per_client)
            found["rps" if clients == 4 else f"rps{clients}"] = rps
            print(f"sustained small calls, {clients} clients: {rps:.0f} requests/s "
                  f"({rps / single:.2f}x one client back to back: {single:.0f}/s)")
    finally:
        process.send_signal(2)
        process.wait(timeout=15)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rounds = 15 if args.quick else 100
    per_client = 25 if args.quick else 150
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "1")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "1")
    import loopsense.observability as observability

    observability.logger.setLevel("WARNING")

    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs; {rounds} rounds a case")
    print(f"{'case':<40}{'median ms':>11}{'p95 ms':>10}{'in-process':>12}"
          f"{'overhead':>10}{'ratio':>8}")
    with tempfile.TemporaryDirectory() as data_dir:
        durable = platform(("--data-dir", data_dir), rounds, per_client)
    memory = platform(("--in-memory",), rounds, per_client)
    print("durable against in-memory: " + ", ".join(
        f"{name} overhead {durable[name]:.2f} vs {memory[name]:.2f} ms"
        for name in durable if not name.startswith("rps"))
        + f"; {durable['rps']:.0f} vs {memory['rps']:.0f} requests/s "
          f"({durable['rps'] / memory['rps']:.2f}x)")
    compare_stores(rounds, 200 if args.quick else 3000)
    return 0


if __name__ == "__main__":
    sys.exit(main())
