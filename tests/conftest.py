"""Shared fixtures: an isolated loader for each function's app.py, a fake Lambda context, events.

The environment below is set at import time, before any test module imports loopsense (its
Logger, Metrics and Tracer read the environment once, at construction).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from loopsense_local.tables import use_local_tables
from tests.e2e.server import DEPLOYED, Operator, Server, start_server

REPO_ROOT = Path(__file__).resolve().parent.parent
FUNCTIONS_DIR = REPO_ROOT / "functions"
EVENTS_DIR = REPO_ROOT / "events"

# No X-Ray daemon here: the Tracer becomes a no-op. Dummy region/credentials so that nothing
# that creates a boto3 client can reach (or need) a real AWS account.
for _name, _value in {
    "POWERTOOLS_TRACE_DISABLED": "1",
    "POWERTOOLS_SERVICE_NAME": "loopsense",
    "POWERTOOLS_METRICS_NAMESPACE": "Loopsense",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
}.items():
    os.environ.setdefault(_name, _value)
# Table names have no default (loopsense.settings): the tests' stores use the local ones.
use_local_tables()


def load_lambda_module(name: str) -> ModuleType:
    """Import functions/<name>/app.py under the unique module name ``functions_<name>_app``.

    Every function's module is called app.py, as Lambda wants; a plain ``import app`` would
    hand every test the first one imported. Each call executes the file afresh.
    """
    path = FUNCTIONS_DIR / name / "app.py"
    if not path.is_file():
        raise FileNotFoundError(f"no handler at {path}")
    module_name = f"functions_{name}_app"
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module


@pytest.fixture
def lambda_module() -> Callable[[str], ModuleType]:
    """``lambda_module("loop_detect")`` -> functions/loop_detect/app.py, imported in isolation."""
    return load_lambda_module


@dataclass
class FakeLambdaContext:
    """The attributes of a LambdaContext that Powertools and the handlers read."""

    function_name: str = "loopsense-LoopDetectFunction-TEST"
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = (
        "arn:aws:lambda:us-east-1:123456789012:function:loopsense-LoopDetectFunction-TEST"
    )
    aws_request_id: str = "00000000-0000-4000-8000-000000000000"
    log_group_name: str = "/aws/lambda/loopsense-LoopDetectFunction-TEST"
    log_stream_name: str = "2026/01/01/[$LATEST]0123456789abcdef"

    def get_remaining_time_in_millis(self) -> int:
        return 15_000


@pytest.fixture
def lambda_context() -> FakeLambdaContext:
    return FakeLambdaContext()


def load_event(name: str) -> dict[str, Any]:
    """events/<name>.json: the same file `sam local invoke -e` uses."""
    with (EVENTS_DIR / f"{name}.json").open(encoding="utf-8") as f:
        event: dict[str, Any] = json.load(f)
    return event


@pytest.fixture
def event_file() -> Callable[[str], dict[str, Any]]:
    """``event_file("loop_detect")`` -> a fresh copy of events/loop_detect.json."""
    return load_event


@pytest.fixture
def captured(capsys, caplog, monkeypatch) -> Iterator[Callable[[], str]]:
    """Everything a handler writes: stdout (metrics EMF), stderr (logs), log records.

    The Powertools handler kept the sys.stderr of import time; point it at capsys's stderr so
    the JSON log lines are captured exactly as Lambda would ship them. DEBUG, to see the most.
    """
    from loopsense.observability import logger

    monkeypatch.setattr(logger.registered_handler, "stream", sys.stderr)
    previous = logger.log_level
    logger.setLevel(logging.DEBUG)
    caplog.set_level(logging.DEBUG)

    def read() -> str:
        out, err = capsys.readouterr()
        records = "\n".join(
            f"{r.getMessage()} {json.dumps(r.__dict__, default=str)}" for r in caplog.records
        )
        return "\n".join([out, err, caplog.text, records])

    yield read
    logger.setLevel(previous)


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    """One `loopsense serve --test-skills` per test module (team plan dev tenant); started only
    for the modules that ask for it (tests/e2e, tests/sdk). With LOOPSENSE_BASE_URL and
    LOOPSENSE_API_KEY set, that deployed stack instead (tests/e2e/server.py)."""
    if DEPLOYED:  # LOOPSENSE_BASE_URL and LOOPSENSE_API_KEY: a deployed stack instead
        yield Server(None, DEPLOYED[0], "")
        return
    running = start_server("--test-skills")
    yield running
    running.stop()


@pytest.fixture(scope="module")
def operator(server: Server) -> Operator:
    return Operator(server.store())  # skips against a deployed stack
