"""Running one skill on one input: the same path for each skill's Lambda and the CLI.

Returns the skill's answer as ``{"output": ...}`` or the error envelope; it never raises, so a
crash becomes INTERNAL_ERROR. Logs and metrics carry sizes, codes and durations only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from loopsense.errors import LoopsenseError, error_envelope
from loopsense.observability import add_metric, lambda_entry, logger
from loopsense.platform.access.catalog import Skill


def call_skill(skill: Skill, raw_input: Any, request_id: str,
               tenant_thresholds: Mapping[str, Any] | None = None) -> dict[str, Any]:
    started = time.perf_counter()
    code = "OK"
    try:
        result: dict[str, Any] = {"output": skill.runner()(raw_input, tenant_thresholds)}
    except LoopsenseError as error:
        code = error.code
        result = error_envelope(error, request_id)
    except Exception as exc:  # noqa: BLE001 - any crash is answered, never propagated
        code = "INTERNAL_ERROR"
        logger.error("skill crashed", extra={"skill": skill.key, "exception": type(exc).__name__})
        crash = LoopsenseError("INTERNAL_ERROR", "the skill failed unexpectedly")
        result = error_envelope(crash, request_id)
    duration_ms = (time.perf_counter() - started) * 1000
    # The input's item count (events; agent.run_monitor's steps): a size, never content.
    events = (raw_input.get("events", raw_input.get("steps"))
              if isinstance(raw_input, dict) else None)
    logger.info(
        "skill finished",
        extra={
            "skill": skill.key,
            "version": skill.version,
            "code": code,
            "events": len(events) if isinstance(events, list) else None,
            "duration_ms": round(duration_ms, 3),
            "request_id": request_id,
        },
    )
    add_metric("SkillDuration", MetricUnit.Milliseconds, duration_ms)
    add_metric("SkillErrors" if code != "OK" else "SkillSuccesses", MetricUnit.Count, 1)
    return result


def skill_lambda_handler(skill: Skill) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """The Lambda handler of one skill's function: its app.py is this one line of wiring.

    Event (direct invoke by the execute router, or `sam local invoke -e events/<skill>.json`):
    {"input": {...}, "requestId": "...", "tenantThresholds": {...}}; the last is the tenant's
    thresholds and the plan's max_time_budget_ms, read by the router (absent: the defaults).
    Returns {"output": {...}} or the error envelope.
    """

    @lambda_entry
    def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        request_id = event.get("requestId") or context.aws_request_id
        tenant = event.get("tenantThresholds")
        return call_skill(skill, event.get("input"), request_id,
                          tenant if isinstance(tenant, dict) else None)

    return lambda_handler
