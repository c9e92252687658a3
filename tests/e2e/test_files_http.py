"""File inputs over real HTTP against `loopsense serve` and its embedded S3 (spec/platform.md,
File inputs; docs/files.md): POST /v1/files, the upload with curl to the pre-signed URL, execute
by ref; the same answer as inline; each refusal (a bad ref, a missing, used or another tenant's
file, one over 2 MiB, bytes that are neither JSON nor JSON Lines, an expired upload URL), none
charged and none echoing the file; an output too large to inline answered as a fileRef and
downloaded with curl from its pre-signed URL; the embedded S3 refusing an altered URL or one
for another key, as S3 does."""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pytest

from loopsense.jsonio import dumps
from loopsense_local import test_large
from tests.e2e.server import Operator, Server

EVENTS = [{"action": "search"}, {"action": "click"}] * 3
MARK = "zq-secret-file-content-7"


def new_file(server: Server, key: str) -> dict[str, Any]:
    answer = server.request(b"", key=key, path="/v1/files")
    assert answer.status == 200, answer.body
    made: dict[str, Any] = answer.json()
    return made


def curl_put(url: str, data: bytes) -> int:
    """Upload as a user would: `curl -T <file> <url>`; the HTTP status."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "events.json"
        path.write_bytes(data)
        done = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-T",
                               str(path), url], capture_output=True, text=True, timeout=30,
                              check=False)
    return int(done.stdout or 0)


def curl_get(url: str) -> tuple[int, bytes]:
    """Download as a user would: `curl -o <file> <url>`; the HTTP status and the bytes."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "output.json"
        done = subprocess.run(["curl", "-s", "-o", str(path), "-w", "%{http_code}", url],
                              capture_output=True, text=True, timeout=60, check=False)
        return int(done.stdout or 0), path.read_bytes() if path.exists() else b""


def upload(server: Server, key: str, data: bytes) -> str:
    made = new_file(server, key)
    assert curl_put(made["uploadUrl"], data) == 200
    return str(made["fileRef"])


@pytest.fixture(scope="module")
def tenants(server: Server, operator: Operator) -> tuple[tuple[str, str], tuple[str, str]]:
    return operator.new_tenant("team"), operator.new_tenant("team")


def refused(answer: Any, code: str, path: str = "input.fileRef") -> str:
    assert answer.status in (400, 429), answer.body
    error = answer.json()["error"]
    assert (error["code"], error["details"][0]["path"]) == (code, path), error
    assert MARK not in answer.body.decode()
    issue: str = error["details"][0]["issue"]
    return issue


def test_upload_with_curl_then_execute_by_ref_is_the_inline_answer_and_used_once(
        server: Server, operator: Operator, tenants: Any) -> None:
    (tenant, key), _ = tenants
    made = new_file(server, key)
    assert re.fullmatch(r"file_[0-9a-f]{32}", made["fileRef"])
    assert (made["method"], made["maxBytes"]) == ("PUT", 2 * 1024 * 1024)
    assert f"/tenants/{tenant}/{made['fileRef']}" in made["uploadUrl"]  # the tenant's prefix
    assert curl_put(made["uploadUrl"], json.dumps(EVENTS).encode()) == 200

    by_ref = server.execute("agent.loop_detect", {"fileRef": made["fileRef"]}, key=key)
    inline = server.execute("agent.loop_detect", {"events": EVENTS}, key=key)
    assert (by_ref.status, inline.status) == (200, 200), by_ref.body
    assert by_ref.json()["output"] == inline.json()["output"]
    assert operator.usage(tenant)["used"] == 2
    # Used: deleted with its successful call, so the ref names nothing now.
    again = server.execute("agent.loop_detect", {"fileRef": made["fileRef"]}, key=key)
    refused(again, "LOOP_EVENTS_INVALID")
    assert operator.usage(tenant)["used"] == 2


def test_json_lines_and_other_params_beside_the_ref(server: Server, tenants: Any) -> None:
    (_, key), _ = tenants
    lines = "\n".join(json.dumps({"type": "checkpoint", "state": {"step": i % 2}})
                      for i in range(6)).encode()
    ref = upload(server, key, lines)
    answer = server.execute("agent.semantic_loop", {"fileRef": ref}, key=key)
    inline = server.execute("agent.semantic_loop", {"events": [json.loads(x) for x in
                                                               lines.splitlines()]}, key=key)
    assert answer.status == 200, answer.body
    assert answer.json()["output"] == inline.json()["output"]


