"""GET / and GET /ui/{proxy+}: the dashboard's static files (functions/dashboard/site/).

The files are read once, at cold start, from the function's own folder: only those are served
(a path is a key of that table, never joined onto the disk), each with its type, an ETag (the
SHA-256 of its bytes; a matching If-None-Match is a 304) and, when the browser takes it, gzip
made once (mtime 0: the same bytes every start). The page talks to the API of its own origin
only, which the Content-Security-Policy enforces in the browser: no script, style or request
from anywhere else, no inline script. An unknown file is ROUTE_NOT_FOUND in the one envelope.
No authorizer: the files hold no tenant data; the page signs in with a key against the API.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loopsense.errors import LoopsenseError
from loopsense.platform.http.contract import Contract
from loopsense.platform.http.request import error_response, request_from_event

TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
         ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml", ".txt":
         "text/plain; charset=utf-8", ".json": "application/json"}
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
           "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY",
           # Names are not hashed: revalidate each time (a 304 while unchanged).
           "Cache-Control": "no-cache"}


@dataclass(frozen=True, slots=True)
class Asset:
    content_type: str
    body: bytes
    gzipped: bytes
    etag: str

CONTRACTS: dict[str, Contract] = {
    "GET /": Contract("the dashboard's page", ("ROUTE_NOT_FOUND",), media="text/html"),
    "GET /ui/{proxy+}": Contract("one of the dashboard's files", ("ROUTE_NOT_FOUND",),
                                 media="application/octet-stream"),
}


def load_site(root: Path) -> dict[str, Asset]:
    """Every file under ``root`` by its path from there ("index.html", "js/app.js")."""
    site: dict[str, Asset] = {}
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.suffix not in TYPES:
            continue
        body = path.read_bytes()
        site[path.relative_to(root).as_posix()] = Asset(
            TYPES[path.suffix], body, gzip.compress(body, 9, mtime=0),
            '"' + hashlib.sha256(body).hexdigest()[:32] + '"')
    return site


def handle(event: dict[str, Any], site: dict[str, Asset]) -> dict[str, Any]:
    """An HTTP API (payload 2.0) event of GET / or GET /ui/{proxy+} -> the file or a 404."""
    request = request_from_event(event)
    name = (event.get("pathParameters") or {}).get("proxy") or "index.html"
    asset = site.get(name) if isinstance(name, str) else None
    if asset is None:
        return error_response(LoopsenseError("ROUTE_NOT_FOUND", "no such file"),
                              request.request_id)
    headers = {**HEADERS, "Content-Type": asset.content_type, "ETag": asset.etag,
               "Vary": "Accept-Encoding"}
    if asset.etag in (request.header("If-None-Match") or "").split(", "):
        return {"statusCode": 304, "headers": headers, "body": ""}
    body = asset.body
    if "gzip" in (request.header("Accept-Encoding") or "") and len(asset.gzipped) < len(body):
        body, headers["Content-Encoding"] = asset.gzipped, "gzip"
    return {"statusCode": 200, "headers": headers, "isBase64Encoded": True,
            "body": base64.b64encode(body).decode("ascii")}
