"""The embedded S3 of `loopsense serve`: the file inputs' bucket on localhost (docs/files.md).

Just what files use of S3, path-style: PUT an object (the pre-signed upload URL, as `curl -T`
sends it, or the router's boto3 client), GET it (a pre-signed download URL, or the router),
HEAD and DELETE it, with S3's XML errors. Every request is signed (AWS Signature Version 4,
loopsense_local/sigv4.py) with the serving process's own AWS credentials, as S3 checks it: a
pre-signed URL that was altered, names another key or has passed its X-Amz-Date + X-Amz-Expires
is refused. Objects older than FILE_LIFE_S read as absent, as the bucket's lifecycle rule
expires them on AWS. They live in memory, or as files under a data directory.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from loopsense.platform.execute.files import FILE_LIFE_S
from loopsense_local import sigv4

BUCKET = "loopsense-files-local"
MAX_OBJECT_BYTES = 16 * 1024 * 1024  # a laptop's guard: above a 2 MiB input and a 6 MB output


class Objects:
    """Objects by (bucket, key): bytes and the second they were written."""

    def __init__(self, data_dir: Path | None) -> None:
        self._dir = data_dir
        self._memory: dict[tuple[str, str], tuple[bytes, float]] = {}
        self._lock = threading.Lock()
        if data_dir is not None:
            data_dir.mkdir(parents=True, exist_ok=True)

    def _path(self, bucket: str, key: str) -> Path:
        assert self._dir is not None
        return self._dir / hashlib.sha256(f"{bucket}/{key}".encode()).hexdigest()

    def put(self, bucket: str, key: str, body: bytes, now: float) -> None:
        with self._lock:
            if self._dir is None:
                self._memory[(bucket, key)] = (body, now)
            else:
                self._path(bucket, key).write_bytes(body)

    def get(self, bucket: str, key: str, now: float) -> tuple[bytes, float] | None:
        """The object's bytes and the second it was written."""
        with self._lock:
            if self._dir is None:
                body, written = self._memory.get((bucket, key), (b"", 0.0))
                if not written:
                    return None
            else:
                path = self._path(bucket, key)
                if not path.exists():
                    return None
                body, written = path.read_bytes(), path.stat().st_mtime
        return None if now - written > FILE_LIFE_S else (body, written)

    def delete(self, bucket: str, key: str) -> None:
        with self._lock:
            if self._dir is None:
                self._memory.pop((bucket, key), None)
            else:
                self._path(bucket, key).unlink(missing_ok=True)


def _error(code: str, message: str) -> bytes:
    return (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
            f"<Message>{message}</Message></Error>").encode()


def process_credentials(read: Callable[[], tuple[str, str] | None] | None = None
                        ) -> Callable[[str], str | None]:
    """The secret of this process's own AWS access key (boto3's chain): the one the router
    signs with, so the one this store accepts. A key not seen before reads the chain again
    (temporary credentials rotate, and the router's boto3 moves on to the new key); the last
    few keys stay known, so a URL signed just before a rotation still works."""
    known: dict[str, str] = {}

    def secret_of(access_key: str) -> str | None:
        if access_key not in known:
            found = (read or _chain)()
            if found is not None:
                known[found[0]] = found[1]
                while len(known) > 4:  # the oldest first (dicts keep insertion order)
                    del known[next(iter(known))]
        return known.get(access_key)

    return secret_of


def _chain() -> tuple[str, str] | None:
    import boto3

    found = boto3.Session().get_credentials()
    frozen = None if found is None else found.get_frozen_credentials()
    if frozen is None or not frozen.access_key or not frozen.secret_key:
        return None
    return str(frozen.access_key), str(frozen.secret_key)


def make_handler(objects: Objects, secret_of: Callable[[str], str | None],
                 clock: Callable[[], float]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass  # no line per request (and never a key)

        def _target(self, body: bytes = b"") -> tuple[str, str] | None:
            """The request's bucket and key, once its signature holds (else S3's refusal)."""
            parts = urlsplit(self.path)
            bucket, _, key = unquote(parts.path).lstrip("/").partition("/")
            if not bucket or not key:
                self._send(400, _error("InvalidRequest", "path-style /bucket/key only"))
                return None
            headers = {name.lower(): value for name, value in self.headers.items()}
            refusal = sigv4.check(self.command, parts.path, parts.query, headers, body,
                                  secret_of, clock())
            if refusal is not None:
                self.close_connection = True
                self._send(refusal.status, _error(refusal.code, refusal.message),
                           head=self.command == "HEAD")
                return None
            return bucket, key

        def _send(self, status: int, body: bytes = b"", content_type: str = "application/xml",
                  head: bool = False, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def do_PUT(self) -> None:  # noqa: N802
            size = int(self.headers.get("Content-Length") or 0)
            if size > MAX_OBJECT_BYTES:  # refused unread, before the signature
                self.close_connection = True
                self._send(400, _error("EntityTooLarge", "Your proposed upload exceeds the "
                                                         "maximum allowed size"))
                return
            body = self.rfile.read(size)
            target = self._target(body)
            if target is not None:
                objects.put(*target, body, clock())
                self._send(200, b"")

        def _read(self, head: bool) -> None:
            target = self._target()
            if target is None:
                return
            found = objects.get(*target, clock())
            if found is None:
                self._send(404, _error("NoSuchKey", "The specified key does not exist."),
                           head=head)
                return
            self._send(200, found[0], "application/octet-stream", head=head,
                       headers={"Last-Modified": formatdate(found[1], usegmt=True)})

        def do_GET(self) -> None:  # noqa: N802
            self._read(head=False)

        def do_HEAD(self) -> None:  # noqa: N802
            self._read(head=True)

        def do_DELETE(self) -> None:  # noqa: N802
            target = self._target()
            if target is not None:
                objects.delete(target[0], target[1])
                self._send(204)

    return Handler


class EmbeddedS3:
    def __init__(self, host: str = "127.0.0.1", port: int = 0,
                 data_dir: str | Path | None = None,
                 secret_of: Callable[[str], str | None] | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        """``secret_of``: the secret of an access key, None for one it does not know (default:
        this process's own credentials only); ``clock``: now, in seconds since the epoch."""
        self.objects = Objects(None if data_dir is None else Path(data_dir) / "files")
        handler = make_handler(self.objects, secret_of or process_credentials(), clock)
        self._server = ThreadingHTTPServer((host, port), handler)
        self._server.daemon_threads = True
        self._host = host
        self._thread: threading.Thread | None = None

    @property
    def endpoint(self) -> str:
        return f"http://{self._host}:{self._server.server_port}"

    def start(self) -> EmbeddedS3:
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True,
                                        name="embedded-s3")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
