"""spec/thresholds.md over real HTTP against `loopsense serve`: per-tenant detector thresholds
and the plan-capped time budget.

Each test makes its own tenants (in-process operator calls on the server's store, as
test_faults.py does); the plan change and the `loopsense thresholds` commands go through the
real CLI. Proven here: every bound at its edges (inside passes, one step outside is refused and
nothing changes), all-or-nothing PUTs, a tenant's setting changing the detectors' answer on the
same input, isolation between operator, the plan caps and the clamp after a downgrade, and
concurrent PUTs never leaving a mix of two requests' values.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.concurrency import all_at_once
from tests.e2e.server import Response, Server

BIN = Path(sys.executable).parent
THRESHOLDS = "/v1/detector-thresholds"
TIME_BUDGET = "/v1/me/time-budget-config"
MARK = "SECRET-MARKER-5f1c"

# spec/thresholds.md, written out here rather than read from the code under test.
DEFAULTS = {"revisit_threshold": 3, "step_count_threshold": 10, "identical_call_min_repeats": 3,
            "similar_call_distance_threshold": 0.20, "similar_call_min_cluster_size": 3,
            "time_budget_ms": 60_000,
            # spec/loop_safety.md (agent.run_monitor and the runs API)
            "repeat_warn": 4, "repeat_critical": 6, "poll_warn": 15, "cycle_window": 20,
            "cycle_repeats": 3, "error_streak": 3, "monologue_limit": 3,
            "content_chunk_chars": 50, "content_repeats": 10, "stagnation_threshold": 3,
            "condensation_limit": 10, "drift_threshold": 0.5, "novelty_window": 5,
            "novelty_floor": 0.15, "history_size": 50, "nudges_before_break": 1,
            "similar_warn": 4, "similar_critical": 6, "similar_args": 0.5, "same_result_warn": 4,
            "run_repeat_warn": 3, "monologue_similar": 0.8, "monologue_run": 6,
            # the runs API's own settings
            "run_retention_days": 14, "monitor_disabled": False}
# name: (low, high on enterprise, one step)
BOUNDS = {"revisit_threshold": (2, 1000, 1), "step_count_threshold": (2, 10_000, 1),
          "identical_call_min_repeats": (2, 100, 1),
          "similar_call_distance_threshold": (0.05, 0.50, 0.01),
          "similar_call_min_cluster_size": (2, 100, 1), "time_budget_ms": (1000, 86_400_000, 1),
          "repeat_warn": (2, 100, 1), "repeat_critical": (2, 100, 1), "poll_warn": (2, 1000, 1),
          "cycle_window": (2, 200, 1), "cycle_repeats": (2, 20, 1), "error_streak": (2, 100, 1),
          "monologue_limit": (2, 100, 1), "content_chunk_chars": (10, 500, 1),
          "content_repeats": (2, 100, 1), "stagnation_threshold": (2, 100, 1),
          "condensation_limit": (2, 100, 1), "drift_threshold": (0.01, 2.0, 0.01),
          "novelty_window": (2, 100, 1), "novelty_floor": (0.0, 1.0, 0.01),
          "history_size": (10, 1000, 1), "nudges_before_break": (0, 10, 1),
          "similar_warn": (2, 100, 1), "similar_critical": (2, 100, 1),
          "similar_args": (0.1, 1.0, 0.01), "same_result_warn": (2, 100, 1),
          "run_repeat_warn": (2, 100, 1), "monologue_similar": (0.1, 1.0, 0.01),
          "monologue_run": (2, 1000, 1),
          "run_retention_days": (1, 365, 1)}
CAPS = {"hobby": 600_000, "team": 3_600_000, "enterprise": 86_400_000}

# agent.semantic_loop: the same state checkpointed three times.
THREE_REVISITS = {"events": [{"type": "checkpoint", "metadata": {"page": 2, "query": "q"}}] * 3}


def get(server: Server, key: str, path: str = THRESHOLDS) -> dict[str, Any]:
    answer = server.request(b"", key=key, path=path, method="GET")
    assert answer.status == 200, answer.body
    body: dict[str, Any] = answer.json()
    return body


def put(server: Server, key: str, body: Any, path: str = THRESHOLDS) -> Response:
    return server.request(body, key=key, path=path, method="PUT")


def applied(doc: dict[str, Any]) -> dict[str, Any]:
    return {name: entry["value"] for name, entry in doc["thresholds"].items()}


def refused(answer: Response, code: str = "VALIDATION_ERROR") -> dict[str, Any]:
    """The one envelope, 400, not retryable, no Retry-After."""
    assert answer.status == 400, answer.body
    body = answer.json()
    assert list(body) == ["error", "requestId"]
    error: dict[str, Any] = body["error"]
    assert list(error) == ["code", "message", "retryable", "next", "details"]
    assert (error["code"], error["retryable"]) == (code, False), error
    assert "retry-after" not in answer.lower_headers()
    assert answer.lower_headers()["x-request-id"] == body["requestId"]
    return error


def run(server: Server, key: str, skill: str, input_: Any) -> dict[str, Any]:
    answer = server.execute(skill, input_, key=key)
    assert answer.status == 200, answer.body
    output: dict[str, Any] = answer.json()["output"]
    return output


# ---- GET: every name, its value, default and bounds -------------------------------------------


def test_get_lists_every_threshold_with_value_default_and_bounds(server: Server, operator):
    _, key = operator.new_tenant("team")
    doc = get(server, key)
    assert doc["plan"] == "team"
    assert list(doc["thresholds"]) == list(DEFAULTS)
    switch = doc["thresholds"].pop("monitor_disabled")  # the one boolean setting
    assert switch == {"value": False, "default": False, "min": False, "max": True,
                      "type": "boolean", "configured": None, "used_by": "the runs API"}
    for name, entry in doc["thresholds"].items():
        low, high, _ = BOUNDS[name]
        high = CAPS["team"] if name == "time_budget_ms" else high
        assert entry["value"] == entry["default"] == DEFAULTS[name], name
        assert (entry["min"], entry["max"], entry["configured"]) == (low, high, None), name
        assert entry["type"] == ("number" if isinstance(low, float) else "integer")
    assert get(server, key, TIME_BUDGET) == {
        "time_budget_ms": 60_000, "max_time_budget_ms": 3_600_000, "plan": "team",
        "configured_time_budget_ms": None, "default_time_budget_ms": 60_000, "clamped": False}


# ---- bounds at their edges ----------------------------------------------------------------------


@pytest.mark.parametrize("name", list(BOUNDS))
def test_each_bound_inside_passes_one_step_outside_is_refused_and_changes_nothing(
        server: Server, operator, name: str):
    _, key = operator.new_tenant("enterprise")
    low, high, step = BOUNDS[name]
    for inside in (low, high):
        answer = put(server, key, {name: inside})
        assert answer.status == 200, answer.body
        assert answer.json()["thresholds"][name]["value"] == inside
        assert get(server, key)["thresholds"][name]["configured"] == inside
    before = get(server, key)
    outside = [low - step, high + step]
    if isinstance(low, float):  # and the nearest doubles beyond each bound
        outside += [math.nextafter(low, -math.inf), math.nextafter(high, math.inf)]
    for value in outside:
        cap = name == "time_budget_ms" and value > high
        error = refused(put(server, key, {name: value}),
                        "TIME_BUDGET_ABOVE_PLAN_CAP" if cap else "VALIDATION_ERROR")
        [detail] = error["details"]
        assert detail["path"] == name
        assert str(high) in detail["issue"] and (cap or str(low) in detail["issue"]), detail
        assert get(server, key) == before, value


@pytest.mark.parametrize(("name", "value"), [
    ("revisit_threshold", "4"), ("revisit_threshold", 4.0), ("revisit_threshold", True),
    ("revisit_threshold", [4]), ("revisit_threshold", {"v": 4}),
    ("similar_call_distance_threshold", "0.3"), ("similar_call_distance_threshold", False),
    ("time_budget_ms", 60_000.5), ("time_budget_ms", "60000"),
])
def test_a_value_of_the_wrong_type_is_refused_and_changes_nothing(server: Server, operator,
                                                                   name: str, value: Any):
    _, key = operator.new_tenant("team")
    assert put(server, key, {name: BOUNDS[name][0]}).status == 200
    before = get(server, key)
    [detail] = refused(put(server, key, {name: value}))["details"]
    assert detail["path"] == name and "from" in detail["issue"]
    assert get(server, key) == before


def test_an_unknown_name_is_refused_without_echoing_it(server: Server, operator):
    _, key = operator.new_tenant("team")
    before = get(server, key)
    answer = put(server, key, {MARK: 4})
    error = refused(answer)
    assert error["details"][0]["path"] == "body"
    assert "revisit_threshold" in error["details"][0]["issue"]  # it lists the real names
    assert MARK.encode() not in answer.body
    assert get(server, key) == before
    assert MARK not in server.printed()  # nor logged


# ---- all or nothing -----------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [
    {"step_count_threshold": 1},  # out of bounds
    {"similar_call_distance_threshold": "0.3"},  # wrong type
    {"unknown_threshold": 3},  # unknown name
])
def test_a_put_of_two_fields_where_one_is_bad_changes_neither(server: Server, operator, bad):
    _, key = operator.new_tenant("team")
    assert put(server, key, {"revisit_threshold": 5, "step_count_threshold": 20}).status == 200
    before = get(server, key)
    refused(put(server, key, {"revisit_threshold": 7, **bad}))
    assert get(server, key) == before
    assert applied(before)["revisit_threshold"] == 5


def test_a_time_budget_above_the_cap_beside_a_good_field_changes_neither(server: Server, operator):
    _, key = operator.new_tenant("team")
    before = get(server, key)
    error = refused(put(server, key, {"revisit_threshold": 7, "time_budget_ms": 3_600_001}),
                    "TIME_BUDGET_ABOVE_PLAN_CAP")
    assert "3600000" in error["message"]
    assert get(server, key) == before


def test_several_bad_fields_are_all_named(server: Server, operator):
    _, key = operator.new_tenant("team")
    error = refused(put(server, key, {"revisit_threshold": 1, "identical_call_min_repeats": 101,
                                      "time_budget_ms": 3_600_001}))
    assert [d["path"] for d in error["details"]] == [
        "revisit_threshold", "identical_call_min_repeats", "time_budget_ms"]


def test_null_goes_back_to_the_default(server: Server, operator):
    _, key = operator.new_tenant("team")
    assert put(server, key, {"revisit_threshold": 9, "step_count_threshold": 20}).status == 200
    answer = put(server, key, {"revisit_threshold": None})
    assert answer.status == 200
    entry = answer.json()["thresholds"]["revisit_threshold"]
    assert (entry["value"], entry["configured"]) == (3, None)
    assert applied(get(server, key))["step_count_threshold"] == 20


@pytest.mark.parametrize(("path", "body"), [
    (THRESHOLDS, b"not json"), (THRESHOLDS, b"[1, 2]"), (THRESHOLDS, b""),
    (THRESHOLDS, b'{"revisit_threshold": NaN}'),
    (THRESHOLDS, json.dumps({"revisit_threshold": 4, "pad": "x" * 20_000}).encode()),
    (TIME_BUDGET, b"{}"), (TIME_BUDGET, b'{"time_budget_ms": 60000, "revisit_threshold": 4}'),
    (TIME_BUDGET, b'"60000"'),
])
def test_bad_bodies_are_validation_errors_in_the_envelope(server: Server, operator, path, body):
    _, key = operator.new_tenant("team")
    before = get(server, key)
    refused(put(server, key, body, path))
    assert get(server, key) == before


def test_other_failures_answer_in_the_envelope(server: Server):
    answer = server.request(b"", key=None, path=THRESHOLDS, method="GET")
    assert (answer.status, answer.json()["error"]["code"]) == (401, "UNAUTHORIZED")
    answer = server.request({"time_budget_ms": 60_000}, key="ls_" + "x" * 40, path=TIME_BUDGET,
                            method="PUT")
    assert (answer.status, answer.json()["error"]["code"]) == (401, "UNAUTHORIZED")
    answer = server.request(b"", path=THRESHOLDS, method="DELETE")
    assert (answer.status, answer.json()["error"]["code"]) == (405, "METHOD_NOT_ALLOWED")
    assert answer.lower_headers()["allow"] == "GET, PUT"


# ---- the detectors apply the tenant's values -----------------------------------------------------


def test_revisit_threshold_4_makes_a_three_revisit_trace_stop_firing(server: Server, operator):
    _, key = operator.new_tenant("team")
    _, other = operator.new_tenant("team")
    first = run(server, key, "agent.semantic_loop", THREE_REVISITS)
    assert (first["fired"], first["revisitThreshold"]) == (True, 3)

    assert put(server, key, {"revisit_threshold": 4}).status == 200
    tuned = run(server, key, "agent.semantic_loop", THREE_REVISITS)
    assert (tuned["fired"], tuned["revisitThreshold"], tuned["groups"]) == (False, 4, [])
    # per call > tenant
    per_call = run(server, key, "agent.semantic_loop",
                   {**THREE_REVISITS, "thresholds": {"revisit_threshold": 3}})
    assert (per_call["fired"], per_call["revisitThreshold"]) == (True, 3)
    # another tenant, same input: untouched
    assert run(server, other, "agent.semantic_loop", THREE_REVISITS) == first
    # back to the default
    assert put(server, key, {"revisit_threshold": None}).status == 200
    assert run(server, key, "agent.semantic_loop", THREE_REVISITS) == first


def test_agent_loops_applies_the_tenants_values_and_shows_them(server: Server, operator):
    _, key = operator.new_tenant("team")
    calls = [{"type": "llm_call", "model": "m", "user_message": "what is the weather in Oslo"}] * 4
    trace = {"events": [*calls, {"type": "tool_call"}], "durationMs": 90_000}
    default = run(server, key, "agent.loops", trace)
    loops_names = ("step_count_threshold", "identical_call_min_repeats",
                   "similar_call_distance_threshold", "similar_call_min_cluster_size",
                   "time_budget_ms")
    assert default["thresholds"] == {k: DEFAULTS[k] for k in loops_names}
    assert {f["sub"] for f in default["findings"]} == {"identical_call", "time_budget"}

    tuned_values = {"step_count_threshold": 5, "identical_call_min_repeats": 5,
                    "similar_call_distance_threshold": 0.3, "similar_call_min_cluster_size": 6,
                    "time_budget_ms": 120_000}
    assert put(server, key, tuned_values).status == 200
    tuned = run(server, key, "agent.loops", trace)
    assert tuned["thresholds"] == tuned_values
    assert {f["sub"] for f in tuned["findings"]} == {"step_count"}
    # per call > tenant, each name on its own
    per_call = run(server, key, "agent.loops", {**trace, "thresholds": {"time_budget_ms": 1000}})
    assert per_call["thresholds"] == {**tuned_values, "time_budget_ms": 1000}


def test_one_tenants_settings_never_affect_another(server: Server, operator):
    _, mine = operator.new_tenant("team")
    _, theirs = operator.new_tenant("team")
    everything = {"revisit_threshold": 7, "step_count_threshold": 3,
                  "identical_call_min_repeats": 9, "similar_call_distance_threshold": 0.1,
                  "similar_call_min_cluster_size": 8, "time_budget_ms": 2_000}
    assert put(server, mine, everything).status == 200
    assert put(server, mine, {"time_budget_ms": 5_000}, TIME_BUDGET).status == 200
    assert applied(get(server, mine)) == {**DEFAULTS, **everything, "time_budget_ms": 5_000}
    assert applied(get(server, theirs)) == DEFAULTS
    assert get(server, theirs, TIME_BUDGET)["configured_time_budget_ms"] is None
    trace = {"events": [{"type": "tool_call"}] * 4, "durationMs": 3_000}
    assert run(server, theirs, "agent.loops", trace)["findings"] == []
    assert {f["sub"] for f in run(server, mine, "agent.loops", trace)["findings"]} == {
        "step_count"}


# ---- the plan's cap on time_budget_ms ------------------------------------------------------------


def test_hobby_cannot_set_more_than_ten_minutes_team_can_set_an_hour(server: Server, operator):
    _, hobby = operator.new_tenant("hobby")
    _, team = operator.new_tenant("team")
    error = refused(put(server, hobby, {"time_budget_ms": 600_001}, TIME_BUDGET),
                    "TIME_BUDGET_ABOVE_PLAN_CAP")
    assert "600000" in error["message"] and "hobby" in error["message"]
    assert error["details"] == [{"path": "time_budget_ms", "issue": error["message"].split(
        ": ", 1)[1]}]
    refused(put(server, hobby, {"time_budget_ms": 3_600_000}, TIME_BUDGET),
            "TIME_BUDGET_ABOVE_PLAN_CAP")
    assert get(server, hobby, TIME_BUDGET)["time_budget_ms"] == 60_000  # unchanged
    ok = put(server, hobby, {"time_budget_ms": 600_000}, TIME_BUDGET)
    assert ok.status == 200 and ok.json()["time_budget_ms"] == 600_000

    answer = put(server, team, {"time_budget_ms": 3_600_000}, TIME_BUDGET)
    assert answer.status == 200, answer.body
    assert answer.json() == {
        "time_budget_ms": 3_600_000, "max_time_budget_ms": 3_600_000, "plan": "team",
        "configured_time_budget_ms": 3_600_000, "default_time_budget_ms": 60_000,
        "clamped": False}
    refused(put(server, team, {"time_budget_ms": 3_600_001}, TIME_BUDGET),
            "TIME_BUDGET_ABOVE_PLAN_CAP")


@pytest.mark.parametrize("value", [999, 0, -1])
def test_a_time_budget_below_one_second_is_a_validation_error(server: Server, operator, value):
    _, key = operator.new_tenant("team")
    [detail] = refused(put(server, key, {"time_budget_ms": value}, TIME_BUDGET))["details"]
    assert detail["path"] == "time_budget_ms" and "1000" in detail["issue"]
    ok = put(server, key, {"time_budget_ms": 1000}, TIME_BUDGET)
    assert ok.status == 200 and ok.json()["time_budget_ms"] == 1000


def test_a_downgrade_clamps_the_budget_and_an_upgrade_restores_it(server: Server, operator):
    tenant, key = operator.new_tenant("team")
    assert put(server, key, {"time_budget_ms": 3_600_000}, TIME_BUDGET).status == 200
    long_run = {"events": [{"type": "tool_call"}], "durationMs": 700_000}
    assert run(server, key, "agent.loops", long_run)["findings"] == []

    assert server.operator("tenants", "set-plan", tenant, "hobby") == {
        "tenantId": tenant, "plan": "hobby"}  # the real CLI, as an operator would

    assert get(server, key, TIME_BUDGET) == {
        "time_budget_ms": 600_000, "max_time_budget_ms": 600_000, "plan": "hobby",
        "configured_time_budget_ms": 3_600_000, "default_time_budget_ms": 60_000,
        "clamped": True}
    entry = get(server, key)["thresholds"]["time_budget_ms"]
    assert (entry["value"], entry["max"], entry["configured"]) == (600_000, 600_000, 3_600_000)
    clamped = run(server, key, "agent.loops", long_run)
    assert clamped["thresholds"]["time_budget_ms"] == 600_000
    assert [f["signature"] for f in clamped["findings"]] == ["loops/time_budget_10m+"]
    # the stored value cannot be set again on hobby, and comes back with the plan
    refused(put(server, key, {"time_budget_ms": 3_600_000}, TIME_BUDGET),
            "TIME_BUDGET_ABOVE_PLAN_CAP")
    server.operator("tenants", "set-plan", tenant, "team")
    assert get(server, key, TIME_BUDGET)["time_budget_ms"] == 3_600_000
    assert run(server, key, "agent.loops", long_run)["findings"] == []


# ---- concurrency ------------------------------------------------------------------------------


def test_concurrent_puts_never_leave_a_mix_of_two_requests_values(server: Server, operator):
    _, key = operator.new_tenant("team")
    writers = 24
    values = list(range(10, 10 + writers))
    seen: list[dict[str, Any]] = []

    def write(x: int) -> Response:
        return put(server, key, {"revisit_threshold": x, "step_count_threshold": x})

    def read() -> None:
        seen.append(applied(get(server, key)))

    calls = [lambda x=x: write(x) for x in values] + [read] * 8
    answers = all_at_once(calls)[:writers]
    for x, answer in zip(values, answers, strict=True):
        assert answer.status == 200, answer.body
        mine = applied(answer.json())  # the item as this request wrote it
        assert mine["revisit_threshold"] == mine["step_count_threshold"] == x
    final = applied(get(server, key))
    assert final["revisit_threshold"] == final["step_count_threshold"] in values
    for snapshot in seen:  # readers during the storm never saw half a request
        assert snapshot["revisit_threshold"] == snapshot["step_count_threshold"] or (
            snapshot["revisit_threshold"], snapshot["step_count_threshold"]) == (3, 10)


# ---- loopsense thresholds: tenants over HTTP, operators against the store ----------------------


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "loopsense"), "thresholds", *args], capture_output=True,
                          text=True, timeout=60, check=False, env={**os.environ, **(env or {})})


def test_cli_for_a_tenant_over_http_and_an_operator_on_the_store(server: Server, operator):
    tenant, key = operator.new_tenant("hobby")
    done = cli("set", "revisit_threshold=6", "similar_call_distance_threshold=0.25",
               "--api-url", server.url, "--api-key", key)
    assert done.returncode == 0, done.stderr
    shown = applied(json.loads(done.stdout))
    assert (shown["revisit_threshold"], shown["similar_call_distance_threshold"]) == (6, 0.25)

    # the operator sees it in the store, and changes it there (the same rules)
    assert applied(server.operator("thresholds", "get", "--tenant", tenant)) == shown
    changed = server.operator("thresholds", "set", "step_count_threshold=40", "--tenant", tenant)
    assert applied(changed)["step_count_threshold"] == 40

    # refused the same way on both paths: the envelope on stderr, exit 1, nothing changed
    for args, env in (
        (["--api-url", server.url, "--api-key", key], None),
        ([], {"LOOPSENSE_BASE_URL": server.url, "LOOPSENSE_API_KEY": key}),
        (["--tenant", tenant, "--dynamodb-endpoint", server.store()], None),
    ):
        done = cli("set", "time_budget_ms=3600000", "revisit_threshold=9", *args, env=env)
        assert done.returncode == 1 and done.stdout == "", done
        error = json.loads(done.stderr)["error"]
        assert (error["code"], "600000" in error["message"]) == (
            "TIME_BUDGET_ABOVE_PLAN_CAP", True)
    assert applied(get(server, key)) == {**shown, "step_count_threshold": 40}

    done = cli("get", env={"LOOPSENSE_BASE_URL": "", "LOOPSENSE_API_KEY": ""})
    assert done.returncode == 2 and "--tenant" in done.stderr
