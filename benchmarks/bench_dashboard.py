"""Benchmark for the dashboard (docs/dashboard.md): time to first render of the failure-group
list with 1,000 groups and of a run with 10,000 steps, and the page's weight on first load.

Run from the repository root (needs chromium, as tests/browser does):

    .venv/bin/python benchmarks/bench_dashboard.py            # the recorded run (~2 minutes)
    .venv/bin/python benchmarks/bench_dashboard.py --quick    # smoke run (do not quote)

A `loopsense serve --in-memory` of its own, seeded through the API: one tenant with 1,000
failure groups (identical-call loops, 166 distinct messages per execution) and a run of one
agent with 10,000 steps (20 batches of 500, a three-tool cycle with repeats, so findings
stand); a second tenant with 10 groups and a run of 10 steps is the baseline. Each round opens a
fresh browser context (nothing cached, the key already in sessionStorage) per case,
interleaved, and reads ``performance.now()`` (ms since the navigation started) once the view
has drawn: the list's first page of rows (100), the whole list after "Load more" to 1,000 rows,
the run's agent card and event log. Page weight: the bytes every request of a first load
transferred (headers + body as sent, gzip included), by file.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from loopsense_local.aws_env import FAKE_AWS_ENV  # noqa: E402
from loopsense_local.tables import use_local_tables  # noqa: E402
from tests.browser.harness import CHROMIUM, FLAGS, LAPTOP  # noqa: E402
from tests.e2e.server import DEV_KEY, Operator, start_server  # noqa: E402


def call(url: str, key: str, method: str, path: str, body: Any = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    for _ in range(20):
        request = urllib.request.Request(url + path, data=data, method=method, headers={
            "Authorization": f"Bearer {key}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                return json.loads(answer.read())
        except urllib.error.HTTPError as error:
            if error.code != 429:
                raise
            time.sleep(1)
    raise RuntimeError("rate limited throughout")


def seed(url: str, key: str, groups: int, steps: int) -> dict[str, int]:
    messages = [f"look up order {i} again" for i in range(groups)]
    for n, start in enumerate(range(0, groups, 166)):
        events = [{"type": "llm_call", "model": "m", "user_message": m}
                  for m in messages[start:start + 166] for _ in range(3)]
        call(url, key, "POST", f"/v1/executions/bench-{n}/events", {"events": events})
    tools = ["search", "open", "summarize"]
    for first in range(0, steps, 500):
        batch = [{"agentId": "ari", "kind": "tool_call", "action": tools[i % 3],
                  "args": {"q": i % 3}, "result": {"ok": i % 3}, "outcome": "neutral"}
                 for i in range(first, min(steps, first + 500))]
        call(url, key, "POST", "/v1/runs/long-run/steps", {"steps": batch})
    listed, cursor = 0, None
    while True:
        page = call(url, key, "GET", "/v1/failure-groups?limit=100"
                    + (f"&cursor={cursor}" if cursor else ""))
        listed += len(page["items"])
        cursor = page["nextCursor"]
        if cursor is None:
            break
    run = call(url, key, "GET", "/v1/runs/long-run")
    return {"groups": listed, "steps": run["agents"][0]["sequence"],
            "findings": len(run["agents"][0]["signal"]["findings"])}


def render_ms(browser: Any, url: str, key: str, hash_: str, ready: str,
              more: int = 0, rows: int = 0) -> tuple[float, float | None]:
    """(ms to the view's first draw, ms to ``rows`` rows after clicking "Load more")."""
    context = browser.new_context(viewport=LAPTOP)
    context.add_init_script(f"sessionStorage.setItem('loopsense.apiKey', {json.dumps(key)})")
    page = context.new_page()
    try:
        page.goto(f"{url}/{hash_}")
        page.wait_for_selector(ready)
        first = page.evaluate("performance.now()")
        whole = None
        if more:
            for _ in range(more):
                page.click("main .actions button")
                page.wait_for_function(
                    "n => document.querySelectorAll('tbody tr').length >= n",
                    arg=min(rows, 100 * (_ + 2)))
            whole = page.evaluate("performance.now()")
        return first, whole
    finally:
        context.close()


def weight(browser: Any, url: str, key: str | None, hash_: str, ready: str
           ) -> dict[str, int]:
    context = browser.new_context(viewport=LAPTOP)
    if key:
        context.add_init_script(f"sessionStorage.setItem('loopsense.apiKey', {json.dumps(key)})")
    page = context.new_page()
    sizes: dict[str, int] = {}
    page.on("requestfinished", lambda r: sizes.__setitem__(
        r.url.removeprefix(url), (lambda s: s["responseBodySize"] + s["responseHeadersSize"])(
            r.sizes())))
    try:
        page.goto(f"{url}/{hash_}")
        page.wait_for_selector(ready)
        page.wait_for_load_state("networkidle")
        return sizes
    finally:
        context.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    chromium = CHROMIUM
    groups, steps, reps = (200, 1_000, 2) if args.quick else (1_000, 10_000, 5)
    use_local_tables()  # the operator's store client names the tables as the server does
    for name, value in FAKE_AWS_ENV.items():  # and takes any credentials and region
        os.environ.setdefault(name, value)
    server = start_server("--in-memory")
    try:
        _, small = Operator(server.store()).new_tenant("team")
        t0 = time.perf_counter()
        big = seed(server.url, DEV_KEY, groups, steps)
        base = seed(server.url, small, 10, 10)
        print(f"seeded in {time.perf_counter() - t0:.1f} s: {big} (baseline {base})")
        with sync_playwright() as driver:
            browser = driver.chromium.launch(executable_path=chromium, args=FLAGS)
            cases = {
                "groups: first page, 1,000 groups": (DEV_KEY, "#/groups", "tbody tr", 0),
                "groups: first page, 10 groups": (small, "#/groups", "tbody tr", 0),
                "groups: all 1,000 rows (9 x Load more)": (DEV_KEY, "#/groups", "tbody tr",
                                                           (big["groups"] - 1) // 100),
                "run: 10,000 steps": (DEV_KEY, "#/runs/long-run",
                                      "section[data-agent] .recommendation", 0),
                "run: 10 steps": (small, "#/runs/long-run",
                                  "section[data-agent] .recommendation", 0),
            }
            times: dict[str, list[float]] = {name: [] for name in cases}
            for key, where, ready, more in cases.values():  # warm-up: server and browser
                render_ms(browser, server.url, key, where, ready, more, big["groups"])
            for _ in range(reps):
                for name, (key, where, ready, more) in cases.items():
                    first, whole = render_ms(browser, server.url, key, where, ready, more,
                                             big["groups"])
                    times[name].append(whole if more else first)
            print(f"\nTime to render, ms since navigation start ({reps} rounds, interleaved)")
            print(f"  {'case':<42} {'median':>8} {'min':>8} {'max':>8}")
            for name, values in times.items():
                print(f"  {name:<42} {statistics.median(values):8.0f} {min(values):8.0f} "
                      f"{max(values):8.0f}")
            ratio_groups = statistics.median(
                a / b for a, b in zip(times["groups: first page, 1,000 groups"],
                                      times["groups: first page, 10 groups"], strict=True))
            ratio_run = statistics.median(
                a / b for a, b in zip(times["run: 10,000 steps"], times["run: 10 steps"],
                                      strict=True))
            print(f"  paired ratio 1,000 / 10 groups: {ratio_groups:.2f}x; "
                  f"10,000 / 10 steps: {ratio_run:.2f}x")
            for label, key, where, ready in (("sign-in page", None, "", "#api-key"),
                                             ("failure groups, signed in", DEV_KEY, "#/groups",
                                              "tbody tr")):
                sizes = weight(browser, server.url, key, where, ready)
                print(f"\nPage weight, first load of the {label}: {sum(sizes.values()):,} bytes "
                      f"in {len(sizes)} requests")
                for path, size in sorted(sizes.items(), key=lambda kv: -kv[1]):
                    print(f"  {size:>8,}  {path[:90]}")
            browser.close()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
