"""A small OpenAI-compatible chat completions server, started by a test in a thread (no mock of our code):
each request is answered by the test's `respond(request_body) -> Reply`; every request is recorded."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    content: str = ""
    status: int = 200
    body: bytes | None = None  # sent as is instead of a chat completion
    delay: float = 0.0
    usage: tuple[int, int] = (100, 20)


@dataclass
class ChatServer:
    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    authorizations: list[str | None] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)


def completion(content: str, usage: tuple[int, int] = (100, 20)) -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "model": "test-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)},
        }
    ).encode()


@contextmanager
def chat_server(respond: Callable[[dict[str, Any]], Reply]) -> Iterator[ChatServer]:
    server_state: dict[str, ChatServer] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            state = server_state["server"]
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            state.requests.append(body)
            state.authorizations.append(self.headers.get("Authorization"))
            state.paths.append(self.path)
            reply = respond(body)
            if reply.delay:
                time.sleep(reply.delay)
            payload = reply.body if reply.body is not None else completion(reply.content, reply.usage)
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a time-out)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    server_state["server"] = ChatServer(url=f"http://127.0.0.1:{httpd.server_address[1]}/v1")
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server_state["server"]
    finally:
        httpd.shutdown()
        httpd.server_close()
