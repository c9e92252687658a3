"""Running a skill for the router: its own Lambda by name on AWS, a worker thread locally.

Either way the skill answers ``{"output": ...}`` or the error envelope
(platform/execute/skill_handler.py), given the tenant's thresholds as the router hands them
over (``tenant_thresholds``; the Lambda payload's ``tenantThresholds``). A skill that runs past
its time budget is EXECUTION_TIMEOUT: its late answer is discarded and nothing is charged.
Lambda's own refusals (docs/faults.md): a throttled function is SERVER_BUSY (503, Retry-After), a
payload over Lambda's limit a VALIDATION_ERROR naming the input and the limit, anything else
(a function that crashed, a service error) INTERNAL_ERROR; none of them is charged.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Protocol

from loopsense.errors import LoopsenseError, validation_error
from loopsense.observability import logger
from loopsense.platform.access.catalog import Skill
from loopsense.platform.execute.skill_handler import call_skill


def timed_out() -> LoopsenseError:
    return LoopsenseError("EXECUTION_TIMEOUT", "the skill did not finish within its time budget")


class Invoker(Protocol):
    def invoke(self, skill: Skill, raw_input: Any, request_id: str,
               tenant_thresholds: Mapping[str, Any] | None = None) -> dict[str, Any]: ...


class InProcessInvoker:
    """The local server's invoker: the same call each skill's Lambda makes, in a worker thread."""

    def __init__(self, workers: int = 16) -> None:
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="skill")

    def invoke(self, skill: Skill, raw_input: Any, request_id: str,
               tenant_thresholds: Mapping[str, Any] | None = None) -> dict[str, Any]:
        future = self._pool.submit(call_skill, skill, raw_input, request_id, tenant_thresholds)
        try:
            return future.result(timeout=skill.timeout_ms / 1000)
        except FutureTimeout:
            raise timed_out() from None


# Lambda's answers to Invoke that mean "too many at once, retry shortly" (its API reference).
THROTTLED = frozenset({"TooManyRequestsException", "EC2ThrottledException",
                       "ResourceConflictException"})
# ... and that the payload is over the limit of a synchronous invocation (its request and its
# response: 6 MB each); the older name, the current one, and the serialized request's.
TOO_LARGE = frozenset({"RequestEntityTooLargeException", "RequestTooLargeException",
                       "SerializedRequestEntityTooLargeException"})
PAYLOAD_LIMIT = "6 MB"


def lambda_refused(code: str) -> LoopsenseError:
    if code in THROTTLED:
        return LoopsenseError("SERVER_BUSY", "the skill's function is busy")
    if code in TOO_LARGE:
        return validation_error("input", f"is too large to hand to the skill (at most "
                                         f"{PAYLOAD_LIMIT} with its envelope)")
    return LoopsenseError("INTERNAL_ERROR", "the skill could not be called")


def function_env_name(skill: Skill) -> str:
    """The router's environment variable holding the skill function's name (template.yaml)."""
    return f"LOOPSENSE_FUNCTION_{skill.function}"


class LambdaInvoker:
    def __init__(self, client: Any | None = None) -> None:
        import boto3
        from botocore.config import Config

        self._client = client or boto3.client(
            # Longer than any skill's budget, shorter than the router's own 29 s.
            "lambda", config=Config(read_timeout=25, retries={"max_attempts": 0})
        )

    def invoke(self, skill: Skill, raw_input: Any, request_id: str,
               tenant_thresholds: Mapping[str, Any] | None = None) -> dict[str, Any]:
        from botocore.exceptions import BotoCoreError, ClientError, ReadTimeoutError

        event: dict[str, Any] = {"input": raw_input, "requestId": request_id}
        if tenant_thresholds is not None:
            event["tenantThresholds"] = dict(tenant_thresholds)
        # As UTF-8, not \u escapes: non-ASCII text would grow sixfold toward Lambda's 6 MB.
        payload = json.dumps(event, ensure_ascii=False).encode()
        try:
            answer = self._client.invoke(FunctionName=os.environ[function_env_name(skill)],
                                         Payload=payload)
        except ReadTimeoutError:
            raise timed_out() from None
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            logger.warning("skill invoke refused", extra={"skill": skill.key, "code": code})
            raise lambda_refused(code) from None
        except BotoCoreError as exc:
            logger.warning("skill invoke failed",
                           extra={"skill": skill.key, "exception": type(exc).__name__})
            raise lambda_refused("") from None
        body = json.loads(answer["Payload"].read() or b"null")
        if answer.get("FunctionError"):
            if isinstance(body, dict) and "timed out" in str(body.get("errorMessage", "")):
                raise timed_out()
            raise LoopsenseError("INTERNAL_ERROR", "the skill failed unexpectedly")
        return body  # type: ignore[no-any-return]
