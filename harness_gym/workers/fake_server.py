"""A small OpenAI-compatible chat server with a deterministic "model" and scripted faults, for trying and testing
the LLM path without a GPU (docs/llm_worker.md, "Trying it without a model")::

    python -m harness_gym.workers.fake_server --port 8011 &
    harness-gym eval HarnessCode-v1 --policy forced-check --episodes 5 --worker openai \\
        --base-url http://127.0.0.1:8011/v1 --model fake

Each request takes the next entry of ``faults`` (then ``then``, ``"ok"`` unless set): ``"timeout"`` (answers
only after ``slow_s``), ``"429"`` (with ``Retry-After: retry_after``), ``"500"``, ``"503"`` (any status code),
``"malformed"`` (a 200 whose body is broken JSON), ``"nochoices"`` (valid JSON without choices),
``"unparseable"`` (a reply of prose the worker cannot read), ``"drop"`` (closes the connection without
answering) or ``"ok"``. A normal answer is ``responder(messages)``, by default :func:`plumbing_model`. As a
real server does, it answers 404 to a POST anywhere but ``/v1/chat/completions`` (a client given the wrong
``base_url``), taking no fault. ``GET /v1/models`` lists one model, ``fake``.

:func:`plumbing_model` reads nothing but the prompt: it writes a reply of the shape each prompt asks for (a
fenced function with the signature the task states, a JSON object with the keys the template names, a SQL
statement, one line of answer, a tool call, PASS, 0.5), so that every call parses and the path from the
request to the grader runs; its drafts are not meant to be right and score near 0. For better answers pass
a responder of your own (``--responder module:callable``, a callable from the messages to the reply text).
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Responder = Callable[[list[dict[str, str]]], str]

FAULTS: tuple[str, ...] = ("ok", "timeout", "429", "500", "503", "malformed", "nochoices", "unparseable", "drop")
"""The named faults; any other HTTP status code (``"401"``, ``"502"``) is answered as that status."""

_DEF = re.compile(r"^\s*def\s+([A-Za-z_]\w*)\s*\(([^)]*)\)", re.MULTILINE)
_JSON_KEY = re.compile(r'"([A-Za-z_]\w*)"\s*:\s*([\[{"<]?)')


def _template_object(line: str) -> str:
    """A JSON object with the top-level keys of the ``{...}`` template in ``line``: ``{}`` for a key whose
    value opens with ``{``, ``[]`` for ``[``, ``""`` otherwise."""
    start = line.find("{")
    if start < 0:
        return "{}"
    depth, keys = 0, {}
    for i, char in enumerate(line[start:], start):
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
        elif char == '"' and depth == 1:
            match = _JSON_KEY.match(line, i)
            if match and match.group(1) not in keys:
                keys[match.group(1)] = {"{": {}, "[": []}.get(match.group(2), "")
        if depth == 0:
            break
    return json.dumps(keys)


def plumbing_model(messages: list[dict[str, str]]) -> str:
    """A deterministic reply from the prompt alone, of the shape its last instruction asks for (module
    docstring): the same messages always get the same reply.

    :param messages: the request's chat messages
    """
    user = str(messages[-1].get("content", "")) if messages else ""
    lines = [line for line in user.splitlines() if line.strip()]
    instruction = lines[-1] if lines else ""
    if "number between 0 and 1" in instruction:
        return "0.5"
    if "PASS or FAIL" in instruction:
        return "PASS\nthe draft answers what the task asks."
    if "JSON object" in instruction and '"name"' in instruction and '"arguments"' in instruction:  # a tool call
        tools = re.findall(r"^- ([A-Za-z_][\w.]*)\(", user, re.MULTILINE)
        example = instruction[instruction.find("{"):]
        try:
            call = json.loads(example)
            if "<" in call.get("name", "<"):
                raise ValueError("a placeholder name")
        except ValueError:
            call = {"name": tools[0] if tools else "none", "arguments": {}}
        return json.dumps(call)
    if "```python" in instruction:
        found = _DEF.search(user)
        name, params = found.groups() if found else ("solve", "")
        return f"```python\ndef {name}({params}):\n    return None\n```"
    if "```sql" in instruction:
        return "```sql\nSELECT 1;\n```"
    if "JSON object" in instruction:
        return _template_object(instruction)
    return "unknown"


class FakeOpenAIServer:
    """The server on ``host:port`` (port 0: a free one) in a thread; use as a context manager, or
    :meth:`serve_forever`. ``base_url`` is the ``/v1`` root to give a client.

    :param responder: the reply text for a request's messages (default :func:`plumbing_model`)
    :param faults: the fault of each request, in order (module docstring)
    :param then: the fault of every request after ``faults`` ran out
    :param slow_s: how long a ``"timeout"`` request waits before it answers
    :param retry_after: the ``Retry-After`` header of a 429
    :param host: the address to listen on
    :param port: the port (0: any free one)
    """

    def __init__(self, responder: Responder | None = None, faults: Sequence[str] | None = None, *,
                 then: str = "ok", slow_s: float = 1.0, retry_after: str = "0", host: str = "127.0.0.1",
                 port: int = 0) -> None:
        for fault in (*(faults or ()), then):
            if fault not in FAULTS and not (fault.isdigit() and 100 <= int(fault) <= 599):
                raise ValueError(f"unknown fault {fault!r}: one of {', '.join(FAULTS)} or an HTTP status code")
        self.responder = responder or plumbing_model
        self.faults = list(faults or [])
        self.then = then
        self.slow_s = slow_s
        self.retry_after = retry_after
        self.served: Counter[str] = Counter()
        self.request_times: list[float] = []
        self.requests: list[list[dict[str, str]]] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer((host, port), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def _next_fault(self) -> str:
        with self._lock:
            fault = self.faults.pop(0) if self.faults else self.then
            self.served[fault] += 1
            self.request_times.append(time.monotonic())
            return fault

    def _handler(self) -> type[BaseHTTPRequestHandler]:
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
                    for key, value in (headers or {}).items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self) -> None:
                self._send(200, json.dumps({"object": "list", "data": [{"id": "fake", "object": "model"}]}).encode())

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                try:
                    payload = json.loads(self.rfile.read(length) or b"{}")
                    messages = list(payload.get("messages", []))
                except (ValueError, AttributeError):
                    self._send(400, b'{"error": {"message": "the body is not a JSON object"}}')
                    return
                if self.path.rstrip("/") != "/v1/chat/completions":
                    with server._lock:
                        server.served["404"] += 1
                    self._send(404, json.dumps({"error": {"message": f"no route {self.path}"}}).encode())
                    return
                fault = server._next_fault()
                with server._lock:
                    server.requests.append(messages)
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
                    text = "I am not sure what to say here." if fault == "unparseable" else server.responder(messages)
                    prompt_chars = sum(len(str(m.get("content", ""))) for m in messages)
                    body = {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0,
                            "model": payload.get("model"),
                            "choices": [{"index": 0, "finish_reason": "stop",
                                         "message": {"role": "assistant", "content": text}}],
                            "usage": {"prompt_tokens": prompt_chars // 4, "completion_tokens": len(text) // 4,
                                      "total_tokens": prompt_chars // 4 + len(text) // 4}}
                    self._send(200, json.dumps(body).encode())

        return Handler

    @property
    def base_url(self) -> str:
        """The ``/v1`` root of the server, e.g. ``http://127.0.0.1:8011/v1``."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def serve_forever(self) -> None:
        """Serve in this thread until interrupted."""
        try:
            self._httpd.serve_forever()
        finally:
            self._httpd.server_close()

    def __enter__(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def load_responder(spec: str) -> Responder:
    """The callable a ``--responder module:callable`` names (the module imported from ``sys.path``, the current
    folder first).

    :param spec: ``module:callable``
    :raises ValueError: naming what could not be found
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"--responder {spec!r}: expected module:callable")
    if "" not in sys.path:
        sys.path.insert(0, "")
    try:
        target = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"--responder {spec!r}: {type(exc).__name__}: {exc}") from None
    if not callable(target):
        raise ValueError(f"--responder {spec!r}: {type(target).__name__} is not callable")
    return target


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m harness_gym.workers.fake_server``: serve until interrupted (module docstring).

    :param argv: the arguments (default ``sys.argv[1:]``)
    """
    parser = argparse.ArgumentParser(prog="python -m harness_gym.workers.fake_server",
                                     description=__doc__.split("\n\n")[0].replace("::", "."))
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8011, help="port (default: 8011; 0: any free port)")
    parser.add_argument("--mode", default="ok", metavar="FAULT",
                        help=f"how requests are answered once --answer-first ran out: {', '.join(FAULTS)} or an "
                             "HTTP status code (default: ok)")
    parser.add_argument("--answer-first", type=int, default=0, metavar="N",
                        help="answer the first N requests normally, then apply --mode (a server that stops "
                             "answering mid-run; default: 0)")
    parser.add_argument("--faults", default="", metavar="F,F,...",
                        help="comma-separated faults of the first requests, after --answer-first (default: none)")
    parser.add_argument("--slow-s", type=float, default=5.0, help="seconds a 'timeout' request waits (default: 5)")
    parser.add_argument("--responder", default=None, metavar="MODULE:CALLABLE",
                        help="the model: a callable from the chat messages to the reply text (default: the "
                             "deterministic plumbing model, prompt-shaped replies that score near 0)")
    args = parser.parse_args(argv)
    try:
        responder = load_responder(args.responder) if args.responder else None
        faults = ["ok"] * max(args.answer_first, 0) + [f for f in args.faults.split(",") if f]
        server = FakeOpenAIServer(responder, faults, then=args.mode, slow_s=args.slow_s, host=args.host,
                                  port=args.port)
    except (ValueError, OSError) as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    print(f"serving a fake OpenAI-compatible model at {server.base_url} (model name: any; mode {args.mode}); "
          "Ctrl-C stops it", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