def test_another_tenants_ref_reads_as_missing_and_leaks_nothing(server: Server,
                                                                 operator: Operator,
                                                                 tenants: Any) -> None:
    (_, key_a), (tenant_b, key_b) = tenants
    ref = upload(server, key_a, json.dumps([{"action": MARK}] * 4).encode())
    theirs = refused(server.execute("agent.loop_detect", {"fileRef": ref}, key=key_b),
                     "LOOP_EVENTS_INVALID")
    missing = refused(server.execute("agent.loop_detect", {"fileRef": "file_" + "0" * 32},
                                     key=key_b), "LOOP_EVENTS_INVALID")
    assert theirs == missing  # the same words: nothing tells "someone else's" from "none"
    assert operator.usage(tenant_b)["used"] == 0
    # ... and the owner's file is still there, untouched.
    assert server.execute("agent.loop_detect", {"fileRef": ref}, key=key_a).status == 200


@pytest.mark.parametrize(("data", "skill", "code"), [
    (b"\xff\xfe not text", "agent.loop_detect", "LOOP_EVENTS_INVALID"),
    (b"[{\"action\": 1}, oops", "agent.run_monitor", "RUN_STEPS_INVALID"),
    (b"{\"a\": 1}\nnot json " + MARK.encode(), "agent.loops", "VALIDATION_ERROR"),
], ids=["not-utf8", "broken-json", "broken-json-lines"])
def test_bytes_that_are_neither_json_nor_json_lines_are_the_skills_input_error(
        server: Server, tenants: Any, data: bytes, skill: str, code: str) -> None:
    (_, key), _ = tenants
    issue = refused(server.execute(skill, {"fileRef": upload(server, key, data)}, key=key), code)
    assert "JSON Lines" in issue


def test_a_file_over_2_mib_is_the_skills_limit_error_naming_it(server: Server,
                                                               tenants: Any) -> None:
    (_, key), _ = tenants
    big = json.dumps([{"action": MARK + "x" * 100}] * 20_000).encode()
    assert len(big) > 2 * 1024 * 1024
    issue = refused(server.execute("agent.loop_detect", {"fileRef": upload(server, key, big)},
                                   key=key), "LOOP_EVENT_LIMIT_EXCEEDED")
    assert str(2 * 1024 * 1024) in issue


@pytest.mark.parametrize(("input_", "path"), [
    ({"fileRef": "../other-tenant/file"}, "input.fileRef"),
    ({"fileRef": 7}, "input.fileRef"),
    ({"fileRef": "file_" + "a" * 32, "events": EVENTS}, "input"),
], ids=["path-like", "not-text", "ref-and-events"])
def test_a_malformed_ref_is_refused_before_any_read(server: Server, tenants: Any,
                                                   input_: Any, path: str) -> None:
    (_, key), _ = tenants
    refused(server.execute("agent.loop_detect", input_, key=key), "LOOP_EVENTS_INVALID", path)


def test_an_expired_upload_url_is_refused_by_the_store(server: Server, tenants: Any) -> None:
    (_, key), _ = tenants
    made = new_file(server, key)
    parts = urlsplit(made["uploadUrl"])
    query = dict(parse_qsl(parts.query))
    query["X-Amz-Date"] = "20200101T000000Z"  # signed long ago: its 15 minutes are over
    late = urlunsplit(parts._replace(query=urlencode(query)))
    assert curl_put(late, json.dumps(EVENTS).encode()) == 403
    refused(server.execute("agent.loop_detect", {"fileRef": made["fileRef"]}, key=key),
            "LOOP_EVENTS_INVALID")


def test_files_need_an_api_key(server: Server) -> None:
    answer = server.request(b"", key=None, path="/v1/files")
    assert (answer.status, answer.json()["error"]["code"]) == (401, "UNAUTHORIZED")


# An output too large to inline: test.large (the server's --test-skills) answers as many numbers
# as asked; 900,000 of them are about 6.9 MB of JSON, over the 6 MB a Lambda may answer.
LARGE_COUNT = 900_000


@pytest.fixture(scope="module")
def large(server: Server, operator: Operator, tenants: Any) -> dict[str, Any]:
    """tenant A's test.large answer over the inline size (one for the module: ~1 s)."""
    (tenant, key), _ = tenants
    before = operator.usage(tenant)["used"]
    answer = server.execute("test.large", {"count": LARGE_COUNT}, key=key, timeout=60)
    assert answer.status == 200, answer.body[:300]
    assert len(answer.body) < 4096  # the answer carries the ref, not the output
    assert operator.usage(tenant)["used"] == before + 1  # charged as any call
    made: dict[str, Any] = answer.json()
    return made


