"""Tenants, API keys and plans. Keys are stored only as SHA-256 digests of the secret."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from loopsense.settings import Settings
from loopsense.store.dynamo import ConditionFailed, Dynamo, from_item, to_item

KEY_PREFIX = "ls_"
ALL_SKILLS = "*"


def key_digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def new_secret() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


@dataclass(frozen=True, slots=True)
class Plan:
    name: str
    credits_per_month: int
    requests_per_second: int
    skills: tuple[str, ...]  # ("*",) = all
    max_time_budget_ms: int

    def allows(self, skill_key: str) -> bool:
        return ALL_SKILLS in self.skills or skill_key in self.skills

    @staticmethod
    def key(name: str) -> dict[str, Any]:
        """The plans table's key of the row of plan ``name``."""
        return {"plan": name}

    def as_item(self) -> dict[str, Any]:
        return {**self.key(self.name), "creditsPerMonth": self.credits_per_month,
                "requestsPerSecond": self.requests_per_second, "skills": list(self.skills),
                "maxTimeBudgetMs": self.max_time_budget_ms}

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> Plan:
        return cls(item["plan"], item["creditsPerMonth"], item["requestsPerSecond"],
                   tuple(item["skills"]), item["maxTimeBudgetMs"])


@dataclass(frozen=True, slots=True)
class ApiKey:
    key_id: str
    tenant_id: str
    scopes: tuple[str, ...]
    status: str
    created_at: str


class Accounts:
    def __init__(self, db: Dynamo, settings: Settings) -> None:
        self.db = db
        self.s = settings

    # tenants -------------------------------------------------------------------------------
    def create_tenant(self, tenant_id: str, plan: str, now: str) -> None:
        self.db.put(self.s.tenants_table,
                    {"tenantId": tenant_id, "plan": plan, "status": "active", "createdAt": now},
                    condition="attribute_not_exists(tenantId)")

    def tenant(self, tenant_id: str) -> dict[str, Any] | None:
        return self.db.get(self.s.tenants_table, {"tenantId": tenant_id})

    def set_tenant_plan(self, tenant_id: str, plan: str) -> None:
        self.db.call("update_item", TableName=self.s.tenants_table,
                     Key={"tenantId": {"S": tenant_id}}, UpdateExpression="SET #p = :p",
                     ConditionExpression="attribute_exists(tenantId)",
                     ExpressionAttributeNames={"#p": "plan"},
                     ExpressionAttributeValues={":p": {"S": plan}})

    # detector thresholds: a `thresholds` map on the tenant item (spec/thresholds.md) ----------
    def update_thresholds(self, tenant_id: str, plan: str, values: dict[str, int | float],
                          reset: tuple[str, ...], create: bool) -> dict[str, Any]:
        """One conditional UpdateItem: every value in ``values`` set and every name in ``reset``
        removed, or nothing at all. Returns the tenant item as written.

        It holds only while the tenant's plan is still ``plan`` (the values were checked against
        that plan's cap). ``create``: the tenant has no map yet, so it is written whole, on
        condition that it is still absent; otherwise only the named entries of the existing map
        change. ConditionFailed when the tenant is gone, its plan changed, or the map appeared or
        disappeared meanwhile: read the tenant again and retry.
        """
        answer = self.db.call("update_item", TableName=self.s.tenants_table,
                              Key={"tenantId": {"S": tenant_id}}, ReturnValues="ALL_NEW",
                              **thresholds_update(plan, values, reset, create))
        return from_item(answer["Attributes"])

    # plans ---------------------------------------------------------------------------------
    def stored_plan(self, name: str) -> Plan | None:
        item = self.db.get(self.s.plans_table, Plan.key(name))
        return Plan.from_item(item) if item else None

    def stored_plans(self) -> list[Plan]:
        items = self.db.call("scan", TableName=self.s.plans_table).get("Items", [])
        return sorted((Plan.from_item(from_item(i)) for i in items), key=lambda p: p.name)

    def set_plan(self, plan: Plan) -> None:
        self.db.put(self.s.plans_table, plan.as_item())

    # keys ----------------------------------------------------------------------------------
    def issue_key(self, tenant_id: str, scopes: tuple[str, ...], now: str,
                  secret: str | None = None) -> tuple[str, ApiKey]:
        """A new key: the secret is returned once and never stored (only its digest)."""
        secret = secret or new_secret()
        key = ApiKey(key_id="key_" + secrets.token_hex(8), tenant_id=tenant_id,
                     scopes=tuple(sorted(set(scopes))), status="active", created_at=now)
        self.db.put(self.s.api_keys_table,
                    {"keyDigest": key_digest(secret), "keyId": key.key_id,
                     "tenantId": tenant_id, "scopes": list(key.scopes), "status": key.status,
                     "createdAt": now},
                    condition="attribute_not_exists(keyDigest)")
        return secret, key

    def find_key(self, secret: str) -> ApiKey | None:
        item = self.db.get(self.s.api_keys_table, {"keyDigest": key_digest(secret)})
        return _key(item) if item else None

    def keys(self, tenant_id: str) -> list[ApiKey]:
        items = self.db.query(self.s.api_keys_table, IndexName="byTenant",
                              KeyConditionExpression="tenantId = :t",
                              ExpressionAttributeValues={":t": {"S": tenant_id}})
        return sorted((_key(i) for i in items), key=lambda k: (k.created_at, k.key_id))

    def revoke_key(self, tenant_id: str, key_id: str, now: str) -> bool:
        items = self.db.query(self.s.api_keys_table, IndexName="byTenant",
                              KeyConditionExpression="tenantId = :t AND keyId = :k",
                              ExpressionAttributeValues={":t": {"S": tenant_id},
                                                         ":k": {"S": key_id}})
        for item in items:
            try:
                self.db.call("update_item", TableName=self.s.api_keys_table,
                             Key={"keyDigest": {"S": item["keyDigest"]}},
                             UpdateExpression="SET #s = :r, revokedAt = :now",
                             ConditionExpression="attribute_exists(keyDigest)",
                             ExpressionAttributeNames={"#s": "status"},
                             ExpressionAttributeValues={":r": {"S": "revoked"},
                                                        ":now": {"S": now}})
            except ConditionFailed:
                continue
        return bool(items)


