"""HTTP itself, over raw sockets against a real `loopsense serve`: what an attacker found in the
stdlib gateway (issue 11) is answered in the envelope or by the HTTP library's own protocol
handling, never executes a smuggled request, never echoes what the client sent (a marker put in
the method, path, headers and body) in an answer or in the server's output, and never leaves
the server unable to answer.

The module's server runs with short timeouts and a concurrency bound of 4, so that the tests
can reach them; every wait below is derived from those settings with a wide margin.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from loopsense.platform.execute.pipeline import MAX_BODY_BYTES
from tests.concurrency import all_at_once
from tests.e2e.server import BIN, DEV_KEY, Operator, Server, start_server

IDLE_TIMEOUT_S = 2
READ_TIMEOUT_S = 2
MAX_CONCURRENCY = 4
LARGE_BODIES = 2  # Limits.large_bodies, the default: bodies over 1 MiB handled at once
# Long enough for any answer on a busy machine; a server that keeps a connection open past its
# own timeouts is still caught, since the client's wait is this plus those timeouts.
PATIENCE_S = 30
TOKEN = uuid.uuid4().hex
MARK = f"MARK{TOKEN}"  # a valid HTTP token, so it can stand in a method or a header name
THRESHOLDS = "/v1/detector-thresholds"
LOOP = {"events": [{"action": "search"}, {"action": "click"}] * 3}


@pytest.fixture(scope="module")
def proto() -> Iterator[Server]:
    running = start_server("--test-skills", "--idle-timeout", str(IDLE_TIMEOUT_S),
                           "--read-timeout", str(READ_TIMEOUT_S),
                           "--max-concurrency", str(MAX_CONCURRENCY))
    yield running
    running.stop()


@dataclass
class Answer:
    status: int
    headers: dict[str, str]  # lower-case names
    body: bytes

    def error_code(self) -> str:
        code: str = json.loads(self.body)["error"]["code"]
        return code


def address(server: Server) -> tuple[str, int]:
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def exchange(server: Server, data: bytes) -> tuple[list[Answer], bytes]:
    """Send ``data`` on a fresh connection and read until the server closes it (at the latest
    after its idle timeout): every answer parsed, and the raw bytes."""
    with socket.create_connection(address(server), timeout=PATIENCE_S) as sock:
        sock.sendall(data)
        raw = read_until_closed(sock)
    return parse(raw), raw


def read_until_closed(sock: socket.socket) -> bytes:
    chunks = []
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def parse(raw: bytes) -> list[Answer]:
    answers = []
    while raw:
        head, _, rest = raw.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        answers.append(Answer(int(lines[0].split()[1]), headers, rest[:length]))
        raw = rest[length:]
    return answers


def request(method: str, path: str, body: bytes = b"", *, key: str = DEV_KEY,
            extra: str = "") -> bytes:
    return (f"{method} {path} HTTP/1.1\r\nHost: loopsense\r\nAuthorization: Bearer {key}\r\n"
            f"Content-Type: application/json\r\nX-{MARK}: {MARK}\r\n{extra}"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


def assert_clean(answers: list[Answer], raw: bytes) -> None:
    """Nothing the client sent comes back, and no product or version is named."""
    assert TOKEN.encode() not in raw.lower()
    for answer in answers:
        assert "server" not in answer.headers
        assert "python" not in raw.decode("latin-1").lower()


def execute_call(skill: str = "agent.loop_detect", input_: Any = LOOP) -> bytes:
    return json.dumps({"skillKey": skill, "input": input_}).encode()


def thresholds_of(server: Server, key: str) -> dict[str, Any]:
    answer = server.request(b"", key=key, path=THRESHOLDS, method="GET")
    assert answer.status == 200, answer.body
    found: dict[str, Any] = answer.json()["thresholds"]
    return {name: entry["value"] for name, entry in found.items()}


# 1. methods -------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["PATCH", "DELETE", "OPTIONS", "TRACE", "PUT", "patch",
                                    f"X{MARK}"])
def test_another_method_on_a_known_path_is_405_with_allow(proto: Server, method: str) -> None:
    answers, raw = exchange(proto, request(method, "/v1/execute", MARK.encode(),
                                           extra="Connection: close\r\n"))
    assert [(a.status, a.error_code()) for a in answers] == [(405, "METHOD_NOT_ALLOWED")]
    assert answers[0].headers["allow"] == "POST"
    assert_clean(answers, raw)


def test_head_is_405_without_a_body_and_an_unknown_path_is_404(proto: Server) -> None:
    answers, raw = exchange(proto, request("HEAD", THRESHOLDS, extra="Connection: close\r\n"))
    assert [a.status for a in answers] == [405]
    assert answers[0].headers["allow"] == "GET, PUT"
    answers, raw = exchange(proto, request("GET", f"/v1/{MARK}?{MARK}={MARK}",
                                           extra="Connection: close\r\n"))
    assert [(a.status, a.error_code()) for a in answers] == [(404, "ROUTE_NOT_FOUND")]
    assert_clean(answers, raw)


# 2. and 4. framing and protocol errors ----------------------------------------------------------
@pytest.mark.parametrize("head", [
    f"POST /v1/execute HTTP/1.1\r\nHost: x\r\nContent-Length: abc{MARK}\r\n\r\n",
    "POST /v1/execute HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
    "POST /v1/execute HTTP/1.1\r\nHost: x\r\nContent-Length: 1, 2\r\n\r\n",
    "POST /v1/execute HTTP/1.1\r\nHost: x\r\nContent-Length: " + "9" * 40 + "\r\n\r\n",
    f"POST /v1/execute HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip{MARK}\r\n\r\n",
    f"{MARK} garbage\r\n\r\n",
    f"GET /v1/{MARK} HTTP/1.1\r\nHost: x\r\nBad Header {MARK}\r\n\r\n",
    f"GET /v1/{MARK}{'a' * 70_000} HTTP/1.1\r\nHost: x\r\n\r\n",
    f"GET /v1/x HTTP/1.1\r\nHost: x\r\nX-{MARK}: {'a' * 70_000}\r\n\r\n",
    # a chunk followed by two bytes other than CRLF (CVE-2025-43859: h11 < 0.16 took them)
    f"POST /v1/execute HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    f"{len(MARK):x}\r\n{MARK}XX0\r\n\r\n",
], ids=["cl-letters", "cl-negative", "cl-two", "cl-huge", "te-unknown", "request-line",
        "header-line", "long-target", "long-header", "chunk-terminator"])
def test_malformed_requests_get_a_bare_error_and_a_closed_connection(proto: Server,
                                                                    head: str) -> None:
    answers, raw = exchange(proto, head.encode() + request("GET", THRESHOLDS))
    # One answer, from the HTTP library (empty body), and the request after it never runs.
    assert len(answers) == 1, raw[:300]
    assert answers[0].status in (400, 431, 501) and answers[0].body == b""
    assert answers[0].headers["connection"] == "close"
    assert_clean(answers, raw)


# 3. chunked bodies and smuggling ----------------------------------------------------------------
def chunked(*parts: bytes) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


def test_a_chunked_body_is_decoded(proto: Server) -> None:
    body = execute_call()
    head = (f"POST /v1/execute HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {DEV_KEY}\r\n"
            "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n").encode()
    answers, raw = exchange(proto, head + chunked(body[:10], body[10:]))
    assert [a.status for a in answers] == [200], raw[:500]
    assert json.loads(answers[0].body)["output"]["loopDetected"] is True


@pytest.fixture(scope="module")
def victim(proto: Server) -> str:
    """A tenant whose thresholds a smuggled PUT would change; its key."""
    return Operator(proto.store_endpoint).new_tenant("team")[1]


def smuggled_put(key: str) -> bytes:
    return request("PUT", THRESHOLDS, b'{"revisit_threshold": 7}', key=key)


def test_a_request_inside_a_chunked_body_is_only_data(proto: Server, victim: str) -> None:
    before = thresholds_of(proto, victim)
    head = (f"POST /v1/execute HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {victim}\r\n"
            "Transfer-Encoding: chunked\r\n\r\n").encode()
    answers, raw = exchange(proto, head + chunked(smuggled_put(victim)))
    # One answer (the body is not JSON); the connection then idles out.
    assert [(a.status, a.error_code()) for a in answers] == [(400, "VALIDATION_ERROR")]
    assert thresholds_of(proto, victim) == before
    assert_clean(answers, raw)


@pytest.mark.parametrize("order", ["CL.TE", "TE.CL"])
def test_content_length_with_transfer_encoding_is_refused_and_the_connection_closed(
        proto: Server, victim: str, order: str) -> None:
    before = thresholds_of(proto, victim)
    # Read by Content-Length, the body hides the PUT; read as chunked, the PUT follows it.
    body = b"0\r\n\r\n" + smuggled_put(victim)
    lines = [f"Content-Length: {len(body)}", "Transfer-Encoding: chunked"]
    framing = "\r\n".join(lines if order == "CL.TE" else lines[::-1])
    head = (f"POST /v1/execute HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {victim}\r\n"
            f"{framing}\r\n\r\n").encode()
    answers, raw = exchange(proto, head + body + request("GET", THRESHOLDS, key=victim))
    # One answer, announcing the close: neither the PUT nor the GET after it was read.
    assert [(a.status, a.error_code()) for a in answers] == [(400, "VALIDATION_ERROR")]
    assert answers[0].headers["connection"] == "close"
    assert b"Transfer-Encoding" in answers[0].body  # names the rule, not the values
    assert thresholds_of(proto, victim) == before
    assert_clean(answers, raw)


# 8. bodies over the cap -------------------------------------------------------------------------
def test_a_declared_body_over_the_cap_is_refused_before_it_is_sent(proto: Server) -> None:
    head = (f"POST /v1/execute HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {DEV_KEY}\r\n"
            f"Content-Length: {MAX_BODY_BYTES + 1}\r\n\r\n").encode()
    answers, raw = exchange(proto, head)  # no body sent: the answer cannot wait for it
    assert [(a.status, a.error_code()) for a in answers] == [(400, "VALIDATION_ERROR")]
    assert str(MAX_BODY_BYTES).encode() in answers[0].body
    assert answers[0].headers["connection"] == "close"


def test_a_chunked_body_over_the_cap_is_refused_as_it_arrives(proto: Server) -> None:
    head = (f"POST /v1/execute HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {DEV_KEY}\r\n"
            "Transfer-Encoding: chunked\r\n\r\n").encode()
    piece = b"%x\r\n%s\r\n" % (1 << 20, MARK.encode() * ((1 << 20) // len(MARK)) + b"x" * (
        (1 << 20) % len(MARK)))
    with socket.create_connection(address(proto), timeout=PATIENCE_S) as sock:
        sock.sendall(head)
        try:
            # Twice the cap, never finished: the server must answer before the end.
            for _ in range(2 * MAX_BODY_BYTES // (1 << 20)):
                sock.sendall(piece)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server refused and closed while we were still sending
        raw = read_until_closed(sock)
    answers = parse(raw)
    # Answered, or reset when it closed with our unread bytes pending; either way refused.
    assert [(a.status, a.error_code()) for a in answers] in ([(400, "VALIDATION_ERROR")], [])
    assert_clean(answers, raw)
    assert proto.request(execute_call()).status == 200


def test_large_bodies_beyond_their_slots_get_503_server_busy_before_they_are_sent(
        proto: Server) -> None:
    head = (f"POST /v1/execute HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {DEV_KEY}\r\n"
            f"Content-Length: {2 << 20}\r\n\r\n").encode()
    answers: list[Answer] = []
    for _attempt in range(3):  # the holders' heads must be read first: a round trip after them
        holders = [socket.create_connection(address(proto), timeout=PATIENCE_S)
                   for _ in range(LARGE_BODIES)]
        try:
            for sock in holders:
                sock.sendall(head + b"x" * 1000)  # then nothing: each holds a large-body slot
            assert proto.request(b"", path="/v1/playbooks/step_count", method="GET").status == 200
            answers, raw = exchange(proto, head)  # its body never sent: answered at once
        finally:
            for sock in holders:
                sock.close()
        if answers:
            break
    assert [(a.status, a.error_code()) for a in answers] == [(503, "SERVER_BUSY")]
    assert answers[0].headers["retry-after"] == "1"
    assert b"1048576 bytes" in answers[0].body


# 5. half-sent connections -----------------------------------------------------------------------
def test_a_connection_without_a_complete_request_head_is_closed(proto: Server) -> None:
    with socket.create_connection(address(proto), timeout=IDLE_TIMEOUT_S * 10) as sock:
        sock.sendall(b"POST /v1/execute HTTP/1.1\r\nHost: x\r\nContent-Le")
        assert read_until_closed(sock) == b""  # closed by the server, nothing answered


def test_a_request_succeeds_after_a_thousand_half_sent_connections_close_at_once(
        proto: Server) -> None:
    sockets = []
    try:
        for _ in range(1000):
            sock = socket.create_connection(address(proto), timeout=PATIENCE_S)
            sock.sendall(b"POST /v1/execute HTTP/1.1\r\nHost: x\r\nContent-Le")
            sockets.append(sock)
    finally:
        for sock in sockets:
            sock.close()
    answer = proto.request(execute_call(), timeout=PATIENCE_S + IDLE_TIMEOUT_S + READ_TIMEOUT_S)
    assert answer.status == 200, answer.body


# saturation -------------------------------------------------------------------------------------
def test_more_slow_requests_than_the_bound_get_503_server_busy_and_none_hangs(
        proto: Server) -> None:
    sleep = execute_call("test.sleep", {"ms": 250})
    answers = all_at_once([lambda: proto.request(sleep, timeout=PATIENCE_S)] * 24)
    busy = [a for a in answers if a.status == 503]
    assert {a.status for a in answers} == {200, 503}, [a.body for a in answers]
    for answer in busy:
        assert answer.json()["error"]["code"] == "SERVER_BUSY"
        assert answer.json()["error"]["retryable"] is True
        assert answer.lower_headers()["retry-after"] == "1"
    assert proto.request(sleep).status == 200  # and it recovers


# 9. idempotent replays --------------------------------------------------------------------------
def test_an_idempotent_replay_carries_its_own_request_id(proto: Server) -> None:
    headers = {"Idempotency-Key": uuid.uuid4().hex}
    first, replay = (proto.request(execute_call(), headers=headers) for _ in range(2))
    assert first.status == replay.status == 200
    assert first.body == replay.body  # the stored answer, byte for byte
    ids = [a.lower_headers()["x-request-id"] for a in (first, replay)]
    assert ids[0] != ids[1]
    # each id names its own log line
    assert all(any(f'"request_id":"{i}"' in line for line in proto.output) for i in ids)


# last: what the server printed through all of the above ----------------------------------------
def test_the_server_printed_no_marker_and_no_traceback(proto: Server) -> None:
    output = "".join(proto.output)
    assert TOKEN not in output.lower()
    assert "Traceback" not in output and "BrokenPipe" not in output


# 6. and 7. how the server reaches its store -----------------------------------------------------
def listening_addresses(port: int) -> set[str]:
    """The local addresses of the IPv4 sockets listening on ``port`` (from /proc/net/tcp)."""
    found = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        host, port_hex = local.split(":")
        if state == "0A" and int(port_hex, 16) == port:  # 0A: LISTEN
            found.add(socket.inet_ntoa(bytes.fromhex(host)[::-1]))
    return found


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads /proc/net/tcp")
def test_the_store_listens_on_loopback_whatever_the_host() -> None:
    server = start_server("--host", "0.0.0.0", "--dev-api-key", OWN_KEY)
    try:
        store_port = int(server.store_endpoint.rsplit(":", 1)[1])
        assert server.store_endpoint.startswith("http://127.0.0.1:")
        assert listening_addresses(store_port) == {"127.0.0.1"}
        assert listening_addresses(address(server)[1]) == {"0.0.0.0"}
        assert "WARNING" not in "".join(server.output)
    finally:
        server.stop()
    server = start_server("--store-host", "0.0.0.0")
    try:
        store_port = int(server.store_endpoint.rsplit(":", 1)[1])
        assert listening_addresses(store_port) == {"0.0.0.0"}
        assert any("WARNING" in line and "any credentials" in line for line in server.output)
    finally:
        server.stop()


OWN_KEY = "ls_" + "k" * 40


def test_beyond_loopback_the_public_development_key_is_never_accepted(tmp_path) -> None:
    """docs/security.md, the local server's exposure: the README prints the fixed key, so a
    server reachable from other machines refuses to start with it, or on a store that still
    accepts it; on loopback the same store serves as before."""
    refused = subprocess.run([str(BIN / "loopsense"), "serve", "--host", "0.0.0.0", "--port",
                              "0", "--in-memory"], capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and "--dev-api-key" in refused.stderr
    local = start_server(data_dir=str(tmp_path))  # seeds the fixed key into this store
    local.stop()
    exposed = subprocess.run([str(BIN / "loopsense"), "serve", "--host", "0.0.0.0", "--port",
                              "0", "--store-port", "0", "--data-dir", str(tmp_path),
                              "--dev-api-key", OWN_KEY],
                             capture_output=True, text=True, timeout=60)
    assert exposed.returncode != 0 and "keys revoke dev key_" in exposed.stderr
    assert "loopsense: ready" not in exposed.stdout


def test_a_loopback_dynamodb_endpoint_needs_no_aws_credentials(proto: Server) -> None:
    no_credentials = {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "",
                      "AWS_SESSION_TOKEN": "", "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
                      "AWS_CONFIG_FILE": os.devnull, "AWS_EC2_METADATA_DISABLED": "true"}
    server = start_server("--dynamodb-endpoint", proto.store_endpoint, env=no_credentials)
    try:
        assert server.execute("agent.loop_detect", LOOP).status == 200
    finally:
        output = server.stop()
    assert "Traceback" not in output
