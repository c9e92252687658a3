"""template.yaml's skill parts and README.md's skills table are what the catalog derives
(loopsense_local.derive): a skill added to the catalog and not derived, or a derived part edited
by hand, fails here."""

from __future__ import annotations

import pytest

from loopsense.platform.access.catalog import SKILLS
from loopsense_local.derive import REGIONS, derived, drifted


def test_the_derived_parts_are_what_the_catalog_derives():
    assert drifted() == [], "run: python -m loopsense_local.derive"


def test_a_region_follows_the_catalog_and_nothing_outside_it_changes():
    text = "head\n  # <catalog: router invokes>\n  stale\n  # </catalog: router invokes>\ntail\n"
    out = derived(text, {"router invokes": REGIONS["template.yaml"]["router invokes"]},
                  SKILLS[:2])
    assert out.startswith("head\n  # <catalog: router invokes>\n") and out.endswith(
        "  # </catalog: router invokes>\ntail\n")
    assert "stale" not in out
    assert [s.function for s in SKILLS[:2] if f"!GetAtt {s.function}.Arn" in out] == [
        s.function for s in SKILLS[:2]]


def test_a_missing_marker_is_refused():
    with pytest.raises(ValueError, match="router invokes"):
        derived("no markers\n", {"router invokes": REGIONS["template.yaml"]["router invokes"]})
