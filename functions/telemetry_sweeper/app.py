"""On a schedule: end and evaluate the executions idle past their time budget
(loopsense.platform.telemetry.ingest.Ingestion.sweep). Wiring only."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from loopsense.observability import lambda_entry, logger
from loopsense.platform.wiring import ingestion

ingestion()  # cold start: a missing LOOPSENSE_*_TABLE fails here, named


@lambda_entry
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    swept = ingestion().sweep()
    logger.info("telemetry sweep", extra={"executions": swept})
    return {"swept": swept}
