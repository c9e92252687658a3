"""Plans: the spec's defaults (catalog.PLANS, each with the catalog skills sold on it), unless
an operator stored a plan row.

A plan row in the Plans table wins over the default of the same name, so an operator changes a
plan with `loopsense plans set` and no deploy.
"""

from __future__ import annotations

from datetime import datetime

from loopsense.errors import LoopsenseError
from loopsense.platform.access.catalog import CATALOG, PLANS
from loopsense.skills.thresholds import THRESHOLDS
from loopsense.store.accounts import Accounts, Plan
from loopsense.store.metering import period_of

PLAN_NAMES = tuple(PLANS)


def default_plan(name: str) -> Plan | None:
    defaults = PLANS.get(name)
    if defaults is None:
        return None
    skills = tuple(sorted(k for k, s in CATALOG.items() if name in s.plans))
    return Plan(name, defaults.credits_per_month, defaults.requests_per_second, skills,
                defaults.max_time_budget_ms)


def find_plan(accounts: Accounts, name: str) -> Plan | None:
    """The stored plan row, else the default of that name, else None."""
    return accounts.stored_plan(name) or default_plan(name)


def resolve_plan(accounts: Accounts, name: str) -> Plan:
    return plan_of(accounts.stored_plan(name), name)


def plan_of(stored: Plan | None, name: str) -> Plan:
    """The stored row of plan ``name`` (read by the caller), else its default, else the error
    of a tenant whose plan is not defined."""
    plan = stored or default_plan(name)
    if plan is None:
        raise LoopsenseError("PLAN_ELIGIBILITY_UNAVAILABLE", "the tenant's plan is not defined",
                             retry_after=60)
    return plan


def plan_cap(plan: Plan) -> int:
    """The plan's cap on time_budget_ms; no plan goes beyond the spec's bound (24 h)."""
    return min(plan.max_time_budget_ms, int(THRESHOLDS["time_budget_ms"].high))


def next_month_in_seconds(now: datetime) -> int:
    first = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    following = first.replace(year=first.year + 1, month=1) if first.month == 12 else \
        first.replace(month=first.month + 1)
    return max(1, int((following - now).total_seconds() + 0.999))


def rate_limited(plan: Plan) -> LoopsenseError:
    """The plan's requests per second are used (POST /v1/execute and the runs API)."""
    return LoopsenseError("TENANT_RATE_LIMITED",
                          f"more than {plan.requests_per_second} requests per second",
                          retry_after=1)


def quota_exceeded(plan: Plan, now: datetime) -> LoopsenseError:
    """The plan's credits of this month are used: retry when the next month starts."""
    return LoopsenseError(
        "QUOTA_EXCEEDED",
        f"the plan's {plan.credits_per_month} credits for {period_of(now)} are used",
        retry_after=next_month_in_seconds(now))


def all_plans(accounts: Accounts) -> list[Plan]:
    stored = {p.name: p for p in accounts.stored_plans()}
    defaults = [stored.pop(n, None) or default_plan(n) for n in PLAN_NAMES]
    return [p for p in defaults if p is not None] + sorted(stored.values(), key=lambda p: p.name)
