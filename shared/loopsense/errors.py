"""The one error map: every code loopsense answers with, its HTTP status, retryability and `next`.

Domain code raises ``LoopsenseError(code, message, details)``; ``error_envelope`` turns it into
the single response shape. Messages and details name fields and limits, never caller values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class ErrorKind:
    status: int
    retryable: bool
    next: str


PLATFORM_ERRORS: dict[str, ErrorKind] = {
    "VALIDATION_ERROR": ErrorKind(400, False, "fix the named field"),
    "UNAUTHORIZED": ErrorKind(401, False, "send a valid API key as 'Authorization: Bearer <key>'"),
    "SKILL_NOT_ACCESSIBLE": ErrorKind(403, False, "use a key granted this skill (or scope)"),
    "SKILL_NOT_AVAILABLE_FOR_PLAN": ErrorKind(403, False, "upgrade the plan to use this skill"),
    "SKILL_NOT_FOUND": ErrorKind(404, False, "check the skillKey and version"),
    "ROUTE_NOT_FOUND": ErrorKind(404, False, "check the method and path (POST /v1/execute)"),
    "METHOD_NOT_ALLOWED": ErrorKind(405, False, "use a method the Allow header lists"),
    "IDEMPOTENCY_KEY_REUSED": ErrorKind(409, False, "use a new Idempotency-Key for a new body"),
    "IDEMPOTENCY_IN_PROGRESS": ErrorKind(409, True, "retry after the first request finishes"),
    "TENANT_RATE_LIMITED": ErrorKind(429, True, "slow down and retry after Retry-After"),
    "QUOTA_EXCEEDED": ErrorKind(429, True, "wait for the quota period to reset or upgrade"),
    "PLAN_ELIGIBILITY_UNAVAILABLE": ErrorKind(503, True, "retry after Retry-After"),
    # the local server (`loopsense serve`) at its concurrency limit, or Lambda throttling the
    # skill's function (platform/execute/invoke.py)
    "SERVER_BUSY": ErrorKind(503, True, "retry after Retry-After"),
    "EXECUTION_TIMEOUT": ErrorKind(504, True, "retry, or send a smaller input"),
    "INTERNAL_ERROR": ErrorKind(500, True, "retry; nothing was charged"),
    # PUT /v1/me/time-budget-config, PUT /v1/detector-thresholds (spec/thresholds.md)
    "TIME_BUDGET_ABOVE_PLAN_CAP": ErrorKind(
        400, False, "send a time_budget_ms at most the plan's max_time_budget_ms, or upgrade"
    ),
    # GET /v1/playbooks/{name}
    "PLAYBOOK_NOT_FOUND": ErrorKind(
        404, False, "use the playbook name a finding gives (its `playbook` field)"
    ),
    # the runs API (/v1/runs/{runId}/..., docs/runs.md)
    "RUN_BATCH_INVALID": ErrorKind(
        400, False, "send 1 to 500 steps of one agent (agentId in each), each with a kind (a "
                    "tool_call needs an action), at most 350,000 bytes of stored state"
    ),
    "RUN_AGENT_NOT_FOUND": ErrorKind(
        404, False, "register the agent (POST /v1/runs/{runId}/agents) or send its steps first"
    ),
    "RUN_NOT_FOUND": ErrorKind(404, False, "list the live runs with GET /v1/runs"),
    "RUN_WRITE_CONFLICT": ErrorKind(
        409, True, "retry the same request (with the same Idempotency-Key)"
    ),
    # working memory, snapshots (docs/recover.md)
    "RUN_MEMORY_NOT_FOUND": ErrorKind(404, False, "list the keys (GET /v1/runs/{runId}/memory)"),
    "RUN_MEMORY_FULL": ErrorKind(
        409, False, "delete entries or circuit-break (working memory: at most 10,000 entries)"
    ),
    "RUN_SNAPSHOT_NOT_FOUND": ErrorKind(
        404, False, "use a snapshotId a circuit break or restore of this run returned"
    ),

    # telemetry ingestion and failure groups (docs/failure-groups.md)
    "EXECUTION_EVENTS_INVALID": ErrorKind(400, False, "fix the named field; nothing of the batch "
                                                      "was applied"),
    "EXECUTION_EVENT_LIMIT_EXCEEDED": ErrorKind(429, False, "send at most 500 events per batch"),
    "EXECUTION_ENDED": ErrorKind(409, False, "send events of a finished execution under a new "
                                             "executionId"),
    "EXECUTION_BATCH_OUT_OF_ORDER": ErrorKind(409, True, "send the missing earlier batches "
                                                         "first, then retry this one"),
    "EXECUTION_NOT_FOUND": ErrorKind(404, False, "send the execution's events first"),
    "FAILURE_GROUP_NOT_FOUND": ErrorKind(404, False, "list the groups with GET "
                                                     "/v1/failure-groups"),
}

# The codes only one skill answers with are declared with the skill, in its catalog entry
# (platform/access/catalog.py, Skill.errors), which declares them here when it is imported:
# every process that runs or routes a skill has the catalog (tests/unit/access/test_catalog.py
# checks each skill's code against its entry).
SKILL_ERRORS: dict[str, ErrorKind] = {}
ERRORS: dict[str, ErrorKind] = dict(PLATFORM_ERRORS)


def declare(codes: dict[str, ErrorKind]) -> None:
    """Add a skill's own codes (once each; a platform code or another skill's is refused)."""
    for code, kind in codes.items():
        if ERRORS.get(code, kind) != kind or code in PLATFORM_ERRORS:
            raise ValueError(f"error code {code} is declared twice")
        SKILL_ERRORS[code] = ERRORS[code] = kind

# Seconds a client should wait before retrying, where the error does not compute its own.
DEFAULT_RETRY_AFTER = 1


@dataclass(frozen=True, slots=True)
class Detail:
    path: str
    issue: str

    def as_dict(self) -> dict[str, str]:
        return {"path": self.path, "issue": self.issue}


@dataclass
class LoopsenseError(Exception):
    code: str
    message: str
    details: list[Detail] = field(default_factory=list)
    retry_after: int | None = None  # seconds; only for retryable codes

    def __post_init__(self) -> None:
        if self.code not in ERRORS:
            raise ValueError(f"unknown error code {self.code}")
        super().__init__(self.code, self.message)

    @property
    def kind(self) -> ErrorKind:
        return ERRORS[self.code]

    @property
    def status(self) -> int:
        return self.kind.status

    def retry_after_seconds(self) -> int | None:
        if not self.kind.retryable:
            return None
        return self.retry_after if self.retry_after is not None else DEFAULT_RETRY_AFTER


class ConfigurationError(RuntimeError):
    """The environment lacks a setting, or holds an invalid one: raised at cold start (kept
    here, beside the others, so the CLI catches it without importing the settings)."""


def validation_error(path: str, issue: str, code: str = "VALIDATION_ERROR") -> LoopsenseError:
    return LoopsenseError(code, f"{path}: {issue}", [Detail(path, issue)])


def error_envelope(error: LoopsenseError, request_id: str) -> dict[str, Any]:
    kind = error.kind
    return {
        "error": {
            "code": error.code,
            "message": error.message,
            "retryable": kind.retryable,
            "next": kind.next,
            "details": [d.as_dict() for d in error.details],
        },
        "requestId": request_id,
    }
