"""POST /v1/traces: OTLP/HTTP trace exports (protobuf or JSON, gzip or not) mapped to telemetry
events and ingested (loopsense.platform.telemetry.otlp). Wiring only."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from loopsense.observability import lambda_entry
from loopsense.platform.telemetry.routes import handle_otlp
from loopsense.platform.wiring import ingestion

ingestion()  # cold start: a missing LOOPSENSE_*_TABLE fails here, named


@lambda_entry
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle_otlp(event, ingestion())
