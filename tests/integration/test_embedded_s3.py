"""The embedded S3 (loopsense_local/s3.py) checks every request's Signature Version 4 as S3 does
(loopsense_local/sigv4.py): boto3's pre-signed URLs and its own signed calls pass; an altered
URL, one for another key, one past its expiry, an unknown access key, a wrong secret or an
unsigned request get S3's own refusal. Its clock and keys are given, so nothing sleeps."""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from loopsense_local.s3 import BUCKET, EmbeddedS3, process_credentials

KEYS = {"AKIDLOCALTEST": "secret-of-the-test"}
START = 1_796_000_000.0  # 2026-11-30, in seconds


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def clock() -> Clock:
    return Clock()


@pytest.fixture(scope="module")
def store(clock: Clock) -> Iterator[EmbeddedS3]:
    running = EmbeddedS3(secret_of=KEYS.get, clock=clock).start()
    yield running
    running.stop()


def client(store: EmbeddedS3, access_key: str = "AKIDLOCALTEST",
           secret: str = KEYS["AKIDLOCALTEST"]) -> Any:
    return boto3.client("s3", endpoint_url=store.endpoint, region_name="us-east-1",
                        aws_access_key_id=access_key, aws_secret_access_key=secret,
                        config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                                      retries={"max_attempts": 1}))


