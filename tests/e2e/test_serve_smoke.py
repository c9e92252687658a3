"""The README's curl against `loopsense serve`, and a clean Ctrl-C."""

from __future__ import annotations

from tests.e2e.server import start_server

LOOP = {"events": [{"action": "search"}, {"action": "click"}] * 3}


def test_execute_over_http_then_clean_shutdown():
    server = start_server()
    try:
        answer = server.execute("agent.loop_detect", LOOP)
        assert answer.status == 200
        body = answer.json()
        assert list(body) == ["executionId", "skillKey", "skillVersion", "output", "billing"]
        assert body["output"]["spans"] == [{"start": 0, "end": 5, "cycleLength": 2,
                                            "repeats": 3}]
        assert body["billing"] == {"credits": 1}
        assert server.operator("usage", "dev")["used"] == 1
    finally:
        printed = server.stop()
    assert server.process.returncode == 0
    assert "loopsense: stopped" in printed
