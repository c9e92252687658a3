"""Start `loopsense serve` as a subprocess on free ports and talk to it over real HTTP."""

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

from loopsense.settings import Settings
from loopsense.store.accounts import Accounts
from loopsense.store.dynamo import Dynamo, make_client
from loopsense.store.metering import Metering
from loopsense_local import operator as ops

BIN = Path(sys.executable).parent
DEV_KEY = "ls_local_development_key_0001"


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
    process: subprocess.Popen[str]
    url: str
    store_endpoint: str
    output: list[str] = field(default_factory=list)  # every line the server printed
    args: tuple[str, ...] = ()
    env: dict[str, str] | None = None
    data_dir: str | None = None  # the embedded store's, when it keeps one
    temporary: bool = False  # the data dir is the tests' own: deleted when the server stops

    def request(self, body: Any, key: str | None = DEV_KEY, headers: dict[str, str] | None = None,
                path: str = "/v1/execute", method: str = "POST", timeout: float = 30) -> Response:
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
            [str(BIN / "loopsense"), *args, "--dynamodb-endpoint", self.store_endpoint],
            capture_output=True, text=True, timeout=60, check=False,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def stop(self, signum: int = signal.SIGINT) -> str:
        """Ctrl-C the server (or send ``signum``); returns everything it printed."""
        self.end(signum)
        if self.temporary and self.data_dir is not None:
            shutil.rmtree(self.data_dir, ignore_errors=True)
        return "".join(self.output)

    def end(self, signum: int) -> None:
        """Send ``signum`` and wait for the process to end; the data dir stays."""
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
        again = start_server(*self.args, env=self.env, data_dir=self.data_dir)
        again.temporary, self.temporary = self.temporary, False
        return again


def start_server(*args: str, env: dict[str, str] | None = None, timeout: float = 60,
                 data_dir: str | None = None) -> Server:
    """A server on free ports; its embedded store in ``data_dir``, or in a temporary one
    (deleted when it stops) unless ``args`` choose the store."""
    temporary = data_dir is None and not {"--data-dir", "--in-memory",
                                          "--dynamodb-endpoint"} & set(args)
    if temporary:
        data_dir = tempfile.mkdtemp(prefix="loopsense-e2e-")
    process = subprocess.Popen(
        [str(BIN / "loopsense"), "serve", "--port", "0", "--store-port", "0", *args,
         *(["--data-dir", data_dir] if data_dir is not None else [])],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, **(env or {})},
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
                  temporary)


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
