"""agent.loops and its playbooks end to end: POST /v1/execute and GET /v1/playbooks/{name} on
`loopsense serve` (team and hobby tenants), `loopsense execute agent.loops FILE` and
`loopsense playbook NAME`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from loopsense.playbooks import NAMES, markdown
from loopsense_local.cli import main
from tests.e2e.server import Server

ROOT = Path(__file__).resolve().parents[2]
SKILL = "agent.loops"
MARK = "SECRET-MARKER-5be1"
SAMPLE = json.loads((ROOT / "events" / "samples" / "loops.json").read_text(encoding="utf-8"))
SIGNATURES = ["loops/step_count_10+", "loops/identical_call_50a8ebc1",
              "loops/similar_call_602001a9", "loops/time_budget_60s+"]


def test_execute_over_http_fires_the_four_and_charges_one_credit(server: Server):
    answer = server.execute(SKILL, SAMPLE)
    assert answer.status == 200, answer.body
    body = answer.json()
    assert (body["skillKey"], body["skillVersion"], body["billing"]) == (
        SKILL, "1.0.0", {"credits": 1})
    assert [f["signature"] for f in body["output"]["findings"]] == SIGNATURES


def test_per_call_thresholds_over_http(server: Server):
    answer = server.execute(SKILL, {**SAMPLE, "thresholds": {"step_count_threshold": 20,
                                                             "time_budget_ms": 90_000}})
    output = answer.json()["output"]
    assert [f["sub"] for f in output["findings"]] == ["identical_call", "similar_call"]
    assert output["thresholds"]["time_budget_ms"] == 90_000


def test_10001_events_is_429_not_retryable_without_retry_after(server: Server):
    answer = server.execute(SKILL, {"events": [{"type": "tool_call"}] * 10_001})
    assert answer.status == 429
    error = answer.json()["error"]
    assert (error["code"], error["retryable"]) == ("LOOPS_EVENT_LIMIT_EXCEEDED", False)
    assert "retry-after" not in answer.lower_headers()


@pytest.mark.parametrize(("events", "path"), [
    ([{"type": "tool_call", "timestamp": MARK}], "input.events.0.timestamp"),
    ([{"type": "llm_call", "model": "m", "user_message": "x", "embedding": [MARK]}],
     "input.events.0.embedding.0"),
])
def test_bad_events_are_validation_errors_naming_the_field(server: Server, events, path):
    answer = server.execute(SKILL, {"events": events})
    assert answer.status == 400
    error = answer.json()["error"]
    assert (error["code"], error["details"][0]["path"]) == ("VALIDATION_ERROR", path)
    assert MARK not in answer.body.decode()


def test_nan_in_an_embedding_is_a_validation_error(server: Server):
    body = ('{"skillKey": "agent.loops", "input": {"events": [{"type": "llm_call", "model": "'
            + MARK + '", "user_message": "x", "embedding": [NaN]}]}}').encode()
    answer = server.request(body)
    assert answer.status == 400
    assert answer.json()["error"]["code"] == "VALIDATION_ERROR"
    assert MARK not in answer.body.decode()


def test_a_hobby_tenant_can_run_it(server: Server):
    tenant = server.operator("tenants", "create", "--plan", "hobby")["tenantId"]
    key = server.operator("keys", "issue", tenant, "--skills", SKILL)["apiKey"]
    answer = server.execute(SKILL, SAMPLE, key=key)
    assert answer.status == 200, answer.body
    assert [f["signature"] for f in answer.json()["output"]["findings"]] == SIGNATURES


def test_the_hobby_plan_caps_a_per_call_time_budget(server: Server):
    tenant = server.operator("tenants", "create", "--plan", "hobby")["tenantId"]
    key = server.operator("keys", "issue", tenant, "--skills", SKILL)["apiKey"]
    answer = server.execute(SKILL, {"events": [{"type": "tool_call"}], "durationMs": 700_000,
                                    "thresholds": {"time_budget_ms": 3_600_000}}, key=key)
    assert answer.status == 200, answer.body
    output = answer.json()["output"]
    assert output["thresholds"]["time_budget_ms"] == 600_000  # hobby: 10 minutes
    assert [f["signature"] for f in output["findings"]] == ["loops/time_budget_10m+"]


def test_no_submitted_content_in_the_answer_or_the_server_output(server: Server):
    events = [{"type": "llm_call", "model": MARK, "user_message": f"{MARK} attempt {i}",
               "timestamp": 1_773_306_843_000 + 40_000 * i, MARK: MARK} for i in range(12)]
    answer = server.execute(SKILL, {"events": events})
    assert answer.status == 200
    assert {f["sub"] for f in answer.json()["output"]["findings"]} == {
        "step_count", "similar_call", "time_budget"}
    assert MARK not in answer.body.decode()
    printed = server.printed()
    assert "loopsense: ready" in printed  # the capture is real
    assert MARK not in printed


# ---- GET /v1/playbooks/{name} -----------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_each_playbook_is_served_as_json(server: Server, name):
    answer = server.request(b"", path=f"/v1/playbooks/{name}", method="GET")
    assert answer.status == 200, answer.body
    assert answer.lower_headers()["content-type"] == "application/json"
    body = answer.json()
    assert (body["name"], body["markdown"]) == (name, markdown(name))
    # Each playbook's title names the signature it is for: its class, then the rule.
    prefix = {"semantic_loop": "semantic_loop:", "tool_calls": "tool_calls/<rule>_"}.get(
        name, f"loops/{name}_")
    assert body["title"].startswith(f"Playbook: `{prefix}")


@pytest.mark.parametrize("name", ["nope", MARK, "step_count.md", "..", "%2e%2e"])
def test_an_unknown_playbook_is_404_in_the_envelope(server: Server, name):
    answer = server.request(b"", path=f"/v1/playbooks/{name}", method="GET")
    assert answer.status == 404
    body = answer.json()
    assert body["error"]["code"] == "PLAYBOOK_NOT_FOUND"
    assert body["error"]["retryable"] is False
    assert MARK not in answer.body.decode()


@pytest.mark.parametrize("key", [None, "ls_not_a_real_key_but_well_formed_0001", "nonsense"])
def test_playbooks_need_a_valid_key(server: Server, key):
    answer = server.request(b"", path="/v1/playbooks/step_count", method="GET", key=key)
    assert answer.status == 401
    assert answer.json()["error"]["code"] == "UNAUTHORIZED"


def test_a_key_scoped_to_another_skill_can_read_playbooks(server: Server):
    tenant = server.operator("tenants", "create", "--plan", "hobby")["tenantId"]
    key = server.operator("keys", "issue", tenant, "--skills", "agent.loop_detect")["apiKey"]
    answer = server.request(b"", path="/v1/playbooks/time_budget", method="GET", key=key)
    assert answer.status == 200


# ---- the CLI ----------------------------------------------------------------------------------


def test_cli_execute_runs_the_sample(capsys):
    code = main(["execute", SKILL, str(ROOT / "events" / "samples" / "loops.json")])
    out, _ = capsys.readouterr()
    assert code == 0
    assert [f["signature"] for f in json.loads(out)["findings"]] == SIGNATURES


def test_cli_execute_prints_the_envelope_for_a_bad_input(capsys, tmp_path):
    path = tmp_path / "input.json"
    path.write_text(json.dumps({"events": [{"type": "x", "timestamp": MARK}]}))
    code = main(["execute", SKILL, str(path)])
    out, err = capsys.readouterr()
    assert code == 1
    assert json.loads(out)["error"]["details"][0]["path"] == "input.events.0.timestamp"
    assert MARK not in out + err


@pytest.mark.parametrize("name", NAMES)
def test_cli_playbook_prints_the_markdown(capsys, name):
    assert main(["playbook", name]) == 0
    assert capsys.readouterr().out == markdown(name)


def test_cli_playbook_unknown_prints_the_envelope_and_exits_1():
    done = subprocess.run([str(Path(sys.executable).parent / "loopsense"), "playbook", MARK],
                          capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 1
    assert json.loads(done.stdout)["error"]["code"] == "PLAYBOOK_NOT_FOUND"
    assert MARK not in done.stdout + done.stderr
