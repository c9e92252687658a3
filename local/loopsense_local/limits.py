"""How `loopsense serve`'s HTTP server bounds clients: plain data, no import cost, read by
the CLI (its options), serve (its defaults) and the server itself."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """How the HTTP server bounds clients (loopsense_local.http_server)."""

    max_concurrency: int = 64  # requests in flight (body read, handler run, answer)
    # ... of which with a body over 1 MiB: parsing 6 MiB of small JSON objects takes ~100 MB
    large_bodies: int = 2
    idle_timeout_s: int = 5  # a connection without a complete request head is closed
    read_timeout_s: int = 10  # no byte for this long while a request is open: closed
    body_timeout_s: int = 30  # a whole body must have arrived by then
