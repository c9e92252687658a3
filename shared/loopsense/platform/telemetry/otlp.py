"""POST /v1/traces and POST /v1/logs: OTLP/HTTP trace and log exports mapped to telemetry events
(spec/integrations.md, "OpenTelemetry"), fed to the same ingestion as POST /v1/executions/{id}/
events.

Decoding uses the official definitions (opentelemetry-proto: ExportTraceServiceRequest,
ExportLogsServiceRequest), for protobuf and for OTLP's JSON encoding (protobuf JSON, except that
trace and span ids are hex, not base64: they are turned into base64 before parsing). gzip bodies
are inflated first, up to MAX_INFLATED_BYTES.

Mapping, per span (loopsense.platform.telemetry.otlp_content reads each instrumentor's
attributes):
- execution: ``gen_ai.conversation.id``, else ``session.id``, else the trace id in hex;
- an LLM span: an llm_call (model, user_message); a tool span: a tool_call (name, arguments,
  result); an agent span: not a step, and the root one (no parent) ends its execution, its
  duration the span's (a sub-agent's never does, nor any in a session, which outlives the
  traces of its runs: it ends by the idle rule); any other span, whatever its attributes: a
  step of type ``span``.
- an LLM span whose user message is not in its attributes waits for its log records (content
  in events: ``gen_ai.client.inference.operation.details``, ``gen_ai.user.message``), joined by
  trace and span id in either order: the span is ingested when its log record arrives, when its
  execution ends, or after JOIN_WAIT_MS (the sweeper), with or without a message.
Events are ordered by start time in nanoseconds (then span id) and timestamped with it in epoch
milliseconds.

The whole request is decoded, mapped and every batch checked before anything is written; a
malformed request is a 400 and nothing of it is ingested. Each execution's batches carry an
Idempotency-Key derived from the request's bytes, so an exporter's retry of the same request is
applied once (a join taken by a request is found again by its retry). Spans of an execution that
has already ended are rejected and counted in OTLP's ``partial_success`` (the rest is ingested).
Errors answer with OTLP's own body, a ``google.rpc.Status`` (code, message), encoded like the
request (protobuf or JSON).
"""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from loopsense import jsonio
from loopsense.errors import LoopsenseError, validation_error
from loopsense.platform.telemetry import otlp_content as content
from loopsense.platform.telemetry.ingest import (
    DAY_S,
    INVALID,
    MAX_BATCH_EVENTS,
    Ingestion,
    check_batch,
)
from loopsense.platform.telemetry.store import join_pk, tenant_of

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
MAX_INFLATED_BYTES = 16 * 1024 * 1024
# How long an LLM span without its message waits for its log records (exporters batch spans
# and logs apart: 5 s and 1 s by default).
JOIN_WAIT_MS = 30_000
RELEASE_LIMIT = 500  # spans released per sweeper run; the next run goes on
# google.rpc.Code for each HTTP status the route answers with.
RPC_CODES = {400: 3, 401: 16, 403: 7, 404: 5, 409: 10, 429: 8, 500: 13, 503: 14, 504: 4}


def _bad(issue: str, path: str = "body") -> LoopsenseError:
    return validation_error(path, issue, INVALID)


Placed = tuple[int, str, dict[str, Any]]  # (start ns, span id hex, event)


@dataclass
class Mapped:
    events: dict[str, list[Placed]] = field(default_factory=lambda: defaultdict(list))
    ends: dict[str, tuple[str, int]] = field(default_factory=dict)  # execution -> (trace, ms)
    # LLM spans without their message: (trace hex, span hex, execution, placed event)
    unjoined: list[tuple[str, str, str, Placed]] = field(default_factory=list)


# ---- decoding ----------------------------------------------------------------------------------


def inflate(body: bytes, encoding: str | None) -> bytes:
    if not encoding or encoding.lower() == "identity":
        return body
    if encoding.lower() != "gzip":
        raise _bad("must be gzip or identity", "Content-Encoding")
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        data = inflater.decompress(body, MAX_INFLATED_BYTES)
    except zlib.error:
        raise _bad("is not valid gzip") from None
    if inflater.unconsumed_tail or not inflater.eof:
        raise _bad(f"must inflate to a complete body of at most {MAX_INFLATED_BYTES} bytes")
    return data


