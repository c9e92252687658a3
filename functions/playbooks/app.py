"""GET /v1/playbooks/{name}: one agent.loops playbook as JSON (loopsense.platform.playbooks.routes).
Wiring only."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from loopsense.observability import lambda_entry
from loopsense.platform.playbooks.routes import handle


@lambda_entry
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle(event)
