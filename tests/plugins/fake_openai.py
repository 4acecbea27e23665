"""A fake OpenAI-compatible Chat Completions server for offline tests.

A real HTTP server (``ThreadingHTTPServer`` on 127.0.0.1, port 0, HTTP/1.1) that replays
scripted replies in the real wire format (reference/offline-testing.md §2): SSE ``data:``
lines, no ``event:`` lines, ended by ``data: [DONE]``. Every request is logged (path,
headers, JSON body, arrival time) in :attr:`FakeOpenAI.requests` and, when a log path is
given, as JSON lines in that file.

Replies are queued per model name (``server.script("m", reply, reply, ...)``): each request
for that model takes the next one; an exhausted queue answers 500 with an error body.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = [
    "Drop",
    "Error",
    "FakeOpenAI",
    "Json",
    "Stream",
    "call",
    "calls",
    "chunk",
    "error_body",
    "text_reply",
    "tool_reply",
    "usage_chunk",
]

CREATED = 1_765_000_000


def chunk(
    delta: dict[str, Any] | None = None,
    finish: str | None = None,
    *,
    index: int = 0,
    model: str = "m",
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One ``chat.completion.chunk`` with a single choice."""
    out: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": model,
        "system_fingerprint": "fp_fake",
        "choices": [
            {"index": index, "delta": delta or {}, "logprobs": None, "finish_reason": finish}
        ],
    }
    if usage is not None:
        out["usage"] = usage
    return out


def call(
    index: int, id: str | None = None, name: str | None = None, arguments: str | None = None
) -> dict[str, Any]:
    """One ``delta.tool_calls[]`` entry: the first fragment of a call has ``id`` and ``name``."""
    entry: dict[str, Any] = {"index": index}
    function: dict[str, Any] = {}
    if id is not None:
        entry["id"] = id
        entry["type"] = "function"
    if name is not None:
        function["name"] = name
    if arguments is not None:
        function["arguments"] = arguments
    entry["function"] = function
    return entry


def calls(*entries: dict[str, Any], index: int = 0) -> dict[str, Any]:
    """A chunk whose delta carries these ``tool_calls`` entries."""
    return chunk({"tool_calls": list(entries)}, index=index)


def usage_chunk(
    prompt: int, completion: int, cached: int = 0, reasoning: int = 0
) -> dict[str, Any]:
    """The final chunk ``stream_options.include_usage`` asks for: no choices, only usage."""
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": "m",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": reasoning, "audio_tokens": 0},
        },
    }


def error_body(message: str, kind: str = "invalid_request_error", code: str | None = None) -> dict:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


@dataclass
class Stream:
    """A streamed reply. ``events`` are chunk dicts or raw SSE text (written as is).

    ``done``: end with ``data: [DONE]``. ``cut``: stop after this many events and close the
    connection (with ``chunked``, without the terminating chunk: a broken transfer).
    ``content_type``: what the response says it is (some servers say ``text/plain``)."""

    events: Sequence[dict[str, Any] | str]
    done: bool = True
    cut: int | None = None
    chunked: bool = False
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "text/event-stream; charset=utf-8"


@dataclass
class Error:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Json:
    """A non-streamed reply (a server that ignores ``stream``)."""

    body: Any
    status: int = 200


@dataclass
class Drop:
    """Close the connection without answering."""


