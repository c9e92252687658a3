"""The one gate: who may call what, and with which thresholds (spec/platform.md's order).

Every metered call passes it in the same order: the key's grant of the skill, the plan's
inclusion of it, the plan's requests per second, the plan's credits of the month. Execute
(POST /v1/execute) and the runs API (whose rules are agent.run_monitor's) admit through
``Gate``; ingestion, which is neither granted nor metered, takes the tenant's thresholds from
here too (``execution_thresholds``), so one execution, one run and one skill call are judged
by the same values.

A tenant's thresholds travel with the authorizer's context (the tenant item's ``thresholds``
map, ``Identity.thresholds``). Every write is checked, so a stored value that is invalid today
can only come from a raw write or from bounds tightened by a later version: it is ignored (the
default applies, and a warning names it) rather than failing every call of the tenant.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from loopsense.errors import LoopsenseError
from loopsense.observability import logger
from loopsense.platform.access.plans import plan_cap, plan_of, quota_exceeded, rate_limited
from loopsense.platform.access.retry import until_settled
from loopsense.platform.http.auth import Identity
from loopsense.skills.thresholds import PLAN_CAP, THRESHOLDS, check
from loopsense.store.accounts import Plan
from loopsense.store.dynamo import unavailable
from loopsense.store.metering import Metering
from loopsense.store.shards import Credits

TIME_BUDGET = "time_budget_ms"


def valid_stored(raw: Any) -> tuple[dict[str, int | float], list[str]]:
    """The stored values that are valid today, and the known names whose value is not (unknown
    names are skipped)."""
    values: dict[str, int | float] = {}
    ignored: list[str] = []
    if not isinstance(raw, Mapping):
        return values, ignored
    for name in THRESHOLDS:
        if name in raw:
            try:
                values[name] = check(name, raw[name], name)
            except LoopsenseError:
                ignored.append(name)
    return values, ignored


def applied(valid: dict[str, int | float], cap: int) -> dict[str, int | float]:
    """What a skill is handed as ``tenant_thresholds``: the tenant's valid values (from
    valid_stored), the time budget clamped to the plan's cap, and the cap itself."""
    values = dict(valid)
    if TIME_BUDGET in values:
        values[TIME_BUDGET] = min(values[TIME_BUDGET], cap)
    values[PLAN_CAP] = cap
    return values


def tenant_thresholds(tenant_id: str, stored: Any, cap: int) -> dict[str, int | float]:
    """The tenant's stored thresholds as they apply under a plan's cap (``applied``); a stored
    value no longer valid is ignored and named in a warning (names only, never values)."""
    values, ignored = valid_stored(stored)
    if ignored:
        logger.warning("stored thresholds ignored", extra={"tenant": tenant_id,
                                                           "thresholds": ignored})
    return applied(values, cap)


def execution_thresholds(tenant_id: str, stored: Any, cap: int) -> dict[str, int | float]:
    """Every threshold's value for a new telemetry execution: the tenant's valid setting, else
    the default; the time budget clamped to the plan's cap (defaults included)."""
    values = tenant_thresholds(tenant_id, stored, cap)
    out = {name: values.get(name, spec.default) for name, spec in THRESHOLDS.items()}
    out[TIME_BUDGET] = min(out[TIME_BUDGET], cap)
    return out


@dataclass(frozen=True)
class Admitted:
    """A caller the gate let through: the tenant, its plan, the thresholds that apply."""

    tenant_id: str
    plan: Plan
    thresholds: dict[str, Any]


@dataclass(frozen=True)
class Offer:
    """What is being admitted to: a skill, and how refusals name it (the runs API names
    itself; execute says "the skill")."""

    skill: str
    name: str | None = None  # None: "the skill"
    plans_note: str = ""  # e.g. "team and enterprise plans"

    def not_granted(self) -> str:
        if self.name is None:
            return "this API key is not granted the skill"
        return f"this API key is not granted {self.skill} ({self.name})"

    def not_on_plan(self, plan: str) -> str:
        if self.name is None:
            return f"the {plan} plan does not include this skill"
        return f"the {plan} plan does not include {self.name} ({self.skill}: {self.plans_note})"


