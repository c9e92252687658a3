"""The run tracker (spec/integrations.md): ``client.runs.track(run_id, agent_id=..., policy=...)``
turns an agent's steps into runs-API steps and answers each with the monitor's verdict.

    tracker = client.runs.track("run-42", agent_id="ari", policy="stop")
    answer = tracker.tool_call("export_status", {"job": 42}, result={"state": "pending"})
    if answer.inject:                  # the nudge to put in front of the model
        messages.append(answer.inject)

Policies: ``observe`` records and returns the signals, ``inject`` stays None; ``nudge`` sets
``inject`` to the recommendation's nudge (on ``nudge`` and on ``break``); ``stop`` nudges first,
then raises ``AgentLoopDetected`` when the recommendation is ``break`` (a break that comes before
any nudge of this tracker is answered as a nudge once).

Never blocking, never raising into the agent (``AgentLoopDetected`` aside): each step's request
gets ``timeout`` seconds (default 2) in all, no retries inside it. When the service is slow,
failing or down the step is answered ``continue`` with ``degraded=True`` and kept to send later:
after a failure the tracker waits the client's backoff (growing, capped at ``backoff_max``)
before trying again, queuing steps without any request meanwhile, so a step costs the agent
nothing while the service is known to be down. Kept steps are sent first, in order, once it is
back: by the next step, ``flush()``, or a bounded flush at interpreter exit. At most
``max_pending`` steps are kept (default 10,000); beyond it the oldest are dropped and counted in
``dropped``. A batch whose answer was lost is sent again with its own Idempotency-Key, so the
server applies it once; dropping such a batch drops it whole (it is the oldest). A batch the
service refuses for good (a 400, 401, 403) is dropped and counted in ``refused``. Nothing of the
steps is ever logged.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import threading
import urllib.parse
import uuid
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from loopsense_sdk import routes as R
from loopsense_sdk.errors import LoopsenseError
from loopsense_sdk.runs import CONTINUE, CircuitBreak, Finding, Recommendation, Signal, StepsResult

if TYPE_CHECKING:
    from loopsense_sdk.client import Client

__all__ = ["AgentLoopDetected", "AsyncTracker", "Policy", "StepAnswer", "Tracker"]

log = logging.getLogger("loopsense_sdk")

Policy = Literal["observe", "nudge", "stop"]
POLICIES = ("observe", "nudge", "stop")
MAX_BATCH = 500  # the server's limit per batch
EXIT_FLUSH_S = 2.0


@dataclass(frozen=True)
class StepAnswer:
    """The verdict after one step: the server's recommendation, and what the policy says to
    surface (``inject``: the nudge, or None). ``degraded``: the service did not answer in time
    (the recommendation is then ``continue`` and the step is kept to send later)."""

    recommendation: Recommendation
    inject: str | None
    findings: tuple[Finding, ...]
    degraded: bool
    result: StepsResult | None  # the whole answer of the batch, when there was one

    @property
    def action(self) -> Literal["continue", "nudge", "break"]:
        return self.recommendation.action


DEGRADED = StepAnswer(CONTINUE, None, (), True, None)


class AgentLoopDetected(RuntimeError):  # noqa: N818 - the spec's name
    """Raised by a ``stop`` tracker when the monitor recommends ``break`` after a nudge: the
    agent is looping and was told so. ``answer`` holds the findings; the message is the
    nudge (it names the tool and the count, never arguments or results)."""

    def __init__(self, answer: StepAnswer) -> None:
        self.answer = answer
        self.reason = answer.recommendation.nudge or "loopsense: the agent is looping"
        super().__init__(self.reason)


@dataclass
class _Batch:
    steps: list[dict[str, Any]]
    key: str  # sent again with exactly these steps until the service answers


class Tracker:
    """One agent's steps in one run; made by ``client.runs.track``. Thread-safe (steps are
    sent in the order they were recorded)."""

    def __init__(self, client: Client, run_id: str, *, agent_id: str,
                 policy: Policy = "nudge", timeout: float = 2.0,
                 max_pending: int = 10_000) -> None:
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)}")
        if timeout <= 0 or max_pending < 1:
            raise ValueError("timeout and max_pending must be positive")
        self.run_id, self.agent_id, self.policy = run_id, agent_id, policy
        self.timeout = float(timeout)
        self.max_pending = int(max_pending)
        self.dropped = 0  # steps lost: over max_pending while the service was away
        self.refused = 0  # steps of batches the service refused for good
        self.sent = 0  # steps the service acknowledged
        self._client = client
        self._path = R.RUN_STEPS.path(runId=run_id)
        self._lock = threading.RLock()
        self._inflight: _Batch | None = None  # sent, answer lost: first to go again
        self._unsent: deque[dict[str, Any]] = deque()
        # Steps not yet taken under the lock: a step appends here (atomic) and waits for the
        # lock only as long as its own timeout, so concurrent steps never queue past it.
        self._inbox: deque[dict[str, Any]] = deque()
        self._failures = 0
        self._retry_at = 0.0  # the client's clock: no request before it
        self._nudged = False  # this tracker surfaced a nudge since the last break/reset
        atexit.register(self._at_exit)

    # ---- steps ---------------------------------------------------------------------------------
    def tool_call(self, action: str, args: Any = None, *, result: Any = None,
                  outcome: Literal["positive", "negative", "neutral", "error"] | None = None,
                  ) -> StepAnswer:
        """A tool call with its arguments and result (only their canonical hashes are used);
        ``outcome`` ``negative``/``error`` counts towards the error streak."""
        step: dict[str, Any] = {"kind": "tool_call", "action": action}
        if args is not None:
            step["args"] = args
        if result is not None:
            step["result"] = result
        if outcome is not None:
            step["outcome"] = outcome
        return self.step(step)

    def llm_call(self, model: str, text: str) -> StepAnswer:
        return self.step({"kind": "llm_call", "model": model, "text": text})

    def message(self, text: str) -> StepAnswer:
        """The agent talking (no tool call): counts towards the monologue rule."""
        return self.step({"kind": "message", "text": text})

    def user_message(self, text: str) -> StepAnswer:
        """The user's turn: a reset point (unless it repeats the previous one)."""
        return self.step({"kind": "user_message", "text": text})

    def text_chunk(self, text: str) -> StepAnswer:
        """A chunk of a streamed message (the content_loop rule)."""
        return self.step({"kind": "text_chunk", "text": text})

    def step(self, step: Mapping[str, Any]) -> StepAnswer:
        """Any runs-API step (``kind`` and its fields); the verdict after it, per the policy."""
        end = self._client._clock() + self.timeout
        self._inbox.append({**step, "agentId": self.agent_id})
        if not self._lock.acquire(timeout=self.timeout):
            return DEGRADED  # another step is delivering: this one goes with the next delivery
        try:
            result = self._deliver(end - self._client._clock())
            if result is None or self._unsent or self._inflight:
                return DEGRADED  # this step's own verdict did not come back
            answer = self._answer(result)
        finally:
            self._lock.release()
        if answer.action == "break" and self.policy == "stop":
            raise AgentLoopDetected(answer)
        return answer

    # ---- the run, directly (bounded like a step; None when the service did not answer) ------
    def signal(self) -> Signal | None:
        """The agent's verdict now (kept steps are sent first); None when degraded."""
        clock = self._client._clock
        end = clock() + self.timeout  # one budget for the kept steps and the request
        if not self._lock.acquire(timeout=self.timeout):
            return None
        try:
            if self._deliver(end - clock()) is None and (self._unsent or self._inflight):
                return None
            path = R.RUN_SIGNAL.path(runId=self.run_id) + "?" + urllib.parse.urlencode(
                {"agentId": self.agent_id})
            left = end - clock()
            if left <= 0:
                return None
            try:
                return Signal.of(self._client._send("GET", path, None, {}, deadline=left,
                                                    max_attempts=1))
            except LoopsenseError as error:
                log.debug("loopsense tracker: signal failed with %s", error.code)
                return None
        finally:
            self._lock.release()

    def circuit_break(self, reason: str) -> CircuitBreak | None:
        """Snapshot and clear working memory, reset this agent's monitor (kept steps are sent
        first); None when degraded. One Idempotency-Key for its attempts."""
        clock = self._client._clock
        end = clock() + self.timeout  # one budget for the kept steps and the request
        if not self._lock.acquire(timeout=self.timeout):
            return None
        try:
            self._deliver(end - clock())
            body = {"reason": reason, "agentId": self.agent_id}
            headers = {"Idempotency-Key": str(uuid.uuid4())}
            left = end - clock()
            if left <= 0:
                return None
            try:
                broken = CircuitBreak.of(self._client._send(
                    "POST", R.RUN_CIRCUIT_BREAK.path(runId=self.run_id), body, headers,
                    deadline=left))
            except LoopsenseError as error:
                log.debug("loopsense tracker: circuit break failed with %s", error.code)
                return None
            self._nudged = False
            return broken
        finally:
            self._lock.release()

    @property
    def pending(self) -> int:
        """Steps kept to send (the service did not take them yet)."""
        with self._lock:
            self._take_inbox()
            return self._kept()

    def flush(self, timeout: float = 10.0) -> bool:
        """Send what is kept, for at most ``timeout`` seconds, waiting out the backoff when it
        ends in time, else trying once at once (at exit, a backoff longer than the flush would
        otherwise lose what is kept even when the service is back); False if some is still kept
        (never raises)."""
        clock = self._client._clock
        end = clock() + timeout
        forced = False
        with self._lock:
            self._take_inbox()
            while self._unsent or self._inflight:
                left = end - clock()
                if left <= 0:
                    return False
                wait = self._retry_at - clock()
                if wait > 0:
                    if wait < left:
                        self._client._sleep(wait)
                        continue
                    if forced:
                        return False
                    forced, self._retry_at = True, clock()  # one attempt, not a retry loop
                self._deliver(min(self.timeout, left))
        return True

    def close(self) -> None:
        """Stop flushing at exit (what is kept is not sent)."""
        atexit.unregister(self._at_exit)

    def _at_exit(self) -> None:
        self.flush(EXIT_FLUSH_S)

    # ---- internals -----------------------------------------------------------------------------
    def _kept(self) -> int:
        return len(self._unsent) + (len(self._inflight.steps) if self._inflight else 0)

    def _take_inbox(self) -> None:
        """Under the lock: the steps that came meanwhile join the kept ones, in order."""
        while self._inbox:
            self._keep(self._inbox.popleft())

    def _keep(self, record: dict[str, Any]) -> None:
        self._unsent.append(record)
        while self._kept() > self.max_pending:  # the oldest go first
            if self._inflight is not None:
                self.dropped += len(self._inflight.steps)
                self._inflight = None
            else:
                self._unsent.popleft()
                self.dropped += 1

    def _deliver(self, budget: float) -> StepsResult | None:
        """Send the kept batches in order within ``budget`` seconds; the last answer, or None
        if anything is left (the service is slow, failing or down, or waiting out a backoff)."""
        self._take_inbox()
        clock = self._client._clock
        if clock() < self._retry_at:
            return None
        end = clock() + budget
        result: StepsResult | None = None
        while self._inflight or self._unsent:
            if self._inflight is None:
                count = min(MAX_BATCH, len(self._unsent))
                self._inflight = _Batch([self._unsent.popleft() for _ in range(count)],
                                        str(uuid.uuid4()))
            left = end - clock()
            if left <= 0:
                return None
            batch = self._inflight
            try:
                raw = self._client._send("POST", self._path, {"steps": batch.steps},
                                         {"Idempotency-Key": batch.key}, deadline=left,
                                         max_attempts=1)
                result = StepsResult.of(raw)
            except LoopsenseError as error:
                if error.retryable:
                    self._failures += 1
                    self._retry_at = clock() + self._client.backoff(self._failures,
                                                                    error.retry_after)
                    log.debug("loopsense tracker: %s; %d step(s) kept", error.code, self.pending)
                    return None
                log.debug("loopsense tracker: a batch refused with %s; dropped", error.code)
                self.refused += len(batch.steps)
            except Exception as error:  # noqa: BLE001 - never let the agent see a tracker fault
                log.debug("loopsense tracker: %s; a batch dropped", type(error).__name__)
                self.refused += len(batch.steps)
            else:
                self.sent += len(batch.steps)
            self._inflight = None
            self._failures = 0
        return result

    def _answer(self, result: StepsResult) -> StepAnswer:
        recommendation = result.recommendation
        if recommendation.action == "break" and self.policy == "stop" and not self._nudged:
            recommendation = Recommendation("nudge", recommendation.nudge)  # nudge first
        inject = None
        if self.policy != "observe" and recommendation.action != "continue":
            inject = recommendation.nudge
            self._nudged = True
        return StepAnswer(recommendation, inject, result.findings, False, result)


