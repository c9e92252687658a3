"""The client: ``execute`` with typed errors, safe retries and one Idempotency-Key per call.

Retries (``Client(max_attempts=4, deadline=30.0, backoff_base=0.2, backoff_max=5.0)``):

- Only errors whose ``retryable`` is true are retried: what the server marks retryable (429 rate
  and quota, 409 in progress, 500, 503, 504) and network failures (``APIConnectionError``,
  ``RequestTimeoutError``). A 400/401/403/404 is raised at once.
- The wait before retry *n* (n = 1, 2, ...) is full jitter,
  ``uniform(0, min(backoff_max, backoff_base * 2 ** (n - 1)))``, raised to the answer's
  ``Retry-After`` when it has one (never shorter than the server asked).
- ``deadline`` bounds the whole call, waits included: a wait that would end past it is not
  slept, the last error is raised instead; each request's timeout is
  ``min(timeout, time left)``. ``max_attempts`` bounds the requests (1 = no retries).
- Every ``execute`` sends an ``Idempotency-Key`` (a uuid4, or yours) made once per call and
  sent again on each of its retries: the server answers a repeat with the first response,
  charged once, even when the first answer was lost on the way back.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import random as _random
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast, overload

from loopsense_sdk import __version__
from loopsense_sdk import routes as R
from loopsense_sdk.errors import (
    APIConnectionError,
    LoopsenseError,
    error_from_response,
)
from loopsense_sdk.failure_groups import FailureGroups
from loopsense_sdk.plan import Call, Plan, call, keyed, run, synchronous
from loopsense_sdk.runs import Runs
from loopsense_sdk.settings import Settings
from loopsense_sdk.telemetry import Executions
from loopsense_sdk.transport import (
    HttpRequest,
    HttpResponse,
    KeepAliveTransport,
    Transport,
    urllib_transport,
)
from loopsense_sdk.types import (
    ExecuteResponse,
    FileUpload,
    LoopDetectFileInput,
    LoopDetectInput,
    LoopDetectOutput,
    LoopsFileInput,
    LoopsInput,
    LoopsOutput,
    LoopsThresholds,
    Playbook,
    RunMonitorConfig,
    RunMonitorFileInput,
    RunMonitorInput,
    RunMonitorOutput,
    SemanticLoopEvent,
    SemanticLoopFileInput,
    SemanticLoopInput,
    SemanticLoopOutput,
    SemanticLoopThresholds,
    SkillKey,
    Usage,
)

if TYPE_CHECKING:
    from loopsense_sdk.telemetry import Telemetry

__all__ = ["DEFAULT_BASE_URL", "BaseClient", "Client", "HttpRequest", "HttpResponse",
           "KeepAliveTransport", "Transport", "checkpoint", "urllib_transport"]

DEFAULT_BASE_URL = "http://127.0.0.1:3000"  # `loopsense serve`; a deployment: its ApiUrl
API_KEY_ENV = "LOOPSENSE_API_KEY"
BASE_URL_ENV = "LOOPSENSE_BASE_URL"

log = logging.getLogger("loopsense_sdk")


def checkpoint(name: str | None = None, /, **state: Any) -> SemanticLoopEvent:
    """A checkpoint event for agent.semantic_loop: the keyword arguments become ``metadata``.

    ``checkpoint("plan", goal="book a flight", step=3)`` ->
    ``{"type": "checkpoint", "name": "plan", "metadata": {"goal": "book a flight", "step": 3}}``
    """
    event: SemanticLoopEvent = {"type": "checkpoint", "metadata": state}
    if name is not None:
        event["name"] = name
    return event


# ---- the plans of execute and its helpers (loopsense_sdk.plan): once for both clients ------
def _execute(skill_key: str, input: Any, version: str | None = None,  # noqa: A002
             idempotency_key: str | None = None, fetch_output: bool = True,
             ) -> Plan[ExecuteResponse[Any]]:
    envelope: dict[str, Any] = {"skillKey": skill_key, "input": input}
    if version is not None:
        envelope["version"] = version
    answer = cast(ExecuteResponse[Any],
                  (yield call(R.EXECUTE, envelope, headers=keyed(idempotency_key))))
    output = answer.get("output")
    if fetch_output and _is_file_output(output):  # too large to inline: fetched (docs/files.md)
        answer["output"] = yield Call("GET", output["downloadUrl"], external=True)
    return answer


def _is_file_output(output: Any) -> bool:
    """An ``output`` too large to inline: a fileRef and its pre-signed ``downloadUrl``."""
    return isinstance(output, dict) and "fileRef" in output and "downloadUrl" in output


def _execute_any(skill_key: str, input: Mapping[str, Any], *,  # noqa: A002
                 version: str | None = None, idempotency_key: str | None = None,
                 fetch_output: bool = True) -> Plan[ExecuteResponse[Any]]:
    """``execute`` for any skill key, untyped: a skill newer than this SDK, or your own.
    ``fetch_output=False``: an output too large to inline stays the ``FileOutput`` the server
    answered (``fileRef``, ``downloadUrl`` until ``expiresAt``, ``bytes``), not downloaded."""
    return (yield from _execute(skill_key, input, version, idempotency_key, fetch_output))


def _playbook(name: str) -> Plan[Playbook]:
    """``GET /v1/playbooks/{name}``: what to do about a finding (a finding's or a failure
    group's ``playbook``); ``NotFoundError`` (PLAYBOOK_NOT_FOUND) for another name."""
    return cast(Playbook, (yield call(R.PLAYBOOK, name=name)))


def _new_file() -> Plan[FileUpload]:
    """``POST /v1/files``: a ``fileRef`` and a short-lived pre-signed ``uploadUrl``; PUT the
    events there (a JSON array or JSON Lines, at most 2 MiB) with any HTTP client, then
    ``execute(skill, {"fileRef": ref})`` in place of inline events (docs/files.md)."""
    return cast(FileUpload, (yield call(R.FILES, {})))


def _upload(data: bytes | str | Sequence[Any]) -> Plan[str]:
    """An input's events uploaded for ``execute(skill, {"fileRef": ref, ...})`` in place of
    inline ones: ``POST /v1/files``, then a PUT of ``data`` to its pre-signed URL (bytes or
    text: a JSON array or JSON Lines as they are; a list: its events as one JSON array; at most
    2 MiB). Returns the fileRef, good for one successful execute within a day."""
    made = cast(FileUpload, (yield call(R.FILES, {})))
    body = (data if isinstance(data, bytes) else data.encode("utf-8") if isinstance(data, str)
            else _json_bytes(list(data)))
    yield Call(made["method"], made["uploadUrl"], body, external=True)
    return made["fileRef"]


def _usage() -> Plan[Usage]:
    """``GET /v1/usage``: this period's credits against the plan's, and the charged calls
    of each of the last 30 days (UTC), per skill."""
    return cast(Usage, (yield call(R.USAGE)))


def _export_traces(export: Mapping[str, Any], *, compress: bool = False) -> Plan[dict[str, Any]]:
    """``POST /v1/traces``: an OTLP/HTTP export in OTLP JSON (``{"resourceSpans": [...]}``),
    gzipped with ``compress``, for a pipeline that already holds one; an OpenTelemetry
    exporter needs no SDK at all (docs/failure-groups.md). The answer: OTLP's
    ``{"partialSuccess": {...}}``. A malformed export is a ``ValidationError`` (400)."""
    return (yield from _export(R.TRACES, export, compress))


def _export_logs(export: Mapping[str, Any], *, compress: bool = False) -> Plan[dict[str, Any]]:
    """``POST /v1/logs``: an OTLP/HTTP log export in OTLP JSON (``{"resourceLogs": [...]}``):
    the GenAI events that carry the messages of the spans sent to ``export_traces``, joined
    to them by trace and span id. Answered and refused like ``export_traces``."""
    return (yield from _export(R.LOGS, export, compress))


def _export(route: R.Route, export: Mapping[str, Any], compress: bool) -> Plan[dict[str, Any]]:
    data = _json_bytes(export)
    headers = {"Content-Type": "application/json"}
    if compress:
        data = gzip.compress(data)
        headers["Content-Encoding"] = "gzip"
    return cast(dict[str, Any], (yield call(route, data, headers=headers)))


def _loop_detect(events: Sequence[Mapping[str, Any]], *, window: int | None = None,
                 repeat_threshold: int | None = None,
                 similarity: Literal["EXACT", "ACTION_TARGET"] | None = None,
                 version: str | None = None, idempotency_key: str | None = None,
                 ) -> Plan[ExecuteResponse[LoopDetectOutput]]:
    """agent.loop_detect: the earliest block of actions repeated back to back."""
    payload: dict[str, Any] = {"events": list(events)}
    _put(payload, "window", window)
    _put(payload, "repeatThreshold", repeat_threshold)
    _put(payload, "similarity", similarity)
    return (yield from _execute("agent.loop_detect", payload, version, idempotency_key))


def _semantic_loop(events: Sequence[Mapping[str, Any]], *,
                   thresholds: SemanticLoopThresholds | None = None,
                   ignore_keys: Sequence[str] | None = None,
                   version: str | None = None, idempotency_key: str | None = None,
                   ) -> Plan[ExecuteResponse[SemanticLoopOutput]]:
    """agent.semantic_loop: the same checkpointed state revisited (see ``checkpoint``)."""
    payload: dict[str, Any] = {"events": list(events)}
    _put(payload, "thresholds", thresholds)
    _put(payload, "ignoreKeys", None if ignore_keys is None else list(ignore_keys))
    return (yield from _execute("agent.semantic_loop", payload, version, idempotency_key))


def _loops(events: Sequence[Mapping[str, Any]], *, duration_ms: int | None = None,
           started_at: str | None = None, ended_at: str | None = None,
           thresholds: LoopsThresholds | None = None,
           version: str | None = None, idempotency_key: str | None = None,
           ) -> Plan[ExecuteResponse[LoopsOutput]]:
    """agent.loops: too many steps, the same or a similar LLM call again, over budget."""
    payload: dict[str, Any] = {"events": list(events)}
    _put(payload, "durationMs", duration_ms)
    _put(payload, "startedAt", started_at)
    _put(payload, "endedAt", ended_at)
    _put(payload, "thresholds", thresholds)
    return (yield from _execute("agent.loops", payload, version, idempotency_key))


def _run_monitor(steps: Sequence[Mapping[str, Any]], *, config: RunMonitorConfig | None = None,
                 version: str | None = None, idempotency_key: str | None = None,
                 ) -> Plan[ExecuteResponse[RunMonitorOutput]]:
    """agent.run_monitor: the run monitor's verdict after the last of one agent's steps
    (looping, stuck, drifting; continue, nudge or break) and the timeline."""
    payload: dict[str, Any] = {"steps": list(steps)}
    _put(payload, "config", config)
    return (yield from _execute("agent.run_monitor", payload, version, idempotency_key))


# The retry loop without I/O: yields an HttpRequest to send (and receives its HttpResponse, or
# the exception its transport raised) or a float to sleep (receives None); returns the parsed
# 2xx answer or raises the LoopsenseError. Both clients drive it.
Attempts = Generator[HttpRequest | float, HttpResponse | Exception | None, Any]


class BaseClient:
    """What both clients share: configuration, headers, the backoff and the retry loop."""

    def __init__(self, api_key: str | None, base_url: str | None, *, timeout: float,
                 max_attempts: int, deadline: float, backoff_base: float, backoff_max: float,
                 random: Callable[[], float], clock: Callable[[], float]) -> None:
        key = api_key if api_key is not None else os.environ.get(API_KEY_ENV, "")
        if not key:
            raise ValueError(f"no API key: pass api_key=... or set {API_KEY_ENV}")
        url = base_url or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL
        if not url.startswith(("http://", "https://")):
            raise ValueError("base_url must start with http:// or https://")
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if timeout <= 0 or deadline <= 0:
            raise ValueError("timeout and deadline must be positive")
        if backoff_base < 0 or backoff_max < 0:
            raise ValueError("backoff_base and backoff_max must not be negative")
        self.api_key = key
        self.base_url = url.rstrip("/")
        self.timeout = float(timeout)
        self.max_attempts = int(max_attempts)
        self.deadline = float(deadline)
        self.backoff_base = float(backoff_base)
        self.backoff_max = float(backoff_max)
        self._random = random
        self._clock = clock

    def __repr__(self) -> str:  # never the key
        return (f"{type(self).__name__}(base_url={self.base_url!r}, timeout={self.timeout}, "
                f"max_attempts={self.max_attempts}, deadline={self.deadline})")

    def backoff(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (1 for the first): full jitter in
        ``[0, min(backoff_max, backoff_base * 2 ** (retry - 1))]``, at least ``retry_after``."""
        ceiling = min(self.backoff_max, self.backoff_base * 2.0 ** (retry - 1))
        delay = self._random() * ceiling
        if retry_after is not None:
            delay = max(delay, retry_after)
        return delay

    def _attempts(self, request: Call) -> Attempts:
        body = request.body
        data = body if isinstance(body, bytes) else None if body is None else _json_bytes(body)
        agent = {"User-Agent": f"loopsense-sdk-python/{__version__}"}
        headers = {**agent, **request.headers} if request.external else {
            "Authorization": f"Bearer {self.api_key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
            **agent,
            **request.headers,
        }
        url = request.path if request.external else self.base_url + request.path
        budget = self.deadline if request.deadline is None else request.deadline
        attempts = self.max_attempts if request.max_attempts is None else request.max_attempts
        start = self._clock()
        attempt = 0
        while True:
            attempt += 1
            left = budget - (self._clock() - start)
            outcome = yield HttpRequest(request.method, url, headers, data,
                                        min(self.timeout, max(left, 0.001)))
            if isinstance(outcome, HttpResponse):
                if 200 <= outcome.status < 300:
                    return None if request.external and not outcome.body else \
                        _parse_success(outcome)
                error = error_from_response(outcome.status, outcome.headers, outcome.body)
            elif isinstance(outcome, LoopsenseError):
                error = outcome
            else:  # a custom transport's raw socket error
                error = APIConnectionError(f"the connection failed: {type(outcome).__name__}")
                error.__cause__ = outcome
            error.attempts = attempt
            if not error.retryable or attempt >= attempts:
                raise error
            delay = self.backoff(attempt, error.retry_after)
            if (self._clock() - start) + delay >= budget:
                log.debug("loopsense: %s after %d attempt(s); a wait of %.3f s would pass the "
                          "%.3f s deadline", error.code, attempt, delay, budget)
                raise error
            log.debug("loopsense: %s on attempt %d; retrying in %.3f s", error.code, attempt,
                      delay)
            yield delay


class Client(BaseClient):
    """A loopsense API client. Thread-safe (connections are pooled per client).

    ``api_key`` defaults to ``$LOOPSENSE_API_KEY`` and ``base_url`` to ``$LOOPSENSE_BASE_URL``,
    else ``http://127.0.0.1:3000`` (the local server, ``loopsense serve``); for a deployment
    give its API URL. ``timeout`` is per request, ``deadline`` per call (retries and waits
    included), both in seconds. ``sleep``, ``random`` (a float in [0, 1)), ``clock`` (monotonic
    seconds) and ``transport`` are injectable for tests. The asyncio client: ``AsyncClient``
    (loopsense_sdk.aio), the same methods awaited.
    """

    def __init__(self, api_key: str | None = None, base_url: str | None = None, *,
                 timeout: float = 10.0, max_attempts: int = 4, deadline: float = 30.0,
                 backoff_base: float = 0.2, backoff_max: float = 5.0,
                 transport: Transport | None = None,
                 sleep: Callable[[float], None] = time.sleep,
                 random: Callable[[], float] = _random.random,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(api_key, base_url, timeout=timeout, max_attempts=max_attempts,
                         deadline=deadline, backoff_base=backoff_base, backoff_max=backoff_max,
                         random=random, clock=clock)
        # one pool of kept-alive connections per client, unless a transport is given
        self.transport: Transport = transport or KeepAliveTransport()
        self._sleep = sleep
        self.runs = Runs(self)  # the stateful runs API (loopsense_sdk.runs)
        self.executions = Executions(self)  # telemetry, one batch per call
        self.failure_groups = FailureGroups(self)
        self.settings = Settings(self)  # routing, retention, thresholds, time budget

    # ---- execute ------------------------------------------------------------------------------
    @overload
    def execute(self, skill_key: Literal["agent.loop_detect"],
                input: LoopDetectInput | LoopDetectFileInput, *,
                version: str | None = None, idempotency_key: str | None = None,
                ) -> ExecuteResponse[LoopDetectOutput]: ...

    @overload
    def execute(self, skill_key: Literal["agent.semantic_loop"],
                input: SemanticLoopInput | SemanticLoopFileInput, *,
                version: str | None = None, idempotency_key: str | None = None,
                ) -> ExecuteResponse[SemanticLoopOutput]: ...

    @overload
    def execute(self, skill_key: Literal["agent.loops"],
                input: LoopsInput | LoopsFileInput, *,
                version: str | None = None, idempotency_key: str | None = None,
                ) -> ExecuteResponse[LoopsOutput]: ...

    @overload
    def execute(self, skill_key: Literal["agent.run_monitor"],
                input: RunMonitorInput | RunMonitorFileInput, *,
                version: str | None = None, idempotency_key: str | None = None,
                ) -> ExecuteResponse[RunMonitorOutput]: ...

    def execute(self, skill_key: SkillKey, input: Any, *,  # noqa: A002 - the wire name
                version: str | None = None, idempotency_key: str | None = None,
                ) -> ExecuteResponse[Any]:
        """``POST /v1/execute``: run one skill on ``input``; the answer's ``output`` is the
        skill's result. Raises a ``LoopsenseError`` subclass (see loopsense_sdk.errors).

        Typed for the v1 skills only: a misspelt key or a wrong input is a type error (give an
        input built in a variable its type: ``payload: LoopDetectInput = {...}``). A skill this
        SDK does not know yet: ``execute_any``."""
        return run(_execute(skill_key, input, version, idempotency_key), self._perform)

    execute_any = synchronous(_execute_any)
    playbook = synchronous(_playbook)
    usage = synchronous(_usage)
    new_file = synchronous(_new_file)
    upload = synchronous(_upload)
    export_traces = synchronous(_export_traces)
    export_logs = synchronous(_export_logs)
    # one helper per v1 skill
    loop_detect = synchronous(_loop_detect)
    semantic_loop = synchronous(_semantic_loop)
    loops = synchronous(_loops)
    run_monitor = synchronous(_run_monitor)

    def telemetry(self, execution_id: str, *, batch_size: int = 50,
                  flush_interval: float = 1.0, max_buffered: int = 10_000) -> Telemetry:
        """Streaming telemetry of one execution, sent in the background (failure groups):
        ``checkpoint``, ``llm_call``, ``tool_call``, ``event``, then ``end()``. See
        loopsense_sdk.telemetry."""
        from loopsense_sdk.telemetry import Telemetry

        return Telemetry(self, execution_id, batch_size=batch_size,
                         flush_interval=flush_interval, max_buffered=max_buffered)

    # ---- performing calls ---------------------------------------------------------------------
    def _perform(self, request: Call) -> Any:
        """One call through the retry loop: the parsed 2xx answer, or its LoopsenseError."""
        attempts = self._attempts(request)
        step = next(attempts)
        while True:
            outcome: HttpResponse | Exception | None = None
            if isinstance(step, HttpRequest):
                try:
                    outcome = self.transport(step)
                except (LoopsenseError, OSError) as failure:
                    outcome = failure
            else:
                self._sleep(step)
            try:
                step = attempts.send(outcome)
            except StopIteration as done:
                return done.value

    def _send(self, method: str, path: str, body: Any,
              extra_headers: Mapping[str, str], *, deadline: float | None = None,
              max_attempts: int | None = None) -> Any:
        """One call with a JSON body (None: no body; bytes: sent as they are); ``deadline`` and
        ``max_attempts`` override the client's for this call (the run tracker's budget)."""
        return self._perform(Call(method, path, body, extra_headers, deadline, max_attempts))


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, allow_nan=False,
                      separators=(",", ":")).encode("utf-8")


def _put(payload: dict[str, Any], name: str, value: Any) -> None:
    if value is not None:
        payload[name] = value


def _parse_success(answer: HttpResponse) -> Any:
    try:
        return json.loads(answer.body)
    except ValueError:
        raise LoopsenseError("INVALID_RESPONSE", "a 2xx answer whose body is not JSON",
                             status=answer.status) from None
