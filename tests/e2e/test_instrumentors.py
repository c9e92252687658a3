"""OpenTelemetry as people emit it: each instrumentor, installed from the registry at a pinned
version in its own venv (scripts/bootstrap instrumentors), instruments the real ``openai``
client (or the OpenAI Agents SDK) talking to a fake Chat Completions server on loopback
(tests/e2e/instrumentors/agent.py), and exports with the official OTLP/HTTP exporters into one
running ``loopsense serve``. The same loop gives the same identical_call signature whichever
instrumentor sent it and wherever it put the content (span attributes, log records, parts,
OpenInference, Traceloop's legacy attributes); redacted inputs form no group; a session and a
handoff keep one execution; a repeated tool call forms the tool_calls group.

Each run gets a tenant of its own, so its groups are exactly what that run caused.
"""

from __future__ import annotations

import functools
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from loopsense.core.monitor.steps import call_key
from loopsense.core.signatures import hash8
from tests.e2e.instrumentors.agent import MODEL, QUESTION
from tests.e2e.server import Operator, Server, start_server

ROOT = Path(__file__).resolve().parents[2]
AGENT = Path(__file__).with_name("instrumentors") / "agent.py"
VENVS = ROOT / ".venv-instrumentors"
IDENTICAL = f"loops/identical_call_{hash8(MODEL, QUESTION)}"
REPEATED_TOOL = ("tool_calls/repeated_call_"
                 + call_key("search_flights", {"city": "Paris"}, frozenset())[:8])
