"""Benchmark for agent.loops: the whole skill call on 5,000 llm_calls, its peak memory, a
100-call execution, and similar_call's clustering against scikit-learn.

Run from the repository root (scikit-learn and scipy come from the `bench` extra:
`.venv/bin/pip install -e .[bench]`; without them part 4 is skipped):

    .venv/bin/python benchmarks/bench_loops.py           # full run (a few minutes)
    .venv/bin/python benchmarks/bench_loops.py --quick   # smoke run (do not quote)
    .venv/bin/python benchmarks/bench_loops.py --baseline DIR   # also part 6 (DIR: git archive)

1. Whole skill call: ``jsonio.dumps(loops.run(jsonio.loads(body)))`` on 5,000 llm_calls of one
   model with distinct ~400-character messages (4,800 unrelated prompts, 40 planted drifting
   retry loops of 5), broken down into its stages. Each BLAS setting runs in its own
   subprocess: OpenBLAS's default threads, and OPENBLAS_NUM_THREADS=1 (what the Lambda function
   is configured with). Targets: median under 1.5 s.
2. Peak memory of that call, in a fresh subprocess: tracemalloc's peak over the call (Python and
   numpy allocations) and the growth of the process's maximum resident set. Target: < 300 MB.
3. A 100-call execution (100 llm_calls, 2 planted loops). Target: median under 20 ms.
4. similar_call's clustering (messages -> clusters) against what a user would write by hand:
   scikit-learn ``TfidfVectorizer`` + ``cosine_similarity`` + scipy ``connected_components`` with
   the same distance threshold, once with the default word features and once with the same
   features as ours (character 4-grams, sublinear tf). Interleaved rounds; the ratio is
   scikit-learn's median over ours. The clusters each finds are compared.
5. For information: the event limit (10,000 llm_calls) and a single loop of 5,000 distinct
   messages that all cluster together (the densest similarity graph).
6. With ``--baseline DIR`` (the root of a ``git archive`` of another commit): part 1's whole
   call against that commit's, both in one process (OPENBLAS_NUM_THREADS=1), interleaved
   rounds, answers compared; the figure is the median of the rounds' ratios.

Everything is deterministic (fixed seeds); only the timings vary. Results: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "shared"):  # loopsense without installing
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import numpy as np  # noqa: E402

from benchmarks.harness import baseline_package, measure, p95, paired_ratio, verdict  # noqa: E402
from loopsense import jsonio  # noqa: E402
from loopsense.core.lexvec import vectorize  # noqa: E402
from loopsense.core.similarity import similar_components  # noqa: E402
from loopsense.skills import loops  # noqa: E402

N_CALLS = 5_000
N_SMALL = 100
LOOPS_BIG, LOOPS_SMALL, LOOP_SIZE = 40, 2, 5
MESSAGE_CHARS = 400
SEED = 20_261_129
MODEL = "gpt-4o-2024-08-06"
THRESHOLD = 0.20
MIN_CLUSTER = 3

TIME_TARGET_S = 1.5
MEMORY_TARGET_MB = 300
SMALL_TARGET_MS = 20

# --------------------------------------------------------------------------------------------
# Inputs

_OPENERS = ("Summarize", "Classify", "Extract", "Translate", "Rewrite", "Explain", "Compare",
            "List", "Draft", "Review")
_SYLLABLES = ("ka", "lo", "mi", "re", "tu", "san", "der", "ion", "ex", "pro", "val", "ing", "ed",
              "ar", "ost", "qu", "ve", "na", "tor", "is", "con", "ment", "al", "ly", "ter")


def _vocabulary(rng: random.Random, size: int = 6_000) -> list[str]:
    words = {"".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 4)))
             for _ in range(size * 2)}
    return sorted(words)[:size]


def _prompt(rng: random.Random, vocab: list[str]) -> str:
    """A ~400-character agent prompt: an instruction, then content words, ids and numbers."""
    words = [f"{rng.choice(_OPENERS)} the following for ticket {rng.randrange(10**6)}:"]
    while sum(len(w) + 1 for w in words) < MESSAGE_CHARS:
        roll = rng.random()
        if roll < 0.04:
            words.append(f"#{rng.randrange(10**5)}")
        elif roll < 0.10:
            words.append(rng.choice(vocab).capitalize() + ".")
        else:
            words.append(rng.choice(vocab))
    return " ".join(words)[:MESSAGE_CHARS]


def messages(n: int, planted: int, seed: int = SEED) -> list[str]:
    """``n`` distinct messages; ``planted`` groups of LOOP_SIZE are one prompt retried with an
    attempt counter and a timestamp (distinct strings, one loop each), spread over the run."""
    rng = random.Random(seed)
    vocab = _vocabulary(rng)
    out = [_prompt(rng, vocab) for _ in range(n - planted * LOOP_SIZE)]
    for loop in range(planted):
        base = _prompt(rng, vocab)[:MESSAGE_CHARS - 50]
        for attempt in range(1, LOOP_SIZE + 1):
            stamp = f"2026-11-29T10:{loop % 60:02d}:{attempt * 7:02d}Z"
            retry = f"[{stamp}] {base} (attempt {attempt} of {LOOP_SIZE})"
            out.insert(rng.randrange(len(out) + 1), retry)
    assert len(set(out)) == len(out) == n
    return out


def body_of(texts: list[str]) -> bytes:
    events = [{"type": "llm_call", "model": MODEL, "user_message": m,
               "timestamp": 1_795_953_600_000 + 1_500 * i} for i, m in enumerate(texts)]
    return json.dumps({"events": events}, ensure_ascii=False, separators=(",", ":")).encode()


# --------------------------------------------------------------------------------------------
# Timing


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "p95": p95(values), "min": min(values)}


def row(name: str, stats: dict[str, float], base: float | None = None, unit: float = 1e3) -> str:
    ratio = f"{stats['median'] / base:9.2f}x" if base else ""
    return (f"  {name:<48} {stats['median'] * unit:10.2f} {stats['p95'] * unit:10.2f} "
            f"{stats['min'] * unit:10.2f} {ratio}")


HEADER = f"  {'case':<48} {'median ms':>10} {'p95 ms':>10} {'min ms':>10}"


# --------------------------------------------------------------------------------------------
# Workers (run in subprocesses, print one JSON line)


def worker_time(reps: int) -> dict[str, Any]:
    texts = messages(N_CALLS, LOOPS_BIG)
    body = body_of(texts)
    raw = jsonio.loads(body)
    parsed = loops.parse(raw)
    applied = loops.applied_thresholds(parsed, None)
    vectors = vectorize(texts)
    whole = lambda: jsonio.dumps(loops.run(jsonio.loads(body)))  # noqa: E731
    answer = json.loads(whole())
    cases: dict[str, Callable[[], Any]] = {
        "whole skill call": whole,
        "a. jsonio.loads(body)": lambda: jsonio.loads(body),
        "b. parse(): size check + schema": lambda: loops.parse(raw),
        "c. detect()": lambda: loops.detect(parsed, applied),
        "   of which vectorize (5,000 messages)": lambda: vectorize(texts),
        "   of which similar_components": lambda: similar_components(vectors, THRESHOLD),
        "d. jsonio.dumps(output)": lambda: jsonio.dumps(answer),
    }
    times = measure(cases, reps=reps, warmup=1)
    small = body_of(messages(N_SMALL, LOOPS_SMALL, seed=SEED + 1))
    small_times = measure({"100-call execution": lambda: jsonio.dumps(
        loops.run(jsonio.loads(small)))}, reps=max(50, reps * 20), warmup=10)
    return {
        "body_bytes": len(body),
        "findings": {sub: sum(1 for f in answer["findings"] if f["sub"] == sub)
                     for sub in dict.fromkeys(f["sub"] for f in answer["findings"])},
        "times": {name: summary(v) for name, v in {**times, **small_times}.items()},
    }


def worker_memory() -> dict[str, Any]:
    body = body_of(messages(N_CALLS, LOOPS_BIG))
    gc.collect()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    tracemalloc.start()
    jsonio.dumps(loops.run(jsonio.loads(body)))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"tracemalloc_peak_mb": peak / 2**20, "rss_growth_mb": (rss_after - rss_before) / 1024,
            "rss_peak_mb": rss_after / 1024, "body_mb": len(body) / 2**20}


def worker_extremes(reps: int) -> dict[str, Any]:
    """For information: the event limit, and one loop that covers the whole execution."""
    base = ("Extract the invoice total from the text below and answer in JSON with the keys "
            "total and currency. Text: Northwind Traders invoice INV-2291, total due GBP "
            "1,688.40, payment within 30 days of the invoice date. ") * 2
    one_loop = [f"{base}(attempt {i} at 2026-11-29T10:{i % 60:02d}:{i % 59:02d}Z)"
                for i in range(N_CALLS)]
    out = {}
    for name, texts in (("10,000 llm_calls, distinct", messages(10_000, 2 * LOOPS_BIG)),
                        ("5,000 llm_calls, all one drifting loop", one_loop)):
        body = body_of(texts)
        call = lambda b=body: jsonio.dumps(loops.run(jsonio.loads(b)))  # noqa: E731
        times = measure({name: call}, reps=reps, warmup=1)[name]
        tracemalloc.start()
        call()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        out[name] = {"body_mb": len(body) / 2**20, "peak_mb": peak / 2**20, **summary(times)}
    return out


def worker_baseline(reps: int, tree: str) -> dict[str, Any]:
    """Part 6: this tree's whole call and the baseline tree's, interleaved in this process."""
    import importlib
    import tempfile

    with tempfile.TemporaryDirectory() as into:
        name = baseline_package(Path(tree), Path(into))
        old_io = importlib.import_module(f"{name}.jsonio")
        old_loops = importlib.import_module(f"{name}.skills.loops")
        body = body_of(messages(N_CALLS, LOOPS_BIG))
        cases = {"baseline": lambda: old_io.dumps(old_loops.run(old_io.loads(body))),
                 "this tree": lambda: jsonio.dumps(loops.run(jsonio.loads(body)))}
        same = cases["baseline"]() == cases["this tree"]()
        times = measure(cases, reps=reps, warmup=1)
    return {"same_answer": same, "ratio": paired_ratio(times["this tree"], times["baseline"]),
            **{name: summary(values) for name, values in times.items()}}


def run_worker(kind: str, env: dict[str, str], *args: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, __file__, "--worker", kind, *args],
                          env={**os.environ, **env}, capture_output=True, text=True, check=True,
                          timeout=1_800)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# --------------------------------------------------------------------------------------------
# Part 4: against scikit-learn


def clusters_of(labels: np.ndarray) -> list[tuple[int, ...]]:
    groups: dict[int, list[int]] = {}
    for i, label in enumerate(labels.tolist()):
        groups.setdefault(label, []).append(i)
    return sorted(tuple(g) for g in groups.values() if len(g) >= MIN_CLUSTER)


def compare_sklearn(reps: int) -> None:
    try:
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import connected_components
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.metrics.pairwise import cosine_similarity
    except ImportError:
        print("\n4. scikit-learn comparison skipped: pip install -e .[bench]")
        return
    import sklearn

    texts = messages(N_CALLS, LOOPS_BIG)

    def ours() -> np.ndarray:
        return similar_components(vectorize(texts), THRESHOLD)

    def by_hand(**options: Any) -> Callable[[], np.ndarray]:
        def cluster() -> np.ndarray:
            tfidf = TfidfVectorizer(**options).fit_transform(texts)
            similar = (1.0 - cosine_similarity(tfidf)) < THRESHOLD
            np.fill_diagonal(similar, False)
            _, labels = connected_components(csr_matrix(similar), directed=False)
            return np.asarray(labels)
        return cluster

    words = by_hand()
    chars = by_hand(analyzer="char", ngram_range=(4, 4), sublinear_tf=True)
    found = {"ours": clusters_of(ours()), "words": clusters_of(words()),
             "chars": clusters_of(chars())}
    times = measure({"ours": ours, "words": words, "chars": chars}, reps=reps, warmup=1)
    base = summary(times["ours"])["median"]
    print(f"\n4. similar_call clustering of the same {N_CALLS} messages, threshold {THRESHOLD} "
          f"(scikit-learn {sklearn.__version__}); {reps} interleaved rounds")
    print(HEADER + f" {'x ours':>10}")
    labels = {
        "ours": "loopsense: vectorize + similar_components",
        "words": "sklearn TfidfVectorizer() words + cosine + cc",
        "chars": "sklearn TfidfVectorizer(char 4-grams, sublinear)",
    }
    for key, name in labels.items():
        print(row(name, summary(times[key]), base))
    planted = len([c for c in found["ours"]])
    print(f"   clusters of >= {MIN_CLUSTER}: ours {planted}, sklearn words "
          f"{len(found['words'])}, sklearn chars {len(found['chars'])}; ours == chars: "
          f"{found['ours'] == found['chars']}, ours == words: {found['ours'] == found['words']}")
    for key in ("words", "chars"):
        ratio = summary(times[key])["median"] / base
        print(f"  [info] sklearn {key} / ours (medians): {ratio:.1f}x")
    quality_on_the_set(TfidfVectorizer, cosine_similarity, csr_matrix, connected_components)


def quality_on_the_set(tfidf: Any, cosine: Any, csr: Any, components: Any) -> None:
    """The three pipelines on tests/data/loops_quality.json: the same per-model clusters of
    >= 3 (not all identical), scored on events as tests/unit/test_loops_quality.py does."""
    from itertools import chain

    data = json.loads((ROOT / "tests/data/loops_quality.json").read_text(encoding="utf-8"))

    def sklearn_labels(texts: list[str], **options: Any) -> np.ndarray:
        try:
            matrix = tfidf(**options).fit_transform(texts)
        except ValueError:  # no token at all
            return np.arange(len(texts))
        similar = (1.0 - cosine(matrix)) < THRESHOLD
        np.fill_diagonal(similar, False)
        return np.asarray(components(csr(similar), directed=False)[1])

    pipelines: dict[str, Callable[[list[str]], np.ndarray]] = {
        "loopsense (lexical vectorizer)": lambda t: similar_components(vectorize(t), THRESHOLD),
        "sklearn words": lambda t: sklearn_labels(t),
        "sklearn char 4-grams, sublinear": lambda t: sklearn_labels(
            t, analyzer="char", ngram_range=(4, 4), sublinear_tf=True),
    }
    print(f"\n   quality on {len(data)} labelled executions (events; as in the unit test):")
    for name, labels_of in pipelines.items():
        tp = fp = fn = 0
        wrong = []
        for ex in data:
            by_model: dict[str, list[tuple[int, str]]] = {}
            for i, e in enumerate(ex["input"]["events"]):
                if e["type"] == "llm_call":
                    by_model.setdefault(e["model"], []).append((i, e["user_message"]))
            found = []
            for items in by_model.values():
                labels = labels_of([m for _, m in items])
                for cluster in clusters_of(labels):
                    if len({items[k][1] for k in cluster}) > 1:
                        found.append(sorted(items[k][0] for k in cluster))
            expected = ex["expected"]["similar_call"]
            p = set(chain.from_iterable(found))
            e_ = set(chain.from_iterable(expected))
            tp, fp, fn = tp + len(p & e_), fp + len(p - e_), fn + len(e_ - p)
            if sorted(found) != sorted(expected):
                wrong.append(ex["id"])
        print(f"   {name:<34} precision {tp / (tp + fp):.3f} recall {tp / (tp + fn):.3f}; "
              f"wrong: {', '.join(wrong)}")


# --------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: few repetitions")
    parser.add_argument("--baseline", type=Path, help="another tree of the code (git archive)")
    parser.add_argument("--worker", choices=["time", "memory", "extremes", "baseline"],
                        help=argparse.SUPPRESS)
    parser.add_argument("--reps", type=int, default=15, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker == "time":
        print(json.dumps(worker_time(args.reps)))
        return 0
    if args.worker == "memory":
        print(json.dumps(worker_memory()))
        return 0
    if args.worker == "extremes":
        print(json.dumps(worker_extremes(args.reps)))
        return 0
    if args.worker == "baseline":
        print(json.dumps(worker_baseline(args.reps, str(args.baseline))))
        return 0

    reps = 3 if args.quick else 15
    print("agent.loops benchmark" + (" (QUICK: too few repetitions to quote)" if args.quick
                                     else ""))
    print(f"  date {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}; Python "
          f"{platform.python_version()}; numpy {np.__version__}; {platform.machine()} "
          f"{platform.system()}, {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}")

    results = {}
    for label, env in (("OpenBLAS default threads", {}),
                       ("OPENBLAS_NUM_THREADS=1", {"OPENBLAS_NUM_THREADS": "1"})):
        result = run_worker("time", env, "--reps", str(reps))
        results[label] = result
        times = result["times"]
        print(f"\n1. Whole skill call, {N_CALLS} llm_calls, body {result['body_bytes']:,} bytes "
              f"[{label}]; findings {result['findings']}")
        print(HEADER)
        for name, stats in times.items():
            if name != "100-call execution":
                print(row(name, stats))
        print(f"\n3. 100-call execution [{label}]")
        print(HEADER)
        print(row("100-call execution", times["100-call execution"]))

    memory = run_worker("memory", {"OPENBLAS_NUM_THREADS": "1"})
    print(f"\n2. Peak memory of one whole call ({memory['body_mb']:.2f} MiB body), fresh process")
    print(f"   tracemalloc peak during the call: {memory['tracemalloc_peak_mb']:.1f} MiB")
    print(f"   max RSS growth during the call:   {memory['rss_growth_mb']:.1f} MiB "
          f"(process max RSS {memory['rss_peak_mb']:.1f} MiB, interpreter and input included)")

    compare_sklearn(reps=max(3, reps // 3))

    extremes = run_worker("extremes", {"OPENBLAS_NUM_THREADS": "1"}, "--reps",
                          str(max(2, reps // 5)))
    print("\n5. For information [OPENBLAS_NUM_THREADS=1]: whole skill call and tracemalloc peak")
    for name, stats in extremes.items():
        print(f"  {name:<40} body {stats['body_mb']:.2f} MiB: median {stats['median']:.3f} s, "
              f"min {stats['min']:.3f} s, peak {stats['peak_mb']:.1f} MiB")

    if args.baseline:
        against = run_worker("baseline", {"OPENBLAS_NUM_THREADS": "1"}, "--reps", str(reps),
                             "--baseline", str(args.baseline.resolve()))
        print(f"\n6. Whole skill call against {args.baseline} [OPENBLAS_NUM_THREADS=1], "
              f"{reps} interleaved rounds; same answer: {against['same_answer']}")
        print(HEADER)
        for name in ("baseline", "this tree"):
            print(row(name, against[name]))
        print(f"  this tree / baseline, median of the rounds' ratios: {against['ratio']:.3f}x")

    print("\nTargets")
    for label, result in results.items():
        whole = result["times"]["whole skill call"]["median"]
        small = result["times"]["100-call execution"]["median"]
        verdict(f"5,000 llm_calls < {TIME_TARGET_S} s [{label}]", whole < TIME_TARGET_S,
                f"median {whole:.3f} s")
        verdict(f"100 llm_calls < {SMALL_TARGET_MS} ms [{label}]", small * 1e3 < SMALL_TARGET_MS,
                f"median {small * 1e3:.2f} ms")
    peak = max(memory["tracemalloc_peak_mb"], memory["rss_growth_mb"])
    verdict(f"peak memory < {MEMORY_TARGET_MB} MB", peak < MEMORY_TARGET_MB, f"{peak:.1f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
