"""The embedded store with the project's tables, one per test module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from loopsense.platform.telemetry.store import TelemetryStore
from loopsense.settings import Settings
from loopsense.store.dynamo import Dynamo
from loopsense_local.embedded import EmbeddedDynamoDB
from loopsense_local.tables import create_tables


@pytest.fixture(scope="module")
def telemetry_store() -> Iterator[TelemetryStore]:
    embedded = EmbeddedDynamoDB("127.0.0.1", 0).start()
    try:
        client = embedded.client()
        config = Settings()
        create_tables(client, config)
        yield TelemetryStore(Dynamo(client), config.telemetry_table)
    finally:
        embedded.stop()