class AsyncTracker:
    """The run tracker for asyncio agents (``AsyncClient.runs.track``): ``Tracker``'s methods,
    awaited. Each runs the sync tracker in a worker thread, bounded by the same ``timeout``, so
    the event loop never waits on the network; the policy, the bound and the delivery are the
    sync tracker's (``tracker.sync``)."""

    def __init__(self, tracker: Tracker) -> None:
        self.sync = tracker

    @property
    def pending(self) -> int:
        return self.sync.pending

    @property
    def dropped(self) -> int:
        return self.sync.dropped

    async def tool_call(self, action: str, args: Any = None, *, result: Any = None,
                        outcome: Literal["positive", "negative", "neutral", "error"] | None = None,
                        ) -> StepAnswer:
        return await asyncio.to_thread(self.sync.tool_call, action, args, result=result,
                                       outcome=outcome)

    async def llm_call(self, model: str, text: str) -> StepAnswer:
        return await asyncio.to_thread(self.sync.llm_call, model, text)

    async def message(self, text: str) -> StepAnswer:
        return await asyncio.to_thread(self.sync.message, text)

    async def user_message(self, text: str) -> StepAnswer:
        return await asyncio.to_thread(self.sync.user_message, text)

    async def text_chunk(self, text: str) -> StepAnswer:
        return await asyncio.to_thread(self.sync.text_chunk, text)

    async def step(self, step: Mapping[str, Any]) -> StepAnswer:
        return await asyncio.to_thread(self.sync.step, step)

    async def signal(self) -> Signal | None:
        return await asyncio.to_thread(self.sync.signal)

    async def circuit_break(self, reason: str) -> CircuitBreak | None:
        return await asyncio.to_thread(self.sync.circuit_break, reason)

    async def flush(self, timeout: float = 10.0) -> bool:
        return await asyncio.to_thread(self.sync.flush, timeout)
