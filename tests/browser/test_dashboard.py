"""The dashboard in a real headless browser (Debian's chromium, playwright) against a running
`loopsense serve` seeded through the API: executions that loop, a run that loops and breaks,
a second tenant. What the page shows is checked against what the API answers.

Every page is opened at a laptop's and a phone's width: screenshot saved under
build/screenshots/ and checked for content, axe-core's serious and critical violations none,
no console error, no request to another origin.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.harness import (
    FLAGS,
    LAPTOP,
    PHONE,
    SHOTS,
    Watched,
    axe_violations,
    chromium_or_skip,
    ink,
    sign_in,
    watch,
)
from tests.e2e.server import DEV_KEY, Operator, Server, start_server

playwright_api = pytest.importorskip(
    "playwright.sync_api", reason="the playwright package is not installed (the dev extra)")

LOOPING_CALL = {"agentId": "ari", "kind": "tool_call", "action": "export_status",
                "args": {"job": 42}, "result": {"state": "pending"}, "outcome": "neutral"}


def api(server: Server, method: str, path: str, body: Any = None, key: str = DEV_KEY,
        headers: dict[str, str] | None = None) -> Any:
    for _ in range(10):  # a careful client: again after Retry-After while rate limited
        answer = server.request(b"" if body is None else body, key=key, path=path,
                                method=method, headers=headers)
        if answer.status != 429:
            break
        time.sleep(float(answer.headers.get("Retry-After", "1")))
    assert answer.status == 200, answer.body
    return answer.json()


def seed_tenant(server: Server, key: str, prefix: str, message: str) -> None:
    """Looping executions (identical calls, a revisited state, too many steps) and a run whose
    agent loops, with something in its working memory."""
    for i in range(3):
        api(server, "POST", f"/v1/executions/{prefix}-ex-{i}/events", {"events": [
            *[{"type": "llm_call", "model": "gpt-4o-mini", "user_message": message}] * 3,
            *[{"type": "checkpoint", "name": "plan",
               "metadata": {"city": prefix, "step": 2}}] * 3]}, key=key)
    api(server, "POST", f"/v1/executions/{prefix}-long/events",
        {"events": [{"type": "step"}] * 12}, key=key)
    api(server, "POST", f"/v1/runs/{prefix}-run/steps", {"steps": [LOOPING_CALL] * 6}, key=key)
    api(server, "PUT", f"/v1/runs/{prefix}-run/memory/plan", {"step": 3, "city": prefix},
        key=key)


@pytest.fixture(scope="module")
def site() -> Iterator[tuple[Server, str]]:
    """A server of its own (its data is the page's), seeded; and a second tenant's key."""
    chromium_or_skip()
    running = start_server("--in-memory")
    try:
        seed_tenant(running, DEV_KEY, "alpha", "find a hotel in Paris")
        api(running, "PUT", "/v1/severity-routing", {"loops": "critical"})
        _, other = Operator(running.store()).new_tenant("team")
        seed_tenant(running, other, "beta", "book a flight to Rome")
        yield running, other
    finally:
        running.stop()


@pytest.fixture(scope="module")
def browser(site: tuple[Server, str]) -> Iterator[Any]:
    with playwright_api.sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=chromium_or_skip(), args=FLAGS)
        yield launched
        launched.close()


@pytest.fixture
def open_page(browser: Any, site: tuple[Server, str]) -> Iterator[Any]:
    """Pages in fresh contexts (own sessionStorage); each checked clean when the test ends."""
    opened: list[tuple[Any, Watched]] = []

    def make(viewport: dict[str, int] = LAPTOP) -> Watched:
        context = browser.new_context(viewport=viewport)
        watched = watch(context.new_page(), site[0].url)
        opened.append((context, watched))
        return watched

    yield make
    for context, watched in opened:
        context.close()
        watched.assert_clean()


def group_row(group: dict[str, Any]) -> list[str]:
    """A group of GET /v1/failure-groups as the table shows it (times as <time datetime>)."""
    return [group["class"], group["signature"], group["severity"], str(group["executions"]),
            group["firstSeen"], group["lastSeen"]]


def table_rows(page: Any, selector: str) -> list[list[str]]:
    return page.eval_on_selector_all(
        selector, "rows => rows.map(r => [...r.cells].map(c => "
                  "c.querySelector('time') ? c.querySelector('time').dateTime : c.textContent))")


def test_a_wrong_key_is_a_clear_sign_in_error(open_page, site):
    watched = open_page()
    watched.expect(401)
    page = watched.page
    page.goto(site[0].url + "/")
    page.fill("#api-key", "ls_not_a_key_of_anyone_000000")
    page.click("form.signin button[type=submit]")
    problem = page.wait_for_selector("#sign-in-problem [role=alert]")
    assert problem.inner_text().startswith("Sign-in failed. UNAUTHORIZED: ")
    assert page.is_hidden("#nav")
    assert page.evaluate("sessionStorage.length") == 0  # nothing kept of a refused key


def test_the_group_list_shows_exactly_what_the_api_returns(open_page, site):
    server, _ = site
    watched = open_page()
    sign_in(watched, DEV_KEY)
    page = watched.page
    page.wait_for_selector("tbody tr[data-signature]")
    expected = api(server, "GET", "/v1/failure-groups?limit=100")["items"]
    assert len(expected) == 3
    shown = table_rows(page, "tbody tr")
    assert shown == [group_row(g) for g in expected]
    page.select_option("#filter-severity", "critical")  # loops are routed to critical
    page.wait_for_function("() => document.querySelectorAll('tbody tr').length === 2")
    critical = api(server, "GET", "/v1/failure-groups?severity=critical")["items"]
    assert [r[1] for r in table_rows(page, "tbody tr")] == [g["signature"] for g in critical]
    page.select_option("#filter-severity", "")
    page.select_option("#filter-class", "semantic_loop")
    page.wait_for_function("() => document.querySelectorAll('tbody tr').length === 1")
    assert table_rows(page, "tbody tr")[0][0] == "semantic_loop"


def test_a_groups_detail_renders_its_playbook_chart_and_canonical_state(open_page, site):
    server, _ = site
    watched = open_page()
    sign_in(watched, DEV_KEY)
    page = watched.page
    page.click("tbody tr[data-signature^='semantic_loop'] a")
    page.wait_for_selector("#playbook h2")
    [group] = api(server, "GET", "/v1/failure-groups?class=semantic_loop")["items"]
    detail = api(server, "GET", "/v1/failure-groups/" + group["signature"])
    assert page.inner_text("#playbook h2") == page.evaluate(
        "s => new DOMParser().parseFromString(marked.parse(s), 'text/html')"
        ".querySelector('h1').innerText", detail["playbook"]["markdown"])
    assert page.locator("#playbook ol li").count() >= 3  # the diagnostic's steps, rendered
    assert json.loads(page.inner_text("#canonical-state")) == json.loads(
        detail["canonicalState"])
    assert page.wait_for_selector("#group-chart canvas").bounding_box()["height"] > 100
    day = time.strftime("%Y-%m-%d", time.gmtime())
    assert detail["timeline"] == [{"day": day, "executions": 3}]
    cells = table_rows(page, "#group-chart details tbody tr")
    assert cells[-1] == [day, "3"]
    recent = table_rows(page, "main > .scroll tbody tr")
    assert recent == [[e["executionId"], e["firedAt"]] for e in detail["executions"]]


def test_a_flagged_run_shows_its_recommendation(open_page, site):
    server, _ = site
    watched = open_page()
    sign_in(watched, DEV_KEY, "#/runs")
    page = watched.page
    row = page.wait_for_selector("tr[data-run='alpha-run'][data-agent='ari']")
    assert "nudge" in row.inner_text() and "looping" in row.inner_text()
    page.click("a[href='#/runs/alpha-run']")
    card = page.wait_for_selector("section[data-agent='ari'] .recommendation")
    signal = api(server, "GET", "/v1/runs/alpha-run/signal?agentId=ari")["signal"]
    assert signal["recommendation"]["action"] == "nudge"
    assert card.query_selector(".badge").inner_text() == "nudge"
    assert card.query_selector(".nudge").inner_text() == signal["recommendation"]["nudge"]
    rationales = page.eval_on_selector_all("section[data-agent='ari'] td.rationale",
                                           "cells => cells.map(c => c.innerText)")
    assert rationales == [f["rationale"] for f in signal["findings"]]


def test_a_break_through_the_api_shows_without_reload_and_a_restore_from_the_page_puts_the_memory_back(  # noqa: E501
        open_page, site):
    server, _ = site
    watched = open_page()
    sign_in(watched, DEV_KEY, "#/runs/alpha-run")
    page = watched.page
    page.wait_for_selector("#events")
    page.evaluate("window.notReloaded = true")
    before = api(server, "GET", "/v1/runs/alpha-run/memory")["entries"]
    broken = api(server, "POST", "/v1/runs/alpha-run/circuit-break", {"reason": "api_break"},
                 headers={"Idempotency-Key": str(uuid.uuid4())})
    snapshot = broken["snapshotId"]
    row = page.wait_for_selector(f"#events tr:has(button[data-snapshot='{snapshot}'])",
                                 timeout=10_000)
    assert "CIRCUIT_BROKEN" in row.inner_text() and "api_break" in row.inner_text()
    assert page.evaluate("window.notReloaded") is True
    assert api(server, "GET", "/v1/runs/alpha-run/memory")["entries"] == {}
    page.click(f"button[data-snapshot='{snapshot}']")
    page.wait_for_selector("dialog#confirm[open]")
    page.click("#confirm-ok")
    page.wait_for_selector("#run-action-result .ok")
    assert api(server, "GET", "/v1/runs/alpha-run/memory")["entries"] == before
    page.wait_for_selector("#events tr:has-text('MEMORY_RESTORED')")


def test_a_threshold_out_of_bounds_shows_the_apis_error_and_in_bounds_saves(open_page, site):
    server, _ = site
    watched = open_page()
    watched.expect(400)
    sign_in(watched, DEV_KEY, "#/settings")
    page = watched.page
    page.fill("#t-revisit_threshold", "1")
    page.click("#detectors button[type=submit]")
    shown = page.wait_for_selector("#detectors-result [role=alert]").inner_text()
    refused = server.request({"revisit_threshold": 1}, path="/v1/detector-thresholds",
                             method="PUT").json()["error"]
    assert shown.startswith(f"Not saved. {refused['code']}: {refused['message']}")
    bounds = page.inner_text("#t-revisit_threshold-bounds")
    assert bounds == "2 to 1000, integer"
    page.fill("#t-revisit_threshold", "5")
    page.click("#detectors button[type=submit]")
    page.wait_for_selector("#saved")
    stored = api(server, "GET", "/v1/detector-thresholds")["thresholds"]["revisit_threshold"]
    assert (stored["configured"], stored["value"]) == (5, 5)
    assert page.input_value("#t-revisit_threshold") == "5"
    api(server, "PUT", "/v1/detector-thresholds", {"revisit_threshold": None})


def test_a_second_tenants_page_shows_none_of_the_firsts_data(open_page, site):
    server, other = site
    watched = open_page()
    watched.expect(404)  # the first tenant's run, asked for by hand
    sign_in(watched, other)
    page = watched.page
    page.wait_for_selector("tbody tr[data-signature]")
    mine = api(server, "GET", "/v1/failure-groups", key=other)["items"]
    theirs = api(server, "GET", "/v1/failure-groups")["items"]
    shown = table_rows(page, "tbody tr")
    assert shown == [group_row(g) for g in mine]
    # step_count's buckets are named alike for everyone: every other signature is a hash
    only_theirs = {g["signature"] for g in theirs} - {g["signature"] for g in mine}
    assert len(only_theirs) == 2 and not only_theirs & {r[1] for r in shown}
    assert "critical" not in {r[2] for r in shown}  # the first tenant's routing is its own
    page.goto(server.url + "/#/runs")
    page.wait_for_selector("tr[data-run]")
    assert page.eval_on_selector_all("tr[data-run]", "rs => rs.map(r => r.dataset.run)") == [
        "beta-run"]
    assert "alpha" not in page.inner_text("main")
    page.goto(server.url + "/#/runs/alpha-run")  # the first tenant's run id, by hand
    assert "RUN_NOT_FOUND" in page.wait_for_selector("main .error").inner_text()


PAGES = [("sign-in", None, "#api-key"), ("groups", "#/groups", "tbody tr"),
         ("group", "semantic", "#playbook h2"), ("runs", "#/runs", "tr[data-run]"),
         ("run", "#/runs/alpha-run", "section[data-agent] .recommendation"),
         ("settings", "#/settings", "#retention"),
         ("usage", "#/usage", "#usage-chart canvas")]


@pytest.mark.parametrize("width", [LAPTOP, PHONE], ids=["laptop", "phone"])
def test_every_page_at_laptop_and_phone_width(open_page, browser, site, width):
    server, _ = site
    SHOTS.mkdir(parents=True, exist_ok=True)
    watched = open_page(width)
    page = watched.page
    semantic = api(server, "GET", "/v1/failure-groups?class=semantic_loop")["items"][0]
    for name, where, ready in PAGES:
        if where is None:
            page.goto(server.url + "/")
        elif name == "groups":
            sign_in(watched, DEV_KEY, where)
        else:
            if where == "semantic":
                where = "#/groups/" + semantic["signature"]
            page.evaluate("h => { location.hash = h; }", where)
        page.wait_for_selector(ready)
        page.wait_for_timeout(150)  # the chart's frame
        shot = page.screenshot(path=str(SHOTS / f"{name}-{width['width']}.png"), full_page=True)
        assert ink(browser, shot) > 0.01, f"{name} at {width['width']} px looks blank"
        assert page.evaluate("document.documentElement.scrollWidth") <= width["width"] + 1, (
            f"{name} scrolls sideways at {width['width']} px")
        assert axe_violations(page) == [], name


def test_the_page_works_from_the_keyboard_alone(open_page, site):
    """Sign in, move between views and answer a confirmation with keys only."""
    server, _ = site
    watched = open_page()
    page = watched.page
    page.goto(server.url + "/")
    assert page.evaluate("document.activeElement.id") == "api-key"  # focused on arrival
    page.keyboard.type(DEV_KEY)
    page.keyboard.press("Enter")
    page.wait_for_selector("tbody tr[data-signature]")
    page.focus("nav a[href='#/runs']")
    page.keyboard.press("Enter")
    page.wait_for_selector("tr[data-run='alpha-run'] a")
    page.focus("tr[data-run='alpha-run'] a")
    page.keyboard.press("Enter")
    page.wait_for_selector("#break")
    page.focus("#break")
    page.keyboard.press("Enter")
    page.wait_for_selector("dialog#confirm[open]")
    assert page.evaluate("document.activeElement.closest('dialog') !== null")  # focus trapped
    page.keyboard.press("Escape")  # cancelled: nothing broken
    page.wait_for_selector("dialog#confirm[open]", state="detached")
    assert page.inner_text("#run-action-result") == ""


def test_more_runs_than_a_page_load_in_full_and_stay_loaded(open_page, site):
    """51 live runs: the first page shows 50, "Load more" the 51st, and the list's own refresh
    (every 5 s) does not drop the page read since."""
    server, _ = site
    _, key = Operator(server.store()).new_tenant("team")
    for n in range(51):
        api(server, "POST", f"/v1/runs/many-{n:02d}/steps", {"steps": [LOOPING_CALL]}, key=key)
    watched = open_page()
    sign_in(watched, key, "#/runs")
    page = watched.page
    page.wait_for_selector("#runs tbody tr")
    assert page.locator("#runs tbody tr").count() == 50
    page.click("button:has-text('Load more')")
    page.locator("#runs tbody tr").nth(50).wait_for()
    page.wait_for_timeout(5500)  # past one refresh
    assert page.locator("#runs tbody tr").count() == 51
    assert page.locator("button:has-text('Load more')").count() == 0