class Gate:
    """``plans(name)``: the plan of that name (stored row or default; a cache may stand in
    front); ``metering``: the rate counters and the credit meter."""

    def __init__(self, plans: Callable[[str], Plan], metering: Metering) -> None:
        self.plans, self.metering = plans, metering

    def admit(self, identity: Identity, offer: Offer) -> Admitted:
        """Grant, then plan: SKILL_NOT_ACCESSIBLE, SKILL_NOT_AVAILABLE_FOR_PLAN (or
        PLAN_ELIGIBILITY_UNAVAILABLE when the plan is not defined)."""
        self._granted(identity, offer)
        return self._on_plan(identity, offer, self.plans(identity.plan))

    def admit_metered(self, identity: Identity, offer: Offer, period: str
                      ) -> tuple[Admitted, Credits]:
        """``admit``, and where the charge of ``period`` goes with what it holds: the plan row
        and a shard of the credits read in one request (execute's path; the runs API caches
        plans and reads its shard with its own items)."""
        self._granted(identity, offer)
        stored, credits = self.metering.plan_and_credits(identity.tenant_id, period,
                                                         identity.plan)
        return self._on_plan(identity, offer, plan_of(stored, identity.plan)), credits

    @staticmethod
    def _granted(identity: Identity, offer: Offer) -> None:
        if not identity.grants(offer.skill):
            raise LoopsenseError("SKILL_NOT_ACCESSIBLE", offer.not_granted())

    @staticmethod
    def _on_plan(identity: Identity, offer: Offer, plan: Plan) -> Admitted:
        if not plan.allows(offer.skill):
            raise LoopsenseError("SKILL_NOT_AVAILABLE_FOR_PLAN", offer.not_on_plan(plan.name))
        return Admitted(identity.tenant_id, plan,
                        tenant_thresholds(identity.tenant_id, identity.thresholds,
                                          plan_cap(plan)))

    def rate(self, caller: Admitted, epoch: int) -> None:
        """One request against the plan's requests per second, in a write of its own (sent
        again while the counter is in a step batch's transaction in flight)."""
        if not until_settled(lambda: self.metering.admit(caller.tenant_id, epoch,
                                                         caller.plan.requests_per_second),
                             unavailable):
            raise rate_limited(caller.plan)

    def admission(self, caller: Admitted, epoch: int) -> dict[str, Any]:
        """The same request counted inside the caller's own transaction (its first action: a
        refusal of it is TENANT_RATE_LIMITED)."""
        if caller.plan.requests_per_second <= 0:
            raise rate_limited(caller.plan)
        return {"Update": self.metering.admission(caller.tenant_id, epoch,
                                                  caller.plan.requests_per_second)}

    def other_admission(self, caller: Admitted, refused: dict[str, Any]
                        ) -> dict[str, Any] | None:
        """``admission`` on another shard of the second, for once the first shard refused it
        (None: the second has one shard; TENANT_RATE_LIMITED)."""
        other = self.metering.other_admission(refused["Update"],
                                              caller.plan.requests_per_second)
        return None if other is None else {"Update": other}

    def quota(self, caller: Admitted, now: datetime, cost: int, credits: Credits
              ) -> tuple[LoopsenseError, Credits]:
        """QUOTA_EXCEEDED if ``cost`` more credits fit nowhere in the month's: not in
        ``credits`` (as read) nor, after reading the period, in another shard. Else the error to
        raise should the charge itself lose the race for the last credits, and where to charge."""
        error = quota_exceeded(caller.plan, now)
        where = self.metering.where(caller.tenant_id, credits, caller.plan.credits_per_month,
                                    cost)
        if where is None:
            raise error
        return error, where
