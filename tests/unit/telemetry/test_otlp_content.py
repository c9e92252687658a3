"""What loopsense reads from each instrumentor's attributes (platform/telemetry/otlp_content.py):
the attribute sets below are those the instrumentors of tests/e2e/test_instrumentors.py emitted
(trimmed to the keys that matter), so each form is pinned here as well as end to end."""

from __future__ import annotations

import json

import pytest

from loopsense.platform.telemetry import otlp_content as content
from loopsense.platform.telemetry.otlp import span_event

QUESTION = "Which flights go from Paris to Oslo tomorrow?"
SYSTEM = {"role": "system", "content": "be brief"}

OPENINFERENCE_PARTS = {
    "openinference.span.kind": "LLM",
    "input.value": json.dumps({"model": "gpt-4o-mini", "messages": [
        SYSTEM, {"role": "user", "content": [{"type": "text", "text": QUESTION}]}]}),
    "llm.invocation_parameters": '{"model": "gpt-4o-mini"}',
    "llm.input_messages.0.message.role": "system",
    "llm.input_messages.0.message.content": "be brief",
    "llm.input_messages.1.message.role": "user",
    "llm.input_messages.1.message.contents.0.message_content.type": "text",
    "llm.input_messages.1.message.contents.0.message_content.text": QUESTION,
    "llm.model_name": "gpt-4o-mini-2024-07-18",
}
GENAI = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini",
         "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
         "gen_ai.input.messages": json.dumps([
             {"role": "system", "parts": [{"content": "be brief", "type": "text"}]},
             {"role": "user", "parts": [{"content": QUESTION, "type": "text"}]}])}
TRACELOOP_LEGACY = {"llm.request.type": "chat", "gen_ai.request.model": "gpt-4o-mini",
                    "gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": "be brief",
                    "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": QUESTION}
AGENTS_OPENINFERENCE = {  # the Agents SDK: the message list grows, the question stays last
    "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini",
    "llm.invocation_parameters": '{"base_url": "http://127.0.0.1:1/v1/"}',
    "input.value": json.dumps([SYSTEM, {"role": "user", "content": QUESTION},
                               {"role": "assistant", "content": None, "tool_calls": []},
                               {"role": "tool", "content": "no flights"}])}


@pytest.mark.parametrize("attrs", [OPENINFERENCE_PARTS, GENAI, TRACELOOP_LEGACY,
                                   AGENTS_OPENINFERENCE],
                         ids=["openinference-parts", "genai", "traceloop-legacy", "agents"])
def test_every_form_gives_the_same_llm_call(attrs):
    assert span_event(attrs, 7) == {"type": "llm_call", "model": "gpt-4o-mini",
                                    "user_message": QUESTION, "timestamp": 7}


def test_the_request_model_wins_over_the_response_snapshot():
    assert content.model_of({"llm.model_name": "gpt-4o-mini-2024-07-18",
                             "llm.invocation_parameters": '{"model": "gpt-4o"}'}) == "gpt-4o"
    assert content.model_of({"llm.model_name": "m", "llm.invocation_parameters": "{"}) == "m"


def test_openai_list_of_parts_content_is_its_text_parts():
    message = {"role": "user", "content": [{"type": "text", "text": "a"},
                                           {"type": "image_url", "image_url": {"url": "x"}},
                                           {"type": "text", "text": "b"}]}
    assert content.last_user_text([message]) == "a\nb"
    assert content.user_message({"input.value": json.dumps({"messages": [message]})}) == "a\nb"


@pytest.mark.parametrize("attrs", [
    {"openinference.span.kind": "LLM", "input.value": "__REDACTED__"},
    {"openinference.span.kind": "LLM", "input.value": "{\"messages\": []}",
     "llm.input_messages.1.message.role": "user",
     "llm.input_messages.1.message.content": "__REDACTED__"},
    {**GENAI, "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [
        {"type": "text", "content": "[REDACTED]"}]}])},
])
def test_a_redaction_placeholder_is_no_message(attrs):
    event = span_event(attrs, 1)
    assert event is not None and event["user_message"] is None
    assert content.has_input(attrs)  # it had its input: it waits for no log record


def test_a_redacted_placeholder_is_not_replaced_by_another_form():
    # OPENINFERENCE_HIDE_INPUT_TEXT redacts the messages but leaves input.value: the messages,
    # the first form present, say "no message".
    attrs = {"openinference.span.kind": "LLM", "input.value": json.dumps({"messages": [
        {"role": "user", "content": QUESTION}]}),
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "__REDACTED__"}
    assert content.user_message(attrs) is None


@pytest.mark.parametrize(("attrs", "expected"), [
    ({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search_flights",
      "gen_ai.tool.call.arguments": '{"city": "Paris"}', "gen_ai.tool.call.result": "none"},
     {"name": "search_flights", "arguments": {"city": "Paris"}, "result": "none"}),
    ({"openinference.span.kind": "TOOL", "tool.name": "search_flights",
      "input.value": '{"city": "Paris"}', "output.value": "none"},
     {"name": "search_flights", "arguments": {"city": "Paris"}, "result": "none"}),
    ({"traceloop.span.kind": "tool", "traceloop.entity.name": "search_flights",
      "traceloop.entity.input": '{"args": [], "kwargs": {"city": "Paris"}}',
      "traceloop.entity.output": '"none"'},
     {"name": "search_flights", "arguments": {"city": "Paris"}, "result": "none"}),
    ({"openinference.span.kind": "TOOL", "tool.name": "t", "input.value": "__REDACTED__"},
     {"name": "t", "redacted": True}),
])
def test_tool_spans_of_every_form(attrs, expected):
    assert span_event(attrs, 3) == {"type": "tool_call", **expected, "timestamp": 3}


def test_large_tool_arguments_are_kept_as_their_digest():
    big = json.dumps({"q": "x" * 10_000})
    first, second = (content.tool_call({"gen_ai.tool.name": "t",
                                        "gen_ai.tool.call.arguments": value})
                     for value in (big, big))
    assert first == second and set(first["arguments"]) == {"sha256"}


@pytest.mark.parametrize(("attrs", "kind"), [
    ({"gen_ai.operation.name": "invoke_agent"}, content.AGENT),
    ({"openinference.span.kind": "AGENT"}, content.AGENT),
    ({"traceloop.span.kind": "workflow"}, content.AGENT),
    ({"llm.request.type": "chat"}, content.LLM),
    ({"traceloop.span.kind": "tool"}, content.TOOL),
    ({"openinference.span.kind": "CHAIN"}, content.SPAN),
    ({"gen_ai.operation.name": "agent_handoff"}, content.SPAN),
    ({"gen_ai.operation.name": 3, "weird": [1, {"x": None}]}, content.SPAN),
])
def test_span_kinds(attrs, kind):
    assert content.kind_of(attrs) == kind


def test_log_records_carry_a_calls_input():
    details = {"gen_ai.request.model": "gpt-4o-mini", "gen_ai.input.messages": [
        {"role": "user", "parts": [{"type": "text", "content": QUESTION}]}]}
    assert content.log_content(content.DETAILS_EVENT, details, {}) == {
        "user_message": QUESTION, "model": "gpt-4o-mini"}
    assert content.log_content(content.USER_MESSAGE_EVENT, {}, {"content": QUESTION}) == {
        "user_message": QUESTION}
    assert content.log_content(content.USER_MESSAGE_EVENT, {}, {"content": "__REDACTED__"}) \
        is None
    assert content.log_content("gen_ai.choice", {}, {"content": QUESTION}) is None
