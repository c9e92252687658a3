"""GET/PUT /v1/detector-thresholds and /v1/me/time-budget-config: a tenant's detector settings
(loopsense.platform.settings_api). Wiring only."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from loopsense.observability import logger, metrics, tracer
from loopsense.platform.runtime import tenant_settings
from loopsense.platform.settings_api import handle


@metrics.log_metrics
@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler(capture_response=False, capture_error=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle(event, tenant_settings())
