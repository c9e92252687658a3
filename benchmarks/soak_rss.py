"""Soak: does `loopsense serve` stay flat in memory under a long load?

Run from the repository root:

    .venv/bin/python benchmarks/soak_rss.py                 # 10 minutes, durable store
    .venv/bin/python benchmarks/soak_rss.py --minutes 2 --in-memory

It starts `loopsense serve` on loopback (enterprise dev tenant, a temporary --data-dir unless
--in-memory, the TTL sweeper every --sweep-interval seconds) and keeps --clients threads
sending small agent.loop_detect calls back to back, each with a fresh Idempotency-Key as the
SDKs send, for --minutes. Every --every seconds it samples the server's RSS (ps) and the
embedded store's item counts (DescribeTable over its endpoint), and at the end prints the first,
last and largest RSS and the counts. Each call leaves a usage record (kept: it is the usage
history), an idempotency record and a charge claim (both expire after the 24 h replay window,
so they pile up over a run this short, as on DynamoDB) and counts in a rate-limit counter (one
a second, expired 120 s later: the sweeper keeps their number flat).
"""

from __future__ import annotations

import argparse
import http.client
import json
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
KEY = "ls_local_development_key_0001"
BODY = json.dumps({"skillKey": "agent.loop_detect", "input": {
    "events": [{"action": "search"}, {"action": "click"}] * 3}}).encode()


def start_server(*args: str) -> tuple[subprocess.Popen[str], str, int, str]:
    process = subprocess.Popen(
        [str(BIN / "loopsense"), "serve", "--port", "0", "--store-port", "0",
         "--dev-plan", "enterprise", *args],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    assert process.stdout is not None
    store = ""
    for line in process.stdout:
        if "DynamoDB: " in line:
            store = line.split("DynamoDB: ", 1)[1].strip()
        if line.startswith("loopsense: ready "):
            host, port = line.split()[-1].removeprefix("http://").split(":")
            threading.Thread(target=lambda: [None for _ in process.stdout or []],
                             daemon=True).start()  # keep draining its output
            return process, host, int(port), store
    raise RuntimeError("loopsense serve did not start")


def rss_mb(pid: int) -> float:
    found = subprocess.run(["ps", "-o", "rss=", "-p", str(pid)], capture_output=True,
                           text=True, check=True)
    return int(found.stdout.strip()) / 1024


def item_counts(client: Any) -> dict[str, int]:
    from loopsense.settings import Settings

    config = Settings()
    tables = {"idempotency": config.idempotency_table, "rate-limit": config.rate_limits_table,
              "usage": config.usage_table}
    return {name: client.describe_table(TableName=table)["Table"]["ItemCount"]
            for name, table in tables.items()}


def load(host: str, port: int, until: float, statuses: Counter[int], lock: threading.Lock) -> None:
    conn = http.client.HTTPConnection(host, port, timeout=60)
    while time.monotonic() < until:
        conn.request("POST", "/v1/execute", body=BODY, headers={
            "Authorization": f"Bearer {KEY}", "Content-Type": "application/json",
            "Idempotency-Key": uuid.uuid4().hex})
        answer = conn.getresponse()
        answer.read()
        with lock:
            statuses[answer.status] += 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--every", type=float, default=5.0, help="seconds between samples")
    parser.add_argument("--sweep-interval", type=float, default=30.0)
    parser.add_argument("--in-memory", action="store_true")
    args = parser.parse_args()

    import boto3

    with tempfile.TemporaryDirectory() as data_dir:
        store = ["--in-memory"] if args.in_memory else ["--data-dir", data_dir]
        process, host, port, endpoint = start_server(
            *store, "--ttl-sweep-interval", str(args.sweep_interval))
        client = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1",
                              aws_access_key_id="local", aws_secret_access_key="local")
        statuses: Counter[int] = Counter()
        lock = threading.Lock()
        until = time.monotonic() + args.minutes * 60
        workers = [threading.Thread(target=load, args=(host, port, until, statuses, lock),
                                    daemon=True) for _ in range(args.clients)]
        samples: list[tuple[float, float, dict[str, int]]] = []
        started = time.monotonic()
        try:
            print(f"loopsense serve {' '.join(store)}: {args.clients} clients for "
                  f"{args.minutes:g} min, sweeper every {args.sweep_interval:g} s")
            print(f"{'s':>6}{'RSS MB':>9}{'requests':>10}  items")
            for worker in workers:
                worker.start()
            while True:
                with lock:
                    done = sum(statuses.values())
                sample = (time.monotonic() - started, rss_mb(process.pid), item_counts(client))
                samples.append(sample)
                print(f"{sample[0]:>6.0f}{sample[1]:>9.1f}{done:>10}  {sample[2]}", flush=True)
                if time.monotonic() >= until:
                    break
                time.sleep(min(args.every, max(0.0, until - time.monotonic())))
            for worker in workers:
                worker.join(60)
        finally:
            process.send_signal(2)
            process.wait(timeout=30)
    rss = [s[1] for s in samples]
    warm = [s[1] for s in samples if s[0] >= 60]  # once caches and pools have filled
    print(f"RSS MB: first {rss[0]:.1f}, last {rss[-1]:.1f}, max {max(rss):.1f}"
          + (f"; from the first minute on: {warm[0]:.1f} -> {warm[-1]:.1f}, max {max(warm):.1f}"
             if warm else ""))
    print(f"items at the end: {samples[-1][2]}; largest rate-limit count "
          f"{max(s[2]['rate-limit'] for s in samples)}")
    print(f"responses: {dict(sorted(statuses.items()))} "
          f"({sum(statuses.values()) / samples[-1][0]:.0f}/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
