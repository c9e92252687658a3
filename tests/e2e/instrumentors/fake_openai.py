"""A fake OpenAI Chat Completions server on loopback (stdlib only: it runs in the instrumentors'
own venvs). ``POST /v1/chat/completions``, plain or streamed (SSE), answers like the real API:

- a request offering a handoff tool (``transfer_to_*``) that has not been called yet calls it;
- a request offering a tool calls the first tool with the same arguments every time (the loop
  a tool-call detector must see);
- anything else gets the same short text answer.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL_SNAPSHOT = "gpt-4o-mini-2024-07-18"  # what the real API answers for gpt-4o-mini
ANSWER = "I could not find any flights."
TOOL_ARGUMENTS = '{"city": "Paris"}'


def _choice(request: dict[str, Any]) -> dict[str, Any]:
    tools = [t["function"]["name"] for t in request.get("tools") or [] if "function" in t]
    called = {c["function"]["name"] for m in request.get("messages", [])
              for c in (m.get("tool_calls") or []) if isinstance(m, dict)}
    turns = sum(1 for m in request.get("messages", []) if m.get("role") == "tool")
    handoff = next((t for t in tools if t.startswith("transfer_to_")), None)
    tool = next((t for t in tools if not t.startswith("transfer_to_")), None)
    if handoff is not None and handoff not in called:
        name, arguments = handoff, "{}"
    elif tool is not None:
        name, arguments = tool, TOOL_ARGUMENTS
    else:
        return {"role": "assistant", "content": ANSWER}
    return {"role": "assistant", "content": None, "tool_calls": [{
        "id": f"call_{turns}", "type": "function",
        "function": {"name": name, "arguments": arguments}}]}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        message = _choice(body)
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        usage = {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}
        base = {"id": "chatcmpl-fake", "created": 1_700_000_000, "model": MODEL_SNAPSHOT,
                "system_fingerprint": "fp_fake"}
        if not body.get("stream"):
            self._send("application/json", json.dumps({
                **base, "object": "chat.completion", "usage": usage,
                "choices": [{"index": 0, "message": message, "finish_reason": finish,
                             "logprobs": None}]}).encode())
            return
        delta = dict(message)
        if delta.get("tool_calls"):
            delta["tool_calls"] = [{**c, "index": 0} for c in delta["tool_calls"]]
        chunks = [{"index": 0, "delta": delta, "finish_reason": None, "logprobs": None},
                  {"index": 0, "delta": {}, "finish_reason": finish, "logprobs": None}]
        events = [{**base, "object": "chat.completion.chunk", "choices": [c]} for c in chunks]
        if (body.get("stream_options") or {}).get("include_usage"):
            events.append({**base, "object": "chat.completion.chunk", "choices": [],
                           "usage": usage})
        stream = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
        self._send("text/event-stream", stream.encode())

    def _send(self, content_type: str, data: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def start() -> tuple[ThreadingHTTPServer, str]:
    """The server on a free loopback port, serving in a daemon thread; (server, base URL)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"
