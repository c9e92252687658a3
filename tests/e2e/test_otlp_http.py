"""POST /v1/traces against a real `loopsense serve` (spec/integrations.md, "OpenTelemetry"): an
agent instrumented with the official opentelemetry-sdk and OTLP/HTTP exporter, configured only
by OTEL_* environment variables, lands in the same failure group as the same loop sent as OTLP
JSON with curl and as OpenInference spans; malformed exports are refused whole, in OTLP's own
error shape (google.rpc.Status)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from google.rpc.status_pb2 import Status

from loopsense.core.signatures import hash8
from tests.e2e.looping_agent import MODEL, QUESTION
from tests.e2e.server import Operator, Server

AGENT = Path(__file__).with_name("looping_agent.py")
SIGNATURE = f"loops/identical_call_{hash8(MODEL, QUESTION)}"
MARK = "SECRET-CONTENT-1f9a"
TRACE = "5b8efff798038103d269b633813fc60c"


def _span(n: int, attributes: dict[str, str], parent: str | None = None) -> dict[str, Any]:
    span = {"traceId": TRACE, "spanId": f"{n:016x}", "name": f"span {n}", "kind": 1,
            "startTimeUnixNano": str(1_700_000_000_000_000_000 + n * 1_000_000_000),
            "endTimeUnixNano": str(1_700_000_000_500_000_000 + n * 1_000_000_000),
            "attributes": [{"key": k, "value": {"stringValue": v}}
                           for k, v in attributes.items()]}
    if parent:
        span["parentSpanId"] = parent
    return span


def _export(spans: list[dict[str, Any]]) -> dict[str, Any]:
    return {"resourceSpans": [{"resource": {"attributes": [
        {"key": "service.name", "value": {"stringValue": "agent"}}]},
        "scopeSpans": [{"scope": {"name": "manual"}, "spans": spans}]}]}


def _genai_loop(conversation: str) -> dict[str, Any]:
    messages = json.dumps([{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}])
    spans = [_span(n + 1, {"gen_ai.operation.name": "chat", "gen_ai.request.model": MODEL,
                           "gen_ai.conversation.id": conversation,
                           "gen_ai.input.messages": messages}) for n in range(3)]
    spans.append(_span(9, {"gen_ai.operation.name": "invoke_agent",
                           "gen_ai.conversation.id": conversation}))
    return _export(spans)


def _openinference_loop() -> dict[str, Any]:
    return _export([_span(n + 1, {"openinference.span.kind": "LLM", "llm.model_name": MODEL,
                                  "llm.input_messages.0.message.role": "system",
                                  "llm.input_messages.0.message.content": "be brief",
                                  "llm.input_messages.1.message.role": "user",
                                  "llm.input_messages.1.message.content": QUESTION})
                    for n in range(3)])


def _curl(server: Server, key: str | None, body: bytes, content_type: str,
          *extra: str, path: str = "/v1/traces") -> tuple[int, bytes]:
    args = ["curl", "-s", "-o", "-", "-w", "\n%{http_code}", "-X", "POST",
            f"{server.url}{path}", "-H", f"Content-Type: {content_type}",
            "--data-binary", "@-", *extra]
    if key is not None:
        args += ["-H", f"Authorization: Bearer {key}"]
    done = subprocess.run(args, input=body, capture_output=True, timeout=60, check=True)
    payload, _, status = done.stdout.rpartition(b"\n")
    return int(status), payload


def _groups(server: Server, key: str) -> dict[str, Any]:
    answer = server.request(b"", key=key, method="GET", path="/v1/failure-groups")
    assert answer.status == 200
    return {g["signature"]: g for g in answer.json()["items"]}


@pytest.fixture
def tenant(operator: Operator) -> str:
    return operator.new_tenant("team")[1]


def _run_agent(server: Server, key: str, conversation: str, compression: str) -> None:
    env = {**os.environ, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{server.url}/v1/traces",
           "OTEL_EXPORTER_OTLP_HEADERS": f"Authorization=Bearer {key}",
           "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": compression, "OTEL_SERVICE_NAME": "travel"}
    done = subprocess.run([sys.executable, str(AGENT), conversation], env=env, timeout=120,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "Failed to export" not in done.stderr, done.stderr


def test_sdk_exporter_curl_json_and_openinference_land_in_one_group(server, tenant):
    _run_agent(server, tenant, "sdk-run", "gzip")
    groups = _groups(server, tenant)
    assert groups[SIGNATURE]["executions"] == 1
    assert "loops/step_count_10+" not in groups  # 8 steps: the agent span is not one
    # The agent span ended the execution: no more events for it.
    late = server.request({"events": [{"type": "x"}]}, key=tenant,
                          path="/v1/executions/sdk-run/events")
    assert late.status == 409 and late.json()["error"]["code"] == "EXECUTION_ENDED"

    status, body = _curl(server, tenant, json.dumps(_genai_loop("curl-run")).encode(),
                         "application/json")
    assert status == 200 and json.loads(body) == {}
    status, _ = _curl(server, tenant, json.dumps(_openinference_loop()).encode(),
                      "application/json")
    assert status == 200
    groups = _groups(server, tenant)
    assert groups[SIGNATURE]["executions"] == 3  # sdk-run, curl-run, and the trace id's
    _run_agent(server, tenant, "sdk-plain", "none")  # protobuf without gzip
    detail = server.request(b"", key=tenant, method="GET",
                            path=f"/v1/failure-groups/{SIGNATURE.replace('/', '%2F')}")
    assert detail.json()["group"]["executions"] == 4
    assert sorted(e["executionId"] for e in detail.json()["executions"]) == sorted(
        ["sdk-run", "curl-run", TRACE, "sdk-plain"])


def test_a_retried_export_is_applied_once(server, tenant):
    body = json.dumps(_genai_loop("retried")).encode()
    for _ in range(3):
        assert _curl(server, tenant, body, "application/json")[0] == 200
    assert _groups(server, tenant)[SIGNATURE]["executions"] == 1
    state = server.request({"events": [{"type": "x"}]}, key=tenant,
                           path="/v1/executions/retried/events")
    assert state.json()["error"]["code"] == "EXECUTION_ENDED"


@pytest.mark.parametrize(("body", "content_type", "extra"), [
    (b"\x0a\xff\xff" + MARK.encode(), "application/x-protobuf", ()),
    (b'{"resourceSpans": [' + MARK.encode(), "application/json", ()),
    (b'{"resourceSpans": "' + MARK.encode() + b'"}', "application/json", ()),
    (json.dumps(_export([{**_span(1, {"gen_ai.operation.name": "chat"}),
                          "traceId": "abc"}])).encode(), "application/json", ()),
    (b"not gzip at all", "application/json", ("-H", "Content-Encoding: gzip")),
    (gzip.compress(b"{}"), "text/plain", ("-H", "Content-Encoding: gzip")),
])
def test_malformed_exports_are_a_400_status_and_ingest_nothing(server, tenant, body,
                                                               content_type, extra):
    good = _genai_loop("mixed")["resourceSpans"][0]["scopeSpans"][0]["spans"]
    status, answer = _curl(server, tenant, body, content_type, *extra)
    assert status == 400
    assert MARK.encode() not in answer
    if content_type == "application/json":  # answered like the request: JSON
        parsed_json = json.loads(answer)
        assert parsed_json["code"] == 3 and set(parsed_json) == {"code", "message", "details"}
    else:  # protobuf, OTLP's default
        parsed = Status.FromString(answer)
        assert parsed.code == 3 and parsed.message.startswith("EXECUTION_EVENTS_INVALID")
    assert good and _groups(server, tenant) == {}
    assert MARK not in "".join(server.output)  # nor in the server's logs


def test_a_request_with_one_malformed_span_ingests_none_of_it(server, tenant):
    export = _genai_loop("half")
    spans = export["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans.append({**_span(7, {}), "spanId": "00"})  # 1 byte: not a span id
    status, answer = _curl(server, tenant, json.dumps(export).encode(), "application/json")
    assert status == 400 and "spans.4" in json.loads(answer)["message"]
    assert _groups(server, tenant) == {}
    missing = server.request(b"", key=tenant, method="GET", path="/v1/failure-groups")
    assert missing.json()["items"] == []


def test_a_missing_key_is_a_401_status(server):
    status, answer = _curl(server, None, gzip.compress(b""), "application/x-protobuf",
                           "-H", "Content-Encoding: gzip")
    assert status == 401
    assert Status.FromString(answer).code == 16


def _event_only_loop(trace: str) -> tuple[bytes, bytes]:
    """openai-v2's event_only mode as OTLP JSON: chat spans without content, and a log record
    per span carrying it (gen_ai.client.inference.operation.details, structured attributes)."""
    spans = [{**_span(n + 1, {"gen_ai.operation.name": "chat",
                              "gen_ai.request.model": MODEL}), "traceId": trace}
             for n in range(3)]
    messages = {"arrayValue": {"values": [{"kvlistValue": {"values": [
        {"key": "role", "value": {"stringValue": "user"}},
        {"key": "parts", "value": {"arrayValue": {"values": [{"kvlistValue": {"values": [
            {"key": "type", "value": {"stringValue": "text"}},
            {"key": "content", "value": {"stringValue": QUESTION}}]}}]}}}]}}]}}
    records = [{"traceId": trace, "spanId": f"{n + 1:016x}",
                "eventName": "gen_ai.client.inference.operation.details",
                "attributes": [{"key": "gen_ai.request.model", "value": {"stringValue": MODEL}},
                               {"key": "gen_ai.input.messages", "value": messages}]}
               for n in range(3)]
    logs = {"resourceLogs": [{"scopeLogs": [{"scope": {"name": "genai"},
                                             "logRecords": records}]}]}
    return json.dumps(_export(spans)).encode(), json.dumps(logs).encode()


def test_logs_as_gzip_json_join_their_spans_in_either_order(server, tenant):
    for n, logs_first in enumerate((True, False)):
        trace = f"{n + 1:032x}"
        spans, logs = _event_only_loop(trace)
        sends = [("/v1/logs", logs), ("/v1/traces", spans)]
        for path, body in sends if logs_first else sends[::-1]:
            status, answer = _curl(server, tenant, gzip.compress(body), "application/json",
                                   "-H", "Content-Encoding: gzip", path=path)
            assert status == 200 and json.loads(answer) == {}
    assert _groups(server, tenant)[SIGNATURE]["executions"] == 2


def test_a_malformed_log_export_is_a_400_status(server, tenant):
    status, answer = _curl(server, tenant, b'{"resourceLogs": "' + MARK.encode() + b'"}',
                           "application/json", path="/v1/logs")
    assert status == 400 and MARK.encode() not in answer
    assert json.loads(answer)["code"] == 3
    status, answer = _curl(server, tenant, b"\x0a\xff\xff", "application/x-protobuf",
                           path="/v1/logs")
    assert status == 400 and Status.FromString(answer).message.startswith(
        "EXECUTION_EVENTS_INVALID: body: is not an OTLP ExportLogsServiceRequest")
