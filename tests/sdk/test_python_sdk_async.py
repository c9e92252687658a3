"""The asyncio client passes the sync client's behaviour tests: the unit suite (retries,
Idempotency-Keys, backoff, deadline, errors, every route's request, on a fake transport) and the
runs suite against a real `loopsense serve`, re-run here with ``Client`` replaced by an
``AsyncClient`` behind a facade that runs each awaited call to its end."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from typing import Any

import pytest
from loopsense_sdk import AsyncClient, HttpRequest, HttpResponse
from loopsense_sdk.plan import Namespace

import tests.sdk.test_python_sdk as http_suite
import tests.sdk.test_python_sdk_runs as runs_suite
import tests.sdk.test_python_sdk_unit as unit_suite
from tests.sdk.test_python_sdk_runs import *  # noqa: F403 - collected again here

# the unit suite's tests of a client's behaviour (not of the canonical form or the package)
BEHAVIOUR = (
    "test_a_call_sends_the_envelope_the_key_and_a_fresh_idempotency_key",
    "test_the_helpers_build_each_skills_input", "test_run_monitor_helper_builds_its_input",
    "test_runs_routes_send_their_method_path_and_body",
    "test_recover_routes_send_their_method_path_and_body",
    "test_a_break_is_retried_with_its_one_idempotency_key",
    "test_recover_errors_land_in_their_families",
    "test_a_runs_write_conflict_is_retried_with_the_same_idempotency_key",
    "test_runs_errors_are_raised_at_once_when_not_retryable",
    "test_your_own_idempotency_key_is_sent_as_given",
    "test_retryable_failures_are_retried_with_the_same_idempotency_key",
    "test_non_retryable_errors_are_raised_at_once",
    "test_backoff_is_full_jitter_below_an_exponential_ceiling",
    "test_retry_after_is_a_floor_on_the_wait",
    "test_a_retry_after_beyond_the_deadline_fails_at_once_without_sleeping",
    "test_the_deadline_bounds_waits_and_request_timeouts",
    "test_max_attempts_one_means_no_retry", "test_a_2xx_that_is_not_json_is_an_error",
    "test_configuration_from_arguments_then_the_environment",
)
globals().update({name: getattr(unit_suite, name) for name in BEHAVIOUR})
# ... and the files' (an upload, an output fetched from its pre-signed URL), over real HTTP
FILES = ("test_upload_then_execute_by_ref_is_the_inline_answer",
         "test_an_output_too_large_to_inline_is_fetched_for_you_or_handed_over")
globals().update({name: getattr(http_suite, name) for name in FILES})


class Facade:
    """An AsyncClient (or one of its namespaces) called like the sync one: each coroutine is
    run to its end on a loop of its own, each async iterator collected."""

    def __init__(self, target: Any) -> None:
        self._target = target

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if isinstance(value, Namespace):
            return Facade(value)
        if inspect.isasyncgenfunction(value):
            return lambda *a, **k: iter(asyncio.run(_collect(value(*a, **k))))
        if inspect.iscoroutinefunction(value):
            return lambda *a, **k: asyncio.run(value(*a, **k))
        return value


async def _collect(items: Any) -> list[Any]:
    return [item async for item in items]


def async_client(*args: Any, transport: Any = None, sleep: Any = None, **options: Any) -> Facade:
    """``Client(...)``'s arguments -> a facade over the AsyncClient made with them."""
    if transport is not None and not inspect.iscoroutinefunction(transport):
        sync_transport = transport

        async def transport(request: HttpRequest) -> HttpResponse:
            return sync_transport(request)  # type: ignore[no-any-return]
    if sleep is not None and not inspect.iscoroutinefunction(sleep):
        sync_sleep = sleep

        async def sleep(seconds: float) -> None:
            sync_sleep(seconds)
    if transport is not None:
        options["transport"] = transport
    if sleep is not None:
        options["sleep"] = sleep
    return Facade(AsyncClient(*args, **options))


@pytest.fixture(autouse=True)
def _async_client_everywhere(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(unit_suite, "Client", async_client)
    monkeypatch.setattr(runs_suite, "Client", async_client)
    monkeypatch.setattr(http_suite, "Client", async_client)
    yield
