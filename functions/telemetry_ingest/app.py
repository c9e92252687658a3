"""POST /v1/executions/{executionId}/events and /end: streaming telemetry ingestion
(loopsense.platform.telemetry.ingest). Wiring only."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from loopsense.observability import lambda_entry
from loopsense.platform.telemetry.routes import INGEST, handle
from loopsense.platform.wiring import ingestion

ingestion()  # cold start: a missing LOOPSENSE_*_TABLE fails here, named


@lambda_entry
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle(event, ingestion(), INGEST, "telemetry")
