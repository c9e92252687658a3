"""One Logger, Metrics and Tracer for every function. Metadata only: never payload content.

Logs go to stderr so that the CLI's stdout carries nothing but its answer (Lambda sends both
streams to CloudWatch). The tracer never captures responses or error messages, which could
hold caller data.
"""

from __future__ import annotations

import sys

from aws_lambda_powertools import Logger, Metrics, Tracer

SERVICE = "loopsense"

logger = Logger(service=SERVICE, stream=sys.stderr)
metrics = Metrics(service=SERVICE, namespace="Loopsense")
tracer = Tracer(service=SERVICE)
