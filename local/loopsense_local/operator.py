"""The operator's commands: tenants, keys, plans and usage, straight against the store.

The same code talks to the embedded store of a running `loopsense serve` or a real DynamoDB:
the endpoint comes from --dynamodb-endpoint or the environment (LOOPSENSE_DYNAMODB_ENDPOINT,
or the standard AWS configuration).
"""

from __future__ import annotations

import secrets
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from loopsense.core.instants import stamp
from loopsense.errors import validation_error
from loopsense.platform.access.plans import all_plans, find_plan, resolve_plan
from loopsense.platform.settings.service import existing_tenant, no_tenant
from loopsense.store.accounts import Accounts, Plan
from loopsense.store.dynamo import ConditionFailed
from loopsense.store.metering import Metering, period_of


def now_iso() -> str:
    return stamp(datetime.now(UTC))


def create_tenant(accounts: Accounts, plan: str, tenant_id: str | None) -> dict[str, Any]:
    resolve_plan(accounts, plan)
    tenant_id = tenant_id or "t_" + secrets.token_hex(6)
    try:
        accounts.create_tenant(tenant_id, plan, now_iso())
    except ConditionFailed:
        raise validation_error("tenantId", "names a tenant that exists already") from None
    return {"tenantId": tenant_id, "plan": plan}


def set_tenant_plan(accounts: Accounts, tenant_id: str, plan: str) -> dict[str, Any]:
    resolve_plan(accounts, plan)
    try:
        accounts.set_tenant_plan(tenant_id, plan)  # on condition that the tenant exists
    except ConditionFailed:
        raise no_tenant() from None
    return {"tenantId": tenant_id, "plan": plan}


def issue_key(accounts: Accounts, tenant_id: str, skills: list[str]) -> dict[str, Any]:
    existing_tenant(accounts, tenant_id)
    secret, key = accounts.issue_key(tenant_id, tuple(skills), now_iso())
    return {"apiKey": secret, "keyId": key.key_id, "tenantId": tenant_id,
            "skills": list(key.scopes), "note": "shown once; only its SHA-256 digest is stored"}


def revoke_key(accounts: Accounts, tenant_id: str, key_id: str) -> dict[str, Any]:
    if not accounts.revoke_key(tenant_id, key_id, now_iso()):
        raise validation_error("keyId", "names no key of this tenant")
    return {"keyId": key_id, "status": "revoked"}


def list_keys(accounts: Accounts, tenant_id: str) -> list[dict[str, Any]]:
    existing_tenant(accounts, tenant_id)  # a mistyped tenant is an error, not "no keys"
    return [{"keyId": k.key_id, "skills": list(k.scopes), "status": k.status,
             "createdAt": k.created_at} for k in accounts.keys(tenant_id)]


def set_plan(accounts: Accounts, name: str, changes: dict[str, Any]) -> dict[str, Any]:
    # A store that is down raises here; only a plan that exists nowhere is a new one.
    current = find_plan(accounts, name)
    if current is None:
        missing = [f for f in ("credits_per_month", "requests_per_second", "skills",
                               "max_time_budget_ms") if changes.get(f) is None]
        if missing:
            raise validation_error("plan", f"a new plan needs {', '.join(missing)}")
    values = {k: v for k, v in changes.items() if v is not None}
    if "skills" in values:
        values["skills"] = tuple(sorted(set(values["skills"])))
    for field in ("credits_per_month", "requests_per_second", "max_time_budget_ms"):
        if field in values and values[field] < 0:
            raise validation_error(field, "must be >= 0")
    plan = replace(current, **values) if current else Plan(name=name, **values)
    accounts.set_plan(plan)
    return plan.as_item()


def list_plans(accounts: Accounts) -> list[dict[str, Any]]:
    return [p.as_item() for p in all_plans(accounts)]


def usage(accounts: Accounts, metering: Metering, tenant_id: str,
          period: str | None) -> dict[str, Any]:
    tenant = existing_tenant(accounts, tenant_id)
    period = period or period_of(datetime.now(UTC))
    plan = resolve_plan(accounts, tenant["plan"])
    records = metering.records(tenant_id, period)
    return {"tenantId": tenant_id, "plan": plan.name, "period": period,
            "used": metering.used(tenant_id, period), "quota": plan.credits_per_month,
            "calls": len(records), "records": [r.as_item() for r in records]}
