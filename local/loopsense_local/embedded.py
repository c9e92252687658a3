"""The embedded DynamoDB of `loopsense serve`: loopsense_local.dynamodb's engine in this process,
also served over HTTP on localhost so `loopsense tenants/keys/plans/usage` in another shell see
and change the same tables.

The server's own calls skip HTTP: started, the store registers its in-process client for its
endpoint, and ``loopsense.store.dynamo.make_client`` hands that client to every store user in
this process (the platform, Powertools' idempotency, the seeding). A call costs microseconds
instead of the milliseconds of a boto3 round trip (docs/benchmarks.md, "The platform").

With a data directory the tables live in its SQLite file and survive a restart (or a kill);
without one they live in memory and go with the process. Either way expired items (TTL) are
swept in the background, as DynamoDB does.
"""

from __future__ import annotations

import os
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

from loopsense.store.dynamo import serve_in_process
from loopsense_local.aws_env import FAKE_AWS_ENV
from loopsense_local.dynamodb.client import InProcessClient
from loopsense_local.dynamodb.endpoint import make_server
from loopsense_local.dynamodb.engine import SWEEP_INTERVAL_S, Engine
from loopsense_local.dynamodb.storage import DATABASE_FILE, IN_MEMORY


class EmbeddedDynamoDB:
    def __init__(self, host: str = "127.0.0.1", port: int = 0, data_dir: str | Path | None = None,
                 sweep_interval_s: float = SWEEP_INTERVAL_S,
                 transaction_hold_s: float | None = None) -> None:
        """``data_dir``: where the tables are kept (made if absent); None: in memory only.
        ``transaction_hold_s``: the engine's conflict mode (loopsense_local.dynamodb.engine):
        None, off (transactions serialized); else each holds its items that long, and what
        meets them is refused with TransactionConflict, as on DynamoDB."""
        self._host, self._port = host, port
        if data_dir is not None:
            Path(data_dir).mkdir(parents=True, exist_ok=True)
        self.engine = Engine(IN_MEMORY if data_dir is None else Path(data_dir) / DATABASE_FILE,
                             transaction_hold_s=transaction_hold_s)
        self._sweep_interval_s = sweep_interval_s
        self._client = InProcessClient(self.engine)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def endpoint(self) -> str:
        assert self._server is not None, "start() first"
        return f"http://{self._host}:{self._server.server_port}"

    def client(self) -> InProcessClient:
        """The store as a boto3 DynamoDB client, in this process (one, shared: it is stateless)."""
        return self._client

    def start(self) -> EmbeddedDynamoDB:
        for name, value in FAKE_AWS_ENV.items():
            os.environ.setdefault(name, value)
        self._server = make_server(self.engine, self._host, self._port)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True,
                                        name="embedded-dynamodb")
        self._thread.start()
        self.engine.start_sweeper(self._sweep_interval_s)
        serve_in_process(self.endpoint, self.client())
        return self

    def stop(self) -> None:
        if self._server is not None:
            serve_in_process(self.endpoint, None)
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.engine.close()
