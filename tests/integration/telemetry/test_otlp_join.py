"""OTLP spans and their log records, joined by trace and span id (platform/telemetry/otlp.py),
on the embedded store: logs before spans and after, retries of either, spans whose logs never
come (released by the sweeper's part), spans of a run that ends; order by nanosecond start."""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from loopsense.core.signatures import hash8
from loopsense.platform.telemetry import otlp
from loopsense.platform.telemetry.failure_groups import FailureGroups
from loopsense.platform.telemetry.ingest import Ingestion
from loopsense.platform.telemetry.store import TelemetryStore

QUESTION = "Which flights go from Paris to Oslo tomorrow?"
IDENTICAL = f"loops/identical_call_{hash8('gpt-4o-mini', QUESTION)}"
PROTOBUF = "application/x-protobuf"


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000_000

    def __call__(self) -> int:
        return self.now


@pytest.fixture(scope="module")
def stack(telemetry_store: TelemetryStore) -> tuple[Ingestion, FailureGroups, Clock]:
    clock = Clock()
    return (Ingestion(telemetry_store, lambda plan: 3_600_000, clock),
            FailureGroups(telemetry_store), clock)


def _attrs(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": {"stringValue": v}} for k, v in values.items()]


def _spans(trace: str, spans: list[tuple[int, dict[str, str]]], start: int = 0) -> bytes:
    """Chat spans (no content: it is in the logs) under a plain parent, as openai-v2's
    event_only mode sends them."""
    body = {"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": trace, "spanId": f"{n:016x}", "parentSpanId": "00000000000000ff",
         "name": "chat", "startTimeUnixNano": str(start + n),
         "endTimeUnixNano": str(start + n + 1), "attributes": _attrs(a)}
        for n, a in spans]}]}]}
    otlp._hex_ids_to_base64(body)
    return json_format.ParseDict(body, ExportTraceServiceRequest()).SerializeToString()


def _logs(trace: str, spans: list[int], question: str = QUESTION) -> bytes:
    body = {"resourceLogs": [{"scopeLogs": [{"logRecords": [
        {"traceId": trace, "spanId": f"{n:016x}", "eventName": "gen_ai.user.message",
         "body": {"kvlistValue": {"values": [{"key": "content",
                                              "value": {"stringValue": question}}]}}}
        for n in spans]}]}]}
    otlp._hex_ids_to_base64(body)
    return json_format.ParseDict(body, ExportLogsServiceRequest()).SerializeToString()


CHAT = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini"}


def _traces(ingestion: Ingestion, tenant: str, body: bytes) -> int:
    return otlp.ingest(ingestion, tenant, "team", None, body, PROTOBUF, None)


def _log(ingestion: Ingestion, tenant: str, body: bytes) -> int:
    return otlp.ingest_logs(ingestion, tenant, "team", None, body, PROTOBUF, None)


def _groups(groups: FailureGroups, tenant: str) -> dict[str, Any]:
    return {g["signature"]: g for g in groups.list(tenant, {})["items"]}


@pytest.mark.parametrize("logs_first", [True, False])
def test_spans_and_their_logs_join_in_either_order_and_retries_count_once(stack, logs_first):
    ingestion, groups, _ = stack
    tenant, trace = f"join-{logs_first}", "ab" * 16
    spans, logs = _spans(trace, [(n, CHAT) for n in range(1, 4)]), _logs(trace, [1, 2, 3])
    for body, feed in ([(logs, _log), (spans, _traces)] if logs_first
                       else [(spans, _traces), (logs, _log)]):
        for _ in range(2):  # an exporter's retry
            assert feed(ingestion, tenant, body) == 0
    assert _groups(groups, tenant)[IDENTICAL]["executions"] == 1
    events = ingestion.store.events(tenant, trace)
    assert [e["user_message"] for e in events] == [QUESTION] * 3  # each call once


def test_spans_whose_logs_never_come_are_ingested_by_the_sweeper(stack):
    ingestion, groups, clock = stack
    tenant, trace = "no-logs", "cd" * 16
    _traces(ingestion, tenant, _spans(trace, [(n, CHAT) for n in range(1, 4)]))
    assert ingestion.store.execution(tenant, trace) is None  # waiting for their logs
    assert otlp.release_waiting(ingestion, 100) == 0  # not yet due
    clock.now += otlp.JOIN_WAIT_MS
    assert otlp.release_waiting(ingestion, 100) == 3
    assert otlp.release_waiting(ingestion, 100) == 0
    events = ingestion.store.events(tenant, trace)
    assert [e["type"] for e in events] == ["llm_call"] * 3
    assert all(e["user_message"] is None for e in events)
    _log(ingestion, tenant, _logs(trace, [1, 2, 3]))  # too late: nothing counted twice
    assert len(ingestion.store.events(tenant, trace)) == 3 and _groups(groups, tenant) == {}


def test_a_run_that_ends_takes_its_waiting_spans_with_it(stack):
    ingestion, groups, _ = stack
    tenant, trace = "ends", "ef" * 16
    _log(ingestion, tenant, _logs(trace, [1]))
    _traces(ingestion, tenant, _spans(trace, [(n, CHAT) for n in range(1, 4)]))
    root = {"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": trace, "spanId": "00000000000000ff", "name": "agent",
         "startTimeUnixNano": "0", "endTimeUnixNano": "9000000",
         "attributes": _attrs({"gen_ai.operation.name": "invoke_agent"})}]}]}]}
    otlp._hex_ids_to_base64(root)
    _traces(ingestion, tenant,
            json_format.ParseDict(root, ExportTraceServiceRequest()).SerializeToString())
    events = ingestion.store.events(tenant, trace)
    assert [e.get("user_message") for e in events] == [QUESTION, None, None]
    assert "endedAt" in (ingestion.store.execution(tenant, trace) or {})


def test_events_are_ordered_by_nanosecond_start_and_unmappable_spans_are_steps(stack):
    ingestion, _, _ = stack
    tenant, trace = "order", "12" * 16
    odd = {"gen_ai.operation.name": "no such operation", "llm.request.type": "weird",
           "traceloop.span.kind": "task", "openinference.span.kind": "RERANKER"}
    # Three spans in one millisecond, their ids in the reverse of their start order.
    body = {"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": trace, "spanId": f"{9 - n:016x}", "name": "s",
         "startTimeUnixNano": str(1_700_000_000_000_000_000 + n * 100),
         "endTimeUnixNano": str(1_700_000_000_000_100_000),
         "attributes": _attrs({**odd, "gen_ai.tool.name": f"t{n}"} if n else
                              {"gen_ai.operation.name": "execute_tool",
                               "gen_ai.tool.name": f"t{n}"})} for n in range(3)]}]}]}
    raw = json.dumps(body).encode()
    assert otlp.ingest(ingestion, tenant, "team", None, raw, "application/json", None) == 0
    events = ingestion.store.events(tenant, trace)
    assert [e["type"] for e in events] == ["tool_call", "span", "span"]
