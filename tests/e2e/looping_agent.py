"""A looping agent instrumented with OpenTelemetry the ordinary way: the official SDK and OTLP/HTTP
exporter, configured by environment variables only (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
OTEL_EXPORTER_OTLP_HEADERS, ...). It emits GenAI semantic-convention spans: one invoke_agent
span around four identical chat calls, each followed by a tool call. Run as a script by
tests/e2e/test_otlp_http.py; argv[1] is the conversation id.
"""

from __future__ import annotations

import json
import sys

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

MODEL = "gpt-4o-mini"
QUESTION = "Which flights go from Paris to Oslo tomorrow?"


def main(conversation: str) -> None:
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    tracer = provider.get_tracer("looping-agent")
    messages = json.dumps([{"role": "system", "parts": [{"type": "text", "content": "be brief"}]},
                           {"role": "user", "parts": [{"type": "text", "content": QUESTION}]}])
    with tracer.start_as_current_span("invoke_agent travel") as agent:
        agent.set_attribute("gen_ai.operation.name", "invoke_agent")
        agent.set_attribute("gen_ai.conversation.id", conversation)
        for _ in range(4):  # the loop: the same question, the same failing tool
            with tracer.start_as_current_span(f"chat {MODEL}") as chat:
                chat.set_attribute("gen_ai.operation.name", "chat")
                chat.set_attribute("gen_ai.request.model", MODEL)
                chat.set_attribute("gen_ai.conversation.id", conversation)
                chat.set_attribute("gen_ai.input.messages", messages)
            with tracer.start_as_current_span("execute_tool search_flights") as tool:
                tool.set_attribute("gen_ai.operation.name", "execute_tool")
                tool.set_attribute("gen_ai.tool.name", "search_flights")
                tool.set_attribute("gen_ai.tool.call.arguments", '{"from": "PAR"}')
                tool.set_attribute("gen_ai.conversation.id", conversation)
    provider.shutdown()  # flushes the batch


if __name__ == "__main__":
    main(sys.argv[1])
