"""The runs tests' store: the embedded DynamoDB with template.yaml's tables, one per module."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from loopsense.settings import Settings
from loopsense_local.embedded import EmbeddedDynamoDB
from loopsense_local.tables import create_tables

CONFIG = Settings(dynamodb_endpoint="http://embedded.invalid")


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    embedded = EmbeddedDynamoDB("127.0.0.1", 0)
    in_process = embedded.client()
    create_tables(in_process, CONFIG)
    yield in_process
