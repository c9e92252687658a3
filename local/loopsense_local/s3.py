"""The embedded S3 of `loopsense serve`: the file inputs' bucket on localhost (docs/files.md).

Just what file inputs use of S3, path-style: PUT an object (the pre-signed upload URL, as
`curl -T` sends it), GET, HEAD and DELETE it (the router's boto3 client), with S3's XML errors.
A pre-signed URL is refused once its X-Amz-Date + X-Amz-Expires has passed, as S3 refuses it;
its signature is not checked (like the embedded DynamoDB, this store takes any credentials, so
it listens on loopback only). Objects older than OBJECT_LIFE_S read as absent, as the bucket's
lifecycle rule expires them on AWS. They live in memory, or as files under a data directory.
"""

from __future__ import annotations

import hashlib
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

BUCKET = "loopsense-files-local"
OBJECT_LIFE_S = 24 * 3600  # template.yaml's lifecycle rule: one day
MAX_OBJECT_BYTES = 8 * 1024 * 1024  # a laptop's guard: well above the 2 MiB a file may hold


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

    def put(self, bucket: str, key: str, body: bytes) -> None:
        with self._lock:
            if self._dir is None:
                self._memory[(bucket, key)] = (body, time.time())
            else:
                self._path(bucket, key).write_bytes(body)

    def get(self, bucket: str, key: str) -> bytes | None:
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
        return None if time.time() - written > OBJECT_LIFE_S else body

    def delete(self, bucket: str, key: str) -> None:
        with self._lock:
            if self._dir is None:
                self._memory.pop((bucket, key), None)
            else:
                self._path(bucket, key).unlink(missing_ok=True)


def _error(code: str, message: str) -> bytes:
    return (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
            f"<Message>{message}</Message></Error>").encode()


def _expired(query: dict[str, list[str]]) -> bool:
    signed, expires = query.get("X-Amz-Date", [""])[0], query.get("X-Amz-Expires", [""])[0]
    try:
        at = datetime.strptime(signed, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC).timestamp()
        return time.time() > at + int(expires)
    except ValueError:
        return True


def make_handler(objects: Objects) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass  # no line per request (and never a key)

        def _target(self) -> tuple[str, str, dict[str, list[str]]] | None:
            parts = urlsplit(self.path)
            bucket, _, key = unquote(parts.path).lstrip("/").partition("/")
            if not bucket or not key:
                self._send(400, _error("InvalidRequest", "path-style /bucket/key only"))
                return None
            return bucket, key, parse_qs(parts.query)

        def _send(self, status: int, body: bytes = b"", content_type: str = "application/xml",
                  head: bool = False) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def do_PUT(self) -> None:  # noqa: N802
            target = self._target()
            size = int(self.headers.get("Content-Length") or 0)
            if target is None:
                return
            bucket, key, query = target
            if "X-Amz-Signature" in query and _expired(query):
                self.close_connection = True
                self._send(403, _error("AccessDenied", "Request has expired"))
                return
            if "X-Amz-Signature" not in query and "Authorization" not in self.headers:
                self.close_connection = True
                self._send(403, _error("AccessDenied", "Anonymous users cannot put objects"))
                return
            if size > MAX_OBJECT_BYTES:
                self.close_connection = True
                self._send(400, _error("EntityTooLarge", "Your proposed upload exceeds the "
                                                         "maximum allowed size"))
                return
            objects.put(bucket, key, self.rfile.read(size))
            self._send(200, b"")

        def _read(self, head: bool) -> None:
            target = self._target()
            if target is None:
                return
            body = objects.get(target[0], target[1])
            if body is None:
                self._send(404, _error("NoSuchKey", "The specified key does not exist."),
                           head=head)
                return
            self._send(200, body, "application/octet-stream", head=head)

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
                 data_dir: str | Path | None = None) -> None:
        self.objects = Objects(None if data_dir is None else Path(data_dir) / "files")
        self._server = ThreadingHTTPServer((host, port), make_handler(self.objects))
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
