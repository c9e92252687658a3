"""What loopsense reads from the attributes of an OTLP span or log record, whichever
instrumentor wrote them (docs/failure-groups.md has the table): the kind of step, the model, the
user message, the tool call, the execution. Pure functions over plain attribute dicts.

Attribute forms read, in order of preference:
- OpenTelemetry GenAI conventions: ``gen_ai.operation.name``, ``gen_ai.request.model``,
  ``gen_ai.input.messages`` (a JSON string on spans, structured on log records; parts
  ``{"type": "text", "content"}``), ``gen_ai.tool.name`` / ``.call.arguments`` / ``.call.result``,
  ``gen_ai.conversation.id``;
- OpenInference: ``openinference.span.kind``, ``llm.invocation_parameters`` (the request's model)
  then ``llm.model_name`` (the response's, a dated snapshot), ``llm.input_messages.N.message.
  content`` or its parts ``...message.contents.M.message_content.text``, ``input.value`` (the
  request body or message list, else plain text), ``tool.name``, ``output.value``,
  ``session.id``;
- Traceloop's legacy attributes: ``llm.request.type``, ``gen_ai.prompt.N.role/content``,
  ``traceloop.span.kind`` ``tool`` with ``traceloop.entity.name/input/output``.

A redaction placeholder (REDACTED) where the message would be is no message: the call counts as
a step but never toward identical or similar calls.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from typing import Any

from loopsense import jsonio
from loopsense.errors import LoopsenseError
from loopsense.platform.telemetry.ingest import EXECUTION_ID

LLM_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
LEGACY_LLM_TYPES = frozenset({"chat", "completion"})  # Traceloop's llm.request.type
TRACELOOP_RUNS = frozenset({"agent", "workflow"})  # its decorators' spans around a run
# OpenInference's REDACTED_VALUE (OPENINFERENCE_HIDE_INPUTS, _HIDE_INPUT_TEXT, ...) and the
# generic form other scrubbers write.
REDACTED = frozenset({"__REDACTED__", "[REDACTED]"})
MAX_MESSAGE_CHARS = 100_000  # a user_message longer than this is cut (identical_call hashes it)
MAX_ARGUMENT_CHARS = 8_192  # larger tool arguments or results are kept as their SHA-256
AGENT, LLM, TOOL, SPAN = "agent", "llm", "tool", "span"
# ASCII digits only, as every number written as text (validation.is_digits): \d takes any
# Unicode decimal digit, and an unbounded run can be too long for int().
_INDEXED = re.compile(r"^([0-9]{1,20})\.(.+)$")


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _json(value: Any) -> Any:
    """A JSON string parsed; anything else as it is."""
    if isinstance(value, str):
        try:
            return jsonio.loads(value)  # the API's one JSON policy: no value it refuses
        except LoopsenseError:
            return value
    return value


def kind_of(attrs: dict[str, Any]) -> str:
    operation = attrs.get("gen_ai.operation.name")
    inference = attrs.get("openinference.span.kind")
    traceloop = attrs.get("traceloop.span.kind")
    if operation == "invoke_agent" or (operation is None and (
            inference == "AGENT" or traceloop in TRACELOOP_RUNS)):
        return AGENT
    if operation in LLM_OPERATIONS or (operation is None and (
            inference == "LLM" or attrs.get("llm.request.type") in LEGACY_LLM_TYPES)):
        return LLM
    if operation == "execute_tool" or (operation is None and (inference == "TOOL"
                                                              or traceloop == "tool")):
        return TOOL
    return SPAN


def model_of(attrs: dict[str, Any]) -> str | None:
    """The requested model: it names the loop; the response's dated snapshot moves with the
    provider."""
    model = _text(attrs.get("gen_ai.request.model"))
    if model:
        return model
    parameters = _json(attrs.get("llm.invocation_parameters"))
    if isinstance(parameters, dict) and isinstance(parameters.get("model"), str):
        return str(parameters["model"])
    return _text(attrs.get("llm.model_name")) or None


def content_text(content: Any) -> str | None:
    """A message's text: a string, or its text parts (GenAI ``content``, OpenAI ``text``)
    joined by newlines."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        found = [part.get("content", part.get("text")) for part in content
                 if isinstance(part, dict) and part.get("type", "text") == "text"]
        texts = [t for t in found if isinstance(t, str)]
        return "\n".join(texts) if texts else None
    return None


