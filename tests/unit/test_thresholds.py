"""The one threshold rule: per call > tenant > default, bounds checked wherever values come from."""

from __future__ import annotations

import pytest

from loopsense.errors import LoopsenseError
from loopsense.skills.thresholds import THRESHOLDS, effective


def test_default_when_nobody_sets_it():
    assert effective("revisit_threshold", None) == 3
    assert effective("similar_call_distance_threshold", {}, {}) == 0.20


def test_per_call_beats_tenant_beats_default():
    assert effective("revisit_threshold", None, {"revisit_threshold": 5}) == 5
    assert effective("revisit_threshold", {"revisit_threshold": 4}, {"revisit_threshold": 5}) == 4


NUMBERS = sorted(name for name, spec in THRESHOLDS.items() if spec.kind is not bool)


@pytest.mark.parametrize("name", NUMBERS)
def test_bounds_are_inclusive_and_one_step_outside_is_refused(name):
    spec = THRESHOLDS[name]
    step = 0.01 if spec.kind is float else 1
    for inside in (spec.low, spec.high):
        assert effective(name, {name: inside}) == inside
    for outside in (spec.low - step, spec.high + step):
        with pytest.raises(LoopsenseError) as caught:
            effective(name, {name: outside})
        assert caught.value.details[0].path == f"input.thresholds.{name}"
        assert str(spec.low) in caught.value.details[0].issue


@pytest.mark.parametrize("bad", ["3", True, None, 3.5, [3]])
def test_wrong_types_are_refused_for_integer_thresholds(bad):
    with pytest.raises(LoopsenseError):
        effective("revisit_threshold", {"revisit_threshold": bad})


def test_a_bad_tenant_value_is_refused_too():
    with pytest.raises(LoopsenseError) as caught:
        effective("revisit_threshold", None, {"revisit_threshold": 1})
    assert caught.value.details[0].path == "tenant.revisit_threshold"


@pytest.mark.parametrize("bad", [0, 1, "true", None, [True]])
def test_a_boolean_setting_takes_only_true_or_false(bad):
    assert effective("monitor_disabled", {"monitor_disabled": True}) is True
    assert effective("monitor_disabled", None) is False
    with pytest.raises(LoopsenseError) as caught:
        effective("monitor_disabled", {"monitor_disabled": bad})
    assert caught.value.details[0].issue == "must be a boolean (true or false)"