def _hex_ids_to_base64(node: Any) -> None:
    """OTLP/JSON writes traceId/spanId/parentSpanId as hex; protobuf JSON expects base64."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("traceId", "spanId", "parentSpanId") and isinstance(value, str):
                try:
                    node[key] = base64.b64encode(bytes.fromhex(value)).decode("ascii")
                except ValueError:
                    raise _bad("must be hex", key) from None
            else:
                _hex_ids_to_base64(value)
    elif isinstance(node, list):
        for value in node:
            _hex_ids_to_base64(value)


def decode(body: bytes, content_type: str | None, logs: bool = False) -> Any:
    from google.protobuf import json_format
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    kind = (content_type or "").split(";")[0].strip().lower()
    request = ExportLogsServiceRequest() if logs else ExportTraceServiceRequest()
    name = type(request).__name__
    if kind == PROTOBUF:
        try:
            request.ParseFromString(body)
        except (DecodeError, RecursionError, ValueError):
            raise _bad(f"is not an OTLP {name} (protobuf)") from None
        return request
    if kind == JSON:
        try:
            document = jsonio.loads(body)
        except LoopsenseError as error:  # the API's one JSON policy, in OTLP's error code
            raise _bad(error.details[0].issue) from None
        _hex_ids_to_base64(document)
        try:
            json_format.ParseDict(document, request, ignore_unknown_fields=True)
        except (json_format.ParseError, RecursionError, TypeError, ValueError):
            raise _bad(f"is not an OTLP {name} (JSON)") from None
        return request
    raise _bad(f"must be {PROTOBUF} or {JSON}", "Content-Type")


# ---- mapping -----------------------------------------------------------------------------------


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_value(v) for v in any_value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in any_value.kvlist_value.values}
    if kind == "bytes_value":
        return None  # never a message or a name
    return getattr(any_value, kind)


def attributes(span: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in span.attributes}


def span_event(attrs: dict[str, Any], start_ms: int) -> dict[str, Any] | None:
    """The telemetry event of one span; None for an agent span (the execution itself)."""
    kind = content.kind_of(attrs)
    if kind == content.AGENT:
        return None
    if kind == content.LLM:
        return {"type": "llm_call", "model": content.model_of(attrs),
                "user_message": content.user_message(attrs), "timestamp": start_ms}
    if kind == content.TOOL:
        return {"type": "tool_call", **content.tool_call(attrs), "timestamp": start_ms}
    return {"type": "span", "timestamp": start_ms}


def map_request(request: Any) -> Mapped:
    mapped = Mapped()
    for r, resource_spans in enumerate(request.resource_spans):
        for s, scope_spans in enumerate(resource_spans.scope_spans):
            for i, span in enumerate(scope_spans.spans):
                path = f"resourceSpans.{r}.scopeSpans.{s}.spans.{i}"
                if len(span.trace_id) != 16 or len(span.span_id) != 8:
                    raise _bad("traceId must be 16 bytes and spanId 8 bytes", path)
                if span.end_time_unix_nano and span.end_time_unix_nano < span.start_time_unix_nano:
                    raise _bad("endTimeUnixNano must not be before startTimeUnixNano", path)
                attrs = attributes(span)
                execution, root_ends = content.execution_of(attrs, span.trace_id)
                start = span.start_time_unix_nano
                event = span_event(attrs, start // 1_000_000)
                trace, span_hex = span.trace_id.hex(), span.span_id.hex()
                if event is None:
                    if root_ends and not span.parent_span_id:  # the root agent: the run ended
                        duration = (span.end_time_unix_nano - start) // 1_000_000
                        mapped.ends[execution] = (trace, max(0, duration))
                elif event["type"] == "llm_call" and not content.has_input(attrs):
                    mapped.unjoined.append((trace, span_hex, execution, (start, span_hex, event)))
                else:
                    mapped.events[execution].append((start, span_hex, event))
    return mapped


def map_logs(request: Any) -> dict[tuple[str, str], dict[str, Any]]:
    """The content log records add to their spans: (trace hex, span hex) -> content (the last
    record of a span that carries a user message wins)."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for r, resource_logs in enumerate(request.resource_logs):
        for s, scope_logs in enumerate(resource_logs.scope_logs):
            for i, record in enumerate(scope_logs.log_records):
                if not record.trace_id and not record.span_id:
                    continue  # not about a span: nothing to join
                if len(record.trace_id) != 16 or len(record.span_id) != 8:
                    raise _bad("traceId must be 16 bytes and spanId 8 bytes",
                               f"resourceLogs.{r}.scopeLogs.{s}.logRecords.{i}")
                attrs = attributes(record)
                name = record.event_name or attrs.get("event.name") or ""
                body = _value(record.body) if record.HasField("body") else None
                added = content.log_content(str(name), attrs, body)
                if added is not None:
                    found[(record.trace_id.hex(), record.span_id.hex())] = added
    return found