def message_text(message: Any) -> str | None:
    if not isinstance(message, dict):
        return None
    if "parts" in message:
        return content_text(message["parts"])
    return content_text(message.get("content"))


def last_user_text(messages: Any) -> str | None:
    """The text of the last ``user`` message of a list (None: there is none, or no text)."""
    if isinstance(messages, dict):
        messages = messages.get("messages")
    if not isinstance(messages, list):
        return None
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return message_text(message)
    return None


def _indexed(attrs: dict[str, Any], prefix: str) -> dict[int, dict[str, Any]]:
    """``prefix.N.rest`` attributes grouped by N."""
    found: dict[int, dict[str, Any]] = defaultdict(dict)
    for key, value in attrs.items():
        if key.startswith(prefix):
            match = _INDEXED.match(key[len(prefix):])
            if match:
                found[int(match.group(1))][match.group(2)] = value
    return found


def openinference_user_message(attrs: dict[str, Any]) -> str | None:
    """The last user ``llm.input_messages.N``: its content, else its text parts in order."""
    found = _indexed(attrs, "llm.input_messages.")
    for position in sorted(found, reverse=True):
        fields = found[position]
        if fields.get("message.role") != "user":
            continue
        if isinstance(fields.get("message.content"), str):
            return str(fields["message.content"])
        parts = _indexed(fields, "message.contents.")
        texts = [_text(parts[m].get("message_content.text")) for m in sorted(parts)
                 if parts[m].get("message_content.type", "text") == "text"]
        kept = [t for t in texts if t is not None]
        return "\n".join(kept) if kept else None
    return None


def legacy_user_message(attrs: dict[str, Any]) -> str | None:
    """Traceloop's legacy ``gen_ai.prompt.N.role`` / ``.content``: the last user prompt."""
    found = _indexed(attrs, "gen_ai.prompt.")
    for position in sorted(found, reverse=True):
        if found[position].get("role") == "user":
            return content_text(_json(found[position].get("content")))
    return None


def _has_user(attrs: dict[str, Any], prefix: str, role_key: str) -> bool:
    return any(fields.get(role_key) == "user" for fields in _indexed(attrs, prefix).values())


def has_input(attrs: dict[str, Any]) -> bool:
    """Whether the attributes carry the call's input at all (else it is in log records, or was
    not captured)."""
    return any(key == "gen_ai.input.messages" or key == "input.value"
               or key.startswith(("llm.input_messages.", "gen_ai.prompt.")) for key in attrs)


def user_message(attrs: dict[str, Any]) -> str | None:
    """The user message of an LLM span or log record: from the first form that has one; a
    redaction placeholder there is no message (the other forms are not read instead)."""
    if "gen_ai.input.messages" in attrs:
        text = last_user_text(_json(attrs["gen_ai.input.messages"]))
    elif _has_user(attrs, "llm.input_messages.", "message.role"):
        text = openinference_user_message(attrs)
    elif _has_user(attrs, "gen_ai.prompt.", "role"):
        text = legacy_user_message(attrs)
    elif isinstance(attrs.get("input.value"), str):
        raw = attrs["input.value"]
        parsed = _json(raw)
        text = last_user_text(parsed) if isinstance(parsed, list | dict) else raw
    else:
        return None
    return clean(text)


def clean(text: str | None) -> str | None:
    """A message as ingestion takes it: None for a placeholder, cut to MAX_MESSAGE_CHARS."""
    if text is None or text.strip() in REDACTED:
        return None
    return text[:MAX_MESSAGE_CHARS]


