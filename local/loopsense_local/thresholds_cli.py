"""`loopsense thresholds get|set`: a tenant's detector thresholds, two ways, one set of rules.

- Operators, against the store: ``--tenant T`` (the endpoint from --dynamodb-endpoint or the
  environment, like every operator command) runs loopsense.platform.settings.service in-process.
- Tenants, over HTTP: ``--api-url URL --api-key KEY`` (or LOOPSENSE_BASE_URL and
  LOOPSENSE_API_KEY) calls GET/PUT /v1/detector-thresholds, whose handler runs the same code.

``set`` takes ``NAME=VALUE`` pairs; VALUE is read as JSON (``5``, ``0.3``; ``null`` goes back to
the default) and anything that is not JSON is sent as a string, for the rules to refuse. The
answer (the full set, as GET /v1/detector-thresholds shows it) is printed on stdout; an error
envelope goes to stderr, exit 1.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from loopsense import jsonio
from loopsense.errors import LoopsenseError, error_envelope

PATH = "/v1/detector-thresholds"
URL_ENV, KEY_ENV = "LOOPSENSE_BASE_URL", "LOOPSENSE_API_KEY"
USAGE = (f"give --tenant T (operator: the store) or --api-url URL and --api-key KEY (tenant: "
         f"the API; or {URL_ENV} and {KEY_ENV})")


class UsageError(Exception):
    """The command line is wrong (exit 2), as opposed to a refused request (exit 1)."""


def parse_assignments(pairs: Sequence[str]) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep or not name:
            raise UsageError(f"expected NAME=VALUE, got {pair!r}")
        try:
            body[name] = json.loads(text)
        except ValueError:
            body[name] = text
    return body


@dataclass(frozen=True)
class Target:
    tenant: str | None = None  # operator: against the store
    api_url: str | None = None  # tenant: over HTTP
    api_key: str | None = None


def target(tenant: str | None, api_url: str | None, api_key: str | None) -> Target:
    """Flags first, then the environment; --tenant and --api-key exclude each other."""
    if tenant and (api_url or api_key):
        raise UsageError("--tenant (operator) and --api-url/--api-key (tenant) exclude each other")
    if tenant:
        return Target(tenant=tenant)
    url, key = api_url or os.environ.get(URL_ENV), api_key or os.environ.get(KEY_ENV)
    if not url or not key:
        raise UsageError(USAGE)
    return Target(api_url=url.rstrip("/"), api_key=key)


def over_http(where: Target, method: str, body: dict[str, Any] | None,
              timeout: float = 30) -> tuple[bool, dict[str, Any]]:
    """One request to the API: (succeeded, its JSON answer or error envelope)."""
    data = None if body is None else jsonio.dumps(body).encode()
    request = urllib.request.Request(
        f"{where.api_url}{PATH}", data=data, method=method,
        headers={"Authorization": f"Bearer {where.api_key}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:  # noqa: S310 - our API
            return True, dict(json.loads(answer.read()))
    except urllib.error.HTTPError as failed:
        try:
            return False, dict(json.loads(failed.read()))
        except ValueError:
            raise UsageError(f"the API answered HTTP {failed.code} without JSON") from None
    except urllib.error.URLError as unreachable:
        raise UsageError(f"cannot reach {where.api_url}: {unreachable.reason}") from None


def run(action: str, where: Target, body: dict[str, Any] | None,
        settings: Any = None) -> tuple[bool, dict[str, Any]]:
    """``get`` or ``set`` for ``where``; ``settings``: a TenantSettings for the operator path."""
    if where.tenant is None:
        return over_http(where, "GET" if action == "get" else "PUT", body)
    try:
        if action == "get":
            return True, dict(settings.thresholds(where.tenant))
        return True, dict(settings.set_thresholds(where.tenant, body))
    except LoopsenseError as error:
        return False, error_envelope(error, "cli")
