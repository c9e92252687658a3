"""Configuration, read once from the environment (LOOPSENSE_*), the same on AWS and locally."""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="LOOPSENSE_", extra="ignore")

    tenants_table: str = "loopsense-tenants"
    api_keys_table: str = "loopsense-api-keys"
    plans_table: str = "loopsense-plans"
    usage_table: str = "loopsense-usage"
    rate_limits_table: str = "loopsense-rate-limits"
    idempotency_table: str = "loopsense-idempotency"
    telemetry_table: str = "loopsense-telemetry"
    # None: the standard AWS configuration (AWS_ENDPOINT_URL_DYNAMODB, region, credentials).
    dynamodb_endpoint: str | None = None
    region: str | None = None  # None: boto3's own (AWS_REGION on Lambda, the profile elsewhere)
    # Seconds a store call may take before the request answers PLAN_ELIGIBILITY_UNAVAILABLE.
    store_timeout_s: float = 2.0
    # "lambda": the router invokes each skill's function by name; "inprocess": the local server.
    skill_invoker: Literal["lambda", "inprocess"] = "lambda"


@lru_cache(maxsize=1)
def settings() -> Settings:
    return Settings()
