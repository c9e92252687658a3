"""Each API method is written once, as a *plan*: a generator that builds its requests (yields a
``Call``), receives each parsed answer and returns the method's result. ``synchronous`` and
``asynchronous`` turn a plan into a method of the sync client's namespaces (``Client``) or the
asyncio client's (``AsyncClient``); the client runs each ``Call`` through its retry loop
(loopsense_sdk.client), itself one sans-I/O generator under both. So request building, parsing,
paging, retries and errors exist once.
"""

from __future__ import annotations

import urllib.parse
import uuid
from collections.abc import Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, Concatenate, ParamSpec, TypeVar, cast

from loopsense_sdk.routes import Route

__all__ = ["Call", "Namespace", "Plan", "asynchronous", "call", "keyed", "run", "run_async",
           "synchronous"]

P = ParamSpec("P")
T = TypeVar("T")


@dataclass(frozen=True)
class Call:
    """One call of a route: JSON ``body`` (None: none; bytes: sent as they are)."""

    method: str
    path: str
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    deadline: float | None = None  # overrides the client's for this call
    max_attempts: int | None = None
    # ``path`` is a whole URL outside the API (a file's pre-signed URL): its signature is its
    # credential, so no API key goes with it; an empty 2xx answer is None
    external: bool = False


# yields Calls, receives each one's parsed 2xx answer, returns the method's result
Plan = Generator[Call, Any, T]


def call(route: Route, body: Any = None, *, params: Mapping[str, str] | None = None,
         query: Mapping[str, str] | None = None, headers: Mapping[str, str] | None = None,
         deadline: float | None = None, max_attempts: int | None = None,
         **path_params: str) -> Call:
    """The call of ``route`` with its ``{name}`` parameters (``params`` and/or keywords)."""
    path = route.path(**{**(params or {}), **path_params})
    if query:
        path += "?" + urllib.parse.urlencode(query)
    return Call(route.method, path, body, dict(headers or {}), deadline, max_attempts)


def keyed(idempotency_key: str | None) -> dict[str, str]:
    """The Idempotency-Key header: yours, or a uuid4 made once per call (sent again on each
    of its retries)."""
    return {"Idempotency-Key": idempotency_key if idempotency_key is not None
            else str(uuid.uuid4())}


class Namespace:
    """A group of a client's methods (``client.runs``, ...): performs its calls through the
    client's."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._perform = client._perform


def run(steps: Plan[T], perform: Callable[[Call], Any]) -> T:
    """Run a plan, performing each of its calls with ``perform`` (sync)."""
    try:
        request = next(steps)
        while True:
            request = steps.send(perform(request))
    except StopIteration as done:
        return cast(T, done.value)


async def run_async(steps: Plan[T], perform: Callable[[Call], Awaitable[Any]]) -> T:
    """Run a plan, awaiting ``perform`` for each of its calls."""
    try:
        request = next(steps)
        while True:
            request = steps.send(await perform(request))
    except StopIteration as done:
        return cast(T, done.value)


def synchronous(plan: Callable[P, Plan[T]]) -> Callable[Concatenate[Any, P], T]:
    """A sync method (of a ``Client`` or a ``Namespace`` of one) from a plan."""

    def method(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return run(plan(*args, **kwargs), self._perform)

    method.__doc__, method.__name__ = plan.__doc__, plan.__name__.lstrip("_")
    return method


def asynchronous(plan: Callable[P, Plan[T]]) -> Callable[Concatenate[Any, P], Awaitable[T]]:
    """An async method (of an ``AsyncClient`` or a ``Namespace`` of one) from a plan."""

    async def method(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await run_async(plan(*args, **kwargs), self._perform)

    method.__doc__, method.__name__ = plan.__doc__, plan.__name__.lstrip("_")
    return method
