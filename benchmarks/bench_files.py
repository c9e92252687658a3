"""Benchmark: POST /v1/execute with a 2 MB input by fileRef against the same input inline.

Run from the repository root:

    .venv/bin/python benchmarks/bench_files.py           # full run (about a minute)
    .venv/bin/python benchmarks/bench_files.py --quick   # smoke run (do not quote)

It starts `loopsense serve --in-memory` (its embedded DynamoDB and S3, enterprise plan so no
limit interferes) on free ports and, over real HTTP with kept-alive connections, each round:
uploads the events (just under 2 MiB of compact JSON, 4,500 agent.loop_detect events) to a fresh
pre-signed URL (POST /v1/files, then the PUT; timed apart), then calls execute by that ref and
with the same events inline, in alternating order. The ratio is the median over rounds of
by-ref / inline, both timed in the same round: what reading the file in the router costs
against parsing the same bytes from the request body (the upload is the caller's, once).
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from harness import p95, paired_ratio

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
KEY = "ls_local_development_key_0001"
HEADERS = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}


def two_mb_events() -> list[dict[str, str]]:
    rng = random.Random(22)
    return [{"action": f"tool_{rng.randrange(40)}", "target": f"/items/{rng.randrange(10**6)}",
             "stateFingerprint": f"sha256:{rng.getrandbits(256):064x}",
             "outcome": "ok " + "x" * 300} for _ in range(4_500)]


def start_server() -> tuple[subprocess.Popen[str], str, int]:
    process = subprocess.Popen(
        [str(BIN / "loopsense"), "serve", "--port", "0", "--store-port", "0",
         "--dev-plan", "enterprise", "--in-memory"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT)
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("loopsense: ready "):
            host, port = line.split()[-1].removeprefix("http://").split(":")
            threading.Thread(target=lambda: [None for _ in process.stdout or []],
                             daemon=True).start()
            return process, host, int(port)
    raise RuntimeError("loopsense serve did not start")


def call(conn: http.client.HTTPConnection, method: str, path: str, body: bytes,
         headers: dict[str, str]) -> tuple[float, Any]:
    started = time.perf_counter()
    conn.request(method, path, body=body, headers=headers)
    answer = conn.getresponse()
    data = answer.read()
    elapsed = time.perf_counter() - started
    if answer.status != 200:
        raise RuntimeError(f"{method} {path}: HTTP {answer.status} {data[:200]!r}")
    return elapsed, json.loads(data) if data else None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    rounds = 3 if parser.parse_args().quick else 30
    events = two_mb_events()
    file_bytes = json.dumps(events, separators=(",", ":")).encode()
    inline = json.dumps({"skillKey": "agent.loop_detect", "input": {"events": events}},
                        separators=(",", ":")).encode()
    assert len(file_bytes) <= 2 * 1024 * 1024, len(file_bytes)
    process, host, port = start_server()
    try:
        api = http.client.HTTPConnection(host, port, timeout=60)
        s3: http.client.HTTPConnection | None = None
        uploads, by_ref, by_body = [], [], []
        outputs = set()
        for i in range(rounds + 2):  # two warm-up rounds
            started = time.perf_counter()
            _, made = call(api, "POST", "/v1/files", b"", HEADERS)
            url = urlsplit(made["uploadUrl"])
            if s3 is None:
                s3 = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
            call(s3, "PUT", f"{url.path}?{url.query}", file_bytes, {})
            upload = time.perf_counter() - started
            ref = json.dumps({"skillKey": "agent.loop_detect",
                              "input": {"fileRef": made["fileRef"]}}).encode()
            pair = [(by_ref, ref), (by_body, inline)]
            for times, body in (pair if i % 2 else pair[::-1]):
                elapsed, answer = call(api, "POST", "/v1/execute", body, HEADERS)
                outputs.add(json.dumps(answer["output"], sort_keys=True))
                if i >= 2:
                    times.append(elapsed)
            if i >= 2:
                uploads.append(upload)
        assert len(outputs) == 1, "by ref and inline answered differently"
    finally:
        process.terminate()
        process.wait(timeout=30)

    print(f"execute agent.loop_detect, {len(events):,} events: the file {len(file_bytes):,} "
          f"bytes, the inline body {len(inline):,} bytes; {rounds} rounds, same process")
    print(f"  {'case':<34} {'median ms':>10} {'p95 ms':>10}")
    for name, values in (("inline (the baseline)", by_body), ("by fileRef", by_ref),
                         ("upload (POST /v1/files + PUT)", uploads)):
        print(f"  {name:<34} {statistics.median(values) * 1e3:10.2f} {p95(values) * 1e3:10.2f}")
    print(f"  by fileRef / inline, median of the paired ratios: "
          f"{paired_ratio(by_ref, by_body):.2f}x")


if __name__ == "__main__":
    main()
