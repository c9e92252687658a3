"""GET /v1/failure-groups[/{signature}], GET/PUT /v1/severity-routing and
/v1/telemetry-settings (loopsense.platform.failure_groups). Wiring only."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from loopsense.observability import lambda_entry
from loopsense.platform.runtime import failure_groups
from loopsense.platform.telemetry_api import GROUPS, handle

failure_groups()  # cold start: a missing LOOPSENSE_*_TABLE fails here, named


@lambda_entry
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle(event, failure_groups(), GROUPS, "failure_groups")
