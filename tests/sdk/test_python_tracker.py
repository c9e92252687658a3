"""The Python run tracker (``client.runs.track``) against a real `loopsense serve`: a looping
agent is nudged, then stopped (policy stop) or left running (observe, nudge); a polling agent is
never nudged; with the server stopped and then slowed past the tracker's timeout (a loopback
proxy), every step returns within the timeout plus a margin, continue and degraded, at most
``max_pending`` steps are kept (the oldest dropped and counted), and once the server is back
everything kept arrives, nothing twice (the server's step count)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from loopsense_sdk import AgentLoopDetected, Client, StepAnswer, Tracker

from tests.e2e.server import DEV_KEY, Server
from tests.sdk.fault_proxy import FaultProxy

TIMEOUT = 0.3  # the tracker's own, per step
MARGIN = 0.4  # what a step may take beyond it (scheduling on a loaded 2-core machine); every
# delay below that the bound must catch is longer than TIMEOUT + MARGIN


def run_id() -> str:
    return "trk:" + uuid.uuid4().hex[:12]


def looping(tracker: Tracker, steps: int) -> list[StepAnswer]:
    """The same call with the same arguments and result, ``steps`` times."""
    return [tracker.tool_call("export_status", {"job": 42}, result={"state": "pending"})
            for _ in range(steps)]


@pytest.fixture
def proxy(server: Server) -> Iterator[FaultProxy]:
    fault = FaultProxy(server.url)
    yield fault
    fault.down()


def test_a_looping_agent_is_nudged_then_stopped(server: Server) -> None:
    tracker = Client(DEV_KEY, server.url).runs.track(run_id(), agent_id="ari", policy="stop")
    answers: list[StepAnswer] = []
    with pytest.raises(AgentLoopDetected) as stopped:
        for _ in range(20):
            answers.append(looping(tracker, 1)[0])
    actions = [a.action for a in answers]
    first = actions.index("nudge")
    assert actions[:first] == ["continue"] * first and not any(a.degraded for a in answers)
    assert answers[first].inject and "export_status" in answers[first].inject
    assert stopped.value.answer.action == "break" and "export_status" in stopped.value.reason
    assert stopped.value.answer.findings[0].rule == "repeated_call"
    assert len(answers) < 10  # stopped soon after the nudge


def test_observe_never_interferes_and_nudge_never_raises(server: Server) -> None:
    client = Client(DEV_KEY, server.url)
    observed = looping(client.runs.track(run_id(), agent_id="ari", policy="observe"), 10)
    assert {a.action for a in observed} >= {"nudge", "break"}
    assert all(a.inject is None for a in observed)
    nudged = looping(client.runs.track(run_id(), agent_id="ari", policy="nudge"), 10)
    assert "break" in {a.action for a in nudged}
    assert all(a.inject for a in nudged if a.action != "continue")


def test_a_polling_agent_whose_job_changes_is_never_nudged(server: Server) -> None:
    tracker = Client(DEV_KEY, server.url).runs.track(run_id(), agent_id="poll", policy="stop")
    answers = [tracker.tool_call("job_status", {"job": 7}, result={"done_pct": pct})
               for pct in range(0, 100, 8)]
    answers.append(tracker.tool_call("job_result", {"job": 7}, result={"rows": 12}))
    answers.append(tracker.message("The export finished: 12 rows."))
    assert [a.action for a in answers] == ["continue"] * len(answers)
    assert all(a.inject is None and not a.degraded for a in answers)


def _timed(tracker: Tracker, steps: int) -> tuple[list[StepAnswer], float]:
    slowest, answers = 0.0, []
    for answer_of in range(steps):
        start = time.monotonic()
        answers.append(tracker.tool_call("search", {"q": f"hotel {answer_of}"}, result=answer_of))
        slowest = max(slowest, time.monotonic() - start)
    return answers, slowest


def _sequence(server: Server, run: str) -> int:
    signal = Client(DEV_KEY, server.url).runs.signal(run, agent_id="ari")
    assert signal.sequence is not None
    return signal.sequence


def test_down_then_slow_then_back_delivers_everything_once(server: Server,
                                                           proxy: FaultProxy) -> None:
    run = run_id()
    client = Client(DEV_KEY, proxy.url, backoff_base=0.05, backoff_max=0.2)
    tracker = client.runs.track(run, agent_id="ari", policy="stop", timeout=TIMEOUT)
    answers, slowest = _timed(tracker, 3)  # up
    assert [a.degraded for a in answers] == [False] * 3

    proxy.down()
    answers, slowest = _timed(tracker, 20)
    assert all(a.degraded and a.action == "continue" for a in answers)
    assert slowest < TIMEOUT + MARGIN, slowest
    assert tracker.pending == 20

    proxy.slow(TIMEOUT * 3)  # answers come after the tracker gave up: the server applied them
    answers, slowest = _timed(tracker, 10)
    assert all(a.degraded for a in answers) and slowest < TIMEOUT + MARGIN, slowest

    proxy.up()
    time.sleep(0.25)  # past the backoff
    answer = tracker.tool_call("search", {"q": "last"}, result="last")
    assert not answer.degraded
    assert (tracker.pending, tracker.dropped, tracker.refused) == (0, 0, 0)
    assert tracker.sent == 3 + 20 + 10 + 1
    assert _sequence(server, run) == 34  # every step once: a lost answer's replay counted once


def test_concurrent_steps_each_return_within_the_timeout(server: Server,
                                                        proxy: FaultProxy) -> None:
    """Parallel tools (LangGraph, Claude's hooks, the MCP gateway) step at once: while one step
    waits on a slowed server, the others do not queue behind it past their own timeout; every
    step arrives once the server is back."""
    run = run_id()
    client = Client(DEV_KEY, proxy.url, backoff_base=0.05, backoff_max=0.2)
    tracker = client.runs.track(run, agent_id="ari", timeout=TIMEOUT)
    proxy.slow(TIMEOUT * 0.8)  # each answer in time, but four in a row would not be

    def one(n: int) -> float:
        start = time.monotonic()
        tracker.tool_call("read_file", {"path": f"f{n}"}, result=n)
        return time.monotonic() - start

    with ThreadPoolExecutor(4) as pool:
        took = list(pool.map(one, range(4)))
    assert max(took) < TIMEOUT + MARGIN, took
    proxy.up()
    assert tracker.flush(timeout=5) is True
    assert (tracker.pending, tracker.dropped, tracker.refused) == (0, 0, 0)
    assert _sequence(server, run) == 4


def test_at_most_max_pending_steps_are_kept_the_oldest_dropped(server: Server,
                                                              proxy: FaultProxy) -> None:
    run = run_id()
    client = Client(DEV_KEY, proxy.url, backoff_base=0.05, backoff_max=0.1)
    tracker = client.runs.track(run, agent_id="ari", timeout=TIMEOUT, max_pending=5)
    proxy.down()
    _timed(tracker, 8)
    assert (tracker.pending, tracker.dropped) == (5, 3)
    proxy.up()
    assert tracker.flush(timeout=5) is True
    assert (tracker.pending, tracker.sent) == (0, 5)
    assert _sequence(server, run) == 5
    events = Client(DEV_KEY, server.url).runs.signal(run, agent_id="ari")
    assert events.sequence == 5


def test_flush_tries_once_when_the_backoff_outlasts_it(server: Server,
                                                       proxy: FaultProxy) -> None:
    """The gateway's exit flush (2 s) after a failure whose backoff is longer: one attempt at
    once rather than none, so what is kept arrives when the service is back."""
    run = run_id()
    client = Client(DEV_KEY, proxy.url, backoff_base=30, backoff_max=30)
    tracker = client.runs.track(run, agent_id="ari", timeout=TIMEOUT)
    proxy.down()
    assert tracker.tool_call("read_file", {"path": "a"}, result=1).degraded
    proxy.up()
    assert tracker.flush(timeout=2) is True
    assert _sequence(server, run) == 1
    proxy.down()
    tracker.tool_call("read_file", {"path": "b"}, result=2)
    assert tracker.flush(timeout=1) is False  # down still: kept, and flush still ends in time


def test_signal_and_circuit_break_are_bounded_too(server: Server, proxy: FaultProxy) -> None:
    run = run_id()
    tracker = Client(DEV_KEY, proxy.url).runs.track(run, agent_id="ari", timeout=TIMEOUT)
    looping(tracker, 2)
    signal = tracker.signal()
    assert signal is not None and signal.sequence == 2
    proxy.down()
    start = time.monotonic()
    assert tracker.signal() is None and tracker.circuit_break("loop") is None
    assert time.monotonic() - start < 2 * (TIMEOUT + MARGIN)
    proxy.up()
    time.sleep(0.3)
    broken = tracker.circuit_break("repeated_tool_call")
    assert broken is not None and broken.agents_reset == ("ari",)


def test_the_async_tracker_nudges_then_stops_without_blocking_the_loop(
        server: Server, proxy: FaultProxy) -> None:
    """``AsyncClient.runs.track``: the same verdicts awaited; while a step waits on a slowed
    server the event loop goes on (a ticker task keeps ticking), and the step returns within
    the timeout plus the margin."""
    import asyncio

    from loopsense_sdk import AsyncClient

    async def scenario() -> tuple[list[str], float, int]:
        async with AsyncClient(DEV_KEY, server.url) as client:
            tracker = client.runs.track(run_id(), agent_id="ari", policy="stop")
            actions: list[str] = []
            with pytest.raises(AgentLoopDetected):
                for _ in range(20):
                    answer = await tracker.tool_call("export_status", {"job": 42},
                                                     result={"state": "pending"})
                    actions.append(answer.action)
        slow = AsyncClient(DEV_KEY, proxy.url).runs.track(run_id(), agent_id="ari",
                                                         timeout=TIMEOUT)
        proxy.slow(TIMEOUT * 3)
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        task = asyncio.create_task(ticker())
        start = time.monotonic()
        degraded = await slow.tool_call("search", {"q": "x"}, result=1)
        took = time.monotonic() - start
        task.cancel()
        assert degraded.degraded and degraded.action == "continue"
        return actions, took, ticks

    actions, took, ticks = asyncio.run(scenario())
    assert "nudge" in actions and actions[0] == "continue"
    assert took < TIMEOUT + MARGIN and ticks >= 10, (took, ticks)
