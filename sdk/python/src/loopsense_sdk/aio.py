"""The asyncio client: ``AsyncClient``, the sync ``Client``'s methods and namespaces awaited.

    async with AsyncClient() as client:
        answer = await client.execute("agent.loop_detect", {"events": [...]})
        result = await client.runs.steps(run_id, steps, agent_id="ari")

One implementation under both (loopsense_sdk.plan): each method is one plan (request building,
parsing, paging), run through the same retry loop (``BaseClient._attempts``: errors,
Retry-After, backoff, deadline, Idempotency-Key); only the I/O differs: this client awaits its
transport and ``asyncio.sleep``. The default transport runs the sync keep-alive transport
(standard library only) in a thread of its own pool (``max_concurrency`` requests at once), so
the event loop never blocks; any ``async (HttpRequest) -> HttpResponse`` can replace it (an
httpx or aiohttp adapter of your own). The background helpers (``telemetry``) are the sync
client's, which send from their own thread.
"""

from __future__ import annotations

import asyncio
import random as _random
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, overload

from loopsense_sdk.client import (
    BaseClient,
    Client,
    _execute,
    _execute_any,
    _export_logs,
    _export_traces,
    _loop_detect,
    _loops,
    _new_file,
    _playbook,
    _run_monitor,
    _semantic_loop,
    _upload,
    _usage,
)
from loopsense_sdk.errors import LoopsenseError
from loopsense_sdk.failure_groups import AsyncFailureGroups
from loopsense_sdk.plan import Call, asynchronous, run_async
from loopsense_sdk.runs import AsyncRuns
from loopsense_sdk.settings import AsyncSettings
from loopsense_sdk.telemetry import AsyncExecutions
from loopsense_sdk.transport import HttpRequest, HttpResponse, KeepAliveTransport
from loopsense_sdk.types import (
    ExecuteResponse,
    LoopDetectFileInput,
    LoopDetectInput,
    LoopDetectOutput,
    LoopsFileInput,
    LoopsInput,
    LoopsOutput,
    RunMonitorFileInput,
    RunMonitorInput,
    RunMonitorOutput,
    SemanticLoopFileInput,
    SemanticLoopInput,
    SemanticLoopOutput,
    SkillKey,
)

if TYPE_CHECKING:
    from loopsense_sdk.telemetry import Telemetry

__all__ = ["AsyncClient", "AsyncTransport", "ThreadedTransport"]

AsyncTransport = Callable[[HttpRequest], Awaitable[HttpResponse]]


class ThreadedTransport:
    """The sync keep-alive transport, awaited: each request in a thread of a pool of
    ``max_concurrency``."""

    def __init__(self, max_concurrency: int = 16) -> None:
        self._sync = KeepAliveTransport(max_idle=max_concurrency)
        self._pool = ThreadPoolExecutor(max_concurrency, thread_name_prefix="loopsense-http")

    async def __call__(self, request: HttpRequest) -> HttpResponse:
        return await asyncio.get_running_loop().run_in_executor(self._pool, self._sync, request)

    def close(self) -> None:
        self._pool.shutdown(wait=False)
        self._sync.close()


class AsyncClient(BaseClient):
    """The asyncio client; the same options as ``Client`` (``sleep`` is async). Safe to share
    between tasks."""

    def __init__(self, api_key: str | None = None, base_url: str | None = None, *,
                 timeout: float = 10.0, max_attempts: int = 4, deadline: float = 30.0,
                 backoff_base: float = 0.2, backoff_max: float = 5.0,
                 transport: AsyncTransport | None = None,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 random: Callable[[], float] = _random.random,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(api_key, base_url, timeout=timeout, max_attempts=max_attempts,
                         deadline=deadline, backoff_base=backoff_base, backoff_max=backoff_max,
                         random=random, clock=clock)
        self._owned: ThreadedTransport | None = None
        if transport is None:
            transport = self._owned = ThreadedTransport()
        self.transport: AsyncTransport = transport
        self._sleep = sleep
        self.runs = AsyncRuns(self)
        self.executions = AsyncExecutions(self)
        self.failure_groups = AsyncFailureGroups(self)
        self.settings = AsyncSettings(self)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the default transport's connections and threads."""
        if self._owned is not None:
            self._owned.close()

    # ---- execute ------------------------------------------------------------------------------
    @overload
    async def execute(self, skill_key: Literal["agent.loop_detect"],
                      input: LoopDetectInput | LoopDetectFileInput, *,
                      version: str | None = None, idempotency_key: str | None = None,
                      ) -> ExecuteResponse[LoopDetectOutput]: ...

    @overload
    async def execute(self, skill_key: Literal["agent.semantic_loop"],
                      input: SemanticLoopInput | SemanticLoopFileInput, *,
                      version: str | None = None, idempotency_key: str | None = None,
                      ) -> ExecuteResponse[SemanticLoopOutput]: ...

    @overload
    async def execute(self, skill_key: Literal["agent.loops"],
                      input: LoopsInput | LoopsFileInput, *,
                      version: str | None = None, idempotency_key: str | None = None,
                      ) -> ExecuteResponse[LoopsOutput]: ...

    @overload
    async def execute(self, skill_key: Literal["agent.run_monitor"],
                      input: RunMonitorInput | RunMonitorFileInput, *,
                      version: str | None = None, idempotency_key: str | None = None,
                      ) -> ExecuteResponse[RunMonitorOutput]: ...

    async def execute(self, skill_key: SkillKey, input: Any, *,  # noqa: A002 - the wire name
                      version: str | None = None, idempotency_key: str | None = None,
                      ) -> ExecuteResponse[Any]:
        """``Client.execute``, awaited."""
        return await run_async(_execute(skill_key, input, version, idempotency_key),
                               self._perform)

    execute_any = asynchronous(_execute_any)
    playbook = asynchronous(_playbook)
    usage = asynchronous(_usage)
    new_file = asynchronous(_new_file)
    upload = asynchronous(_upload)
    export_traces = asynchronous(_export_traces)
    export_logs = asynchronous(_export_logs)
    loop_detect = asynchronous(_loop_detect)
    semantic_loop = asynchronous(_semantic_loop)
    loops = asynchronous(_loops)
    run_monitor = asynchronous(_run_monitor)

    def _sync_client(self) -> Client:
        """A sync client of the same configuration, for the helpers that work from a thread
        (telemetry's sender, the run tracker)."""
        return Client(self.api_key, self.base_url, timeout=self.timeout,
                      max_attempts=self.max_attempts, deadline=self.deadline,
                      backoff_base=self.backoff_base, backoff_max=self.backoff_max)

    def telemetry(self, execution_id: str, *, batch_size: int = 50,
                  flush_interval: float = 1.0, max_buffered: int = 10_000) -> Telemetry:
        """``Client.telemetry``: recording never awaits (a background thread sends)."""
        return self._sync_client().telemetry(execution_id, batch_size=batch_size,
                                             flush_interval=flush_interval,
                                             max_buffered=max_buffered)

    async def _perform(self, request: Call) -> Any:
        """One call through the shared retry loop, awaiting the transport and the waits."""
        attempts = self._attempts(request)
        step = next(attempts)
        while True:
            outcome: HttpResponse | Exception | None = None
            if isinstance(step, HttpRequest):
                try:
                    outcome = await self.transport(step)
                except (LoopsenseError, OSError) as failure:
                    outcome = failure
            else:
                await self._sleep(step)
            try:
                step = attempts.send(outcome)
            except StopIteration as done:
                return done.value
