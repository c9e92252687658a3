"""The rules of a tenant's thresholds (platform.tenant_settings), without a store: what a PUT
may contain, what GET shows, what the router hands a skill, and the CLI's argument reading."""

from __future__ import annotations

import pytest

from loopsense.errors import LoopsenseError
from loopsense.platform.access.gate import applied, valid_stored
from loopsense.platform.access.plans import default_plan, plan_cap
from loopsense.platform.settings.service import (
    describe,
    parse_patch,
    parse_time_budget,
    time_budget_config,
)
from loopsense.skills.thresholds import THRESHOLDS
from loopsense.store.accounts import Plan
from loopsense_local.thresholds_cli import UsageError, parse_assignments, target

HOBBY, TEAM, ENTERPRISE = (default_plan(n) for n in ("hobby", "team", "enterprise"))


def plan_with_cap(cap: int) -> Plan:
    return Plan("custom", 10, 10, ("*",), cap)


def refusal(body, plan=TEAM, parse=parse_patch) -> LoopsenseError:
    with pytest.raises(LoopsenseError) as caught:
        parse(body, plan)
    return caught.value


# ---- PUT bodies ---------------------------------------------------------------------------------


def test_any_subset_is_a_patch_and_null_resets():
    patch = parse_patch({"revisit_threshold": 5, "similar_call_distance_threshold": 0.3,
                         "step_count_threshold": None}, TEAM)
    assert patch.values == {"revisit_threshold": 5, "similar_call_distance_threshold": 0.3}
    assert patch.reset == ("step_count_threshold",)
    assert parse_patch({}, TEAM).empty


@pytest.mark.parametrize("name", sorted(n for n, spec in THRESHOLDS.items()
                                         if n != "time_budget_ms" and spec.kind is not bool))
def test_bounds_are_inclusive_and_one_step_outside_is_refused(name):
    spec = THRESHOLDS[name]
    step = 0.01 if spec.kind is float else 1
    for inside in (spec.low, spec.high):
        assert parse_patch({name: inside}, TEAM).values == {name: inside}
    for outside in (spec.low - step, spec.high + step):
        error = refusal({name: outside})
        assert error.code == "VALIDATION_ERROR"
        assert [d.path for d in error.details] == [name]
        assert f"from {spec.low} to {spec.high}" in error.details[0].issue


@pytest.mark.parametrize(("plan", "cap"), [(HOBBY, 600_000), (TEAM, 3_600_000),
                                           (ENTERPRISE, 86_400_000)])
def test_the_time_budgets_upper_bound_is_the_plans_cap(plan, cap):
    assert parse_patch({"time_budget_ms": cap}, plan).values == {"time_budget_ms": cap}
    assert parse_patch({"time_budget_ms": 1000}, plan).values == {"time_budget_ms": 1000}
    above = refusal({"time_budget_ms": cap + 1}, plan)
    assert above.code == "TIME_BUDGET_ABOVE_PLAN_CAP"
    assert above.message == (f"time_budget_ms: must be at most {cap}, the {plan.name} plan's "
                             "max_time_budget_ms")
    below = refusal({"time_budget_ms": 999}, plan)
    assert below.code == "VALIDATION_ERROR" and f"from 1000 to {cap}" in below.message


def test_no_plan_lifts_the_time_budget_past_the_specs_24_hours():
    generous = plan_with_cap(100 * 86_400_000)
    assert plan_cap(generous) == 86_400_000
    assert refusal({"time_budget_ms": 86_400_001}, generous).code == "TIME_BUDGET_ABOVE_PLAN_CAP"


@pytest.mark.parametrize("bad", ["5", True, False, 5.0, [5], {"v": 5}])
def test_integers_must_be_json_integers(bad):
    error = refusal({"revisit_threshold": bad})
    assert error.code == "VALIDATION_ERROR"
    assert error.details[0].issue == "must be an integer from 2 to 1000"


@pytest.mark.parametrize("bad", ["0.2", True, [0.2], float("inf"), float("nan")])
def test_numbers_must_be_finite_json_numbers(bad):
    assert refusal({"similar_call_distance_threshold": bad}).code == "VALIDATION_ERROR"


def test_unknown_names_are_refused_without_echoing_them():
    error = refusal({"revisit_treshold": 4})
    assert [d.path for d in error.details] == ["body"]
    assert "revisit_treshold" not in error.message
    assert "revisit_threshold" in error.details[0].issue  # the names that exist


