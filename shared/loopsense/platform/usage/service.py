"""GET /v1/usage: the caller's credits this period against its plan's, and its charged calls of
each of the last 30 days (UTC), per skill.

Read from the period items only (UsageTable, ``PERIOD#<yyyy-mm>#<shard>``): each charge adds
its credits to one shard's ``used`` and one to its day's ``calls#<DD>#<skill>`` counter in the
same conditional write (store/metering.py), so the answer is one Query of the (at most two)
periods the 30 days touch, their shards summed, whatever the number of calls, plus the plan
row. Calls are charged
calls (``POST /v1/execute`` answered with an output, accepted step batches): what the credits
count. Free and not rate limited, like the settings routes; any valid key of the tenant.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from loopsense.platform.access.plans import resolve_plan
from loopsense.platform.http.auth import Identity
from loopsense.store.accounts import Accounts
from loopsense.store.metering import Metering, calls_of, period_of

DAYS = 30


class Usage:
    def __init__(self, accounts: Accounts, metering: Metering,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.accounts, self.metering, self.clock = accounts, metering, clock

    def summary(self, identity: Identity) -> dict[str, Any]:
        plan = resolve_plan(self.accounts, identity.plan)
        now = self.clock().astimezone(UTC)
        days = [(now - timedelta(days=back)).date() for back in range(DAYS - 1, -1, -1)]
        periods = sorted({day.strftime("%Y-%m") for day in days})
        items = self.metering.periods(identity.tenant_id, periods)
        counters = {period: calls_of(item) for period, item in items.items()}
        answer_days = []
        for day in days:
            found = counters[day.strftime("%Y-%m")]
            by_skill = {skill: n for (dd, skill), n in sorted(found.items())
                        if dd == day.strftime("%d")}
            answer_days.append({"day": day.isoformat(), "calls": sum(by_skill.values()),
                                "bySkill": by_skill})
        period = period_of(now)
        return {"plan": plan.name, "period": period,
                "credits": {"used": int(items[period].get("used", 0)),
                            "quota": plan.credits_per_month},
                "days": answer_days}