def thresholds_update(plan: str, values: dict[str, Any], reset: tuple[str, ...],
                      create: bool) -> dict[str, Any]:
    """UpdateItem's expressions for Accounts.update_thresholds (see there)."""
    names = {"#t": "thresholds", "#p": "plan"}
    args: dict[str, Any] = {":plan": plan}
    if create:
        expression = "SET #t = :all"
        condition = "attribute_not_exists(#t) AND #p = :plan"
        args[":all"] = {name: _number(v) for name, v in values.items()}
    else:
        sets, removes = [], []
        for i, (name, value) in enumerate(sorted(values.items())):
            names[f"#s{i}"], args[f":s{i}"] = name, _number(value)
            sets.append(f"#t.#s{i} = :s{i}")
        for i, name in enumerate(sorted(reset)):
            names[f"#r{i}"] = name
            removes.append(f"#t.#r{i}")
        expression = " ".join(part for part in (
            "SET " + ", ".join(sets) if sets else "",
            "REMOVE " + ", ".join(removes) if removes else "") if part)
        condition = "attribute_exists(#t) AND #p = :plan"
    return {"UpdateExpression": expression, "ConditionExpression": condition,
            "ExpressionAttributeNames": names, "ExpressionAttributeValues": to_item(args)}


def _number(value: Any) -> Any:
    """DynamoDB numbers: floats go through their shortest decimal form (0.2 stays 0.2)."""
    return Decimal(repr(value)) if isinstance(value, float) else value


def _key(item: dict[str, Any]) -> ApiKey:
    return ApiKey(item["keyId"], item["tenantId"], tuple(item.get("scopes", [])),
                  item["status"], item["createdAt"])
