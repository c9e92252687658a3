"""Lambda for agent.loops. Wiring only: the event's `input` goes to the shared skill call.

Event (direct invoke, e.g. from the execute router): {"input": {...}, "requestId": "..."}.
Returns {"output": {...}} or the error envelope.
"""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from loopsense.observability import logger, metrics, tracer
from loopsense.platform.catalog import CATALOG
from loopsense.platform.skill_call import call_skill

SKILL = CATALOG["agent.loops"]


@metrics.log_metrics
@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler(capture_response=False, capture_error=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request_id = event.get("requestId") or context.aws_request_id
    return call_skill(SKILL, event.get("input"), request_id)
