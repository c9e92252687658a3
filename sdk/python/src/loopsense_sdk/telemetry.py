"""Streaming telemetry of one execution (spec/failure_groups.md, "Ingestion"):
``client.telemetry(execution_id)``.

    telemetry = client.telemetry("run-42")
    telemetry.llm_call("gpt-4o-mini", prompt)
    telemetry.tool_call("search", {"q": "hotels"})
    telemetry.checkpoint("plan", goal=goal, step=step)
    telemetry.end()                       # flushes, then POST /v1/executions/run-42/end

Recording never blocks on the network and never raises into the agent: events go into a bounded
buffer (``max_buffered``; beyond it new events are dropped and counted in ``dropped``) that one
background thread sends in order, in batches of up to ``batch_size`` (POST
/v1/executions/{id}/events), at least every ``flush_interval`` seconds. Each batch has its own
Idempotency-Key, sent again on every retry, so a batch is applied once however often it is sent.
While the service is slow or down the batch waits and is retried with backoff; a batch the
service refuses (400, 401, 409 ended...) is dropped and counted, never retried. Events carry
their time (epoch milliseconds) unless given one. At interpreter exit what is buffered gets a
last, bounded flush. Nothing of the events is ever logged.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from loopsense_sdk import routes as R
from loopsense_sdk.errors import LoopsenseError
from loopsense_sdk.plan import Namespace, Plan, asynchronous, call, keyed, synchronous
from loopsense_sdk.types import EventsAccepted, ExecutionEnded

if TYPE_CHECKING:
    from loopsense_sdk.client import Client

__all__ = ["AsyncExecutions", "Executions", "Telemetry"]

log = logging.getLogger("loopsense_sdk")

MAX_BATCH = 500  # the server's limit per batch
EXIT_FLUSH_S = 2.0


def _events(execution_id: str, events: Sequence[Mapping[str, Any]], *, seq: int | None = None,
            idempotency_key: str | None = None) -> Plan[EventsAccepted]:
    """Add a batch of 1..500 events; the same batch again (same Idempotency-Key, a uuid4 made
    per call unless given, or the same ``seq``) is acknowledged as a duplicate and counted
    once."""
    body: dict[str, Any] = {"events": list(events)}
    if seq is not None:
        body["seq"] = seq
    return cast(EventsAccepted, (yield call(R.EXECUTION_EVENTS, body, executionId=execution_id,
                                            headers=keyed(idempotency_key))))


def _end(execution_id: str, *, duration_ms: int | None = None) -> Plan[ExecutionEnded]:
    """Mark the execution finished (similar_call and time_budget are evaluated then); a
    second end answers ``alreadyEnded``."""
    body = {} if duration_ms is None else {"durationMs": duration_ms}
    return cast(ExecutionEnded, (yield call(R.EXECUTION_END, body, executionId=execution_id)))


class Executions(Namespace):
    """``client.executions``: the ingestion routes one request at a time (``Telemetry`` buffers
    and sends through these)."""

    events = synchronous(_events)
    end = synchronous(_end)


class AsyncExecutions(Namespace):
    """``AsyncClient.executions``: ``Executions``' methods, awaited."""

    events = asynchronous(_events)
    end = asynchronous(_end)


