"""Plans: the spec's defaults (catalog.PLANS, each with the catalog skills sold on it), unless
an operator stored a plan row.

A plan row in the Plans table wins over the default of the same name, so an operator changes a
plan with `loopsense plans set` and no deploy.
"""

from __future__ import annotations

from loopsense.errors import LoopsenseError
from loopsense.platform.catalog import CATALOG, PLANS
from loopsense.store.accounts import Accounts, Plan

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
    plan = find_plan(accounts, name)
    if plan is None:
        raise LoopsenseError("PLAN_ELIGIBILITY_UNAVAILABLE", "the tenant's plan is not defined",
                             retry_after=60)
    return plan


def all_plans(accounts: Accounts) -> list[Plan]:
    stored = {p.name: p for p in accounts.stored_plans()}
    defaults = [stored.pop(n, None) or default_plan(n) for n in PLAN_NAMES]
    return [p for p in defaults if p is not None] + sorted(stored.values(), key=lambda p: p.name)
