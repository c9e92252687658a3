"""Typed errors: one class per platform code family, a few more for the codes worth naming.

Every error the API answers has one envelope (spec/platform.md, Errors)::

    {"error": {"code", "message", "retryable", "next", "details"}, "requestId"}

``error_from_response`` turns it into the most specific class: by ``code`` first, by HTTP status
second (so a code this SDK does not know yet still lands in its family), ``LoopsenseError``
last. ``retryable`` is the server's word, never guessed from the class.

Families (catch the family, or the specific class, or ``LoopsenseError`` for all)::

    LoopsenseError
    ├── ValidationError            400  VALIDATION_ERROR, LOOP_EVENTS_INVALID, RUN_*_INVALID, ...
    ├── AuthenticationError        401  UNAUTHORIZED
    ├── PermissionDeniedError      403
    │   ├── SkillNotAccessibleError       SKILL_NOT_ACCESSIBLE (the key is scoped)
    │   └── SkillNotAvailableForPlanError SKILL_NOT_AVAILABLE_FOR_PLAN
    ├── NotFoundError              404  RUN_MEMORY_NOT_FOUND, ... (and 405 METHOD_NOT_ALLOWED)
    │   ├── SkillNotFoundError            SKILL_NOT_FOUND
    │   └── RunAgentNotFoundError         RUN_AGENT_NOT_FOUND (register the agent first)
    ├── ConflictError              409  RUN_MEMORY_FULL (10,000 entries: delete or break)
    │   ├── IdempotencyKeyReusedError     IDEMPOTENCY_KEY_REUSED (not retryable)
    │   ├── IdempotencyInProgressError    IDEMPOTENCY_IN_PROGRESS (retryable)
    │   └── RunWriteConflictError         RUN_WRITE_CONFLICT (retryable, same Idempotency-Key)
    ├── RateLimitError             429
    │   ├── TenantRateLimitedError        TENANT_RATE_LIMITED (retryable)
    │   ├── QuotaExceededError            QUOTA_EXCEEDED (retryable at the period's reset)
    │   └── EventLimitExceededError       *_LIMIT_EXCEEDED (not retryable: split input)
    │       └── RunStepLimitExceededError     RUN_STEP_LIMIT_EXCEEDED
    ├── InternalError              500  INTERNAL_ERROR
    ├── UnavailableError           503  PLAN_ELIGIBILITY_UNAVAILABLE, SERVER_BUSY (and 502)
    ├── ExecutionTimeoutError      504  EXECUTION_TIMEOUT (the skill ran out of its budget)
    └── APIConnectionError         no HTTP answer (also a builtins.ConnectionError)
        └── RequestTimeoutError           no answer in time (also builtins.TimeoutError)
"""

from __future__ import annotations

import builtins
import contextlib
import json
from collections.abc import Mapping
from typing import Any, TypedDict, cast

__all__ = [
    "AuthenticationError",
    "ConflictError",
    "APIConnectionError",
    "ErrorDetail",
    "EventLimitExceededError",
    "ExecutionTimeoutError",
    "IdempotencyInProgressError",
    "IdempotencyKeyReusedError",
    "InternalError",
    "LoopsenseError",
    "NotFoundError",
    "PermissionDeniedError",
    "QuotaExceededError",
    "RateLimitError",
    "RequestTimeoutError",
    "RunAgentNotFoundError",
    "RunStepLimitExceededError",
    "RunWriteConflictError",
    "SkillNotAccessibleError",
    "SkillNotAvailableForPlanError",
    "SkillNotFoundError",
    "TenantRateLimitedError",
    "UnavailableError",
    "ValidationError",
    "error_from_response",
]


class ErrorDetail(TypedDict):
    path: str
    issue: str


class LoopsenseError(Exception):
    """An error answered by loopsense (or no answer at all: ``APIConnectionError``).

    Attributes: ``code`` (e.g. ``QUOTA_EXCEEDED``), ``message``, ``status`` (HTTP status, ``None``
    without an answer), ``retryable``, ``next`` (what to do), ``details`` (``[{"path",
    "issue"}]``), ``request_id``, ``retry_after`` (seconds from the ``Retry-After`` header, or
    ``None``), ``attempts`` (how many requests the call made before giving up).
    """

    def __init__(self, code: str, message: str, *, status: int | None = None,
                 retryable: bool = False, next: str | None = None,  # noqa: A002 - wire name
                 details: list[ErrorDetail] | None = None, request_id: str | None = None,
                 retry_after: float | None = None) -> None:
        super().__init__(f"{code}: {message}" if message else code)
        self.code = code
        self.message = message
        self.status = status
        self.retryable = retryable
        self.next = next
        self.details: list[ErrorDetail] = list(details or [])
        self.request_id = request_id
        self.retry_after = retry_after
        self.attempts = 1

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(code={self.code!r}, status={self.status!r}, "
                f"retryable={self.retryable!r}, message={self.message!r})")

    def __reduce__(self) -> tuple[Any, ...]:  # picklable despite keyword-only arguments
        return (_rebuild, (type(self), self.__dict__.copy()))


