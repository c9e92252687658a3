"""POST /v1/execute: the platform pipeline (loopsense.platform.execute.pipeline). Wiring only."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from loopsense.observability import lambda_entry
from loopsense.platform.http.request import request_from_event
from loopsense.platform.wiring import execute

execute()  # cold start: a missing LOOPSENSE_*_TABLE fails here, named


@lambda_entry
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return execute().execute(request_from_event(event))
