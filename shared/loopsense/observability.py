"""One Logger, Metrics and Tracer for every function. Metadata only: never payload content.

Logs go to stderr so that the CLI's stdout carries nothing but its answer (Lambda sends both
streams to CloudWatch). The tracer never captures responses or error messages, which could
hold caller data.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer

SERVICE = "loopsense"

logger = Logger(service=SERVICE, stream=sys.stderr)
metrics = Metrics(service=SERVICE, namespace="Loopsense")
tracer = Tracer(service=SERVICE)

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


def lambda_entry(handler: Handler, with_metrics: bool = True) -> Handler:
    """A function's handler with the one logger, tracer and metrics, metadata only: the event is
    not logged, and traces hold neither the response nor an error's message."""
    traced = tracer.capture_lambda_handler(capture_response=False, capture_error=False)(handler)
    logged: Handler = logger.inject_lambda_context(log_event=False)(traced)
    return metrics.log_metrics(logged) if with_metrics else logged  # type: ignore[no-any-return]