def _rebuild(cls: type[LoopsenseError], state: dict[str, Any]) -> LoopsenseError:
    error = cls.__new__(cls)
    Exception.__init__(error, f"{state.get('code')}: {state.get('message')}")
    error.__dict__.update(state)
    return error


class ValidationError(LoopsenseError):
    """400: the envelope or the input is wrong; ``details`` names the fields."""


class AuthenticationError(LoopsenseError):
    """401: no key, a malformed, unknown or revoked key."""


class PermissionDeniedError(LoopsenseError):
    """403: the key or the plan does not grant this skill."""


class SkillNotAccessibleError(PermissionDeniedError):
    """403 SKILL_NOT_ACCESSIBLE: the key is scoped to other skills."""


class SkillNotAvailableForPlanError(PermissionDeniedError):
    """403 SKILL_NOT_AVAILABLE_FOR_PLAN: the tenant's plan does not include this skill."""


class NotFoundError(LoopsenseError):
    """404: no such skill, version, route or playbook."""


class SkillNotFoundError(NotFoundError):
    """404 SKILL_NOT_FOUND: check the skill key and version."""


class RunAgentNotFoundError(NotFoundError):
    """404 RUN_AGENT_NOT_FOUND: the run has no such agent (never registered, or expired)."""


class ConflictError(LoopsenseError):
    """409: an Idempotency-Key conflict, or a write that lost a race."""


class IdempotencyKeyReusedError(ConflictError):
    """409 IDEMPOTENCY_KEY_REUSED: the same key was sent with another body (not retryable)."""


class IdempotencyInProgressError(ConflictError):
    """409 IDEMPOTENCY_IN_PROGRESS: the first request with this key is still running."""


class RunWriteConflictError(ConflictError):
    """409 RUN_WRITE_CONFLICT: concurrent step batches of the same agent kept winning the race;
    retryable (the retry sends the same Idempotency-Key, so no step is applied twice)."""


class RateLimitError(LoopsenseError):
    """429: too many requests, credits used up, or too many events in one call.

    Check ``retryable``: the event limits are not (split the input instead)."""


class TenantRateLimitedError(RateLimitError):
    """429 TENANT_RATE_LIMITED: above the plan's requests per second."""


class QuotaExceededError(RateLimitError):
    """429 QUOTA_EXCEEDED: the period's credits are used up; ``retry_after`` is the seconds to
    the reset (usually far beyond a call's deadline, so the SDK fails at once)."""


class EventLimitExceededError(RateLimitError):
    """429 LOOP_EVENT_LIMIT_EXCEEDED and the like: the input has too many events or bytes. Not
    retryable: split the input."""


class RunStepLimitExceededError(EventLimitExceededError):
    """429 RUN_STEP_LIMIT_EXCEEDED: more than 5,000 steps or 2 MiB in one agent.run_monitor
    call. Not retryable: send fewer steps, or use the runs API (``client.runs``)."""


class InternalError(LoopsenseError):
    """500 INTERNAL_ERROR: unexpected; nothing was charged; retryable."""


class UnavailableError(LoopsenseError):
    """503 PLAN_ELIGIBILITY_UNAVAILABLE (the plan or quota store is down or throttling), or
    a 502/503 from something in between; retryable."""


class ExecutionTimeoutError(LoopsenseError):
    """504 EXECUTION_TIMEOUT: the skill did not finish within its time budget."""


class APIConnectionError(LoopsenseError, builtins.ConnectionError):
    """No HTTP answer: refused, reset, DNS, TLS. Retryable (the Idempotency-Key makes the retry
    safe even when the first request did reach the server)."""

    def __init__(self, message: str, *, code: str = "CONNECTION_ERROR") -> None:
        LoopsenseError.__init__(self, code, message, retryable=True)

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class RequestTimeoutError(APIConnectionError, builtins.TimeoutError):
    """No answer within the per-request timeout (``Client(timeout=...)``). Retryable."""

    def __init__(self, message: str) -> None:
        APIConnectionError.__init__(self, message, code="REQUEST_TIMEOUT")


