"""Bearer-key authentication, shared by the Lambda authorizer and the router.

The HTTP API authorizer always *allows* and hands the router either the caller's identity or
the reason it has none: HTTP APIs cannot shape a denied request's response, and every error must
reach the caller in the one envelope (docs/decisions.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from loopsense import jsonio
from loopsense.errors import LoopsenseError
from loopsense.observability import logger
from loopsense.store.accounts import ALL_SKILLS, Accounts
from loopsense.store.dynamo import unavailable

# What a key can look like: the prefix and URL-safe base64. Anything else never hits the store.
KEY_FORMAT = re.compile(r"^ls_[A-Za-z0-9_-]{20,128}$")
# The scope that lets a key change the tenant's settings (thresholds, time budget, routing,
# retention); "*" includes it. A key scoped to some skills may read them, not change them.
SETTINGS_SCOPE = "settings"


@dataclass(frozen=True, slots=True)
class Identity:
    tenant_id: str
    key_id: str
    plan: str
    scopes: tuple[str, ...]
    # The tenant item's `thresholds` map as stored (platform.tenant_settings checks it): read
    # with the tenant by the authorizer, so the router needs no second read of the item.
    thresholds: Mapping[str, Any] = field(default_factory=dict)

    def grants(self, skill_key: str) -> bool:
        return ALL_SKILLS in self.scopes or skill_key in self.scopes

    def changing_settings(self) -> Identity:
        """This identity, if its key may change the tenant's settings: granted "*" or
        "settings" (docs/security.md); else SKILL_NOT_ACCESSIBLE."""
        if not self.grants(SETTINGS_SCOPE):
            raise LoopsenseError("SKILL_NOT_ACCESSIBLE", "this API key may not change the "
                                 f"tenant's settings (scope '{SETTINGS_SCOPE}')")
        return self


def unauthorized(reason: str) -> LoopsenseError:
    return LoopsenseError("UNAUTHORIZED", reason)


def authenticate(authorization: str | None, accounts: Accounts) -> Identity:
    if not authorization:
        raise unauthorized("missing Authorization header")
    scheme, _, secret = authorization.partition(" ")
    secret = secret.strip()
    if scheme.lower() != "bearer" or not KEY_FORMAT.match(secret):
        raise unauthorized("malformed API key; expected 'Authorization: Bearer <key>'")
    key = accounts.find_key(secret)
    if key is None or key.status != "active":
        raise unauthorized("unknown or revoked API key")
    tenant = accounts.tenant(key.tenant_id)
    if tenant is None or tenant.get("status") != "active":
        raise unauthorized("the key's tenant is not active")
    stored = tenant.get("thresholds")
    return Identity(key.tenant_id, key.key_id, tenant["plan"], key.scopes,
                    stored if isinstance(stored, dict) else {})


def authorizer_context(authorization: str | None, accounts: Accounts) -> dict[str, Any]:
    """The authorizer's answer: identity fields, or the error code the router must return."""
    try:
        identity = authenticate(authorization, accounts)
    except LoopsenseError as error:
        return {"authError": error.code, "authReason": error.message}
    except Exception as exc:  # noqa: BLE001 - e.g. a malformed tenant item: still the envelope
        logger.error("authorizer crashed", extra={"exception": type(exc).__name__})
        return {"authError": "INTERNAL_ERROR", "authReason": "unexpected failure"}
    # Context values are strings: the thresholds map travels as JSON.
    return {"tenantId": identity.tenant_id, "keyId": identity.key_id, "plan": identity.plan,
            "scopes": ",".join(identity.scopes), "thresholds": jsonio.dumps(identity.thresholds)}


def identity_from_context(context: dict[str, Any]) -> Identity:
    """The router's side: rebuild the identity, or raise the authorizer's error."""
    code = context.get("authError")
    if code or not context.get("tenantId"):
        message = context.get("authReason") or "missing or invalid API key"
        if code == "PLAN_ELIGIBILITY_UNAVAILABLE":
            raise unavailable()
        if code == "INTERNAL_ERROR":
            raise LoopsenseError("INTERNAL_ERROR", "unexpected failure")
        raise unauthorized(str(message))
    scopes = tuple(s for s in str(context.get("scopes", "")).split(",") if s)
    return Identity(str(context["tenantId"]), str(context["keyId"]), str(context["plan"]), scopes,
                    _thresholds(context.get("thresholds")))


def _thresholds(raw: Any) -> dict[str, Any]:
    """The context's thresholds JSON; absent or unreadable: none (the defaults apply)."""
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
