"""POST /v1/traces: OTLP/HTTP trace exports mapped to telemetry events (spec/integrations.md,
"OpenTelemetry"), fed to the same ingestion as POST /v1/executions/{id}/events.

Decoding uses the official definitions (opentelemetry-proto: ExportTraceServiceRequest), for
protobuf and for OTLP's JSON encoding (protobuf JSON, except that trace and span ids are hex, not
base64: they are turned into base64 before parsing). gzip bodies are inflated first, up to
MAX_INFLATED_BYTES.

Mapping, per span (attributes of the OpenTelemetry GenAI semantic conventions, else
OpenInference's):
- execution: ``gen_ai.conversation.id`` (when it is not a valid execution id: ``conv-`` and the
  first 40 hex digits of its SHA-256), else the span's trace id in hex;
- ``gen_ai.operation.name`` ``chat`` / ``text_completion`` / ``generate_content``, or
  OpenInference span kind ``LLM``: an llm_call, model ``gen_ai.request.model`` (else
  ``llm.model_name``), user_message the text of the last ``user`` message of
  ``gen_ai.input.messages`` (its text parts joined by newlines), else OpenInference's last user
  ``llm.input_messages.N.message.content``, else ``input.value``;
- ``execute_tool``, or OpenInference ``TOOL``: a tool_call (``gen_ai.tool.name`` /
  ``tool.name``, arguments ``gen_ai.tool.call.arguments``);
- ``invoke_agent``: the execution itself, not a step: when it is exported (it has ended), the
  execution ends, its duration the span's;
- any other span: a step of type ``span``.
Events are ordered by start time (then span id) and timestamped with it in epoch milliseconds.

The whole request is decoded, mapped and every batch checked before anything is written; a
malformed request is a 400 and nothing of it is ingested. Each execution's batches carry an
Idempotency-Key derived from the request's bytes, so an exporter's retry of the same request is
applied once. Spans of an execution that has already ended are rejected and counted in OTLP's
``partial_success`` (the rest is ingested). Errors answer with OTLP's own body, a
``google.rpc.Status`` (code, message), encoded like the request (protobuf or JSON).
"""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from loopsense.errors import LoopsenseError, validation_error
from loopsense.platform.telemetry.ingest import (
    EXECUTION_ID,
    INVALID,
    MAX_BATCH_EVENTS,
    Ingestion,
    check_batch,
)

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
MAX_INFLATED_BYTES = 16 * 1024 * 1024
MAX_MESSAGE_CHARS = 100_000  # a user_message longer than this is cut (identical_call hashes it)
LLM_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
# google.rpc.Code for each HTTP status the route answers with.
RPC_CODES = {400: 3, 401: 16, 403: 7, 404: 5, 409: 10, 429: 8, 500: 13, 503: 14, 504: 4}


def _bad(issue: str, path: str = "body") -> LoopsenseError:
    return validation_error(path, issue, INVALID)


@dataclass
class Mapped:
    events: dict[str, list[tuple[int, bytes, dict[str, Any]]]] = field(
        default_factory=lambda: defaultdict(list))
    ends: dict[str, int] = field(default_factory=dict)  # execution -> duration ms


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


def decode(body: bytes, content_type: str | None) -> Any:
    from google.protobuf import json_format
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    kind = (content_type or "").split(";")[0].strip().lower()
    request = ExportTraceServiceRequest()
    if kind == PROTOBUF:
        try:
            request.ParseFromString(body)
        except (DecodeError, RecursionError, ValueError):
            raise _bad("is not an OTLP ExportTraceServiceRequest (protobuf)") from None
        return request
    if kind == JSON:
        try:
            document = json.loads(body)
        except (ValueError, RecursionError):
            raise _bad("is not valid JSON") from None
        _hex_ids_to_base64(document)
        try:
            json_format.ParseDict(document, request, ignore_unknown_fields=True)
        except (json_format.ParseError, RecursionError, TypeError, ValueError):
            raise _bad("is not an OTLP ExportTraceServiceRequest (JSON)") from None
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


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def genai_user_message(raw: Any) -> str | None:
    """The text of the last ``user`` message of ``gen_ai.input.messages`` (a JSON string, or
    already structured), its text parts joined by newlines."""
    messages = raw
    if isinstance(raw, str):
        try:
            messages = json.loads(raw)
        except ValueError:
            return None
    if not isinstance(messages, list):
        return None
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            parts = message.get("parts")
            if isinstance(parts, list):
                texts = [p["content"] for p in parts if isinstance(p, dict)
                         and p.get("type") == "text" and isinstance(p.get("content"), str)]
                return "\n".join(texts) if texts else None
            return _text(message.get("content"))
    return None


