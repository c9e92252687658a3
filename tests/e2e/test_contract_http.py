"""The API's contract over HTTP: `loopsense serve` answers GET /openapi.json with the committed
document (no key needed, the same bytes every time, an ETag)."""

from __future__ import annotations

from loopsense.platform.contract.routes import DOCUMENT


def test_serve_answers_the_committed_document_without_a_key(server):
    answer = server.request(None, key=None, path="/openapi.json", method="GET")
    assert answer.status == 200, answer.body[:200]
    headers = answer.lower_headers()
    assert headers["content-type"] == "application/json" and headers["etag"]
    assert answer.body.decode() == DOCUMENT.read_text(encoding="utf-8")
    again = server.request(None, key=None, path="/openapi.json", method="GET",
                           headers={"If-None-Match": headers["etag"]})
    assert again.status == 304
