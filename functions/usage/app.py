"""GET /v1/usage: credits against the plan, calls per day (loopsense.platform.usage). Wiring
only."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from loopsense.observability import lambda_entry
from loopsense.platform.usage.routes import handle
from loopsense.platform.wiring import usage

usage()  # cold start: a missing LOOPSENSE_*_TABLE fails here, named


@lambda_entry
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle(event, usage())
