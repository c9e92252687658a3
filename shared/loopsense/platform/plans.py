"""Plans: the spec's defaults, derived from the catalog, unless an operator stored a plan row.

A plan row in the Plans table wins over the default of the same name, so an operator changes a
plan with `loopsense plans set` and no deploy.
"""

from __future__ import annotations

from loopsense.errors import LoopsenseError
from loopsense.platform.catalog import CATALOG
from loopsense.store.accounts import Accounts, Plan

# name: (credits per calendar month, requests per second, max time_budget_ms)
_DEFAULT_LIMITS = {
    "hobby": (1_000, 5, 600_000),
    "team": (100_000, 50, 3_600_000),
    "enterprise": (10_000_000, 500, 86_400_000),
}
PLAN_NAMES = tuple(_DEFAULT_LIMITS)


def default_plan(name: str) -> Plan | None:
    if name not in _DEFAULT_LIMITS:
        return None
    credits, rps, max_budget = _DEFAULT_LIMITS[name]
    skills = tuple(sorted(k for k, s in CATALOG.items() if name in s.plans))
    return Plan(name, credits, rps, skills, max_budget)


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
