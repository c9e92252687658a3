"""The embedded S3's check of a request's AWS Signature Version 4, as S3 checks it: a pre-signed
URL (query parameters, as boto3's generate_presigned_url makes them) or an Authorization header
(boto3's own calls). https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html

A refusal is S3's own: its status, code and message (the caller's values never in it).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import parse_qsl, quote

ALGORITHM = "AWS4-HMAC-SHA256"
UNSIGNED = "UNSIGNED-PAYLOAD"
MAX_EXPIRES_S = 7 * 24 * 3600  # S3's longest pre-signed URL
MAX_SKEW_S = 15 * 60  # S3's RequestTimeTooSkewed for a signed header
QUERY_PARAMS = ("X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires",
                "X-Amz-SignedHeaders", "X-Amz-Signature")


@dataclass(frozen=True)
class Refusal:
    status: int
    code: str
    message: str


MISMATCH = Refusal(403, "SignatureDoesNotMatch", "The request signature we calculated does not "
                   "match the signature you provided. Check your key and signing method.")
EXPIRED = Refusal(403, "AccessDenied", "Request has expired")
ANONYMOUS = Refusal(403, "AccessDenied", "Access Denied")
UNKNOWN_KEY = Refusal(403, "InvalidAccessKeyId", "The AWS Access Key Id you provided does not "
                      "exist in our records.")
BAD_QUERY = Refusal(400, "AuthorizationQueryParametersError", "Query-string authentication "
                    "version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, "
                    "X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.")
BAD_HEADER = Refusal(400, "AuthorizationHeaderMalformed", "The authorization header is malformed")
SKEWED = Refusal(403, "RequestTimeTooSkewed", "The difference between the request time and the "
                 "current time is too large.")
BAD_HASH = Refusal(400, "XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' header "
                   "does not match what was computed.")


@dataclass(frozen=True)
class Signed:
    """What a request says it was signed with."""

    access_key: str
    scope: str  # date/region/service/aws4_request
    at: str  # X-Amz-Date
    headers: tuple[str, ...]
    signature: str
    payload_hash: str
    query: tuple[tuple[str, str], ...]  # the canonical query's pairs (no signature)


def check(method: str, path: str, query: str, headers: Mapping[str, str], body: bytes,
          secret_of: Callable[[str], str | None], now: float) -> Refusal | None:
    """None when the request is signed by a known key and still valid; else S3's refusal.
    ``path`` and ``query`` are as the request line carries them (percent-encoded);
    ``headers`` by lower-case name."""
    pairs = parse_qsl(query, keep_blank_values=True)
    params = dict(pairs)
    if "X-Amz-Signature" in params or "X-Amz-Credential" in params:
        signed = _from_query(pairs, params, now)
    elif "authorization" in headers:
        signed = _from_header(pairs, headers, body, now)
    else:
        return ANONYMOUS
    if isinstance(signed, Refusal):
        return signed
    secret = secret_of(signed.access_key)
    if secret is None:
        return UNKNOWN_KEY
    expected = signature(secret, signed.scope, signed.at,
                         canonical_request(method, path, signed, headers))
    return None if hmac.compare_digest(expected, signed.signature) else MISMATCH


def _from_query(pairs: list[tuple[str, str]], params: dict[str, str],
                now: float) -> Signed | Refusal:
    if any(name not in params for name in QUERY_PARAMS) or params["X-Amz-Algorithm"] != ALGORITHM:
        return BAD_QUERY
    try:
        expires = int(params["X-Amz-Expires"])
        signed_at = _instant(params["X-Amz-Date"])
    except ValueError:
        return BAD_QUERY
    if not 1 <= expires <= MAX_EXPIRES_S:
        return BAD_QUERY
    if now > signed_at + expires:
        return EXPIRED
    access_key, _, scope = params["X-Amz-Credential"].partition("/")
    return Signed(access_key, scope, params["X-Amz-Date"],
                  tuple(params["X-Amz-SignedHeaders"].split(";")), params["X-Amz-Signature"],
                  UNSIGNED, tuple(p for p in pairs if p[0] != "X-Amz-Signature"))


def _from_header(pairs: list[tuple[str, str]], headers: Mapping[str, str], body: bytes,
                 now: float) -> Signed | Refusal:
    algorithm, _, rest = headers["authorization"].partition(" ")
    fields = dict(part.strip().partition("=")[::2] for part in rest.split(","))
    at, payload_hash = headers.get("x-amz-date", ""), headers.get("x-amz-content-sha256", "")
    if algorithm != ALGORITHM or not {"Credential", "SignedHeaders", "Signature"} <= set(fields) \
            or not payload_hash:
        return BAD_HEADER
    try:
        if abs(now - _instant(at)) > MAX_SKEW_S:
            return SKEWED
    except ValueError:
        return BAD_HEADER
    if payload_hash != UNSIGNED and payload_hash != hashlib.sha256(body).hexdigest():
        return BAD_HASH
    access_key, _, scope = fields["Credential"].partition("/")
    return Signed(access_key, scope, at, tuple(fields["SignedHeaders"].split(";")),
                  fields["Signature"], payload_hash, tuple(pairs))


def _instant(stamp: str) -> float:
    return datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC).timestamp()


def _encode(text: str) -> str:
    return quote(text, safe="-_.~")


def canonical_request(method: str, path: str, signed: Signed, headers: Mapping[str, str]) -> str:
    query = "&".join(f"{_encode(k)}={_encode(v)}" for k, v in sorted(signed.query))
    lines = "".join(f"{name}:{' '.join(headers.get(name, '').split())}\n"
                    for name in signed.headers)
    return "\n".join([method, path or "/", query, lines, ";".join(signed.headers),
                      signed.payload_hash])


def signature(secret: str, scope: str, at: str, request: str) -> str:
    date, region, service, terminal = (scope.split("/") + ["", "", "", ""])[:4]
    key = ("AWS4" + secret).encode()
    for part in (date, region, service, terminal):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    to_sign = "\n".join([ALGORITHM, at, scope, hashlib.sha256(request.encode()).hexdigest()])
    return hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
