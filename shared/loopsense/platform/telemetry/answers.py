"""What the telemetry routes answer (docs/failure-groups.md): the shapes of the dicts ingest.py
and failure_groups.py build, for the OpenAPI document and through it the SDKs' types (each
route's Contract names its answer here). tests/e2e/test_contract_answers.py validates real
answers against the document.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, with_config
from typing_extensions import TypedDict

from loopsense.platform.telemetry.failure_groups import CLASSES, SEVERITIES
from loopsense.playbooks.answers import Playbook
from loopsense.validation import ANSWER

FailureClass = Annotated[str, Field(json_schema_extra={"enum": list(CLASSES)})]
Severity = Annotated[str, Field(json_schema_extra={"enum": list(SEVERITIES)})]


@with_config(ANSWER)
class BatchAnswer(TypedDict):
    executionId: str
    seq: int
    accepted: int
    duplicate: bool  # a replayed Idempotency-Key: the first answer's batch, applied once
    fired: list[str]  # the failure groups' signatures this request recorded


@with_config(ANSWER)
class EndAnswer(TypedDict):
    executionId: str
    ended: Literal[True]
    alreadyEnded: bool
    fired: list[str]


# "class" is a Python keyword: the functional form names it.
FailureGroupView = TypedDict("FailureGroupView", {
    "signature": str,
    "class": FailureClass,
    "sub": str,  # loops' sub-signature, or the class again
    "severity": Severity,  # as the tenant routes the class
    "executions": int,
    "firstSeen": str,
    "lastSeen": str,
    "playbook": str,
})
with_config(ANSWER)(FailureGroupView)


@with_config(ANSWER)
class FailureGroupsPage(TypedDict):
    items: list[FailureGroupView]
    nextCursor: str | None


@with_config(ANSWER)
class AffectedExecution(TypedDict):
    executionId: str
    firedAt: str


@with_config(ANSWER)
class GroupDay(TypedDict):
    day: str
    executions: int


@with_config(ANSWER)
class FailureGroupDetail(TypedDict):
    group: FailureGroupView
    executions: list[AffectedExecution]  # the newest first
    playbook: Playbook
    canonicalState: str | None  # semantic_loop: the revisited state, as canonical JSON text
    timeline: list[GroupDay]


# One key per class, from the list the code routes by.
Routing = TypedDict("Routing", {cls: Severity for cls in CLASSES})  # type: ignore[misc]
with_config(ANSWER)(Routing)


@with_config(ANSWER)
class TelemetryRetention(TypedDict):
    telemetry_retention_days: int
    group_retention_days: int
