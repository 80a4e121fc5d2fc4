"""A small OpenAI-compatible chat server for tests, on 127.0.0.1 in a thread, with scripted faults.

Each request takes the next entry of ``faults`` (then answers normally once they run out):
``"timeout"`` (answers only after ``slow_s``), ``"429"`` (with ``Retry-After: retry_after``), ``"500"``,
``"503"`` (any status code), ``"malformed"`` (a 200 whose body is broken JSON), ``"nochoices"`` (valid JSON without
choices), ``"unparseable"`` (a reply of prose the worker cannot read), ``"drop"`` (closes the connection
without answering) or ``"ok"``. A normal answer is ``responder(messages)``. As a real server does, it answers
404 to a POST anywhere but ``/v1/chat/completions`` (a client given the wrong ``base_url``), taking no fault.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Responder = Callable[[list[dict[str, str]]], str]


class FakeOpenAIServer:
    """The server; use as a context manager. ``base_url`` is the ``/v1`` root to give a client.

    :param responder: the reply text for a request's messages
    :param faults: the fault of each request, in order
    :param slow_s: how long a ``"timeout"`` request waits before it answers
    :param retry_after: the ``Retry-After`` header of a 429
    """

    def __init__(self, responder: Responder, faults: list[str] | None = None, *, slow_s: float = 1.0,
                 retry_after: str = "0") -> None:
        self.responder = responder
        self.faults = list(faults or [])
        self.slow_s = slow_s
        self.retry_after = retry_after
        self.served: Counter[str] = Counter()
        self.request_times: list[float] = []
        self.requests: list[list[dict[str, str]]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, code: int, body: bytes, headers: dict[str, str] | None = None) -> None:
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self) -> None:
                self._send(200, json.dumps({"object": "list", "data": [{"id": "fake", "object": "model"}]}).encode())

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                payload = json.loads(self.rfile.read(length) or b"{}")
                if self.path.rstrip("/") != "/v1/chat/completions":
                    with server._lock:
                        server.served["404"] += 1
                    self._send(404, json.dumps({"error": {"message": f"no route {self.path}"}}).encode())
                    return
                with server._lock:
                    fault = server.faults.pop(0) if server.faults else "ok"
                    server.served[fault] += 1
                    server.request_times.append(time.monotonic())
                    server.requests.append(payload.get("messages", []))
                if fault == "timeout":
                    time.sleep(server.slow_s)
                    fault = "ok"
                if fault == "429":
                    self._send(429, b'{"error": {"message": "rate limited"}}', {"Retry-After": server.retry_after})
                elif fault.isdigit():
                    self._send(int(fault), b'{"error": {"message": "server error"}}')
                elif fault == "malformed":
                    self._send(200, b'{"id": "x", "choices": [{"message": {"content": "oops"')
                elif fault == "nochoices":
                    self._send(200, b'{"id": "x", "object": "chat.completion", "choices": []}')
                elif fault == "drop":
                    self.close_connection = True
                    try:
                        self.connection.shutdown(2)
                    except OSError:
                        pass
                else:
                    text = "I am not sure what to say here." if fault == "unparseable" else \
                        server.responder(payload.get("messages", []))
                    prompt_chars = sum(len(m.get("content", "")) for m in payload.get("messages", []))
                    body = {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": payload.get("model"),
                            "choices": [{"index": 0, "finish_reason": "stop",
                                         "message": {"role": "assistant", "content": text}}],
                            "usage": {"prompt_tokens": prompt_chars // 4, "completion_tokens": len(text) // 4,
                                      "total_tokens": prompt_chars // 4 + len(text) // 4}}
                    self._send(200, json.dumps(body).encode())

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
