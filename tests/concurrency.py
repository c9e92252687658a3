"""Running calls truly at once, for the tests that race them."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any


def all_at_once(calls: list[Callable[[], Any]]) -> list[Any]:
    """Run every call in its own thread, released together; results in the calls' order."""
    barrier = threading.Barrier(len(calls))

    def released(call: Callable[[], Any]) -> Any:
        barrier.wait(timeout=30)
        return call()

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return list(pool.map(released, calls))