def text_reply(text: str, *, pieces: int = 3, usage: tuple[int, int] = (10, 5)) -> Stream:
    """A plain text answer, streamed in a few pieces, then ``stop`` and a usage chunk."""
    size = max(1, -(-len(text) // pieces))
    events: list[dict[str, Any] | str] = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": text[i : i + size]}) for i in range(0, len(text), size)]
    events += [chunk({}, "stop"), usage_chunk(*usage)]
    return Stream(events)


def tool_reply(
    tool_calls: Iterable[tuple[str, str, dict[str, Any] | str]],
    *,
    text: str = "",
    finish: str = "tool_calls",
    usage: tuple[int, int] = (20, 10),
) -> Stream:
    """Tool calls ``(id, name, arguments)``, each argument string split in two fragments."""
    events: list[dict[str, Any] | str] = [chunk({"role": "assistant", "content": ""})]
    if text:
        events.append(chunk({"content": text}))
    for index, (call_id, name, args) in enumerate(tool_calls):
        raw = args if isinstance(args, str) else json.dumps(args)
        half = len(raw) // 2
        events.append(calls(call(index, call_id, name, "")))
        events += [calls(call(index, arguments=piece)) for piece in (raw[:half], raw[half:])]
    events += [chunk({}, finish), usage_chunk(*usage)]
    return Stream(events)


class FakeOpenAI:
    """The server; use as a context manager (or call :meth:`start` / :meth:`stop`)."""

    def __init__(self, log: Path | None = None) -> None:
        self.log = log
        self.requests: list[dict[str, Any]] = []
        self.replies: dict[str, list[Stream | Error | Json | Drop]] = {}
        self.lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None
        self.thread: threading.Thread | None = None

    # -- set-up -------------------------------------------------------------------------------
    def script(self, model: str, *replies: Stream | Error | Json | Drop) -> FakeOpenAI:
        with self.lock:
            self.replies.setdefault(model, []).extend(replies)
        return self

    @property
    def url(self) -> str:
        assert self.server is not None
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def start(self) -> FakeOpenAI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                fake._handle(self)

            def do_GET(self) -> None:
                self._send_json(404, error_body("not found", "not_found_error"))

            def _send_json(self, status: int, body: Any, headers: dict[str, str] | None = None):
                data = json.dumps(body).encode() if not isinstance(body, bytes) else body
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.send_header("x-request-id", "req_fake")
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- queries ------------------------------------------------------------------------------
    def bodies(self, model: str | None = None) -> list[dict[str, Any]]:
        return [
            r["body"]
            for r in self.requests
            if model is None or (isinstance(r["body"], dict) and r["body"].get("model") == model)
        ]

    # -- serving ------------------------------------------------------------------------------
    def _handle(self, handler: Any) -> None:
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        entry = {
            "path": handler.path,
            "headers": {k.lower(): v for k, v in handler.headers.items()},
            "body": body,
            "time": time.monotonic(),  # when it arrived: tests measure the waits between tries
        }
        with self.lock:
            self.requests.append(entry)
            if self.log is not None:
                with self.log.open("a") as out:
                    out.write(json.dumps(entry) + "\n")
            model = body.get("model") if isinstance(body, dict) else None
            queue = self.replies.get(str(model), [])
            reply = queue.pop(0) if queue else None
        if not handler.path.endswith("/chat/completions"):
            handler._send_json(404, error_body(f"no route {handler.path}", "not_found_error"))
            return
        if reply is None:
            handler._send_json(
                500, error_body(f"the fake has no reply left for {model!r}", "api_error")
            )
            return
        if isinstance(reply, Drop):
            handler.close_connection = True
            return
        if isinstance(reply, Error):
            body_out = reply.body if reply.body is not None else error_body(f"HTTP {reply.status}")
            handler._send_json(reply.status, body_out, reply.headers)
            return
        if isinstance(reply, Json):
            handler._send_json(reply.status, reply.body)
            return
        self._stream(handler, reply)

    def _stream(self, handler: Any, reply: Stream) -> None:
        handler.send_response(reply.status)
        handler.send_header("content-type", reply.content_type)
        handler.send_header("cache-control", "no-cache")
        handler.send_header("x-request-id", "req_fake")
        if reply.chunked:
            handler.send_header("transfer-encoding", "chunked")
        else:
            handler.send_header("connection", "close")
        for key, value in reply.headers.items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.close_connection = True

        def write(text: str) -> None:
            data = text.encode()
            if reply.chunked:
                data = f"{len(data):x}\r\n".encode() + data + b"\r\n"
            handler.wfile.write(data)
            handler.wfile.flush()

        events = list(reply.events)
        if reply.cut is not None:
            events = events[: reply.cut]
        for event in events:
            write(event if isinstance(event, str) else f"data: {json.dumps(event)}\n\n")
        if reply.cut is not None:
            return  # no [DONE], and with chunked no terminating chunk: a broken transfer
        if reply.done:
            write("data: [DONE]\n\n")
        if reply.chunked:
            handler.wfile.write(b"0\r\n\r\n")
            handler.wfile.flush()
