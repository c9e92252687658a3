"""Benchmark: the latency the MCP gateway adds to a tools/call (spec/integrations.md).

Run from the repository root:

    .venv/bin/python benchmarks/bench_mcp_gateway.py            # the recorded run
    .venv/bin/python benchmarks/bench_mcp_gateway.py --quick    # smoke run (do not quote)

`loopsense serve` (in-memory store, enterprise dev tenant) on this machine; the scripted tool
server of tests/sdk/mcp; two sessions of the official mcp client open at once, one straight to
the tool server (the baseline), one through `loopsense-mcp-gateway` (policy observe), calls
interleaved (distinct arguments each). Prints median and p95 per call of each, the added latency
(gateway minus direct, medians and p95s) and the ratio, same process, same rounds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_platform import KEY, start_server  # noqa: E402
from harness import p95  # noqa: E402

SCRIPTED = ROOT / "tests" / "sdk" / "mcp" / "scripted_server.py"



async def measure(url: str, rounds: int) -> dict[str, list[float]]:
    direct = StdioServerParameters(command=sys.executable, args=[str(SCRIPTED)])
    through = StdioServerParameters(command=sys.executable, args=[
        "-m", "loopsense_sdk.adapters.mcp_gateway", "--run", f"bench-{uuid.uuid4().hex[:8]}",
        "--policy", "observe", "--api-url", url, "--api-key", KEY, "--",
        sys.executable, str(SCRIPTED)])
    samples: dict[str, list[float]] = {"direct": [], "gateway": []}
    async with stdio_client(direct) as (r1, w1), ClientSession(r1, w1) as plain, \
            stdio_client(through) as (r2, w2), ClientSession(r2, w2) as gated:
        sessions = {"direct": plain, "gateway": gated}
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
        samples = anyio.run(measure, f"http://{host}:{port}", rounds)
    finally:
        process.terminate()
        process.wait(timeout=30)
    print(f"tools/call over stdio, {rounds} rounds, direct and through the gateway interleaved")
    for name, values in samples.items():
        print(f"  {name:8} median {statistics.median(values):8.3f} ms   p95 {p95(values):8.3f} ms")
    direct, gated = samples["direct"], samples["gateway"]
    added = statistics.median(gated) - statistics.median(direct)
    print(f"  added by the gateway: median {added:.3f} ms, p95 {p95(gated) - p95(direct):.3f} ms"
          f"; ratio {statistics.median(gated) / statistics.median(direct):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
