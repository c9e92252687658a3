"""One Logger, Metrics and Tracer for every function. Metadata only: never payload content.

Logs go to stderr so that the CLI's stdout carries nothing but its answer (Lambda sends both
streams to CloudWatch). The tracer never captures responses or error messages, which could
hold caller data. Metrics are recorded only inside a function's handler, which publishes them
when it returns; the tracer (and the X-Ray SDK, about a quarter of a second to import) is made
by the first handler, so a skill called in-process (the CLI, the package imported) loads neither.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

SERVICE = "loopsense"

logger = Logger(service=SERVICE, stream=sys.stderr)
metrics = Metrics(service=SERVICE, namespace="Loopsense")

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]

# Handlers publishing metrics that are running (Lambda runs one at a time; a skill's thread
# counts too). With none, nobody would read a metric, and Powertools prints the set on stdout
# whenever one reaches a hundred values.
_publishing = [0]


def add_metric(name: str, unit: MetricUnit, value: float) -> None:
    if _publishing[0]:
        metrics.add_metric(name=name, unit=unit, value=value)


@functools.cache
def tracer() -> Tracer:
    return Tracer(service=SERVICE)


def _publishing_metrics(handler: Handler) -> Handler:
    published = metrics.log_metrics(handler)

    @functools.wraps(handler)
    def run(event: dict[str, Any], context: Any) -> dict[str, Any]:
        if is_metrics_disabled():  # `loopsense serve`: no CloudWatch, and nothing flushes the set
            return handler(event, context)
        _publishing[0] += 1
        try:
            return published(event, context)  # type: ignore[no-any-return]
        finally:
            _publishing[0] -= 1

    return run


def lambda_entry(handler: Handler, with_metrics: bool = True) -> Handler:
    """A function's handler with the one logger, tracer and metrics, metadata only: the event is
    not logged, and traces hold neither the response nor an error's message."""
    traced = tracer().capture_lambda_handler(capture_response=False, capture_error=False)(handler)
    logged: Handler = logger.inject_lambda_context(log_event=False)(traced)
    return _publishing_metrics(logged) if with_metrics else logged
