"""GET/PUT /v1/detector-thresholds and /v1/me/time-budget-config: a tenant's detector settings
(loopsense.platform.settings.routes). Wiring only."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from loopsense.observability import lambda_entry
from loopsense.platform.settings.routes import handle
from loopsense.platform.wiring import tenant_settings

tenant_settings()  # cold start: a missing LOOPSENSE_*_TABLE fails here, named


@lambda_entry
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle(event, tenant_settings())
