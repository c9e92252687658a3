"""Benchmark: what the Python run tracker adds to an agent step (spec/integrations.md).

Run from the repository root:

    .venv/bin/python benchmarks/bench_tracker.py            # the recorded run (about a minute)
    .venv/bin/python benchmarks/bench_tracker.py --quick    # smoke run (do not quote)

`loopsense serve` (in-memory store, enterprise dev tenant so the rate limit does not interfere)
on this machine. Each round times one ``tracker.tool_call(...)`` (distinct arguments and result,
policy observe) per mode, interleaved so machine noise hits the modes alike:

- keep-alive: the SDK's default transport (one kept-alive connection);
- no keep-alive: ``urllib_transport`` (a new TCP connection per step), the baseline;
- server down: the base URL is a closed loopback port; the first step pays the refused
  connection, then steps are kept without a request while the client's backoff runs.

Prints median and p95 per step (ms) of each mode, the ratio of keep-alive to no keep-alive
(same process, same rounds), and the slowest down step against the tracker's timeout.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_platform import KEY, start_server  # noqa: E402
from harness import p95  # noqa: E402
from loopsense_sdk import Client, Tracker, urllib_transport  # noqa: E402


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def timed(tracker: Tracker, i: int) -> float:
    started = time.perf_counter()
    tracker.tool_call("search", {"q": f"hotel {i}"}, result={"hits": i})
    return (time.perf_counter() - started) * 1000



def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    rounds = 30 if parser.parse_args().quick else 400
    process, host, port = start_server("--in-memory")
    try:
        url = f"http://{host}:{port}"
        run = f"bench-{uuid.uuid4().hex[:8]}"
        trackers = {
            "keep-alive": Client(KEY, url).runs.track(run, agent_id="a", policy="observe"),
            "no keep-alive": Client(KEY, url, transport=urllib_transport).runs.track(
                run, agent_id="b", policy="observe"),
            "server down": Client(KEY, f"http://127.0.0.1:{closed_port()}").runs.track(
                run, agent_id="c", policy="observe", max_pending=rounds + 10),
        }
        for name, tracker in trackers.items():  # warm up (connections, the server's caches)
            if name != "server down":
                for i in range(10):
                    timed(tracker, -1 - i)
        samples: dict[str, list[float]] = {name: [] for name in trackers}
        for i in range(rounds):
            for name, tracker in trackers.items():
                samples[name].append(timed(tracker, i))
        print(f"tracker.tool_call, {rounds} rounds, modes interleaved, "
              f"timeout {trackers['keep-alive'].timeout:g} s")
        for name, values in samples.items():
            print(f"  {name:14} median {statistics.median(values):8.3f} ms   "
                  f"p95 {p95(values):8.3f} ms   max {max(values):8.3f} ms")
        keep, fresh = samples["keep-alive"], samples["no keep-alive"]
        ratio = statistics.median(keep) / statistics.median(fresh)
        tail = p95(keep) / p95(fresh)
        print(f"  keep-alive / no keep-alive: median {ratio:.2f}x, p95 {tail:.2f}x")
        down = trackers["server down"]
        print(f"  server down: every step degraded, {down.pending} kept, {down.dropped} dropped,"
              f" slowest {max(samples['server down']):.3f} ms (timeout {down.timeout * 1000:g} ms)")
        assert all(t.dropped == 0 for t in trackers.values())
    finally:
        process.terminate()
        process.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