def test_every_problem_is_named_and_any_problem_refuses_the_whole_body():
    error = refusal({"x": 1, "revisit_threshold": 1, "time_budget_ms": 3_600_001,
                     "step_count_threshold": 50})
    assert error.code == "VALIDATION_ERROR"
    assert [d.path for d in error.details] == ["revisit_threshold", "body", "time_budget_ms"]
    assert error.message.endswith("(and 2 more)")


@pytest.mark.parametrize("body", [[], "x", 5, None])
def test_a_body_must_be_an_object(body):
    assert refusal(body).details[0].path == "body"


@pytest.mark.parametrize(("body", "path"), [
    ({}, "time_budget_ms"), ({"time_budget_ms": 5000, "revisit_threshold": 3}, "body"),
    ({"max_time_budget_ms": 5000}, "body"), ([5000], "body"),
])
def test_the_time_budget_config_takes_exactly_time_budget_ms(body, path):
    assert refusal(body, parse=parse_time_budget).details[0].path == path


def test_the_time_budget_config_can_go_back_to_the_default():
    assert parse_time_budget({"time_budget_ms": None}, TEAM).reset == ("time_budget_ms",)


# ---- reading ------------------------------------------------------------------------------------


def test_stored_values_no_longer_valid_are_ignored_and_named():
    values, ignored = valid_stored({"revisit_threshold": 1, "step_count_threshold": 20,
                                    "something_else": 3, "similar_call_distance_threshold": "x"})
    assert values == {"step_count_threshold": 20}
    assert ignored == ["revisit_threshold", "similar_call_distance_threshold"]
    assert valid_stored(None) == ({}, []) and valid_stored([1]) == ({}, [])


def test_the_skill_gets_the_tenants_values_the_clamped_budget_and_the_cap():
    stored = {"revisit_threshold": 4, "time_budget_ms": 3_600_000}
    assert applied(stored, plan_cap(HOBBY)) == {
        "revisit_threshold": 4, "time_budget_ms": 600_000, "max_time_budget_ms": 600_000}
    assert applied({}, plan_cap(TEAM)) == {"max_time_budget_ms": 3_600_000}


def test_describe_shows_the_applied_value_the_own_setting_and_the_bounds():
    doc = describe({"time_budget_ms": 3_600_000, "revisit_threshold": 5}, HOBBY)
    assert doc["plan"] == "hobby"
    assert doc["thresholds"]["revisit_threshold"] == {
        "value": 5, "default": 3, "min": 2, "max": 1000, "type": "integer", "configured": 5,
        "used_by": "agent.semantic_loop"}
    budget = doc["thresholds"]["time_budget_ms"]
    assert (budget["value"], budget["max"], budget["configured"]) == (600_000, 600_000,
                                                                     3_600_000)
    distance = doc["thresholds"]["similar_call_distance_threshold"]
    assert (distance["value"], distance["type"], distance["configured"]) == (0.2, "number", None)


def test_the_default_budget_is_clamped_too_under_a_small_cap():
    config = time_budget_config(None, plan_with_cap(30_000))
    assert (config["time_budget_ms"], config["clamped"]) == (30_000, True)
    assert time_budget_config({"time_budget_ms": 5_000}, TEAM)["clamped"] is False


# ---- the CLI's arguments ------------------------------------------------------------------------


def test_assignments_are_read_as_json_and_anything_else_as_text():
    assert parse_assignments(["a=5", "b=0.25", "c=null", "d=abc", "e="]) == {
        "a": 5, "b": 0.25, "c": None, "d": "abc", "e": ""}
    for bad in ("a", "=5"):
        with pytest.raises(UsageError):
            parse_assignments([bad])


def test_the_target_is_the_store_for_an_operator_or_the_api_for_a_tenant(monkeypatch):
    monkeypatch.delenv("LOOPSENSE_BASE_URL", raising=False)
    monkeypatch.delenv("LOOPSENSE_API_KEY", raising=False)
    assert target("t1", None, None).tenant == "t1"
    api = target(None, "http://h:3000/", "ls_k")
    assert (api.tenant, api.api_url, api.api_key) == (None, "http://h:3000", "ls_k")
    with pytest.raises(UsageError):
        target(None, "http://h", None)
    with pytest.raises(UsageError):
        target("t1", None, "ls_k")
    monkeypatch.setenv("LOOPSENSE_BASE_URL", "http://env")
    monkeypatch.setenv("LOOPSENSE_API_KEY", "ls_env")
    assert (target(None, None, None).api_url, target(None, None, "ls_flag").api_key) == (
        "http://env", "ls_flag")