class Telemetry:
    """The telemetry of one execution; made by ``Client.telemetry``. Thread-safe."""

    def __init__(self, client: Client, execution_id: str, *, batch_size: int = 50,
                 flush_interval: float = 1.0, max_buffered: int = 10_000) -> None:
        if not 1 <= batch_size <= MAX_BATCH:
            raise ValueError(f"batch_size must be from 1 to {MAX_BATCH}")
        if flush_interval <= 0 or max_buffered < 1:
            raise ValueError("flush_interval and max_buffered must be positive")
        self.execution_id = execution_id
        self.dropped = 0  # events lost: buffer full, or their batch refused by the service
        self._client = client
        self._executions = client.executions
        self._batch_size = batch_size
        self._interval = flush_interval
        self._max = max_buffered
        self._buffer: deque[dict[str, Any]] = deque()
        self._sending: list[dict[str, Any]] = []  # taken from the buffer, not yet acknowledged
        self._key = ""  # the Idempotency-Key of the batch being sent
        self._lock = threading.Condition()
        self._closed = False
        self._urgent = False  # a flush is waiting: send without waiting for a full batch
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"loopsense-telemetry-{execution_id[:32]}")
        self._thread.start()
        atexit.register(self._at_exit)

    # ---- recording (never blocks on I/O, never raises) ----------------------------------------
    def event(self, type: str, **fields: Any) -> None:  # noqa: A002 - the wire name
        """Any event: ``type`` plus its fields (``timestamp`` defaults to now)."""
        record = {"type": type, **fields}
        record.setdefault("timestamp", time.time_ns() // 1_000_000)
        with self._lock:
            if self._closed or len(self._buffer) >= self._max:
                self.dropped += 1
                return
            self._buffer.append(record)
            if len(self._buffer) >= self._batch_size:
                self._lock.notify()

    def llm_call(self, model: str, user_message: str, **fields: Any) -> None:
        self.event("llm_call", model=model, user_message=user_message, **fields)

    def tool_call(self, name: str, arguments: Any = None, **fields: Any) -> None:
        if arguments is not None:
            fields["arguments"] = arguments
        self.event("tool_call", name=name, **fields)

    def checkpoint(self, name: str | None = None, /, **state: Any) -> None:
        """A checkpoint for agent.semantic_loop: the keyword arguments become ``metadata``."""
        if name is None:
            self.event("checkpoint", metadata=state)
        else:
            self.event("checkpoint", name=name, metadata=state)

    # ---- flushing ------------------------------------------------------------------------------
    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until everything recorded so far is sent (or dropped); False after ``timeout``
        seconds with some still waiting (the service is slow or down)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self._urgent = True
            try:
                while self._buffer or self._sending:
                    self._lock.notify_all()
                    left = deadline - time.monotonic()
                    if left <= 0 or not self._thread.is_alive():
                        return False
                    self._lock.wait(min(left, 0.05))
            finally:
                self._urgent = False
        return True

    def end(self, duration_ms: int | None = None, timeout: float = 10.0) -> bool:
        """Flush, mark the execution finished (similar_call and time_budget are evaluated
        then), and stop the background thread. False if the flush or the end did not get
        through within ``timeout`` (nothing is raised)."""
        flushed = self.flush(timeout)
        self.close()
        if not flushed:
            return False
        try:
            self._executions.end(self.execution_id, duration_ms=duration_ms)
        except LoopsenseError as error:
            log.debug("loopsense telemetry: end failed with %s", error.code)
            return False
        return True

    def close(self) -> None:
        """Stop the background thread (what is still buffered is not sent)."""
        with self._lock:
            self._closed = True
            self._lock.notify_all()
        atexit.unregister(self._at_exit)

    def _at_exit(self) -> None:
        self.flush(EXIT_FLUSH_S)
        self.close()

    # ---- the background thread -----------------------------------------------------------------
    def _run(self) -> None:
        failures = 0
        while True:
            with self._lock:
                if not self._sending:
                    if len(self._buffer) < self._batch_size and not (self._closed or self._urgent):
                        self._lock.wait(self._interval)  # let a batch fill up
                    if self._closed:
                        return
                    count = min(self._batch_size, len(self._buffer))
                    self._sending = [self._buffer.popleft() for _ in range(count)]
                    self._key = str(uuid.uuid4())
                batch, key = self._sending, self._key
            if not batch:
                continue
            if self._send(batch, key):
                failures = 0
                with self._lock:
                    self._sending = []
                    self._lock.notify_all()
            else:  # the service is slow or down: the same batch, same key, after a wait
                failures += 1
                with self._lock:
                    if self._closed:
                        return
                    self._lock.wait(self._client.backoff(failures))

    def _send(self, batch: list[dict[str, Any]], key: str) -> bool:
        """True when the batch is done with: applied, or refused for good (then dropped)."""
        try:
            self._executions.events(self.execution_id, batch, idempotency_key=key)
        except LoopsenseError as error:
            if error.retryable:
                log.debug("loopsense telemetry: %s; the batch waits", error.code)
                return False
            log.debug("loopsense telemetry: batch refused with %s; dropped", error.code)
            with self._lock:
                self.dropped += len(batch)
        except Exception as error:  # noqa: BLE001 - never let the agent see a telemetry fault
            log.debug("loopsense telemetry: %s; dropped", type(error).__name__)
            with self._lock:
                self.dropped += len(batch)
        return True
