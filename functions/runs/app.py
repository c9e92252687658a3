"""/v1/runs/{runId}/...: the stateful run monitor (loopsense.platform.runs.routes). Wiring only."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from loopsense.observability import lambda_entry
from loopsense.platform.runs.routes import handle
from loopsense.platform.wiring import runs

runs()  # cold start: a missing LOOPSENSE_*_TABLE fails here, named

@lambda_entry
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle(event, runs())
