"""What the settings routes answer (spec/thresholds.md): the shapes of service.py's dicts, for
the OpenAPI document and the SDKs' types. The thresholds are the catalog's
(skills/thresholds.py): one property per threshold, so a new one shows here by itself.
tests/e2e/test_contract_answers.py validates real answers against the document.
"""

from __future__ import annotations

from typing import Literal

from pydantic import with_config
from typing_extensions import TypedDict

from loopsense.skills.thresholds import THRESHOLDS
from loopsense.validation import ANSWER

Value = int | float | bool


@with_config(ANSWER)
class ThresholdView(TypedDict):
    value: Value  # the one applied
    default: Value
    min: Value | None
    max: Value | None  # time_budget_ms: the plan's cap
    type: Literal["integer", "number", "boolean"]
    configured: Value | None  # the tenant's own setting
    used_by: str


# One key per threshold of the catalog.
ThresholdViews = TypedDict(  # type: ignore[misc]
    "ThresholdViews", dict.fromkeys(sorted(THRESHOLDS), ThresholdView))
with_config(ANSWER)(ThresholdViews)


@with_config(ANSWER)
class ThresholdsAnswer(TypedDict):
    plan: str
    thresholds: ThresholdViews  # type: ignore[valid-type]


@with_config(ANSWER)
class TimeBudgetAnswer(TypedDict):
    time_budget_ms: int  # the one applied: the configured one, or the default, up to the cap
    max_time_budget_ms: int  # the plan's cap
    plan: str
    configured_time_budget_ms: int | None
    default_time_budget_ms: int
    clamped: bool  # the configured one is above the cap
