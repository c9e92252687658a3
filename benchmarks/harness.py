"""What every benchmark here shares: interleaved timing and the way results are printed."""

from __future__ import annotations

import gc
import re
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def measure(cases: dict[str, Callable[[], Any]], reps: int, warmup: int) -> dict[str, list[float]]:
    """Seconds per call of each case: warm-up calls, then ``reps`` rounds, one call of every case
    per round (interleaved, so a noisy neighbour slows all cases alike), GC off while timing."""
    for fn in cases.values():
        for _ in range(warmup):
            fn()
    times: dict[str, list[float]] = {name: [] for name in cases}
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(reps):
            for name, fn in cases.items():
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
            gc.collect()  # between rounds, outside the timed calls
    finally:
        if was_enabled:
            gc.enable()
    return times


def paired_ratio(values: list[float], baseline: list[float]) -> float:
    """The median over rounds of ``values[i] / baseline[i]``, both timed in round i of
    ``measure`` (back to back): a machine whose speed drifts between rounds moves both alike,
    where the ratio of the two medians mixes rounds of different speeds."""
    return statistics.median(v / b for v, b in zip(values, baseline, strict=True))


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, -(-95 * len(ordered) // 100) - 1)]  # nearest rank


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:10.3f}"


def table(title: str, rows: list[tuple[str, list[float]]], baseline: str, width: int = 46) -> None:
    """One row per case: median, p95, min (ms) and the ratio of medians to ``baseline``."""
    base = statistics.median(dict(rows)[baseline])
    print(f"\n{title}")
    print(f"  {'case':<{width}} {'median ms':>10} {'p95 ms':>10} {'min ms':>10} {'x baseline':>11}")
    for name, values in rows:
        med = statistics.median(values)
        print(f"  {name:<{width}} {ms(med)} {ms(p95(values))} {ms(min(values))} "
              f"{med / base:10.2f}x")


def verdict(label: str, ok: bool, detail: str) -> str:
    line = f"  [{'MET' if ok else 'NOT MET'}] {label}: {detail}"
    print(line)
    return line


def baseline_package(tree: Path, into: Path) -> str:
    """``tree``'s ``shared/loopsense`` (a ``git archive`` of another commit) copied under
    ``into`` as the package ``loopsense_baseline``, its own imports renamed, so that both
    versions run in one process (``into`` is put on ``sys.path``). Returns the package name."""
    name = "loopsense_baseline"
    source = tree / "shared" / "loopsense"
    if not source.is_dir():
        raise SystemExit(f"{tree} has no shared/loopsense: give the root of a `git archive`")
    target = into / name
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
    imports = re.compile(r"\b(from|import) loopsense(?=[. ])")
    for module in target.rglob("*.py"):
        module.write_text(imports.sub(rf"\1 {name}", module.read_text()))
    if str(into) not in sys.path:
        sys.path.insert(0, str(into))
    return name
