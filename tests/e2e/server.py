"""Start `loopsense serve` as a subprocess on free ports and talk to it over real HTTP; or, with
LOOPSENSE_BASE_URL and LOOPSENSE_API_KEY in the environment, talk to that deployed stack instead.

Against a deployed stack (README, "Testing a deployed stack") the `server` fixture yields its
base URL and key, and what needs the local server skips, saying why: operator access to the
store (tenants, keys, plans, usage), the server's own log, the `test.*` skills, a server of the
test's own (start_server).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from loopsense.settings import Settings
from loopsense.store.accounts import Accounts
from loopsense.store.dynamo import Dynamo, make_client
from loopsense.store.metering import Metering
from loopsense_local import operator as ops

BIN = Path(sys.executable).parent
# The install `./scripts/serve` makes (runtime dependencies only), made by `scripts/bootstrap
# test`: start_server(bin_dir=RUNTIME_BIN) serves from it.
RUNTIME_BIN = Path(__file__).resolve().parents[2] / ".venv-runtime" / "bin"


def deployed_target() -> tuple[str, str] | None:
    """(base URL, API key) of the stack to test, when both variables are set."""
    url, key = (os.environ.get(name, "") for name in ("LOOPSENSE_BASE_URL", "LOOPSENSE_API_KEY"))
    return (url.rstrip("/"), key) if url and key else None


DEPLOYED = deployed_target()
# The key the tests call with: the local server's development key, or the deployed stack's.
DEV_KEY = DEPLOYED[1] if DEPLOYED else "ls_local_development_key_0001"
NEEDS_OPERATOR = ("needs operator access to the server's store (tenants, keys, plans, usage), "
                  "which a deployed stack (LOOPSENSE_BASE_URL) does not give the tests")
NEEDS_LOCAL = "needs the local `loopsense serve` (its log, its test.* skills), not a deployed stack"


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def lower_headers(self) -> dict[str, str]:
        """The headers by lower-case name (HTTP header names are case-insensitive)."""
        return {name.lower(): value for name, value in self.headers.items()}


@dataclass
class Server:
    process: subprocess.Popen[str] | None  # None: a deployed stack
    url: str
    store_endpoint: str
    output: list[str] = field(default_factory=list)  # every line the server printed
    args: tuple[str, ...] = ()
    env: dict[str, str] | None = None
    data_dir: str | None = None  # the embedded store's, when it keeps one
    temporary: bool = False  # the data dir is the tests' own: deleted when the server stops
    bin_dir: Path = BIN  # the venv whose `loopsense` it runs

    @property
    def deployed(self) -> bool:
        return self.process is None

    def store(self) -> str:
        """The store's endpoint, for operator commands; skips against a deployed stack."""
        if self.deployed:
            pytest.skip(NEEDS_OPERATOR)
        return self.store_endpoint

    def printed(self) -> str:
        """Everything the server printed (its log included); skips against a deployed stack."""
        if self.deployed:
            pytest.skip(NEEDS_LOCAL)
        return "".join(self.output)

    def request(self, body: Any, key: str | None = DEV_KEY, headers: dict[str, str] | None = None,
                path: str = "/v1/execute", method: str = "POST", timeout: float = 30) -> Response:
        if self.deployed and isinstance(body, dict) and str(body.get("skillKey")).startswith(
                "test."):
            pytest.skip(NEEDS_LOCAL)
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        all_headers = {"Content-Type": "application/json", **(headers or {})}
        if key is not None:
            all_headers["Authorization"] = f"Bearer {key}"
        req = urllib.request.Request(self.url + path, data=data, headers=all_headers,
                                     method=method)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as answer:
                return Response(answer.status, dict(answer.headers.items()), answer.read())
        except urllib.error.HTTPError as error:
            return Response(error.code, dict(error.headers.items()), error.read())

    def execute(self, skill: str, input_: Any, **kwargs: Any) -> Response:
        return self.request({"skillKey": skill, "input": input_}, **kwargs)

    def operator(self, *args: str) -> Any:
        """Run an operator command against this server's store; its stdout parsed as JSON."""
        done = subprocess.run(
            [str(BIN / "loopsense"), *args, "--dynamodb-endpoint", self.store()],
            capture_output=True, text=True, timeout=60, check=False,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def logs(self, request_id: str) -> list[dict[str, Any]]:
        """The server's JSON log lines about one request, in the order it wrote them."""
        if self.deployed:
            pytest.skip(NEEDS_LOCAL)
        found = []
        for line in list(self.output):
            if line.startswith("{") and request_id in line:
                record = json.loads(line)
                if record.get("request_id") == request_id:
                    found.append(record)
        return found

    def wait_for_log(self, request_id: str, message: str,
                     timeout: float = 60) -> list[dict[str, Any]]:
        """The request's log lines once one says ``message`` (a skill that outlived its answer
        logs when it ends); ``timeout`` only stops a wait for a line that never comes."""
        deadline = time.monotonic() + timeout
        while True:
            lines = self.logs(request_id)
            if any(r.get("message") == message for r in lines) or time.monotonic() > deadline:
                return lines
            time.sleep(0.05)

    def answered_before_the_skill_ended(self, answer: Response) -> bool:
        """Whether the server answered (its "execute" line) before the skill it ran ended ("skill
        finished"): the order of events, which a busy machine cannot break as it can a clock."""
        found = [r["message"] for r in self.wait_for_log(answer.json()["requestId"],
                                                          "skill finished")]
        assert "skill finished" in found, f"the skill never ended: {found}"
        return found.index("execute") < found.index("skill finished")

    def stop(self, signum: int = signal.SIGINT) -> str:
        """Ctrl-C the server (or send ``signum``); returns everything it printed."""
        self.end(signum)
        if self.temporary and self.data_dir is not None:
            shutil.rmtree(self.data_dir, ignore_errors=True)
        return "".join(self.output)

    def end(self, signum: int) -> None:
        """Send ``signum`` and wait for the process to end; the data dir stays."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signum)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        time.sleep(0.1)

    def restart(self, signum: int = signal.SIGTERM) -> Server:
        """End this server with ``signum`` and start another on the same data dir."""
        self.end(signum)
        again = start_server(*self.args, env=self.env, data_dir=self.data_dir,
                             bin_dir=self.bin_dir)
        again.temporary, self.temporary = self.temporary, False
        return again


def start_server(*args: str, env: dict[str, str] | None = None, timeout: float = 60,
                 data_dir: str | None = None, bin_dir: Path = BIN) -> Server:
    """A server on free ports, run from ``bin_dir``'s venv (this one, or RUNTIME_BIN); its
    embedded store in ``data_dir``, or in a temporary one (deleted when it stops) unless
    ``args`` choose the store."""
    if DEPLOYED:
        pytest.skip("starts a local `loopsense serve` of its own; testing a deployed stack")
    if not (bin_dir / "loopsense").exists():
        raise RuntimeError(f"no loopsense in {bin_dir}: run `source scripts/bootstrap test`")
    temporary = data_dir is None and not {"--data-dir", "--in-memory",
                                          "--dynamodb-endpoint"} & set(args)
    if temporary:
        data_dir = tempfile.mkdtemp(prefix="loopsense-e2e-")
    process = subprocess.Popen(
        [str(bin_dir / "loopsense"), "serve", "--port", "0", "--store-port", "0", *args,
         *(["--data-dir", data_dir] if data_dir is not None else [])],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        # Unbuffered: tests read the log lines (tests/e2e: the order of events) as they happen.
        env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
    )
    output: list[str] = []
    ready = threading.Event()
    found: dict[str, str] = {}

    def pump() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            output.append(line)
            if "DynamoDB: " in line:
                found["store"] = line.split("DynamoDB: ", 1)[1].strip()
            if line.startswith("loopsense: ready "):
                found["url"] = line.split("ready ", 1)[1].strip()
                ready.set()
        ready.set()

    threading.Thread(target=pump, daemon=True).start()
    if not ready.wait(timeout) or "url" not in found:
        process.kill()
        process.wait()
        if temporary and data_dir is not None:
            shutil.rmtree(data_dir, ignore_errors=True)
        raise RuntimeError("loopsense serve did not start:\n" + "".join(output))
    return Server(process, found["url"], found.get("store", ""), output, args, env, data_dir,
                  temporary, bin_dir)


class Operator:
    """The operator commands (loopsense_local.operator), in this process, on a server's store.

    The same functions `loopsense tenants|keys|plans|usage --dynamodb-endpoint URL` runs, without
    a subprocess's ~2 s start-up for each (``Server.operator`` runs the real CLI).
    """

    def __init__(self, endpoint: str) -> None:
        config = Settings(dynamodb_endpoint=endpoint, store_timeout_s=10)
        db = Dynamo(make_client(config))
        self.accounts, self.metering = Accounts(db, config), Metering(db, config)

    def new_tenant(self, plan: str, skills: tuple[str, ...] = ("*",)) -> tuple[str, str]:
        """A fresh tenant on ``plan`` and an API key for it: (tenant id, key)."""
        tenant = ops.create_tenant(self.accounts, plan, None)["tenantId"]
        return tenant, ops.issue_key(self.accounts, tenant, list(skills))["apiKey"]

    def set_plan(self, name: str, credits: int, rps: int) -> None:
        ops.set_plan(self.accounts, name, {"credits_per_month": credits,
                                           "requests_per_second": rps, "skills": ["*"],
                                           "max_time_budget_ms": 600_000})

    def usage(self, tenant: str) -> dict[str, Any]:
        found: dict[str, Any] = ops.usage(self.accounts, self.metering, tenant, None)
        return found
