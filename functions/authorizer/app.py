"""HTTP API Lambda authorizer (payload 2.0, simple responses). Wiring only.

Always allows: the context carries the tenant's identity or the error code the router answers
with, so that every error reaches the caller in the one envelope (see loopsense.platform.http.auth).
"""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from loopsense.observability import lambda_entry
from loopsense.platform.http.auth import authorizer_context
from loopsense.platform.http.request import request_from_event
from loopsense.platform.wiring import accounts

accounts()  # cold start: a missing LOOPSENSE_*_TABLE fails here, named


def authorize(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    authorization = request_from_event(event).header("authorization")
    return {"isAuthorized": True, "context": authorizer_context(authorization, accounts())}


lambda_handler = lambda_entry(authorize, with_metrics=False)  # it records no metrics
