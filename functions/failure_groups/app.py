"""GET /v1/failure-groups[/{signature}], GET/PUT /v1/severity-routing and
/v1/telemetry-settings (loopsense.platform.telemetry.failure_groups). Wiring only."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from loopsense.observability import lambda_entry
from loopsense.platform.telemetry.routes import GROUPS, handle
from loopsense.platform.wiring import failure_groups

failure_groups()  # cold start: a missing LOOPSENSE_*_TABLE fails here, named


@lambda_entry
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle(event, failure_groups(), GROUPS, "failure_groups")
