"""The OpenAPI document: generating it from the code vs what the stack does at cold start.

    .venv/bin/python benchmarks/bench_openapi.py            # 15 rounds, about half a minute
    .venv/bin/python benchmarks/bench_openapi.py --quick    # 3 rounds (do not quote)

Cases, interleaved in one process (benchmarks/harness.py), modules already imported:
- generate: loopsense_local.openapi.render(), what scripts/openapi does (the pydantic models'
  JSON schemas, the catalog's, every route's operation);
- cold start (baseline): loopsense.platform.contract.routes.load(), what ContractFunction does
  once per cold start (read the committed file, its ETag);
- answer one request: the handler on events/contract.json with the loaded document.
Ratios are the medians of per-round ratios to the baseline. Results: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "shared", ROOT / "local"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from benchmarks.harness import measure, paired_ratio, table  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    started = time.perf_counter()
    from loopsense_local import openapi  # the first build pays for the imports: shown apart

    first = openapi.render()
    first_s = time.perf_counter() - started
    from loopsense.platform.contract.routes import handle, load

    event = json.loads((ROOT / "events" / "contract.json").read_text())
    document = load()
    assert document[0] == first, "the committed document is stale: run scripts/openapi"
    cases = {
        "cold start: read the committed file (baseline)": load,
        "generate from the models and the catalog": openapi.render,
        "answer one GET /openapi.json": lambda: handle(event, document),
    }
    rounds = 3 if args.quick else 15
    times = measure(cases, reps=rounds, warmup=0 if args.quick else 2)
    base = "cold start: read the committed file (baseline)"
    table(f"GET /openapi.json ({len(first):,} bytes), {rounds} rounds", list(times.items()), base)
    for name in cases:
        if name != base:
            print(f"  {name}: {paired_ratio(times[name], times[base]):.1f}x the cold start's read "
                  "(median of per-round ratios)")
    print(f"\n  the first generation, imports included: {first_s * 1e3:.0f} ms")


if __name__ == "__main__":
    main()
