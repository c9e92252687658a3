"""Wiring: each Lambda's objects built from the settings, once per process (its cold start)."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from loopsense.platform.settings.service import TenantSettings
from loopsense.settings import Settings, settings
from loopsense.store.accounts import Accounts
from loopsense.store.dynamo import Dynamo, make_client

if TYPE_CHECKING:
    from loopsense.platform.execute.invoke import Invoker
    from loopsense.platform.execute.pipeline import Execute
    from loopsense.platform.runs.monitor import Runs
    from loopsense.platform.telemetry.failure_groups import FailureGroups
    from loopsense.platform.telemetry.ingest import Ingestion
    from loopsense.platform.telemetry.store import TelemetryStore
    from loopsense.platform.usage.service import Usage


def build_execute(config: Settings, invoker: Invoker | None = None) -> Execute:
    # Imported here: the authorizer and settings functions share this module and need none of
    # the pipeline (its imports cost their cold start about 30 ms).
    from loopsense.platform.access.idempotency import Idempotency
    from loopsense.platform.execute.invoke import InProcessInvoker, LambdaInvoker
    from loopsense.platform.execute.pipeline import Execute
    from loopsense.store.metering import Metering

    client = make_client(config)
    db = Dynamo(client)
    if invoker is None:
        invoker = InProcessInvoker() if config.skill_invoker == "inprocess" else LambdaInvoker()
    files = None
    if config.files_bucket:
        from loopsense.store.files import Files, make_s3_client

        files = Files(make_s3_client(config), config.files_bucket)
    return Execute(
        accounts=Accounts(db, config),
        metering=Metering(db, config),
        invoker=invoker,
        idempotency=Idempotency(client, config.idempotency_table),
        files=files,
    )


@lru_cache(maxsize=1)
def execute() -> Execute:
    return build_execute(settings())


@lru_cache(maxsize=1)
def accounts() -> Accounts:
    config = settings()
    return Accounts(Dynamo(make_client(config)), config)


@lru_cache(maxsize=1)
def tenant_settings() -> TenantSettings:
    return TenantSettings(accounts())


def build_runs(config: Settings) -> Runs:
    from loopsense.platform.runs.monitor import Runs
    from loopsense.platform.runs.store import RunStore
    from loopsense.store.metering import Metering

    db = Dynamo(make_client(config))
    return Runs(RunStore(db, config.runs_table), Accounts(db, config), Metering(db, config))


@lru_cache(maxsize=1)
def runs() -> Runs:
    return build_runs(settings())


@lru_cache(maxsize=1)
def usage() -> Usage:
    from loopsense.platform.usage.service import Usage
    from loopsense.store.metering import Metering

    config = settings()
    db = Dynamo(make_client(config))
    return Usage(Accounts(db, config), Metering(db, config))


@lru_cache(maxsize=1)
def telemetry_store() -> TelemetryStore:
    from loopsense.platform.telemetry.store import TelemetryStore

    config = settings()
    return TelemetryStore(Dynamo(make_client(config)), config.telemetry_table)


@lru_cache(maxsize=1)
def ingestion() -> Ingestion:
    from loopsense.platform.access.plans import plan_cap, resolve_plan
    from loopsense.platform.telemetry.ingest import Ingestion

    plans = accounts()  # the plan's time budget cap, read once per new execution
    return Ingestion(telemetry_store(), lambda plan: plan_cap(resolve_plan(plans, plan)))


@lru_cache(maxsize=1)
def failure_groups() -> FailureGroups:
    from loopsense.platform.telemetry.failure_groups import FailureGroups

    return FailureGroups(telemetry_store())