def openinference_user_message(attrs: dict[str, Any]) -> str | None:
    found: dict[int, dict[str, Any]] = defaultdict(dict)
    for key, value in attrs.items():
        if key.startswith("llm.input_messages."):
            index, _, rest = key[len("llm.input_messages."):].partition(".")
            if index.isdigit() and rest in ("message.role", "message.content"):
                found[int(index)][rest] = value
    for position in sorted(found, reverse=True):
        if found[position].get("message.role") == "user":
            return _text(found[position].get("message.content"))
    return None


def execution_of(attrs: dict[str, Any], trace_id: bytes) -> str:
    conversation = attrs.get("gen_ai.conversation.id")
    if isinstance(conversation, str) and conversation:
        if EXECUTION_ID.fullmatch(conversation):
            return conversation
        return "conv-" + hashlib.sha256(conversation.encode("utf-8")).hexdigest()[:40]
    return trace_id.hex()


def span_event(attrs: dict[str, Any], start_ms: int) -> dict[str, Any] | None:
    """The telemetry event of one span; None for the agent span (the execution itself)."""
    operation = attrs.get("gen_ai.operation.name")
    kind = attrs.get("openinference.span.kind")
    if operation == "invoke_agent" or (operation is None and kind == "AGENT"):
        return None
    if operation in LLM_OPERATIONS or (operation is None and kind == "LLM"):
        model = _text(attrs.get("gen_ai.request.model")) or _text(attrs.get("llm.model_name"))
        message = (genai_user_message(attrs.get("gen_ai.input.messages"))
                   or openinference_user_message(attrs) or _text(attrs.get("input.value")))
        if message is not None:
            message = message[:MAX_MESSAGE_CHARS]
        return {"type": "llm_call", "model": model, "user_message": message,
                "timestamp": start_ms}
    if operation == "execute_tool" or (operation is None and kind == "TOOL"):
        event: dict[str, Any] = {"type": "tool_call", "timestamp": start_ms}
        name = _text(attrs.get("gen_ai.tool.name")) or _text(attrs.get("tool.name"))
        if name is not None:
            event["name"] = name
        arguments = attrs.get("gen_ai.tool.call.arguments")
        if arguments is not None:
            event["arguments"] = arguments
        return event
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
                execution = execution_of(attrs, span.trace_id)
                start_ms = span.start_time_unix_nano // 1_000_000
                event = span_event(attrs, start_ms)
                if event is None:
                    duration = (span.end_time_unix_nano - span.start_time_unix_nano) // 1_000_000
                    mapped.ends[execution] = max(0, duration)
                else:
                    mapped.events[execution].append((start_ms, bytes(span.span_id), event))
    return mapped


# ---- ingesting ---------------------------------------------------------------------------------


def ingest(ingestion: Ingestion, tenant: str, plan: str, thresholds: Any, body: bytes,
           content_type: str | None, content_encoding: str | None) -> int:
    """Decode, map, check everything, then feed ingestion; the number of rejected spans (those
    of executions that had already ended)."""
    raw = inflate(body, content_encoding)
    mapped = map_request(decode(raw, content_type))
    digest = hashlib.sha256(raw).hexdigest()[:32]
    plans: list[tuple[str, int, dict[str, Any]]] = []
    for execution in sorted(mapped.events):
        ordered = [event for _, _, event in sorted(mapped.events[execution],
                                                   key=lambda e: (e[0], e[1]))]
        for n, start in enumerate(range(0, len(ordered), MAX_BATCH_EVENTS)):
            batch = {"events": ordered[start:start + MAX_BATCH_EVENTS]}
            check_batch(batch)  # all checked before anything is written
            plans.append((execution, n, batch))
    rejected = 0
    ended: set[str] = set()
    for execution, n, batch in plans:
        if execution in ended:
            rejected += len(batch["events"])
            continue
        try:
            ingestion.add(tenant, plan, thresholds, execution, batch, f"otlp-{digest}-{n}")
        except LoopsenseError as error:
            if error.code != "EXECUTION_ENDED":
                raise
            ended.add(execution)
            rejected += len(batch["events"])
    for execution, duration in sorted(mapped.ends.items()):
        if execution in mapped.events or ingestion.store.execution(tenant, execution):
            ingestion.end(tenant, execution, {"durationMs": duration})
    return rejected


# ---- answers -----------------------------------------------------------------------------------


def _is_json(content_type: str | None) -> bool:
    return (content_type or "").split(";")[0].strip().lower() == JSON


def success(rejected: int, content_type: str | None) -> tuple[str, bytes]:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceResponse,
    )

    response = ExportTraceServiceResponse()
    if rejected:
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
