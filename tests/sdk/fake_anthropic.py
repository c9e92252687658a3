"""A scripted fake of the Anthropic Messages API on 127.0.0.1, for the Claude Agent SDK's bundled
CLI (``ANTHROPIC_BASE_URL``): each main-loop request (one that offers the scripted tool) gets the
next turn of the script, a ``tool_use`` of that tool or a text answer; every other request (the
CLI's own side calls) gets a short text. The bodies of the main-loop requests are kept, so a
test can read what the model was shown."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Turn = dict[str, Any] | str  # a tool_use's input, or the final text


class FakeAnthropic:
    def __init__(self, tool: str, script: Callable[[int], Turn]) -> None:
        self.tool = tool
        self.script = script
        self.requests: list[dict[str, Any]] = []  # the main loop's, in order
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                fake._send(self, {"data": [], "has_more": False})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                fake._answer(self, self.path.split("?")[0], body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def _answer(self, handler: BaseHTTPRequestHandler, path: str, body: dict[str, Any]) -> None:
        if not path.endswith("/v1/messages"):
            self._send(handler, {"input_tokens": 10} if path.endswith("count_tokens") else {})
            return
        offered = [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
        turn: Turn = "ok"
        with self._lock:  # n read under the lock: concurrent requests get distinct ids
            if self.tool in offered:
                self.requests.append(body)
                turn = self.script(len(self.requests))
            n = len(self.requests)
        content = [{"type": "text", "text": turn}] if isinstance(turn, str) else [
            {"type": "tool_use", "id": f"toolu_{n:02d}", "name": self.tool, "input": turn}]
        stop = "end_turn" if isinstance(turn, str) else "tool_use"
        message = {"id": f"msg_{n}", "type": "message", "role": "assistant",
                   "model": body.get("model", "claude-fake"), "content": content,
                   "stop_reason": stop, "stop_sequence": None,
                   "usage": {"input_tokens": 10, "output_tokens": 5}}
        if not body.get("stream"):
            self._send(handler, message)
            return
        events: list[dict[str, Any]] = [{"type": "message_start", "message": {
            **message, "content": [], "stop_reason": None}}]
        for i, block in enumerate(content):
            if block["type"] == "text":
                events += [{"type": "content_block_start", "index": i,
                            "content_block": {"type": "text", "text": ""}},
                           {"type": "content_block_delta", "index": i,
                            "delta": {"type": "text_delta", "text": block["text"]}}]
            else:
                events += [{"type": "content_block_start", "index": i, "content_block": {
                    **block, "input": {}}},
                           {"type": "content_block_delta", "index": i, "delta": {
                               "type": "input_json_delta",
                               "partial_json": json.dumps(block["input"])}}]
            events.append({"type": "content_block_stop", "index": i})
        events += [{"type": "message_delta", "delta": {"stop_reason": stop,
                                                       "stop_sequence": None},
                    "usage": {"output_tokens": 5}}, {"type": "message_stop"}]
        data = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()
        handler.send_response(200)
        handler.send_header("content-type", "text/event-stream")
        handler.send_header("content-length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, answer: dict[str, Any]) -> None:
        data = json.dumps(answer).encode()
        handler.send_response(200)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
