"""The dashboard's page keeps the service's names: the failure-group filters offer exactly the
classes and severities the API has (the page is static, so nothing else would notice a new
class missing from its filter)."""

from __future__ import annotations

import re
from pathlib import Path

from loopsense.platform.telemetry.failure_groups import CLASSES, SEVERITIES

GROUPS_JS = Path(__file__).resolve().parents[2] / "functions/dashboard/site/js/views/groups.js"


def options(select_id: str) -> list[str]:
    """The values of the non-empty options of ``select(select_id, ...)`` in groups.js."""
    source = GROUPS_JS.read_text(encoding="utf-8")
    found = re.search(r'select\("' + select_id + r'",\s*"[^"]*",\s*\[(.*?)\]\s*,\s*filters',
                      source, re.S)
    assert found, f"no select {select_id} in groups.js"
    return [v for v in re.findall(r'\["([^"]*)",', found.group(1)) if v]


def test_the_class_filter_offers_every_failure_class():
    assert sorted(options("filter-class")) == sorted(CLASSES)


def test_the_severity_filter_offers_every_severity():
    assert sorted(options("filter-severity")) == sorted(SEVERITIES)
