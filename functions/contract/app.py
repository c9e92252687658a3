"""GET /openapi.json: the API's OpenAPI document (loopsense.platform.contract). Wiring only."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from loopsense.observability import lambda_entry
from loopsense.platform.contract.routes import handle, load

DOCUMENT = load()  # cold start: read once, never per request


@lambda_entry
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle(event, DOCUMENT)
