"""How loopsense serve's HTTP server writes a handler's answer (payload 2.0 response)."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

from loopsense_local.http_server import _send


def written(response: dict[str, Any]) -> tuple[dict[str, str], bytes]:
    messages: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        messages.append(message)

    asyncio.run(_send(send, "http.", response, close=False, http1=True))
    start, body = messages
    return {k.decode(): v.decode() for k, v in start["headers"]}, body["body"]


def test_a_base64_encoded_answer_goes_out_decoded_as_api_gateway_sends_it():
    binary = bytes(range(256))  # not UTF-8: the OTLP protobuf answers are binary
    headers, body = written({"statusCode": 200, "isBase64Encoded": True,
                             "headers": {"Content-Type": "application/x-protobuf"},
                             "body": base64.b64encode(binary).decode("ascii")})
    assert body == binary
    assert headers["Content-Length"] == "256"
    assert headers["Content-Type"] == "application/x-protobuf"


def test_a_text_answer_goes_out_as_is_even_when_it_looks_like_base64():
    headers, body = written({"statusCode": 200, "body": "AAEC",
                             "headers": {"Content-Type": "text/plain"}})
    assert body == b"AAEC" and headers["Content-Length"] == "4"
