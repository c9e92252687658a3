"""A real headless browser for the dashboard's tests: Debian's chromium driven by playwright.

``playwright install`` downloads browsers of its own; these tests use the system's chromium
(scripts/bootstrap installs it on a fresh machine as root) and skip, saying why, only when it
or the playwright package truly cannot be had. Every page a test opens records its console
errors, uncaught exceptions and requests, so that a test can assert there were none of the
first two and that every request went to the server itself (no third-party request).
"""

from __future__ import annotations

import base64
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("LOOPSENSE_CHROMIUM", "chromium")  # a path, or a name on PATH
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]
AXE = Path(__file__).parent / "vendor" / "axe.min.js"
SHOTS = Path(__file__).resolve().parents[2] / "build" / "screenshots"  # git-ignored (build/)
LAPTOP = {"width": 1366, "height": 768}
# What chromium itself logs for an answer >= 400 (the page's own code logs nothing)
REFUSED = re.compile(r"Failed to load resource: the server responded with a status of (\d+)")
PHONE = {"width": 390, "height": 844}


def chromium_or_skip() -> str:
    found = shutil.which(CHROMIUM)
    if found is None:
        pytest.skip(f"no chromium at {CHROMIUM}: scripts/bootstrap installs Debian's chromium "
                    "when run as root; set LOOPSENSE_CHROMIUM to another binary")
    return found


@dataclass
class Watched:
    """A page and what it did: console errors, page errors, the URLs it requested."""

    page: Any
    origin: str
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    expected: set[int] = field(default_factory=set)  # statuses the test provokes on purpose

    def expect(self, status: int) -> None:
        """The test provokes API answers of ``status`` (a wrong key, a value out of bounds):
        chromium's own console line for them is not an error of the page."""
        self.expected.add(status)

    def assert_clean(self) -> None:
        errors = [e for e in self.errors
                  if not ((m := REFUSED.search(e)) and int(m.group(1)) in self.expected)]
        assert not errors, errors
        foreign = [u for u in self.requests
                   if not (u.startswith(self.origin + "/") or u.startswith("data:"))]
        assert not foreign, f"requests to another origin: {foreign}"


def watch(page: Any, origin: str) -> Watched:
    watched = Watched(page, origin)
    page.on("console", lambda m: watched.errors.append(f"console: {m.text}")
            if m.type == "error" else None)
    page.on("pageerror", lambda e: watched.errors.append(f"page: {e}"))
    page.on("request", lambda r: watched.requests.append(r.url))
    return watched


def sign_in(watched: Watched, key: str, hash_: str = "#/groups") -> None:
    page = watched.page
    page.goto(f"{watched.origin}/{hash_}")
    page.fill("#api-key", key)
    page.click("form.signin button[type=submit]")
    page.wait_for_selector("#nav:not([hidden])")


def axe_violations(page: Any) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations of the page as it is (injected through the
    DevTools protocol: the page's CSP allows no inline script, rightly)."""
    page.evaluate(AXE.read_text(encoding="utf-8"))
    found = page.evaluate("async () => (await axe.run(document)).violations.map(v => ({"
                          "id: v.id, impact: v.impact, help: v.help, "
                          "nodes: v.nodes.map(n => n.target.join(' '))}))")
    return [v for v in found if v["impact"] in ("serious", "critical")]


def ink(browser: Any, png: bytes) -> float:
    """The share of a screenshot's pixels that differ from its top-left pixel (the page's
    background): a blank page is 0. Counted by a canvas of a separate blank page."""
    page = browser.new_page()
    try:
        return float(page.evaluate("""async (src) => {
            const img = new Image(); img.src = src; await img.decode();
            const c = document.createElement('canvas'); c.width = img.width; c.height = img.height;
            const g = c.getContext('2d'); g.drawImage(img, 0, 0);
            const d = g.getImageData(0, 0, c.width, c.height).data;
            let n = 0;
            for (let i = 0; i < d.length; i += 4) {
              if (Math.abs(d[i] - d[0]) + Math.abs(d[i+1] - d[1]) + Math.abs(d[i+2] - d[2]) > 30)
                n++;
            }
            return n / (d.length / 4);
        }""", "data:image/png;base64," + base64.b64encode(png).decode()))
    finally:
        page.close()
