"""How long `loopsense execute` takes from start to answer, against another tree of the code.

    .venv/bin/python benchmarks/bench_cli_start.py --baseline DIR   # DIR: `git archive` of a commit
    .venv/bin/python benchmarks/bench_cli_start.py                  # this tree only

Each round starts ``python -m loopsense_local.cli execute agent.loop_detect -`` (a six-event
body on stdin) once with this tree's ``shared/`` and ``local/`` first on PYTHONPATH and once
with DIR's, back to back, so the machine's drift moves both alike; the figure is the median over
rounds of each round's ratio (benchmarks/harness.py), beside each side's median and minimum.
Also printed: the X-Ray SDK's share of the start (``-X importtime``), which a local call never
needs. Results: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.harness import paired_ratio  # noqa: E402

BODY = json.dumps({"events": [{"action": "search"}, {"action": "click"}] * 3}).encode()
COMMAND = [sys.executable, "-m", "loopsense_local.cli", "execute", "agent.loop_detect", "-"]


def _env(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": f"{tree / 'shared'}:{tree / 'local'}"}


def start(tree: Path, *flags: str) -> tuple[float, subprocess.CompletedProcess[bytes]]:
    t0 = time.perf_counter()
    done = subprocess.run([COMMAND[0], *flags, *COMMAND[1:]], input=BODY, env=_env(tree),
                          capture_output=True, check=True, timeout=60)
    elapsed = time.perf_counter() - t0
    assert json.loads(done.stdout)["loopDetected"] is True, done.stdout
    return elapsed, done


def xray_ms(tree: Path) -> float:
    """Cumulative import time of aws_xray_sdk.core (most of the SDK), in ms; 0: not imported."""
    _, done = start(tree, "-X", "importtime")
    found = re.search(r"import time:\s+\d+ \|\s+(\d+) \|\s+aws_xray_sdk\.core$",
                      done.stderr.decode(), re.MULTILINE)
    return int(found[1]) / 1e3 if found else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="another tree of the code (git archive)")
    parser.add_argument("--rounds", type=int, default=21)
    args = parser.parse_args()
    trees = {"this tree": ROOT}
    if args.baseline:
        trees = {"baseline": args.baseline.resolve(), **trees}
    for tree in trees.values():  # warm the page cache and the .pyc files
        start(tree)
    times: dict[str, list[float]] = {name: [] for name in trees}
    for _ in range(args.rounds):
        for name, tree in trees.items():
            times[name].append(start(tree)[0])
    print(f"`loopsense execute agent.loop_detect -`, {args.rounds} interleaved rounds")
    for name, values in times.items():
        print(f"  {name:<10} median {statistics.median(values) * 1e3:7.1f} ms   "
              f"min {min(values) * 1e3:7.1f} ms   aws_xray_sdk.core import "
              f"{xray_ms(trees[name]):6.1f} ms")
    if args.baseline:
        print(f"  this tree / baseline, median of the rounds' ratios: "
              f"{paired_ratio(times['this tree'], times['baseline']):.2f}x")


if __name__ == "__main__":
    main()
