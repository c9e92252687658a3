"""Conflict retry: the one loop of every conditional write that may lose to a concurrent one.

A runs API agent, a run's working memory, a telemetry execution's next seq, a tenant's
thresholds map: each change reads the item, plans the write on condition that the item is still
as read, and writes. A write that loses (its condition failed because another request changed
the item first, or it met another transaction in flight on one of its items: DynamoDB's
TransactionConflict) is read and planned again, up to ATTEMPTS times in all; then the caller is
told to retry (RUN_WRITE_CONFLICT, EXECUTION_BATCH_OUT_OF_ORDER: retryable, nothing applied).
The writes that read nothing first (a rate counter, a charge: their conditions are the store's
own) are sent again unchanged (``until_settled``).

ATTEMPTS is 32, the budget of the route that races the most writers (the batches of one
telemetry execution sent at once). Each loss waits before the next attempt, a random pause up to
a bound that doubles from BACKOFF_S to BACKOFF_CAP_S ("full jitter", as AWS advises for
TransactionConflict: the transaction met is still in flight, and an attempt at once would meet
it again); the 31 pauses add up to 0.3 s on average (0.6 s at most), far below a function's
timeout, and the rare request that loses them all answers retryable.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

from loopsense.errors import LoopsenseError
from loopsense.store.dynamo import Conflicted

ATTEMPTS = 32
BACKOFF_S = 0.001
BACKOFF_CAP_S = 0.02

T = TypeVar("T")


def until_written(attempt: Callable[[], T | None], give_up: Callable[[], LoopsenseError]) -> T:
    """``attempt()`` (read, plan, conditional write) until it returns its result; None means it
    lost to a concurrent write. After ATTEMPTS losses: ``give_up()`` is raised."""
    for lost in range(ATTEMPTS):
        result = attempt()
        if result is not None:
            return result
        if lost + 1 < ATTEMPTS:
            bound = min(BACKOFF_CAP_S, BACKOFF_S * 2 ** lost)
            time.sleep(random.uniform(0, bound))  # noqa: S311 - a pause, not a secret
    raise give_up()


def until_settled(write: Callable[[], T], give_up: Callable[[], LoopsenseError]) -> T:
    """``write()`` again, unchanged, while it meets a transaction in flight (Conflicted), with
    ``until_written``'s budget and pauses; its own answer otherwise (None included)."""

    def attempt() -> tuple[T] | None:
        try:
            return (write(),)
        except Conflicted:
            return None

    return until_written(attempt, give_up)[0]
