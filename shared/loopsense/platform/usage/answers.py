"""What GET /v1/usage answers (service.py's dict), for the OpenAPI document and the SDKs'
types; tests/e2e/test_contract_answers.py validates real answers against the document."""

from __future__ import annotations

from pydantic import with_config
from typing_extensions import TypedDict

from loopsense.validation import ANSWER


@with_config(ANSWER)
class Credits(TypedDict):
    used: int  # this period
    quota: int  # the plan's credits per month


@with_config(ANSWER)
class UsageDay(TypedDict):
    day: str  # YYYY-MM-DD (UTC)
    calls: int  # charged calls
    bySkill: dict[str, int]


@with_config(ANSWER)
class UsageAnswer(TypedDict):
    plan: str
    period: str  # YYYY-MM
    credits: Credits
    days: list[UsageDay]  # the last 30, oldest first
