"""Configuration, read once from the environment (LOOPSENSE_*), the same on AWS and locally.

Table names have no default: a function deployed without one fails at its cold start with a
ConfigurationError naming the variable, instead of answering 503 to every request. The local
server, the CLI and the tests set them explicitly (loopsense_local.tables.use_local_tables).

A dataclass read by hand, not pydantic-settings: thirteen flat fields of three kinds, and the
library brought pydantic (about 0.14 s) into the cold start of functions that validate nothing,
the authorizer first (docs/decisions.md).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass, fields
from functools import lru_cache
from typing import Any, Literal, get_args

from loopsense.errors import ConfigurationError

ENV_PREFIX = "LOOPSENSE_"
_FROM_ENV: Any = object()  # a field not given: its LOOPSENSE_* variable, else its default
SkillInvoker = Literal["lambda", "inprocess"]


@dataclass(frozen=True)
class Settings:
    """Fields given as arguments win; the others come from the environment (``env_name``)."""

    tenants_table: str = _FROM_ENV
    api_keys_table: str = _FROM_ENV
    plans_table: str = _FROM_ENV
    usage_table: str = _FROM_ENV
    rate_limits_table: str = _FROM_ENV
    idempotency_table: str = _FROM_ENV
    runs_table: str = _FROM_ENV
    telemetry_table: str = _FROM_ENV
    # None: the standard AWS configuration (AWS_ENDPOINT_URL_DYNAMODB, region, credentials).
    dynamodb_endpoint: str | None = _FROM_ENV
    # None: boto3's own (AWS_REGION on Lambda, the profile elsewhere)
    region: str | None = _FROM_ENV
    # Seconds a store call may take before the request answers PLAN_ELIGIBILITY_UNAVAILABLE.
    store_timeout_s: float = _FROM_ENV
    # "lambda": the router invokes each skill's function by name; "inprocess": the local server.
    skill_invoker: SkillInvoker = _FROM_ENV
    # The bucket of file inputs (POST /v1/files); None: file inputs are off.
    files_bucket: str | None = _FROM_ENV
    # None: the standard AWS configuration; else an S3 endpoint (the local server's own).
    s3_endpoint: str | None = _FROM_ENV

    def __post_init__(self) -> None:
        problems = []
        for name in FIELDS:
            value = getattr(self, name)
            if value is _FROM_ENV:
                value = os.environ.get(env_name(name), DEFAULTS.get(name, _FROM_ENV))
            if value is _FROM_ENV:
                problems.append(f"{env_name(name)} is not set")
                continue
            try:
                object.__setattr__(self, name, _PARSE.get(name, _text)(value))
            except ValueError as error:
                problems.append(f"{env_name(name)} is invalid ({error})")
        if problems:
            raise ConfigurationError("loopsense configuration: " + "; ".join(sorted(problems)))


def _text(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValueError("must be text")
    return value


def _seconds(value: Any) -> float:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ValueError("must be a number") from None
    if not math.isfinite(seconds):
        raise ValueError("must be a finite number")
    return seconds


def _invoker(value: Any) -> str:
    if value not in get_args(SkillInvoker):
        raise ValueError("must be one of " + ", ".join(get_args(SkillInvoker)))
    return str(value)


FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Settings))
DEFAULTS: dict[str, Any] = {"dynamodb_endpoint": None, "region": None, "store_timeout_s": 2.0,
                            "skill_invoker": "lambda", "files_bucket": None, "s3_endpoint": None}
_PARSE: dict[str, Callable[[Any], Any]] = {"store_timeout_s": _seconds, "skill_invoker": _invoker}
# The settings that name a DynamoDB table: every function that reads the store needs them all.
TABLE_FIELDS: tuple[str, ...] = tuple(n for n in FIELDS if n.endswith("_table"))


def env_name(field: str) -> str:
    """The environment variable of a Settings field: tenants_table -> LOOPSENSE_TENANTS_TABLE."""
    return ENV_PREFIX + field.upper()


@lru_cache(maxsize=1)
def settings() -> Settings:
    return Settings()