def _completed(event: dict[str, Any], added: dict[str, Any] | None) -> dict[str, Any]:
    if not added:
        return event
    return {**event, "user_message": added["user_message"],
            "model": event.get("model") or added.get("model")}


# ---- ingesting ---------------------------------------------------------------------------------


def _batches(events: dict[str, list[Placed]]) -> list[tuple[str, int, dict[str, Any]]]:
    """Each execution's events in order, cut into checked batches: (execution, n, batch)."""
    plans = []
    for execution in sorted(events):
        ordered = [event for _, _, event in sorted(events[execution], key=lambda e: e[:2])]
        for n, start in enumerate(range(0, len(ordered), MAX_BATCH_EVENTS)):
            batch = {"events": ordered[start:start + MAX_BATCH_EVENTS]}
            check_batch(batch)
            plans.append((execution, n, batch))
    return plans


def _apply(ingestion: Ingestion, tenant: str, plan: str, thresholds: Any,
           plans: list[tuple[str, int, dict[str, Any]]], key: str) -> int:
    """Feed the batches; the number of events refused because their execution had ended."""
    rejected = 0
    ended: set[str] = set()
    for execution, n, batch in plans:
        if execution in ended:
            rejected += len(batch["events"])
            continue
        try:
            ingestion.add(tenant, plan, thresholds, execution, batch, f"{key}-{n}")
        except LoopsenseError as error:
            if error.code != "EXECUTION_ENDED":
                raise
            ended.add(execution)
            rejected += len(batch["events"])
    return rejected


def _expires(ingestion: Ingestion) -> int:
    return ingestion.clock() // 1000 + DAY_S


def _content(item: dict[str, Any] | None) -> dict[str, Any] | None:
    """What a join item holds from its span's log records, if anything."""
    return jsonio.loads(item["content"]) if item and "content" in item else None


def _join_spans(ingestion: Ingestion, tenant: str, plan: str, thresholds: Any, mapped: Mapped,
                taker: str) -> None:
    """LLM spans without their message: completed by log records already here, else left to
    wait (a join item), except in executions this request ends: those go now, as they are."""
    store = ingestion.store
    now = ingestion.clock()
    for trace, span, execution, (start, span_hex, event) in mapped.unjoined:
        pending = jsonio.dumps({"execution": execution, "start": start, "event": event,
                                "plan": plan, "thresholds": thresholds})
        if execution in mapped.ends:
            found = store.joined(tenant, trace, span)
            mapped.events[execution].append((start, span_hex, _completed(event, _content(found))))
            continue
        item = store.join(tenant, trace, span, "pending", pending, _expires(ingestion),
                          now + JOIN_WAIT_MS)
        if item is None or "content" in item:  # taken already, or its log records are here
            taken = None if item is None else store.take(join_pk(tenant, trace), span, taker)
            taken = taken or store.joined(tenant, trace, span)
            if taken and taken.get("takenBy") == taker:
                mapped.events[execution].append((start, span_hex,
                                                 _completed(event, _content(taken))))
    # A run that ends takes its spans still waiting with it.
    for execution, (trace, _) in sorted(mapped.ends.items()):
        for item in store.waiting(tenant, trace):
            waiting = jsonio.loads(item["pending"])
            if waiting["execution"] != execution:
                continue
            taken = item if item.get("takenBy") == taker else store.take(
                item["pk"], item["sk"], taker)
            if taken and taken.get("takenBy") == taker:
                mapped.events[execution].append((waiting["start"], str(item["sk"]),
                                                 _completed(waiting["event"], _content(taken))))