_BY_CODE: dict[str, type[LoopsenseError]] = {
    "VALIDATION_ERROR": ValidationError,
    "LOOP_EVENTS_INVALID": ValidationError,
    "TIME_BUDGET_ABOVE_PLAN_CAP": ValidationError,
    "UNAUTHORIZED": AuthenticationError,
    "SKILL_NOT_ACCESSIBLE": SkillNotAccessibleError,
    "SKILL_NOT_AVAILABLE_FOR_PLAN": SkillNotAvailableForPlanError,
    "SKILL_NOT_FOUND": SkillNotFoundError,
    "ROUTE_NOT_FOUND": NotFoundError,
    "METHOD_NOT_ALLOWED": NotFoundError,
    "PLAYBOOK_NOT_FOUND": NotFoundError,
    "IDEMPOTENCY_KEY_REUSED": IdempotencyKeyReusedError,
    "IDEMPOTENCY_IN_PROGRESS": IdempotencyInProgressError,
    "TENANT_RATE_LIMITED": TenantRateLimitedError,
    "QUOTA_EXCEEDED": QuotaExceededError,
    "LOOP_EVENT_LIMIT_EXCEEDED": EventLimitExceededError,
    "SEMANTIC_LOOP_EVENT_LIMIT_EXCEEDED": EventLimitExceededError,
    "LOOPS_EVENT_LIMIT_EXCEEDED": EventLimitExceededError,
    "PLAN_ELIGIBILITY_UNAVAILABLE": UnavailableError,
    "SERVER_BUSY": UnavailableError,
    "EXECUTION_TIMEOUT": ExecutionTimeoutError,
    "INTERNAL_ERROR": InternalError,
    "RUN_STEPS_INVALID": ValidationError,
    "RUN_STEP_LIMIT_EXCEEDED": RunStepLimitExceededError,
    "RUN_BATCH_INVALID": ValidationError,
    "RUN_AGENT_NOT_FOUND": RunAgentNotFoundError,
    "RUN_WRITE_CONFLICT": RunWriteConflictError,
    "RUN_MEMORY_NOT_FOUND": NotFoundError,
    "RUN_SNAPSHOT_NOT_FOUND": NotFoundError,
    "RUN_MEMORY_FULL": ConflictError,

    # telemetry ingestion and failure groups (client.telemetry, GET /v1/failure-groups)
    "EXECUTION_EVENTS_INVALID": ValidationError,
    "EXECUTION_EVENT_LIMIT_EXCEEDED": EventLimitExceededError,
    "EXECUTION_ENDED": ConflictError,
    "EXECUTION_BATCH_OUT_OF_ORDER": ConflictError,
    "EXECUTION_NOT_FOUND": NotFoundError,
    "FAILURE_GROUP_NOT_FOUND": NotFoundError,
    "RUN_NOT_FOUND": NotFoundError,
}

_BY_STATUS: dict[int, type[LoopsenseError]] = {
    400: ValidationError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    405: NotFoundError,
    409: ConflictError,
    413: ValidationError,
    422: ValidationError,
    429: RateLimitError,
    500: InternalError,
    502: UnavailableError,
    503: UnavailableError,
    504: ExecutionTimeoutError,
}

# Without an envelope (a proxy or gateway answered), retryability from the status alone.
_RETRYABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504})


def error_class(code: str | None, status: int | None) -> type[LoopsenseError]:
    """The class for ``code``, else for ``status`` (any other 5xx: InternalError)."""
    if code is not None and code in _BY_CODE:
        return _BY_CODE[code]
    if status is not None:
        if status in _BY_STATUS:
            return _BY_STATUS[status]
        if 500 <= status < 600:
            return InternalError
    return LoopsenseError


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header: delta-seconds or an HTTP date; None if absent or
    unreadable."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        from datetime import UTC, datetime
        from email.utils import parsedate_to_datetime
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    return max(0.0, seconds) if seconds == seconds else None  # NaN -> None


def _header(headers: Mapping[str, str], name: str) -> str | None:
    lowered = name.lower()
    for key, value in headers.items():
        if key.lower() == lowered:
            return value
    return None


def error_from_response(status: int, headers: Mapping[str, str], body: bytes) -> LoopsenseError:
    """The typed error for a non-2xx HTTP answer."""
    retry_after = parse_retry_after(_header(headers, "Retry-After"))
    request_id = _header(headers, "X-Request-Id")
    envelope: Any = None
    with contextlib.suppress(ValueError):
        envelope = json.loads(body)
    error = envelope.get("error") if isinstance(envelope, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        code: str = error["code"]
        details = error.get("details")
        cls = error_class(code, status)
        return cls(
            code,
            str(error.get("message") or ""),
            status=status,
            retryable=error.get("retryable") is True,
            next=error.get("next") if isinstance(error.get("next"), str) else None,
            details=[cast(ErrorDetail, d) for d in details if isinstance(d, dict)]
            if isinstance(details, list) else [],
            request_id=str(envelope.get("requestId") or request_id or "") or None,
            retry_after=retry_after,
        )
    # Not a loopsense envelope: a gateway, a proxy, a load balancer answered.
    cls = error_class(None, status)
    return cls(f"HTTP_{status}", f"HTTP {status} without a loopsense error body",
               status=status, retryable=status in _RETRYABLE_STATUSES,
               request_id=request_id, retry_after=retry_after)
