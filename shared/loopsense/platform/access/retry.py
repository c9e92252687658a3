"""Conflict retry: the one loop of every conditional write that may lose to a concurrent one.

A runs API agent, a run's working memory, a telemetry execution's next seq, a tenant's
thresholds map: each change reads the item, plans the write on condition that the item is still
as read, and writes. A write that loses (its condition failed because another request changed
the item first) is read and planned again, up to ATTEMPTS times in all; then the caller is told
to retry (RUN_WRITE_CONFLICT, EXECUTION_BATCH_OUT_OF_ORDER: retryable, nothing applied).

ATTEMPTS is 32, the budget of the route that races the most writers (the batches of one
telemetry execution sent at once). A lost race costs one read and one write, so 32 of them stay
far below a function's timeout; the rare request that loses them all answers retryable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from loopsense.errors import LoopsenseError

ATTEMPTS = 32

T = TypeVar("T")


def until_written(attempt: Callable[[], T | None], give_up: Callable[[], LoopsenseError]) -> T:
    """``attempt()`` (read, plan, conditional write) until it returns its result; None means it
    lost to a concurrent write. After ATTEMPTS losses: ``give_up()`` is raised."""
    for _ in range(ATTEMPTS):
        result = attempt()
        if result is not None:
            return result
    raise give_up()
