"""Benchmark for `loopsense serve` under hostile clients (issue 11): how long a normal request
waits after a burst of half-sent connections is closed at once, and what the server's memory
does after bodies over the cap.

Run from the repository root:

    .venv/bin/python benchmarks/bench_http_protocol.py           # full run (about half a minute)
    .venv/bin/python benchmarks/bench_http_protocol.py --quick   # smoke run (do not quote)

It starts `loopsense serve` (default timeouts and concurrency) on free ports on loopback and
measures, each against a baseline taken in the same run:

1. a small agent.loop_detect call on a fresh connection on the quiet server (the baseline,
   median of 20), then the same call right after N connections that each sent half a request
   head (1,000 and 2,000) are closed at once: the time until it is answered;
2. the server's resident memory (VmRSS, /proc) after start and a few calls (the baseline), then
   after 20 requests that each stream 12 MiB of chunked body (twice the 6 MiB cap), then after
   32 calls at once with a JSON body just under the cap; and its peak (VmHWM).
"""

from __future__ import annotations

import argparse
import http.client
import json
import socket
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.bench_platform import KEY, start_server  # noqa: E402

BODY = json.dumps({"skillKey": "agent.loop_detect",
                   "input": {"events": [{"action": "a"}, {"action": "b"}] * 3}}).encode()
HALF_HEAD = b"POST /v1/execute HTTP/1.1\r\nHost: x\r\nContent-Le"


def call(host: str, port: int, timeout: float = 300) -> float:
    """One small call on a fresh connection: seconds until its answer."""
    started = time.perf_counter()
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    conn.request("POST", "/v1/execute", body=BODY, headers={"Authorization": f"Bearer {KEY}"})
    answer = conn.getresponse()
    answer.read()
    conn.close()
    if answer.status != 200:
        raise RuntimeError(f"HTTP {answer.status}")
    return time.perf_counter() - started


def after_half_sent_burst(host: str, port: int, connections: int) -> float:
    sockets = []
    for _ in range(connections):
        sock = socket.create_connection((host, port), timeout=30)
        sock.sendall(HALF_HEAD)
        sockets.append(sock)
    for sock in sockets:
        sock.close()
    return call(host, port)


def memory_kib(pid: int) -> dict[str, int]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0])
    return fields


def oversized_chunked(host: str, port: int) -> None:
    piece = b"%x\r\n%s\r\n" % (1 << 20, b"x" * (1 << 20))
    with socket.create_connection((host, port), timeout=30) as sock:
        sock.sendall(f"POST /v1/execute HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n"
                     "Transfer-Encoding: chunked\r\n\r\n".encode())
        try:
            for _ in range(12):
                sock.sendall(piece)
            sock.recv(65536)
        except OSError:
            pass  # refused and closed while we were still sending


def big_calls(host: str, port: int, clients: int) -> dict[str, int]:
    """``clients`` calls at once, each a JSON body just under the 6 MiB cap (events of a few
    bytes, so parsing builds the most objects): the statuses seen (400 is the skill's input
    limit; 503 SERVER_BUSY is often seen as a connection closed while the body is sent)."""
    event = b'{"action": "a"}, '
    events = event * ((6 * 1024 * 1024 - 4096) // len(event))
    body = b'{"skillKey": "agent.loop_detect", "input": {"events": [' + events + b'{}]}}'

    outcomes: list[str] = []

    def one() -> None:
        conn = http.client.HTTPConnection(host, port, timeout=300)
        try:
            conn.request("POST", "/v1/execute", body=body,
                         headers={"Authorization": f"Bearer {KEY}"})
            answer = conn.getresponse()
            outcomes.append(str(answer.status))
            answer.read()
        except OSError:  # SERVER_BUSY answered before the body, and the connection closed
            outcomes.append("closed while sending")
        conn.close()

    threads = [threading.Thread(target=one) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {outcome: outcomes.count(outcome) for outcome in sorted(set(outcomes))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    bursts = (100, 200) if args.quick else (1000, 2000)
    process, host, port = start_server()
    try:
        for _ in range(3):
            call(host, port)  # warm-up
        quiet = statistics.median(call(host, port) for _ in range(20))
        print(f"loopsense serve on {host}:{port}; Python {sys.version.split()[0]}")
        print(f"small call on a fresh connection, quiet server: {quiet * 1000:.2f} ms "
              "(median of 20)")
        for connections in bursts:
            waited = after_half_sent_burst(host, port, connections)
            print(f"after {connections:,} half-sent connections closed at once: "
                  f"{waited * 1000:.2f} ms ({waited / quiet:.1f}x quiet)")
            time.sleep(1)
        before = memory_kib(process.pid)
        for _ in range(4 if args.quick else 20):
            oversized_chunked(host, port)
        after = memory_kib(process.pid)
        call(host, port)  # still answering
        print(f"RSS after start and {23 + len(bursts)} calls: {before['VmRSS'] / 1024:.1f} MiB; "
              f"after {4 if args.quick else 20} chunked bodies of 12 MiB (cap 6 MiB): "
              f"{after['VmRSS'] / 1024:.1f} MiB ({after['VmRSS'] / before['VmRSS']:.2f}x), "
              f"peak {after['VmHWM'] / 1024:.1f} MiB")
        clients = 4 if args.quick else 32
        outcomes = big_calls(host, port, clients)
        time.sleep(2)
        big = memory_kib(process.pid)
        print(f"after {clients} calls at once with a 6 MiB JSON body each: "
              f"{big['VmRSS'] / 1024:.1f} MiB ({big['VmRSS'] / before['VmRSS']:.2f}x), "
              f"peak {big['VmHWM'] / 1024:.1f} MiB; answers: {outcomes}")
    finally:
        process.send_signal(2)
        process.wait(timeout=15)
    return 0


if __name__ == "__main__":
    sys.exit(main())
