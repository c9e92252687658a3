"""What a route promises, for the OpenAPI document (loopsense_local.openapi builds it): the body
it validates, its answer, its query parameters, the headers it reads, and the error codes it may
answer beyond those every route may. Declared beside each feature's ROUTES (the same keys,
tests/unit/test_openapi.py holds them equal); models are named as "module:Name" so that a
function that never validates with pydantic does not import it to declare its contract.
"""

from __future__ import annotations

from dataclasses import dataclass

# Every route behind the authorizer may answer these (no key, its store down, a crash).
AUTHORIZED_ERRORS = ("UNAUTHORIZED", "PLAN_ELIGIBILITY_UNAVAILABLE", "INTERNAL_ERROR")
# The gate's refusals (platform/access/gate.py): grant, plan, rate, quota, the store.
GATE_ERRORS = ("SKILL_NOT_ACCESSIBLE", "SKILL_NOT_AVAILABLE_FOR_PLAN", "TENANT_RATE_LIMITED",
               "QUOTA_EXCEEDED", "PLAN_ELIGIBILITY_UNAVAILABLE")
# A settings change with a key of no settings scope (Identity.changing_settings).
SETTINGS_ERRORS = ("VALIDATION_ERROR", "SKILL_NOT_ACCESSIBLE")


@dataclass(frozen=True, slots=True)
class Contract:
    summary: str
    errors: tuple[str, ...] = ()
    body: tuple[str, ...] = ()  # "module:Model"s the route validates its JSON body with (any of)
    body_schema: str | None = None  # or a named schema the document builds (from the catalog)
    answer: str | None = None  # "module:Model" of its 200 answer (None: a JSON object)
    query: tuple[tuple[str, str], ...] = ()  # (name, what it is)
    idempotent: bool = False  # reads an Idempotency-Key
    media: str = "application/json"  # of the body and the answer
    status: int = 200
    # OpenAPI links of its answer: (the route it leads to, {that route's parameter: where its
    # value is, an OpenAPI runtime expression}); the stateful fuzz follows them.
    links: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()
