"""Benchmark: the latency the MCP gateway adds to a tools/call (spec/integrations.md).

Run from the repository root:

    .venv/bin/python benchmarks/bench_mcp_gateway.py            # the recorded run
    .venv/bin/python benchmarks/bench_mcp_gateway.py --quick    # smoke run (do not quote)

`loopsense serve` (in-memory store, enterprise dev tenant) on this machine; the scripted tool
server of tests/sdk/mcp; three sessions of the official mcp client open at once, one straight to
the tool server over stdio (the baseline), one through `loopsense-mcp-gateway` over stdio, one
through it over streamable HTTP (`--listen`; the mcp package's HTTP client), policy observe,
calls interleaved (distinct arguments each). Prints median and p95 per call of each, the added
latency (each gateway minus direct, medians and p95s) and the ratio, same process, same rounds.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_platform import KEY, start_server  # noqa: E402
from harness import p95  # noqa: E402

SCRIPTED = ROOT / "tests" / "sdk" / "mcp" / "scripted_server.py"



def gateway_args(url: str, *listen: str) -> list[str]:
    return ["-m", "loopsense_sdk.adapters.mcp_gateway", "--run", f"bench-{uuid.uuid4().hex[:8]}",
            "--policy", "observe", "--api-url", url, "--api-key", KEY, *listen, "--",
            sys.executable, str(SCRIPTED)]


@contextlib.contextmanager
def http_gateway(url: str) -> Iterator[str]:
    """The gateway serving streamable HTTP on a free port: its /mcp URL."""
    process = subprocess.Popen([sys.executable, *gateway_args(url, "--listen", "127.0.0.1:0")],
                               stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        found = re.search(r"http://\S+", process.stderr.readline())
        assert found, "the gateway did not print its URL"
        yield found.group(0)
    finally:
        process.terminate()
        process.wait(timeout=30)


async def measure(url: str, mcp_url: str, rounds: int) -> dict[str, list[float]]:
    direct = StdioServerParameters(command=sys.executable, args=[str(SCRIPTED)])
    through = StdioServerParameters(command=sys.executable, args=gateway_args(url))
    samples: dict[str, list[float]] = {"direct": [], "gateway": [], "http": []}
    async with stdio_client(direct) as (r1, w1), ClientSession(r1, w1) as plain, \
            stdio_client(through) as (r2, w2), ClientSession(r2, w2) as gated, \
            streamable_http_client(mcp_url) as (r3, w3), ClientSession(r3, w3) as over_http:
        sessions = {"direct": plain, "gateway": gated, "http": over_http}
        for session in sessions.values():
            await session.initialize()
            for i in range(10):  # warm up
                await session.call_tool("job_progress", {"job": -1 - i})
        for i in range(rounds):
            for name, session in sessions.items():
                started = time.perf_counter()
                await session.call_tool("job_progress", {"job": i})
                samples[name].append((time.perf_counter() - started) * 1000)
    return samples


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    rounds = 30 if parser.parse_args().quick else 300
    process, host, port = start_server("--in-memory")
    try:
        with http_gateway(f"http://{host}:{port}") as mcp_url:
            samples = anyio.run(measure, f"http://{host}:{port}", mcp_url, rounds)
    finally:
        process.terminate()
        process.wait(timeout=30)
    print(f"tools/call, {rounds} rounds, direct (stdio), through the gateway over stdio and over"
          " streamable HTTP, interleaved")
    for name, values in samples.items():
        print(f"  {name:8} median {statistics.median(values):8.3f} ms   p95 {p95(values):8.3f} ms")
    direct = samples["direct"]
    for name in ("gateway", "http"):
        gated = samples[name]
        added = statistics.median(gated) - statistics.median(direct)
        print(f"  added by the {name:7}: median {added:.3f} ms, p95 "
              f"{p95(gated) - p95(direct):.3f} ms; ratio "
              f"{statistics.median(gated) / statistics.median(direct):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
