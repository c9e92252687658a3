"""One agent run, instrumented the way a user of one instrumentor would: the real ``openai``
client (and, for the Agents SDK, the real ``agents`` runner) against tests/e2e/instrumentors/
fake_openai.py on loopback, exported by the official OTLP/HTTP exporters configured by the
standard environment (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS, ...).

Run by tests/e2e/test_instrumentors.py with the python of the venv that holds the instrumentor
(scripts/bootstrap instrumentors): ``agent.py MODE``. Each mode asks ROUNDS times; see MODES.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))  # this venv does not have loopsense

import fake_openai  # noqa: E402

MODEL = "gpt-4o-mini"
QUESTION = "Which flights go from Paris to Oslo tomorrow?"
SYSTEM = "be brief"
ROUNDS = 5
TOOL_TURNS = 6  # the Agents SDK's max_turns: the agent calls the same tool until then


def _providers(logs: bool = False) -> tuple[Any, Any]:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    if not logs:
        return tracer_provider, None
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))
    return tracer_provider, logger_provider


def _client(base_url: str) -> Any:
    import openai

    return openai.OpenAI(base_url=base_url, api_key="sk-fake", max_retries=0)


def _ask(client: Any, question: str = QUESTION, parts: bool = False,
         stream: bool = False) -> None:
    content: Any = [{"type": "text", "text": question}] if parts else question
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": content}]
    if stream:
        for _ in client.chat.completions.create(model=MODEL, messages=messages, stream=True,
                                                stream_options={"include_usage": True}):
            pass
    else:
        client.chat.completions.create(model=MODEL, messages=messages)


def _loop(tracer_provider: Any, client: Any, **ask: Any) -> None:
    """The loop under one plain parent span (the user's own), so one trace, one execution."""
    with tracer_provider.get_tracer("travel-app").start_as_current_span("travel request"):
        for _ in range(ROUNDS):
            _ask(client, **ask)


def openai_v2(base_url: str) -> list[Any]:
    """opentelemetry-instrumentation-openai-v2; its content mode from the environment."""
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    tracer_provider, logger_provider = _providers(logs=True)
    OpenAIInstrumentor().instrument(tracer_provider=tracer_provider,
                                    logger_provider=logger_provider)
    _loop(tracer_provider, _client(base_url), parts=os.environ.get("AGENT_PARTS") == "1",
          stream=os.environ.get("AGENT_STREAM") == "1")
    return [tracer_provider, logger_provider]


def openinference(base_url: str) -> list[Any]:
    """openinference-instrumentation-openai: parts-form content; AGENT_QUESTIONS=distinct asks
    a different question each round (with OPENINFERENCE_HIDE_* they all read __REDACTED__);
    AGENT_SESSION=id puts each round in its own trace, all in one session (using_session)."""
    from openinference.instrumentation import using_session
    from openinference.instrumentation.openai import OpenAIInstrumentor

    tracer_provider, _ = _providers()
    OpenAIInstrumentor().instrument(tracer_provider=tracer_provider)
    client = _client(base_url)
    session = os.environ.get("AGENT_SESSION")
    if session:
        with using_session(session):
            for _ in range(ROUNDS):
                _ask(client, parts=True)
    elif os.environ.get("AGENT_QUESTIONS") == "distinct":
        with tracer_provider.get_tracer("travel-app").start_as_current_span("travel request"):
            for n in range(ROUNDS):
                _ask(client, question=f"{QUESTION} (variant {n})")
    else:
        _loop(tracer_provider, client, parts=True)
    return [tracer_provider]


def traceloop(base_url: str) -> list[Any]:
    """Traceloop's opentelemetry-instrumentation-openai (0.62): content in span attributes, or
    with AGENT_TRACELOOP_EVENTS=1 (use_attributes=False) in log records."""
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    events = os.environ.get("AGENT_TRACELOOP_EVENTS") == "1"
    tracer_provider, logger_provider = _providers(logs=events)
    OpenAIInstrumentor(use_attributes=not events).instrument(
        tracer_provider=tracer_provider, logger_provider=logger_provider)
    _loop(tracer_provider, _client(base_url))
    return [tracer_provider, logger_provider]


def traceloop_sdk(base_url: str) -> list[Any]:
    """traceloop-sdk (0.45): Traceloop.init with its own exporter settings, a @workflow around
    the loop and a @tool called with the same arguments each round (legacy attributes:
    gen_ai.prompt.N.*, llm.request.type, traceloop.span.kind, traceloop.entity.*)."""
    from traceloop.sdk import Traceloop
    from traceloop.sdk.decorators import tool, workflow
    from traceloop.sdk.instruments import Instruments

    Traceloop.init(app_name="travel", api_endpoint=os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"],
                   headers=dict([os.environ["OTEL_EXPORTER_OTLP_HEADERS"].split("=", 1)]),
                   disable_batch=True, telemetry_enabled=False,
                   instruments={Instruments.OPENAI})
    client = _client(base_url)

    @tool(name="search_flights")
    def search_flights(city: str) -> str:
        return "no flights"

    @workflow(name="travel")
    def run() -> None:
        for _ in range(ROUNDS):
            _ask(client)
            search_flights(city="Paris")

    run()
    return []  # Traceloop flushes on exit


def _agents(base_url: str) -> None:
    """The OpenAI Agents SDK: a triage agent hands off to a booking agent, which calls the same
    tool until max_turns (the tool-call loop)."""
    from agents import (
        Agent,
        MaxTurnsExceeded,
        OpenAIChatCompletionsModel,
        Runner,
        function_tool,
    )
    from openai import AsyncOpenAI

    model = OpenAIChatCompletionsModel(
        model=MODEL, openai_client=AsyncOpenAI(base_url=base_url, api_key="sk-fake",
                                               max_retries=0))

    @function_tool
    def search_flights(city: str) -> str:
        """Search flights from a city."""
        return "no flights"

    booking = Agent(name="booking", instructions=SYSTEM, model=model, tools=[search_flights])
    triage = Agent(name="triage", instructions=SYSTEM, model=model, handoffs=[booking])
    with contextlib.suppress(MaxTurnsExceeded):
        Runner.run_sync(triage, QUESTION, max_turns=TOOL_TURNS)


def _without_default_exporter() -> None:
    """The SDK's own processor exports to OpenAI's backend: only the instrumentor's stays."""
    from agents import set_trace_processors

    set_trace_processors([])


def _instrumented_agents(base_url: str, instrumentor: Any) -> list[Any]:
    _without_default_exporter()
    tracer_provider, _ = _providers()
    instrumentor().instrument(tracer_provider=tracer_provider)
    _agents(base_url)
    return [tracer_provider]


def agents_openinference(base_url: str) -> list[Any]:
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    return _instrumented_agents(base_url, OpenAIAgentsInstrumentor)


def agents_otel(base_url: str) -> list[Any]:
    """opentelemetry-instrumentation-openai-agents-v2 (the OpenTelemetry project's)."""
    from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    return _instrumented_agents(base_url, OpenAIAgentsInstrumentor)


MODES: dict[str, Callable[[str], list[Any]]] = {
    "openai-v2": openai_v2, "openinference": openinference, "traceloop": traceloop,
    "traceloop-sdk": traceloop_sdk, "agents-openinference": agents_openinference,
    "agents-otel": agents_otel,
}


def main(mode: str) -> None:
    server, base_url = fake_openai.start()
    try:
        providers = MODES[mode](base_url)
        for provider in providers:
            if provider is not None:
                provider.shutdown()  # flushes the batches
    finally:
        server.shutdown()


if __name__ == "__main__":
    main(sys.argv[1])
