"""Configuration fails fast: a function that reads the store, started without one of its
LOOPSENSE_*_TABLE variables, fails at import (Lambda's cold start) with a message naming the
variable, instead of answering 503 at request time. Each import runs in a fresh interpreter
(`python -I`) whose environment holds only what the test gives it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from loopsense.settings import TABLE_FIELDS, env_name
from loopsense_local.tables import local_table_name
from tests.infra.test_template import REPO_ROOT

# test_template checks this against template.yaml
READERS = ("authorizer", "execute", "runs", "settings", "telemetry_ingest", "telemetry_otlp",
           "telemetry_sweeper", "failure_groups", "usage")
BASE_ENV = {"PATH": os.environ.get("PATH", ""), "AWS_DEFAULT_REGION": "us-east-1",
            "POWERTOOLS_TRACE_DISABLED": "1"}
ALL_TABLES = {env_name(f): local_table_name(f) for f in TABLE_FIELDS}


@pytest.fixture(scope="module")
def local_store() -> Iterator[str]:
    """An embedded DynamoDB on loopback with the template's tables under their local names."""
    from loopsense.settings import Settings
    from loopsense.store.dynamo import make_client
    from loopsense_local.embedded import EmbeddedDynamoDB
    from loopsense_local.tables import create_tables

    embedded = EmbeddedDynamoDB("127.0.0.1", 0).start()
    config = Settings(dynamodb_endpoint=embedded.endpoint)
    create_tables(make_client(config), config)
    yield embedded.endpoint
    embedded.stop()


def cold_start(function: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Import functions/<function>/app.py as Lambda does (its directory first on sys.path)."""
    code = ("import sys; sys.path[:0] = [sys.argv[1], sys.argv[2]]; import app; "
            "print('imported')")
    return subprocess.run(
        [sys.executable, "-I", "-c", code, str(REPO_ROOT / "functions" / function),
         str(REPO_ROOT / "shared")],
        env={**BASE_ENV, **env}, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize("function", READERS)
def test_it_starts_with_every_table_named(function):
    started = cold_start(function, ALL_TABLES)
    assert started.returncode == 0 and "imported" in started.stdout, started.stderr


@pytest.mark.parametrize("function", READERS)
def test_a_missing_table_variable_fails_the_cold_start_naming_it(function):
    # A different variable for each function, so that together they cover more than one.
    missing = env_name(TABLE_FIELDS[READERS.index(function) % len(TABLE_FIELDS)])
    env = {name: value for name, value in ALL_TABLES.items() if name != missing}
    failed = cold_start(function, env)
    assert failed.returncode != 0 and "imported" not in failed.stdout
    last = failed.stderr.strip().splitlines()[-1]
    assert last == f"loopsense.errors.ConfigurationError: loopsense configuration: {missing} " \
                   "is not set", failed.stderr


def test_with_no_table_named_the_message_names_them_all():
    failed = cold_start("authorizer", {})
    assert failed.returncode != 0
    for name in ALL_TABLES:
        assert f"{name} is not set" in failed.stderr


def test_an_invalid_setting_is_named_too():
    failed = cold_start("execute", {**ALL_TABLES, "LOOPSENSE_STORE_TIMEOUT_S": "soon"})
    assert failed.returncode != 0
    assert "LOOPSENSE_STORE_TIMEOUT_S is invalid" in failed.stderr.strip().splitlines()[-1]


def test_functions_that_do_not_read_the_store_start_without_any():
    for function in ("playbooks", "loop_detect", "dashboard"):
        started = cold_start(function, {})
        assert started.returncode == 0, started.stderr



def test_the_operator_cli_against_aws_without_table_names_says_which_are_missing():
    # No endpoint: the real DynamoDB, whose table names only the stack knows. It fails before
    # any call, with exit 2 and the variables named.
    loopsense = Path(sys.executable).parent / "loopsense"
    done = subprocess.run([str(loopsense), "plans", "list"], env=BASE_ENV, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("loopsense: loopsense configuration: ")
    for name in ALL_TABLES:
        assert f"{name} is not set" in done.stderr


def test_the_operator_cli_on_a_loopback_store_uses_the_local_names(local_store):
    done = subprocess.run([str(Path(sys.executable).parent / "loopsense"), "plans", "list",
                           "--dynamodb-endpoint", local_store],
                          env=BASE_ENV, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "hobby" in done.stdout