def _bounded(value: Any) -> Any:
    """Tool arguments or a result as compared: parsed when JSON; over MAX_ARGUMENT_CHARS its
    SHA-256 (equal values stay equal)."""
    value = _json(value)
    try:
        text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        return None
    if len(text) <= MAX_ARGUMENT_CHARS:
        return value
    return {"sha256": hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()}


def tool_call(attrs: dict[str, Any]) -> dict[str, Any]:
    """A tool span's name, arguments and result (the fields of a ``tool_call`` event)."""
    legacy = attrs.get("traceloop.span.kind") == "tool"
    name = (_text(attrs.get("gen_ai.tool.name")) or _text(attrs.get("tool.name"))
            or (_text(attrs.get("traceloop.entity.name")) if legacy else None))
    arguments = attrs.get("gen_ai.tool.call.arguments")
    if arguments is None:
        arguments = attrs.get("traceloop.entity.input") if legacy else attrs.get("input.value")
    result = attrs.get("gen_ai.tool.call.result")
    if result is None:
        result = attrs.get("traceloop.entity.output") if legacy else attrs.get("output.value")
    event: dict[str, Any] = {}
    if name is not None:
        event["name"] = name
    if isinstance(arguments, str) and clean(arguments) is None:
        event["redacted"] = True  # not comparable: never counted as a repeat
    elif arguments is not None:
        event["arguments"] = _bounded(_plain_kwargs(_json(arguments)) if legacy else arguments)
    if result is not None:
        event["result"] = _bounded(result)
    return event


def _plain_kwargs(value: Any) -> Any:
    """Traceloop's ``{"args": [], "kwargs": {...}}`` of a call by keywords: the keywords, as
    the other forms write a tool's arguments."""
    if isinstance(value, dict) and set(value) == {"args", "kwargs"} and not value["args"]:
        return value["kwargs"]
    return value


def _execution_id(value: str, prefix: str) -> str:
    if EXECUTION_ID.fullmatch(value):
        return value
    return prefix + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:40]


def execution_of(attrs: dict[str, Any], trace_id: bytes) -> tuple[str, bool]:
    """The execution a span belongs to, and whether its root agent span ends it:
    ``gen_ai.conversation.id`` (yes), else ``session.id`` (no: a session groups the traces of
    several runs), else the trace id in hex (yes). An id that is not a valid execution id
    becomes a prefix and the first 40 hex digits of its SHA-256."""
    conversation = attrs.get("gen_ai.conversation.id")
    if isinstance(conversation, str) and conversation:
        return _execution_id(conversation, "conv-"), True
    session = attrs.get("session.id")
    if isinstance(session, str) and session:
        return _execution_id(session, "session-"), False
    return trace_id.hex(), True


def genai_user_message(raw: Any) -> str | None:
    """The text of the last ``user`` message of ``gen_ai.input.messages``."""
    return clean(last_user_text(_json(raw)))


# ---- log records -------------------------------------------------------------------------------

# Events that carry a call's input: the GenAI conventions' one event per call (its attributes
# as on the span), and the older one event per message (body ``{"content": ...}``).
DETAILS_EVENT = "gen_ai.client.inference.operation.details"
USER_MESSAGE_EVENT = "gen_ai.user.message"


def log_content(event_name: str, attrs: dict[str, Any], body: Any) -> dict[str, Any] | None:
    """What a log record adds to its span's llm_call: ``{"user_message", "model"?}``, or None
    when it carries no user message."""
    if event_name == DETAILS_EVENT:
        message = user_message(attrs)
    elif event_name == USER_MESSAGE_EVENT:
        message = clean(content_text(body.get("content")) if isinstance(body, dict)
                        else _text(body))
    else:
        return None
    if message is None:
        return None
    content: dict[str, Any] = {"user_message": message}
    model = model_of(attrs)
    if model is not None:
        content["model"] = model
    return content