@pytest.fixture(autouse=True)
def signed_now(clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    """boto3 signs at the store's time (its signers, Python's and the CRT's, read this)."""
    clock.now = START

    def now(remove_tzinfo: bool = True) -> datetime:
        at = datetime.fromtimestamp(clock.now, UTC)
        return at.replace(tzinfo=None) if remove_tzinfo else at

    for module in ("botocore.auth", "botocore.crt.auth"):
        monkeypatch.setattr(f"{module}.get_current_datetime", now)


def presigned(store: EmbeddedS3, operation: str, key: str, expires: int = 900) -> str:
    url: str = client(store).generate_presigned_url(
        operation, Params={"Bucket": BUCKET, "Key": key}, ExpiresIn=expires)
    return url


def fetch(url: str, method: str = "GET", data: bytes | None = None) -> tuple[int, str, Any]:
    """(status, S3's error code or "", the answer's headers)."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data, method=method),
                                    timeout=10) as answer:
            answer.read()
            return answer.status, "", answer.headers
    except urllib.error.HTTPError as error:
        found = re.search(rb"<Code>(\w+)</Code>", error.read())
        return error.code, found.group(1).decode() if found else "", error.headers


def with_query(url: str, **changes: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(query=urlencode({**dict(parse_qsl(parts.query)),
                                                      **changes})))


def test_pre_signed_urls_and_signed_calls_pass(store: EmbeddedS3, clock: Clock) -> None:
    assert fetch(presigned(store, "put_object", "tenants/a/f1"), "PUT", b"[1]")[0] == 200
    got = client(store).get_object(Bucket=BUCKET, Key="tenants/a/f1")
    assert got["Body"].read() == b"[1]"
    assert got["LastModified"].timestamp() == START  # when it was written, as S3 tells it
    status, _, headers = fetch(presigned(store, "get_object", "tenants/a/f1"))
    assert status == 200
    assert parsedate_to_datetime(headers["Last-Modified"]).timestamp() == START
    client(store).put_object(Bucket=BUCKET, Key="tenants/a/f2", Body=b"{}")
    client(store).delete_object(Bucket=BUCKET, Key="tenants/a/f2")
    assert fetch(presigned(store, "get_object", "tenants/a/f2"))[:2] == (404, "NoSuchKey")


def test_an_altered_url_or_one_for_another_key_does_not_match_its_signature(
        store: EmbeddedS3) -> None:
    client(store).put_object(Bucket=BUCKET, Key="tenants/b/f1", Body=b"[2]")
    client(store).put_object(Bucket=BUCKET, Key="tenants/c/f1", Body=b"[3]")
    url = presigned(store, "get_object", "tenants/b/f1")
    signature = dict(parse_qsl(urlsplit(url).query))["X-Amz-Signature"]
    for bad in (with_query(url, **{"X-Amz-Signature": signature[::-1]}),
                with_query(url, **{"X-Amz-Expires": "3600"}),
                with_query(url, **{"X-Amz-Date": "20261130T005330Z"}),
                url.replace("/tenants/b/", "/tenants/c/")):
        assert fetch(bad)[:2] == (403, "SignatureDoesNotMatch"), bad
    put = presigned(store, "put_object", "tenants/b/f9")  # a PUT's URL does not GET
    assert fetch(put)[:2] == (403, "SignatureDoesNotMatch")
    assert fetch(url)[0] == 200  # untouched, it still works


def test_a_url_past_its_expiry_is_refused_as_s3_refuses_it(store: EmbeddedS3,
                                                           clock: Clock) -> None:
    client(store).put_object(Bucket=BUCKET, Key="tenants/d/f1", Body=b"[4]")
    url = presigned(store, "get_object", "tenants/d/f1", expires=900)
    upload = presigned(store, "put_object", "tenants/d/f2", expires=900)
    clock.now = START + 900
    assert fetch(url)[0] == 200  # at its last second
    clock.now = START + 901
    assert fetch(url)[:2] == (403, "AccessDenied")
    assert fetch(upload, "PUT", b"[5]")[:2] == (403, "AccessDenied")
    assert b"Request has expired" in urllib_error_body(url)


def urllib_error_body(url: str) -> bytes:
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(url, timeout=10)
    body: bytes = refused.value.read()
    return body


def test_unknown_keys_wrong_secrets_and_unsigned_requests_are_refused(
        store: EmbeddedS3) -> None:
    client(store).put_object(Bucket=BUCKET, Key="tenants/e/f1", Body=b"[6]")
    for access_key, secret, code in (("AKIDSOMEONEELSE", "x", "InvalidAccessKeyId"),
                                     ("AKIDLOCALTEST", "not-the-secret", "SignatureDoesNotMatch")):
        with pytest.raises(ClientError) as refused:
            client(store, access_key, secret).get_object(Bucket=BUCKET, Key="tenants/e/f1")
        assert refused.value.response["Error"]["Code"] == code
    assert fetch(f"{store.endpoint}/{BUCKET}/tenants/e/f1")[:2] == (403, "AccessDenied")
    assert fetch(f"{store.endpoint}/{BUCKET}/tenants/e/f1", "PUT", b"x")[:2] == (
        403, "AccessDenied")
    assert client(store).get_object(Bucket=BUCKET, Key="tenants/e/f1")["Body"].read() == b"[6]"


def test_rotated_process_credentials_are_read_again_and_the_last_few_kept() -> None:
    # temporary credentials rotate: the router's boto3 signs with the new key, so the store
    # reads the chain again for a key it has not seen, and keeps the few before it
    chain = iter([("AKIA0", "s0"), ("AKIA1", "s1"), ("AKIA2", "s2"), ("AKIA3", "s3"),
                  ("AKIA4", "s4"), ("AKIA5", "s5")])
    reads: list[str] = []

    def read() -> tuple[str, str]:
        found = next(chain, ("AKIA5", "s5"))  # the chain's key once it stopped rotating
        reads.append(found[0])
        return found

    secret_of = process_credentials(read)
    assert secret_of("AKIA0") == "s0"
    assert secret_of("AKIA0") == "s0" and reads == ["AKIA0"]  # known: not read again
    for n in range(1, 6):
        assert secret_of(f"AKIA{n}") == f"s{n}"
    assert secret_of("AKIA2") == "s2" and len(reads) == 6  # among the last four: kept
    assert secret_of("AKIA0") is None  # rotated out: unknown (the chain has moved on)
    assert reads[-1] == "AKIA5"
