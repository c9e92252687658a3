"""The pure rules of streaming telemetry: step buckets crossed, batch checks, OTLP attribute
mapping."""

from __future__ import annotations

import json

import pytest

from loopsense.core.buckets import step_bucket, step_buckets_crossed
from loopsense.errors import LoopsenseError
from loopsense.platform.telemetry.ingest import check_batch, check_execution_id
from loopsense.platform.telemetry.otlp import span_event
from loopsense.platform.telemetry.otlp_content import (
    execution_of,
    genai_user_message,
    openinference_user_message,
)


@pytest.mark.parametrize(("before", "after", "threshold", "expected"), [
    (0, 9, 10, []),
    (0, 10, 10, ["10+"]),
    (0, 60, 10, ["10+", "50+"]),
    (10, 60, 10, ["50+"]),
    (49, 50, 10, ["50+"]),
    (0, 5, 3, ["2+"]),
    (0, 12, 3, ["2+", "10+"]),
    (0, 6_000, 20, ["10+", "50+", "100+", "500+", "5000+"]),
    (60, 70, 10, []),
])
def test_step_buckets_crossed(before, after, threshold, expected):
    assert step_buckets_crossed(before, after, threshold) == expected


def test_buckets_crossed_batch_by_batch_are_every_bucket_reached():
    for threshold in (2, 7, 10, 33, 100):
        crossed = [b for n in range(0, 700, 13)
                   for b in step_buckets_crossed(n, n + 13, threshold)]
        reached = {step_bucket(c) for c in range(threshold, 713)}
        assert len(crossed) == len(set(crossed)) and set(crossed) == reached


def test_a_batch_counts_each_pair_and_state_exactly():
    checked = check_batch({"events": [
        {"type": "llm_call", "model": "m", "user_message": "a"},
        {"type": "llm_call", "model": "m", "user_message": "a"},
        {"type": "llm_call", "model": "m", "user_message": "A"},
        {"type": "llm_call", "model": "m"},  # no message: not counted (as the skill skips it)
        {"type": "checkpoint", "metadata": {"Plan": " X "}},
        {"type": "checkpoint", "name": "other", "metadata": {"plan": "x"}},
        {"type": "checkpoint"},
    ]})
    assert sorted(n for n, _ in checked.identical.values()) == [1, 2]
    assert sorted((n, state) for n, state in checked.states.values()) == [
        (1, "{}"), (2, '{"plan":"x"}')]


@pytest.mark.parametrize(("body", "code", "path"), [
    ({"events": [{"type": "checkpoint", "name": 3}]}, "EXECUTION_EVENTS_INVALID",
     "events.0.name"),
    ({"events": [{"type": "x", "timestamp": True}]}, "EXECUTION_EVENTS_INVALID",
     "events.0.timestamp"),
    ({"events": [{"type": "x"}], "seq": -1}, "EXECUTION_EVENTS_INVALID", "seq"),
    ({"events": [{"type": "x"}], "seq": "1"}, "EXECUTION_EVENTS_INVALID", "seq"),
    ({"events": [{"type": "x"}] * 501}, "EXECUTION_EVENT_LIMIT_EXCEEDED", "events"),
    ([], "EXECUTION_EVENTS_INVALID", "body"),
])
def test_bad_batches_name_the_field(body, code, path):
    with pytest.raises(LoopsenseError) as refused:
        check_batch(body)
    assert refused.value.code == code
    assert refused.value.details[0].path == path


@pytest.mark.parametrize("execution", ["", "a b", "a/b", "x" * 129, "é"])
def test_execution_ids_are_refused_outside_the_alphabet(execution):
    with pytest.raises(LoopsenseError):
        check_execution_id(execution)


def test_genai_user_message_is_the_last_user_messages_text_parts():
    messages = [{"role": "user", "parts": [{"type": "text", "content": "first"}]},
                {"role": "assistant", "parts": [{"type": "text", "content": "answer"}]},
                {"role": "user", "parts": [{"type": "text", "content": "a"},
                                           {"type": "image", "content": "zz"},
                                           {"type": "text", "content": "b"}]}]
    assert genai_user_message(json.dumps(messages)) == "a\nb"
    assert genai_user_message(messages) == "a\nb"
    assert genai_user_message("not json") is None
    assert genai_user_message(json.dumps([{"role": "system", "content": "x"}])) is None


def test_openinference_user_message_is_the_last_user_content():
    attrs = {"llm.input_messages.0.message.role": "user",
             "llm.input_messages.0.message.content": "old",
             "llm.input_messages.10.message.role": "user",
             "llm.input_messages.10.message.content": "new",
             "llm.input_messages.2.message.role": "assistant",
             "llm.input_messages.2.message.content": "no"}
    assert openinference_user_message(attrs) == "new"


def test_span_mapping_prefers_genai_then_openinference_then_input_value():
    chat = span_event({"gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
                       "input.value": "fallback"}, 5)
    assert chat == {"type": "llm_call", "model": "m", "user_message": "fallback",
                    "timestamp": 5}
    llm = span_event({"openinference.span.kind": "LLM", "llm.model_name": "n",
                      "llm.input_messages.0.message.role": "user",
                      "llm.input_messages.0.message.content": "q"}, 1)
    assert (llm or {})["user_message"] == "q" and (llm or {})["model"] == "n"
    tool = span_event({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t",
                       "gen_ai.tool.call.arguments": "{}"}, 2)
    assert tool == {"type": "tool_call", "name": "t", "arguments": {}, "timestamp": 2}
    assert span_event({"gen_ai.operation.name": "invoke_agent"}, 3) is None
    assert span_event({"http.method": "GET"}, 4) == {"type": "span", "timestamp": 4}


def test_execution_is_the_conversation_else_the_session_else_the_trace():
    trace = bytes(range(16))
    assert execution_of({"gen_ai.conversation.id": "conv_1", "session.id": "s"},
                        trace) == ("conv_1", True)
    odd, _ = execution_of({"gen_ai.conversation.id": "thread 1/2"}, trace)
    assert odd.startswith("conv-") and len(odd) == 45
    check_execution_id(odd)
    assert execution_of({"session.id": "sess-1"}, trace) == ("sess-1", False)
    session, _ = execution_of({"session.id": "user 7 / chat"}, trace)
    assert session.startswith("session-") and len(session) == 48
    check_execution_id(session)
    assert execution_of({}, trace) == (trace.hex(), True)