def ingest(ingestion: Ingestion, tenant: str, plan: str, thresholds: Any, body: bytes,
           content_type: str | None, content_encoding: str | None) -> int:
    """Decode, map, check everything, then feed ingestion; the number of rejected spans (those
    of executions that had already ended)."""
    raw = inflate(body, content_encoding)
    mapped = map_request(decode(raw, content_type))
    digest = hashlib.sha256(raw).hexdigest()[:32]
    everything: dict[str, list[Placed]] = defaultdict(list)
    for execution, placed in mapped.events.items():
        everything[execution].extend(placed)
    for _, _, execution, placed_one in mapped.unjoined:
        everything[execution].append(placed_one)
    _batches(everything)  # all checked before anything is written
    _join_spans(ingestion, tenant, plan, thresholds, mapped, f"span-{digest}")
    rejected = _apply(ingestion, tenant, plan, thresholds, _batches(mapped.events),
                      f"otlp-{digest}")
    for execution, (_, duration) in sorted(mapped.ends.items()):
        if execution in mapped.events or ingestion.store.execution(tenant, execution):
            ingestion.end(tenant, execution, {"durationMs": duration})
    return rejected


def ingest_logs(ingestion: Ingestion, tenant: str, plan: str, thresholds: Any, body: bytes,
                content_type: str | None, content_encoding: str | None) -> int:
    """POST /v1/logs: each record's content joined to its span; the spans that were waiting
    are ingested now. The number of rejected spans (their execution had ended)."""
    raw = inflate(body, content_encoding)
    found = map_logs(decode(raw, content_type, logs=True))
    digest = hashlib.sha256(raw).hexdigest()[:32]
    taker = f"log-{digest}"
    store = ingestion.store
    rejected = 0
    for (trace, span), added in sorted(found.items()):
        item = store.join(tenant, trace, span, "content", jsonio.dumps(added),
                          _expires(ingestion))
        if item is None:  # taken already: by this request (a retry) or another
            item = store.joined(tenant, trace, span)
            if not item or item.get("takenBy") != taker:
                continue
        elif "pending" in item:
            item = store.take(join_pk(tenant, trace), span, taker)
            if item is None:
                continue
        else:
            continue  # the span has not arrived: it will find this content
        waiting = jsonio.loads(item["pending"])
        event = _completed(waiting["event"], added)
        rejected += _apply(ingestion, tenant, plan, thresholds, [
            (waiting["execution"], 0, {"events": [event]})], f"otlp-{taker}-{span}")
    return rejected


def release_waiting(ingestion: Ingestion, limit: int = RELEASE_LIMIT) -> int:
    """The sweeper's part: spans that waited JOIN_WAIT_MS for log records that never came are
    ingested without them, at most ``limit`` per run (the next run goes on). How many."""
    store = ingestion.store
    released = 0
    for pk, sk in store.due_joins(ingestion.clock(), limit):
        item = store.take(pk, sk, "sweeper")
        if item is None:
            continue
        tenant = tenant_of(pk)
        waiting = jsonio.loads(item["pending"])
        _apply(ingestion, tenant, waiting["plan"], waiting["thresholds"], [
            (waiting["execution"], 0, {"events": [waiting["event"]]})],
            f"otlp-sweep-{hashlib.sha256(pk.encode()).hexdigest()[:16]}-{sk}")
        released += 1
    return released


# ---- answers -----------------------------------------------------------------------------------


def _is_json(content_type: str | None) -> bool:
    return (content_type or "").split(";")[0].strip().lower() == JSON


def success(rejected: int, content_type: str | None, logs: bool = False) -> tuple[str, bytes]:
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceResponse,
    )

    response: Any = ExportLogsServiceResponse() if logs else ExportTraceServiceResponse()
    if rejected:
        if logs:
            response.partial_success.rejected_log_records = rejected
        else:
            response.partial_success.rejected_spans = rejected
        response.partial_success.error_message = ("spans of executions that had already ended "
                                                  "(EXECUTION_ENDED)")
    if _is_json(content_type):
        from google.protobuf import json_format

        return JSON, json.dumps(json_format.MessageToDict(response)).encode()
    return PROTOBUF, response.SerializeToString()


def failure(error: LoopsenseError, content_type: str | None) -> tuple[str, bytes]:
    """OTLP's error body: a google.rpc.Status, the envelope's code and message in its message
    (which, like the envelope, names fields and limits, never the caller's values)."""
    code = RPC_CODES.get(error.status, 2)
    detail = error.details[0] if error.details else None
    message = f"{error.code}: " + (f"{detail.path}: {detail.issue}" if detail else error.message)
    if _is_json(content_type):
        return JSON, json.dumps({"code": code, "message": message, "details": []}).encode()
    from google.rpc.status_pb2 import Status

    return PROTOBUF, Status(code=code, message=message).SerializeToString()