LATEST = {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"}
# (name, venv, mode, environment): every run the tests below look at.
RUNS: list[tuple[str, str, str, dict[str, str]]] = [
    ("openai-v2 span_only, streamed", "genai", "openai-v2",
     {**LATEST, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only",
      "AGENT_STREAM": "1"}),
    ("openai-v2 event_only (log records)", "genai", "openai-v2",
     {**LATEST, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "event_only",
      "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"}),
    ("openinference parts", "genai", "openinference", {}),
    ("openinference hidden inputs", "genai", "openinference",
     {"OPENINFERENCE_HIDE_INPUTS": "true", "AGENT_QUESTIONS": "distinct"}),
    ("openinference hidden input text", "genai", "openinference",
     {"OPENINFERENCE_HIDE_INPUT_TEXT": "true", "AGENT_QUESTIONS": "distinct"}),
    ("openinference session", "genai", "openinference", {"AGENT_SESSION": "travel-session-1"}),
    ("traceloop attributes", "genai", "traceloop", {}),
    ("traceloop events (log records)", "genai", "traceloop", {"AGENT_TRACELOOP_EVENTS": "1"}),
    ("traceloop-sdk legacy", "traceloop-sdk", "traceloop-sdk",
     {"TRACELOOP_TELEMETRY": "false", "TRACELOOP_METRICS_ENABLED": "false"}),
    # Each span exported on its own: the sub-agents' spans reach loopsense before the rest.
    ("agents openinference handoff", "genai", "agents-openinference",
     {"OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "1"}),
    ("agents otel handoff", "genai", "agents-otel",
     {"OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "1",
      "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}),
]


FINISHED: list[float] = []  # when every run had exported


@functools.cache
def _bootstrapped() -> None:
    """Install (or bring up to date: it is stamped) the instrumentors' venvs, once per session.
    Here and not in scripts/test, so a pin that no longer installs fails these tests only."""
    subprocess.run([str(ROOT / "scripts" / "bootstrap"), "instrumentors"], check=True,
                   timeout=1800)


_INSTALLING = threading.Lock()  # the runs start side by side: one installs, the others wait


def _venv(name: str) -> Path:
    with _INSTALLING:
        _bootstrapped()
    return VENVS / name / "bin" / "python"


@pytest.fixture(scope="module")
def otel_server() -> Iterator[Server]:
    """One server for every run: its sweeper every second, so executions that no root span
    ends are evaluated once idle for their (1 s) time budget."""
    running = start_server(env={"LOOPSENSE_SCHEDULE_INTERVAL_S": "1"})
    yield running
    running.stop()


def _groups(server: Server, key: str) -> dict[str, Any]:
    answer = server.request(b"", key=key, method="GET", path="/v1/failure-groups")
    assert answer.status == 200
    return {g["signature"]: g for g in answer.json()["items"]}


def _run(server: Server, key: str, venv: str, mode: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [str(_venv(venv)), str(AGENT), mode], capture_output=True, text=True, timeout=180,
        env={"PATH": os.environ.get("PATH", ""), "OTEL_EXPORTER_OTLP_ENDPOINT": server.url,
             "OTEL_EXPORTER_OTLP_HEADERS": f"Authorization=Bearer {key}",
             "OTEL_SERVICE_NAME": "travel", **env})
    assert done.returncode == 0, done.stderr
    return done.stderr


@pytest.fixture(scope="module")
def runs(otel_server: Server) -> dict[str, tuple[str, str]]:
    """Every run, two at a time: name -> (tenant key, what the agent printed on stderr)."""
    operator = Operator(otel_server.store())
    keys = {}
    for name, *_ in RUNS:
        keys[name] = operator.new_tenant("team")[1]
        answer = otel_server.request({"time_budget_ms": 1000}, key=keys[name], method="PUT",
                                     path="/v1/detector-thresholds")
        assert answer.status == 200, answer.body
    with ThreadPoolExecutor(2) as pool:
        printed = dict(zip([r[0] for r in RUNS], pool.map(
            lambda r: _run(otel_server, keys[r[0]], r[1], r[2], r[3]), RUNS), strict=True))
    FINISHED.append(time.monotonic())
    return {name: (keys[name], printed[name]) for name in keys}


def _settled(server: Server, key: str, expected: set[str], timeout: float = 30) -> dict[str, Any]:
    """The tenant's groups once ``expected`` are among them (or the timeout: then as they are);
    the evaluated ones need the sweeper."""
    deadline = time.monotonic() + timeout
    while True:
        groups = _groups(server, key)
        if expected <= set(groups) or time.monotonic() > deadline:
            return groups
        time.sleep(0.25)


@pytest.mark.parametrize("name", [
    "openai-v2 span_only, streamed", "openai-v2 event_only (log records)",
    "openinference parts", "traceloop attributes", "traceloop events (log records)",
    "traceloop-sdk legacy"])
def test_the_same_loop_is_one_identical_call_group_through_every_content_path(
        otel_server, runs, name):
    key, printed = runs[name]
    groups = _settled(otel_server, key, {IDENTICAL})
    assert IDENTICAL in groups, (name, sorted(groups), printed[-2000:])
    assert groups[IDENTICAL]["executions"] == 1  # the five calls of the run: one execution
    assert "Failed to export" not in printed and "400" not in printed


@pytest.mark.parametrize("name", ["openinference hidden inputs",
                                  "openinference hidden input text"])
def test_redacted_inputs_form_no_group(otel_server, runs, name):
    key, _ = runs[name]
    # Idle past its 1 s budget and a sweep (every 1 s) later: evaluated, similar_call too.
    time.sleep(max(0.0, FINISHED[-1] + 3 - time.monotonic()))
    assert _groups(otel_server, key) == {}


def test_a_session_is_one_execution_across_its_traces(otel_server, runs):
    key, _ = runs["openinference session"]
    groups = _settled(otel_server, key, {IDENTICAL})
    assert groups[IDENTICAL]["executions"] == 1
    detail = otel_server.request(b"", key=key, method="GET",
                                 path=f"/v1/failure-groups/{IDENTICAL.replace('/', '%2F')}")
    assert [e["executionId"] for e in detail.json()["executions"]] == ["travel-session-1"]


@pytest.mark.parametrize("name", ["agents openinference handoff", "agents otel handoff"])
def test_a_handoff_keeps_one_execution_and_the_tool_loop_forms_its_group(otel_server, runs,
                                                                        name):
    key, printed = runs[name]
    groups = _settled(otel_server, key, {IDENTICAL, REPEATED_TOOL})
    assert {IDENTICAL, REPEATED_TOOL} <= set(groups), (sorted(groups), printed[-2000:])
    assert groups[REPEATED_TOOL]["class"] == "tool_calls"
    assert groups[REPEATED_TOOL]["playbook"] == "tool_calls"
    detail = otel_server.request(b"", key=key, method="GET",
                                 path=f"/v1/failure-groups/{REPEATED_TOOL.replace('/', '%2F')}")
    (execution,) = [e["executionId"] for e in detail.json()["executions"]]
    # The root agent span ended it (not a sub-agent's, which came first): nothing was refused
    # before, and now it is closed.
    late = otel_server.request({"events": [{"type": "x"}]}, key=key,
                               path=f"/v1/executions/{execution}/events")
    assert late.status == 409 and late.json()["error"]["code"] == "EXECUTION_ENDED"


def test_traceloop_legacy_tool_spans_form_the_same_tool_group(otel_server, runs):
    key, _ = runs["traceloop-sdk legacy"]
    groups = _settled(otel_server, key, {REPEATED_TOOL})
    assert REPEATED_TOOL in groups and groups[REPEATED_TOOL]["executions"] == 1


def test_the_tool_calls_class_is_routed_like_the_others(otel_server, runs):
    key, _ = runs["traceloop-sdk legacy"]
    _settled(otel_server, key, {REPEATED_TOOL})
    routed = otel_server.request({"tool_calls": "critical"}, key=key, method="PUT",
                                 path="/v1/severity-routing")
    assert routed.status == 200 and routed.json()["tool_calls"] == "critical"
    listed = otel_server.request(b"", key=key, method="GET",
                                 path="/v1/failure-groups?class=tool_calls&severity=critical")
    assert [g["signature"] for g in listed.json()["items"]] == [REPEATED_TOOL]
    assert _groups(otel_server, key)[IDENTICAL]["severity"] == "warning"
    playbook = otel_server.request(b"", key=key, method="GET", path="/v1/playbooks/tool_calls")
    assert playbook.status == 200 and playbook.json()["name"] == "tool_calls"