def test_an_output_too_large_to_inline_is_a_file_ref_whose_download_is_the_inline_output(
        server: Server, tenants: Any, large: dict[str, Any]) -> None:
    (tenant, _), _ = tenants
    ref = large["output"]
    assert set(ref) == {"fileRef", "downloadUrl", "method", "expiresAt", "bytes"}
    assert re.fullmatch(r"out_[0-9a-f]{32}", ref["fileRef"]) and ref["method"] == "GET"
    assert f"/tenants/{tenant}/{ref['fileRef']}?" in ref["downloadUrl"]  # the tenant's prefix
    status, body = curl_get(ref["downloadUrl"])
    assert status == 200
    # Byte for byte what "output" would have held: the skill's answer in the answers' JSON.
    inline = dumps(test_large.run({"count": LARGE_COUNT})).encode()
    assert len(inline) > 6 * 1024 * 1024
    assert (len(body), body) == (ref["bytes"], inline)
    with urllib.request.urlopen(ref["downloadUrl"], timeout=30) as again:  # and with urllib
        assert again.read() == body
    small = server.execute("test.large", {"count": 3}, key=tenants[0][1])
    assert small.json()["output"] == {"count": 3, "numbers": [0, 1, 2]}  # inline as ever


def test_another_tenant_cannot_fetch_an_output(server: Server, tenants: Any,
                                               large: dict[str, Any]) -> None:
    (tenant_a, _), (tenant_b, key_b) = tenants
    ref = large["output"]
    # Its URL moved to B's own prefix (or any other key) no longer matches its signature ...
    theirs = ref["downloadUrl"].replace(f"/tenants/{tenant_a}/", f"/tenants/{tenant_b}/")
    assert s3_refusal(theirs) == (403, "SignatureDoesNotMatch")
    # ... the object unsigned is refused, and B's key names nothing by its ref.
    assert s3_refusal(ref["downloadUrl"].split("?")[0]) == (403, "AccessDenied")
    refused(server.execute("agent.loop_detect", {"fileRef": ref["fileRef"]}, key=key_b),
            "LOOP_EVENTS_INVALID")


def s3_refusal(url: str, method: str = "GET", data: bytes | None = None) -> tuple[int, str]:
    """S3's status and error code for a request it refuses."""
    try:
        urllib.request.urlopen(urllib.request.Request(url, data=data, method=method), timeout=30)
    except urllib.error.HTTPError as error:
        found = re.search(rb"<Code>(\w+)</Code>", error.read())
        return error.code, found.group(1).decode() if found else ""
    raise AssertionError("the store took it")


def altered(url: str, **changes: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(query=urlencode({**dict(parse_qsl(parts.query)),
                                                      **changes})))


def test_the_store_refuses_an_altered_upload_url_or_one_for_another_key(
        server: Server, tenants: Any) -> None:
    (tenant_a, key_a), (tenant_b, _) = tenants
    made = new_file(server, key_a)
    url, data = made["uploadUrl"], json.dumps(EVENTS).encode()
    signature = dict(parse_qsl(urlsplit(url).query))["X-Amz-Signature"]
    flipped = ("0" if signature[0] != "0" else "1") + signature[1:]
    for bad in (altered(url, **{"X-Amz-Signature": flipped}),
                altered(url, **{"X-Amz-Expires": "604800"}),  # a longer life than signed
                url.replace(made["fileRef"], "file_" + "0" * 32),  # another key ...
                url.replace(f"/tenants/{tenant_a}/", f"/tenants/{tenant_b}/")):  # ... tenant
        assert s3_refusal(bad, "PUT", data) == (403, "SignatureDoesNotMatch")
    assert curl_put(url, data) == 200  # the URL as made still works


def test_with_an_idempotency_key_an_output_too_large_to_store_for_replays_is_a_file(
        server: Server, tenants: Any) -> None:
    """A keyed call's response is stored for its replays in one DynamoDB item (400 KB): an
    output of about 700 KB is inline without a key, a file with one, and the replay is that
    answer byte for byte."""
    (_, key), _ = tenants
    count = 100_000
    inline = server.execute("test.large", {"count": count}, key=key)
    assert inline.status == 200 and len(inline.body) > 400 * 1024
    idempotency = {"Idempotency-Key": "large-" + uuid.uuid4().hex}
    keyed = server.execute("test.large", {"count": count}, key=key, headers=idempotency)
    assert keyed.status == 200, keyed.body[:300]
    ref = keyed.json()["output"]
    assert set(ref) >= {"fileRef", "downloadUrl"}
    assert curl_get(ref["downloadUrl"]) == (200, dumps(inline.json()["output"]).encode())
    again = server.execute("test.large", {"count": count}, key=key, headers=idempotency)
    assert (again.status, again.body) == (200, keyed.body)  # the stored answer, byte for byte


def test_an_outputs_ref_is_no_input(server: Server, tenants: Any,
                                    large: dict[str, Any]) -> None:
    # Taken as an input, it would be deleted from under its download URL and keyed replays.
    (_, key_a), _ = tenants
    ref = large["output"]["fileRef"]
    issue = refused(server.execute("agent.loop_detect", {"fileRef": ref}, key=key_a),
                    "LOOP_EVENTS_INVALID")
    assert "POST /v1/files" in issue
    status, _ = curl_get(large["output"]["downloadUrl"])
    assert status == 200  # still there
