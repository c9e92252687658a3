"""Each function's cold start from the `sam build` output: `python -X importtime` of its handler.

    .venv/bin/python benchmarks/bench_cold_start.py                       # sam build, then measure
    .venv/bin/python benchmarks/bench_cold_start.py --build B --baseline-build A   # two builds

Each function runs as tests/infra/test_layer.py runs it (a clean `python -I -S`, Lambda's
sys.path: the function's directory, the layer, the runtime's boto3), imports `app` and answers
its events/ file, with `-X importtime`. Per function: the cumulative import time of `app` (the
init phase), the imports made during the first call, and the heavy packages among them. With a
baseline build the rounds interleave the two builds; figures are medians over rounds and the
median of the rounds' ratios (benchmarks/harness.py). Results: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "shared", ROOT / "local"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from cfnlint.decode import cfn_yaml  # noqa: E402

from benchmarks.harness import paired_ratio  # noqa: E402
from loopsense_local.embedded import FAKE_AWS_ENV  # noqa: E402
from loopsense_local.tables import use_local_tables  # noqa: E402
from tests.infra.test_layer import HEAVY, invoke, link_runtime, seeded_store, store_environment  # noqa: E402
from tests.infra.test_template import TEMPLATE, _functions, _tool, _tool_env  # noqa: E402

LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)$")


def sam_build(into: Path) -> Path:
    subprocess.run([_tool("sam"), "build", "--build-dir", str(into), "--template", str(TEMPLATE),
                    "--no-use-container", "--no-cached"], cwd=ROOT, env=_tool_env(),
                   capture_output=True, check=True, timeout=900)
    return into


def profile(stderr: str) -> tuple[float, float, dict[str, float]]:
    """(ms importing app, ms of top-level imports after it, ms per heavy package)."""
    init = after = 0.0
    heavy: dict[str, float] = {}
    seen_app = False
    for line in stderr.splitlines():
        match = LINE.match(line)
        if not match:
            continue
        cumulative, depth, name = int(match[2]) / 1e3, len(match[3]), match[4]
        if depth == 1 and name == "app":
            init, seen_app = cumulative, True
        elif depth == 1 and seen_app:
            after += cumulative
        top = name.split(".")[0]
        if top in HEAVY and "." not in name:
            heavy[top] = heavy.get(top, 0.0) + cumulative
    return init, after, heavy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, help="a sam build output (default: build now)")
    parser.add_argument("--baseline-build", type=Path, help="another build to compare with")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    os.environ.update(FAKE_AWS_ENV)
    use_local_tables()
    scratch = Path(tempfile.mkdtemp(prefix="cold-start-"))
    builds = {"after": args.build or sam_build(scratch / "build")}
    if args.baseline_build:
        builds = {"before": args.baseline_build, **builds}
    template = cfn_yaml.load(str(TEMPLATE))
    runtime = link_runtime(scratch)
    names = list(_functions(template))
    runs: dict[tuple[str, str], list[tuple[float, float, dict[str, float]]]] = {
        (b, n): [] for b in builds for n in names}
    with seeded_store() as endpoint:
        for _ in range(args.rounds):
            for name in names:
                for label, build in builds.items():
                    found = invoke(build, runtime, name, template,
                                   store_environment(template, name, endpoint),
                                   flags=("-X", "importtime"))
                    runs[(label, name)].append(profile(found["stderr"]))
    print(f"cold start imports per function, median of {args.rounds} rounds (ms)")
    print(f"  {'function':<26} " + " ".join(f"{b + ' init':>12} {b + ' call':>12}"
                                          for b in builds) + "   heavy packages (after)")
    for name in names:
        cells = []
        for label in builds:
            samples = runs[(label, name)]
            cells.append(f"{statistics.median(s[0] for s in samples):12.1f} "
                         f"{statistics.median(s[1] for s in samples):12.1f}")
        heavy = runs[("after", name)][-1][2]
        ratio = ""
        if "before" in builds:
            inits = {label: [s[0] for s in runs[(label, name)]] for label in builds}
            ratio = f"  init after/before {paired_ratio(inits['after'], inits['before']):.2f}x"
        print(f"  {name:<26} " + " ".join(cells) + "   "
              + ", ".join(f"{k} {v:.0f}" for k, v in sorted(heavy.items())) + ratio)


if __name__ == "__main__":
    main()
