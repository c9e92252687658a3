"""Where an execute output stops being inline (execute/files.py, docs/decisions.md): when the
router's proxy response would pass the 6 MB a Lambda may answer, counted as that response
carries the body (a JSON string, escaped), the output is written under the caller's tenant and
answered as a FileOutput."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from loopsense.jsonio import dumps
from loopsense.platform.execute.files import (
    ENVELOPE_BYTES,
    INLINE_RESPONSE_BYTES,
    STORED_RESPONSE_BYTES,
    URL_TTL_S,
    deliver,
    fits_inline,
)

ROOM = INLINE_RESPONSE_BYTES - ENVELOPE_BYTES
NOW = datetime(2026, 12, 2, tzinfo=UTC)


class Recorded:
    """A Files that keeps what it is given."""

    def __init__(self) -> None:
        self.written: list[tuple[str, str, bytes, str]] = []
        self.urls: list[tuple[str, str, int]] = []

    def write(self, tenant_id: str, file_id: str, body: bytes, content_type: str) -> None:
        self.written.append((tenant_id, file_id, body, content_type))

    def download_url(self, tenant_id: str, file_id: str, expires_s: int) -> str:
        self.urls.append((tenant_id, file_id, expires_s))
        return f"https://bucket/tenants/{tenant_id}/{file_id}?signed"


def escaped(output: Any) -> int:
    return len(json.dumps(dumps(output)))


def test_an_output_whose_escaped_body_fits_stays_inline_one_byte_more_is_a_file() -> None:
    # The output "77...7" is "\"77...7\"" in the response: its digits and six bytes.
    fits = "7" * (ROOM - 6)
    assert escaped(fits) == ROOM and fits_inline(dumps(fits))
    files = Recorded()
    assert deliver(files, "t-1", fits, NOW) is fits and not files.written  # type: ignore[arg-type]
    over = fits + "7"
    answer = deliver(files, "t-1", over, NOW)  # type: ignore[arg-type]
    assert files.written == [("t-1", answer["fileRef"], dumps(over).encode(), "application/json")]
    assert files.urls == [("t-1", answer["fileRef"], URL_TTL_S)]
    assert answer["bytes"] == len(dumps(over).encode()) and answer["method"] == "GET"
    assert answer["expiresAt"].startswith("2026-12-02T00:15:00")


def test_the_escaping_is_counted_not_only_the_bytes() -> None:
    """A quote in the output takes four bytes in the proxy response (escaped in the answer, then
    in the response), a non-ASCII character six (\\uXXXX) and one beyond the BMP twelve: such an
    output is a file at well under 6 MB of UTF-8."""
    for char, grows in (('"', 4), ("é", 6), ("😀", 12)):
        output = char * (ROOM // grows + 1)
        assert len(dumps(output).encode()) < ROOM  # under the limit as the answer's bytes ...
        assert not fits_inline(dumps(output)), char  # ... over it as the response carries it
        assert fits_inline(dumps(char * (ROOM // grows // 2)))


def test_a_keyed_calls_limit_is_the_item_its_response_is_stored_in() -> None:
    files = Recorded()
    output = "7" * (STORED_RESPONSE_BYTES - ENVELOPE_BYTES - 6)
    assert deliver(files, "t", output, NOW, STORED_RESPONSE_BYTES) is output  # type: ignore[arg-type]
    assert "fileRef" in deliver(files, "t", output + "7", NOW,  # type: ignore[arg-type]
                                STORED_RESPONSE_BYTES)
    assert deliver(files, "t", output + "7", NOW) == output + "7"  # type: ignore[arg-type]
