"""The embedded DynamoDB of `loopsense serve`: loopsense_local.dynamodb's engine in this process,
also served over HTTP on localhost so `loopsense tenants/keys/plans/usage` in another shell see
and change the same tables.

The server's own calls skip HTTP: started, the store registers its in-process client for its
endpoint, and ``loopsense.store.dynamo.make_client`` hands that client to every store user in
this process (the platform, Powertools' idempotency, the seeding). A call costs microseconds
instead of the milliseconds of a boto3 round trip (docs/benchmarks.md, "The platform").
"""

from __future__ import annotations

import os
import threading
from http.server import ThreadingHTTPServer

from loopsense.store.dynamo import serve_in_process
from loopsense_local.aws_env import FAKE_AWS_ENV
from loopsense_local.dynamodb.client import InProcessClient
from loopsense_local.dynamodb.endpoint import make_server
from loopsense_local.dynamodb.engine import Engine


class EmbeddedDynamoDB:
    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._host, self._port = host, port
        self.engine = Engine()
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
        serve_in_process(self.endpoint, self.client())
        return self

    def stop(self) -> None:
        if self._server is not None:
            serve_in_process(self.endpoint, None)
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
