"""POST /v1/execute: the checks in the spec's order, the skill run, the charge.

authenticate -> parse the envelope -> idempotency -> find the skill -> key grant -> plan ->
rate limit -> quota -> run the skill -> charge. Any failure answers the error envelope and
charges nothing; a crash is INTERNAL_ERROR. Grant, plan, rate and quota are the gate's
(platform/access/gate.py), which also gives the skill the tenant's thresholds (read by the
authorizer with the tenant's item). The plan row and a shard of the month's credits are one
read, so a call is three DynamoDB requests (four with an Idempotency-Key, whose response is
stored by the charge's transaction; docs/costs.md).
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from loopsense.core.instants import stamp
from loopsense.errors import Detail, LoopsenseError, validation_error
from loopsense.platform.access.catalog import CATALOG, find_skill
from loopsense.platform.access.gate import Gate, Offer
from loopsense.platform.access.idempotency import (
    KEY_HEADER,
    REPLAY_WINDOW_S,
    Complete,
    Idempotency,
    check_key,
)
from loopsense.platform.access.plans import resolve_plan
from loopsense.platform.access.retry import until_settled
from loopsense.platform.execute.files import (
    INLINE_RESPONSE_BYTES,
    STORED_RESPONSE_BYTES,
    deliver,
    new_upload,
    read_input,
    wants_file,
)
from loopsense.platform.execute.invoke import Invoker
from loopsense.platform.http.answer import Route, respond
from loopsense.platform.http.auth import Identity
from loopsense.platform.http.contract import GATE_ERRORS, Contract
from loopsense.platform.http.request import MAX_BODY_BYTES, Request, json_body, json_response
from loopsense.store.accounts import Accounts
from loopsense.store.dynamo import unavailable
from loopsense.store.files import Files
from loopsense.store.metering import Metering, Once, UsageRecord, period_of
from loopsense.validation import validate


class Envelope(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    skillKey: str = Field(min_length=1, max_length=128)
    version: str | None = Field(None, min_length=1, max_length=32)
    input: Any = Field(...)


def parse_envelope(body: bytes) -> Envelope:
    return validate(Envelope, json_body(body, MAX_BODY_BYTES), prefix="")


@dataclass
class Execute:
    accounts: Accounts
    metering: Metering
    invoker: Invoker
    idempotency: Idempotency
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    files: Files | None = None  # the file inputs' bucket; None: file inputs are off

    def __post_init__(self) -> None:
        self.gate = Gate(lambda name: resolve_plan(self.accounts, name), self.metering)

    def execute(self, request: Request) -> dict[str, Any]:
        """POST /v1/execute -> its response, through the one dispatcher. The route builds its
        response itself: a replay is the stored one, byte for byte."""
        return respond(request, self, ROUTES, "execute", render=lambda response, _: response)

    def route(self, identity: Identity, request: Request) -> dict[str, Any]:
        started = time.perf_counter()
        envelope = parse_envelope(request.body)
        # Logged only when it names a skill: an unknown skillKey is caller content.
        request.log["skill"] = envelope.skillKey if envelope.skillKey in CATALOG else None
        key = check_key(request.header(KEY_HEADER))
        if key is None:
            return self._run(identity, envelope, request, None, started)
        # One logical call per (tenant, key) and replay window: charged at most once, even
        # when its stored response could not be saved and a retry runs it again.
        once_key = hashlib.sha256(f"{identity.tenant_id}\n{key}".encode()).hexdigest()
        response = self.idempotency.run(
            identity.tenant_id, key, request.body,
            lambda complete: self._run(identity, envelope, request, once_key, started, complete),
        )
        # A replay is the stored body byte for byte, under its own request id: the one its
        # log line carries, not the first request's.
        return {**response, "headers": {**response.get("headers", {}),
                                        "X-Request-Id": request.request_id}}

    def _run(self, identity: Identity, envelope: Envelope, request: Request,
             once_key: str | None, started: float, complete: Complete | None = None
             ) -> dict[str, Any]:
        skill = find_skill(envelope.skillKey, envelope.version)
        now = self.clock()
        epoch = int(now.timestamp())
        caller, credits = self.gate.admit_metered(identity, Offer(skill.key), period_of(now))
        self.gate.rate(caller, epoch)
        quota_error, credits = self.gate.quota(caller, now, skill.cost, credits)
        raw_input, file = envelope.input, None
        if wants_file(raw_input):  # the file's events in place of the ref (execute/files.py)
            file = read_input(self.files, skill, identity.tenant_id, raw_input, now)
            raw_input = file.input
            request.log["file_bytes"] = file.size
        result = self.invoker.invoke(skill, raw_input, request.request_id, caller.thresholds)
        if "error" in result:
            raise _skill_error(result["error"])
        output = result["output"]
        if self.files is not None:  # too large to inline: a fileRef to download (execute/files.py)
            output = deliver(self.files, identity.tenant_id, output, now,
                             INLINE_RESPONSE_BYTES if complete is None else STORED_RESPONSE_BYTES)
        record = UsageRecord(
            execution_id=str(uuid.uuid4()), skill_key=skill.key, skill_version=skill.version,
            credits=skill.cost, at=stamp(now),
            duration_ms=int((time.perf_counter() - started) * 1000), status="succeeded")
        once = None if once_key is None else Once(once_key, epoch, epoch + REPLAY_WINDOW_S)

        def answer(execution_id: str) -> dict[str, Any]:
            return json_response(200, {
                "executionId": execution_id, "skillKey": skill.key,
                "skillVersion": skill.version, "output": output,
                "billing": {"credits": skill.cost}}, {"X-Request-Id": request.request_id})

        # With a key, the response is stored in the charge's own transaction (idempotency.py).
        response = answer(record.execution_id)
        store, committed = complete(response) if complete is not None else (None, None)
        try:
            execution_id = until_settled(
                lambda: self.metering.charge(identity.tenant_id, period_of(now),
                                             caller.plan.credits_per_month, record, once,
                                             credits, also=() if store is None else (store,)),
                unavailable)
        except BaseException:
            self._discard_output(identity, output, result["output"])  # nothing charged: no
            raise  # answer will name the file
        if execution_id is None:  # lost the race for the last credits: the work is discarded
            self._discard_output(identity, output, result["output"])
            raise quota_error
        if execution_id != record.execution_id:  # charged before (its claim held): not stored
            response = answer(execution_id)  # here; Powertools stores this one after us
        elif committed is not None:
            committed()
        if file is not None and self.files is not None:
            self.files.discard(identity.tenant_id, file.file_id)  # used: not kept
        return response

    def _discard_output(self, identity: Identity, output: Any, inline: Any) -> None:
        """The file ``deliver`` wrote for ``output`` (if it did), deleted: a call that was not
        charged answers no URL to it."""
        if self.files is not None and output is not inline:
            with suppress(Exception):  # the bucket's expiry removes it otherwise
                self.files.discard(identity.tenant_id, output["fileRef"])

    def new_file(self, identity: Identity, request: Request) -> dict[str, Any]:
        """POST /v1/files: a fileRef and its pre-signed upload URL (execute/files.py)."""
        if self.files is None:
            raise LoopsenseError("ROUTE_NOT_FOUND", "file inputs are not enabled here")
        if request.body.strip() and json_body(request.body, 1024) != {}:
            raise validation_error("body", "must be empty or {}: this route takes no input")
        return json_response(200, new_upload(self.files, identity.tenant_id, self.clock()),
                             {"X-Request-Id": request.request_id})


def _skill_error(error: dict[str, Any]) -> LoopsenseError:
    details = [Detail(d["path"], d["issue"]) for d in error.get("details", [])]
    return LoopsenseError(error["code"], error["message"], details)


ROUTES: dict[str, Route] = {
    "POST /v1/execute": lambda execute, who, request: execute.route(who, request),
    "POST /v1/files": lambda execute, who, request: execute.new_file(who, request),
}

# The skills' own codes are the catalog's (loopsense_local.openapi adds them per skill).
CONTRACTS: dict[str, Contract] = {
    "POST /v1/execute": Contract(
        "run one skill on its input", (
            "VALIDATION_ERROR", "SKILL_NOT_FOUND", *GATE_ERRORS, "IDEMPOTENCY_KEY_REUSED",
            "IDEMPOTENCY_IN_PROGRESS", "EXECUTION_TIMEOUT"),
        body_schema="ExecuteRequest", idempotent=True),
    "POST /v1/files": Contract(
        "a fileRef and a pre-signed upload URL for a large input (docs/files.md)",
        ("VALIDATION_ERROR", "ROUTE_NOT_FOUND"),
        answer="loopsense.platform.execute.files:FileUpload"),
}
