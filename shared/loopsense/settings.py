"""Configuration, read once from the environment (LOOPSENSE_*), the same on AWS and locally.

Table names have no default: a function deployed without one fails at its cold start with a
ConfigurationError naming the variable, instead of answering 503 to every request. The local
server, the CLI and the tests set them explicitly (loopsense_local.tables.use_local_tables).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic import ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from loopsense.errors import ConfigurationError

ENV_PREFIX = "LOOPSENSE_"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")

    tenants_table: str
    api_keys_table: str
    plans_table: str
    usage_table: str
    rate_limits_table: str
    idempotency_table: str
    runs_table: str
    telemetry_table: str
    # None: the standard AWS configuration (AWS_ENDPOINT_URL_DYNAMODB, region, credentials).
    dynamodb_endpoint: str | None = None
    region: str | None = None  # None: boto3's own (AWS_REGION on Lambda, the profile elsewhere)
    # Seconds a store call may take before the request answers PLAN_ELIGIBILITY_UNAVAILABLE.
    store_timeout_s: float = 2.0
    # "lambda": the router invokes each skill's function by name; "inprocess": the local server.
    skill_invoker: Literal["lambda", "inprocess"] = "lambda"


# The settings that name a DynamoDB table: every function that reads the store needs them all.
TABLE_FIELDS: tuple[str, ...] = tuple(n for n in Settings.model_fields if n.endswith("_table"))


def env_name(field: str) -> str:
    """The environment variable of a Settings field: tenants_table -> LOOPSENSE_TENANTS_TABLE."""
    return ENV_PREFIX + field.upper()


@lru_cache(maxsize=1)
def settings() -> Settings:
    try:
        return Settings()  # type: ignore[call-arg]  # the fields come from the environment
    except ValidationError as error:
        problems = sorted(
            f"{env_name(str(e['loc'][0]))} " + ("is not set" if e["type"] == "missing"
                                                else f"is invalid ({e['msg']})")
            for e in error.errors())
        raise ConfigurationError("loopsense configuration: " + "; ".join(problems)) from None
