"""A fake Anthropic Messages API: a real HTTP server on 127.0.0.1 speaking the wire format the
``anthropic`` SDK expects (offline-testing.md §1), for tests that drive the real SDK.

* ``POST <prefix>/v1/messages`` only. Every request is logged (:attr:`FakeAnthropic.requests`:
  path, lower-cased headers, parsed body, arrival time), and optionally appended to a JSONL file.
* Authentication: ``X-Api-Key: <key>`` (SDK 0.x) or ``Authorization: Bearer <key>`` (2.x) are
  both accepted; none, or a key not in :attr:`FakeAnthropic.keys` (when set), is a 401.
* Replies are scripted per model (``server.script("m", reply, ...)``, consumed in order; model
  ``"*"`` matches any); ``err-<status>`` models answer that error. A reply is an :class:`SSE`
  stream, an :class:`ApiError` or a :class:`Json` body.
* The API's rules on the request are checked like the real API does (a 400
  ``invalid_request_error`` naming the rule): every ``tool_use`` answered by a ``tool_result``
  in the very next user turn before any text, tools defined when the history has calls,
  signed thinking blocks, a tool-use turn starting with thinking when thinking is on, at most
  four ``cache_control`` breakpoints, no empty text blocks, thinking budget rules.

Builders (:func:`text`, :func:`thinking`, :func:`tool_use`, :func:`message_events`,
:func:`error_event`) make realistic event sequences; :func:`load_sse` replays a recorded stream
from ``anthropic_streams/``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

STREAMS = Path(__file__).parent / "anthropic_streams"

Event = tuple[str, dict[str, Any]]


# ---------------------------------------------------------------------------------------------
# replies
# ---------------------------------------------------------------------------------------------


@dataclass
class SSE:
    """A streamed reply: ``(event name, data)`` pairs, or raw SSE text replayed as it is."""

    events: list[Event] | str
    headers: dict[str, str] = field(default_factory=dict)

    def render(self) -> bytes:
        if isinstance(self.events, str):
            text = self.events
            return (text if text.endswith("\n\n") else text.rstrip("\n") + "\n\n").encode()
        return "".join(
            f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in self.events
        ).encode()


@dataclass
class ApiError:
    """An error response: ``{"type": "error", "error": {"type", "message"}, "request_id"}``."""

    status: int
    type: str = "api_error"
    message: str = "error"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Json:
    """A non-streamed JSON response."""

    body: dict[str, Any]
    status: int = 200


ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


# ---------------------------------------------------------------------------------------------
# stream builders
# ---------------------------------------------------------------------------------------------


@dataclass
class Block:
    """One content block of a scripted reply. ``open`` blocks never get ``content_block_stop``
    (a reply cut by max_tokens)."""

    kind: str
    start: dict[str, Any]
    deltas: list[dict[str, Any]] = field(default_factory=list)
    open: bool = False


def text(value: str, *, chunks: int = 3) -> Block:
    size = max(1, -(-len(value) // chunks))
    parts = [value[i : i + size] for i in range(0, len(value), size)] or [""]
    return Block(
        "text",
        {"type": "text", "text": ""},
        [{"type": "text_delta", "text": part} for part in parts],
    )


def thinking(value: str, signature: str = "sig-EqQBCkYIBRgCKkD") -> Block:
    half = len(value) // 2
    return Block(
        "thinking",
        {"type": "thinking", "thinking": "", "signature": ""},
        [
            {"type": "thinking_delta", "thinking": value[:half]},
            {"type": "thinking_delta", "thinking": value[half:]},
            {"type": "signature_delta", "signature": signature},
        ],
    )


def redacted_thinking(data: str = "EmwKAhgBEgy3va3pzix/LafPsn4a") -> Block:
    return Block("redacted_thinking", {"type": "redacted_thinking", "data": data})


def tool_use(
    id: str, name: str, input: dict[str, Any] | str, *, chunks: int = 3, open: bool = False
) -> Block:
    """A tool call whose input arrives as ``input_json_delta`` fragments (the first one ``""``
    as the real API often sends); ``input`` may be raw (possibly truncated) JSON text."""
    raw = input if isinstance(input, str) else json.dumps(input)
    size = max(1, -(-len(raw) // chunks))
    parts = [""] + [raw[i : i + size] for i in range(0, len(raw), size)]
    return Block(
        "tool_use",
        {"type": "tool_use", "id": id, "name": name, "input": {}},
        [{"type": "input_json_delta", "partial_json": part} for part in parts],
        open=open,
    )


def message_events(
    *blocks: Block,
    stop_reason: str | None = None,
    model: str = "fake-model",
    input_tokens: int = 25,
    output_tokens: int = 40,
    cache_read: int = 0,
    cache_write: int = 0,
    message_id: str = "msg_01FakeAnthropic",
    ping: bool = True,
) -> list[Event]:
    """A whole reply. ``stop_reason`` defaults to ``tool_use`` when a block is a tool call,
    ``max_tokens`` when a block is open, else ``end_turn``."""
    if stop_reason is None:
        if any(b.open for b in blocks):
            stop_reason = "max_tokens"
        elif any(b.kind == "tool_use" for b in blocks):
            stop_reason = "tool_use"
        else:
            stop_reason = "end_turn"
    usage = {
        "input_tokens": input_tokens,
        "cache_creation_input_tokens": cache_write,
        "cache_read_input_tokens": cache_read,
        "output_tokens": 1,
        "service_tier": "standard",
    }
    events: list[Event] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": usage,
                },
            },
        )
    ]
    for index, block in enumerate(blocks):
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": block.start},
            )
        )
        if ping and index == 0:
            events.append(("ping", {"type": "ping"}))
        for delta in block.deltas:
            events.append(
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
            )
        if not block.open:
            events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {
                    "input_tokens": input_tokens,
                    "cache_creation_input_tokens": cache_write,
                    "cache_read_input_tokens": cache_read,
                    "output_tokens": output_tokens,
                },
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def error_event(error_type: str = "overloaded_error", message: str = "Overloaded") -> Event:
    return ("error", {"type": "error", "error": {"type": error_type, "message": message}})


def reply(*blocks: Block, **kwargs: Any) -> SSE:
    """An :class:`SSE` reply of these blocks (see :func:`message_events`)."""
    return SSE(message_events(*blocks, **kwargs))


def load_sse(name: str, **replace: str) -> SSE:
    """A recorded stream from ``anthropic_streams/NAME.sse``; ``{{key}}`` placeholders replaced."""
    raw = (STREAMS / f"{name}.sse").read_text()
    for key, value in replace.items():
        raw = raw.replace("{{" + key + "}}", value)
    return SSE(raw)


# ---------------------------------------------------------------------------------------------
# request checks (the API's rules the SDK does not check)
# ---------------------------------------------------------------------------------------------


def check_request(body: dict[str, Any]) -> str | None:
    """The first API rule ``body`` breaks, or None."""
    for key in ("model", "max_tokens", "messages"):
        if key not in body:
            return f"{key}: Field required"
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    if messages[0].get("role") != "user":
        return "messages: the first message must use the 'user' role"
    breakpoints = 0
    has_calls = False
    for block in body.get("system") or []:
        breakpoints += "cache_control" in block
    for tool in body.get("tools") or []:
        breakpoints += "cache_control" in tool
        if "input_schema" not in tool:
            return f"tools: tool '{tool.get('name')}' has no input_schema"
    for i, message in enumerate(messages):
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for block in blocks:
            breakpoints += "cache_control" in block
            kind = block.get("type")
            if kind == "text" and not block.get("text"):
                return f"messages.{i}: text content blocks must be non-empty"
            if kind == "thinking" and not block.get("signature"):
                return f"messages.{i}: thinking.signature: Field required"
            if kind in ("tool_use", "tool_result"):
                has_calls = True
        if message.get("role") == "assistant":
            calls = [b["id"] for b in blocks if b.get("type") == "tool_use"]
            if not calls:
                continue
            following = messages[i + 1] if i + 1 < len(messages) else None
            if following is None:
                continue  # a prefill ending in a call: not our concern
            answered: list[str] = []
            seen_other = False
            for block in following.get("content") or []:
                if block.get("type") == "tool_result":
                    if seen_other:
                        return (
                            f"messages.{i + 1}: tool_result blocks must come before any other "
                            "content in the user message"
                        )
                    answered.append(block.get("tool_use_id"))
                else:
                    seen_other = True
            missing = [c for c in calls if c not in answered]
            if missing:
                return (
                    f"messages.{i + 1}: `tool_use` ids were found without `tool_result` blocks "
                    f"immediately after: {', '.join(missing)}"
                )
    if breakpoints > 4:
        return f"A maximum of 4 blocks with cache_control may be provided. Found {breakpoints}."
    if has_calls and not body.get("tools"):
        return "Requests which include `tool_use` or `tool_result` blocks must define tools."
    config = body.get("thinking") or {}
    if config.get("type") == "enabled":
        budget = config.get("budget_tokens", 0)
        if budget < 1024:
            return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
        if budget >= body["max_tokens"]:
            return "`max_tokens` must be greater than `thinking.budget_tokens`"
        if "temperature" in body and body["temperature"] != 1:
            return "`temperature` may only be set to 1 when thinking is enabled"
    if config.get("type") in ("enabled", "adaptive"):
        last = messages[-1]
        prior = messages[-2] if len(messages) > 1 else None
        results = [b for b in last.get("content") or [] if b.get("type") == "tool_result"]
        if prior and prior.get("role") == "assistant" and results:
            first = (prior.get("content") or [{}])[0]
            if first.get("type") not in ("thinking", "redacted_thinking"):
                return (
                    "messages.{}.content.0.type: Expected `thinking` or `redacted_thinking`, but "
                    "found `{}`. When `thinking` is enabled, a final `assistant` message must "
                    "start with a thinking block.".format(len(messages) - 2, first.get("type"))
                )
    return None


# ---------------------------------------------------------------------------------------------
# the server
# ---------------------------------------------------------------------------------------------


class FakeAnthropic:
    """The server; use as a context manager (or :meth:`start` / :meth:`stop`)."""

    def __init__(self, *, prefix: str = "", log: Path | None = None) -> None:
        self.prefix = prefix.rstrip("/")
        self.log = log
        self.requests: list[dict[str, Any]] = []
        self.scripts: dict[str, list[SSE | ApiError | Json]] = {}
        self.keys: set[str] | None = None  # accepted keys; None: any non-empty key
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._count = 0

    # -- scripting ------------------------------------------------------------------------------
    def script(self, model: str, *replies: SSE | ApiError | Json) -> FakeAnthropic:
        with self._lock:
            self.scripts.setdefault(model, []).extend(replies)
        return self

    def bodies(self) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests]

    @property
    def url(self) -> str:
        """The base URL to give the SDK (no ``/v1``)."""
        assert self._server is not None, "not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}{self.prefix}"

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> FakeAnthropic:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                fake._handle(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- handling -------------------------------------------------------------------------------
    def _next_request_id(self) -> str:
        with self._lock:
            self._count += 1
            return f"req_fake{self._count:04d}"

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in handler.headers.items()}
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        # "time": when it arrived (tests measure the waits between tries)
        entry = {"path": handler.path, "headers": headers, "body": body, "time": time.monotonic()}
        with self._lock:
            self.requests.append(entry)
            if self.log is not None:
                with self.log.open("a") as out:
                    out.write(json.dumps(entry) + "\n")
        request_id = self._next_request_id()

        if handler.path.split("?")[0] != f"{self.prefix}/v1/messages":
            return self._error(handler, ApiError(404, "not_found_error", "Not found"), request_id)
        key = headers.get("x-api-key") or ""
        bearer = headers.get("authorization", "")
        if not key and bearer.lower().startswith("bearer "):
            key = bearer[len("bearer ") :].strip()
        if not key:
            return self._error(
                handler,
                ApiError(401, "authentication_error", "x-api-key header is required"),
                request_id,
            )
        if self.keys is not None and key not in self.keys:
            return self._error(
                handler, ApiError(401, "authentication_error", "invalid x-api-key"), request_id
            )
        if "anthropic-version" not in headers:
            return self._error(
                handler,
                ApiError(400, "invalid_request_error", "anthropic-version: header is required"),
                request_id,
            )
        if not isinstance(body, dict):
            return self._error(
                handler, ApiError(400, "invalid_request_error", "invalid JSON"), request_id
            )
        problem = check_request(body)
        if problem:
            return self._error(handler, ApiError(400, "invalid_request_error", problem), request_id)

        model = str(body.get("model"))
        with self._lock:
            queue = self.scripts.get(model) or self.scripts.get("*")
            reply_ = queue.pop(0) if queue else None
        if reply_ is None:
            if model.startswith("err-") and model[4:].isdigit():
                status = int(model[4:])
                reply_ = ApiError(
                    status, ERROR_TYPES.get(status, "api_error"), f"scripted {status}"
                )
            else:
                reply_ = ApiError(404, "not_found_error", f"model: {model} (nothing scripted)")
        if isinstance(reply_, ApiError):
            return self._error(handler, reply_, request_id)
        if isinstance(reply_, Json):
            return self._json(handler, reply_.status, reply_.body, request_id)
        if not body.get("stream"):
            return self._error(
                handler,
                ApiError(400, "invalid_request_error", "this fake only streams this reply"),
                request_id,
            )
        payload = reply_.render()
        handler.send_response(200)
        handler.send_header("content-type", "text/event-stream; charset=utf-8")
        handler.send_header("cache-control", "no-cache")
        handler.send_header("request-id", request_id)
        handler.send_header("connection", "close")
        for name, value in reply_.headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(payload)
        handler.wfile.flush()
        handler.close_connection = True

    def _json(
        self,
        handler: BaseHTTPRequestHandler,
        status: int,
        body: dict[str, Any],
        request_id: str,
        headers: dict[str, str] | None = None,
    ) -> None:
        data = json.dumps(body).encode()
        handler.send_response(status)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(data)))
        handler.send_header("request-id", request_id)
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)
        handler.wfile.flush()

    def _error(self, handler: BaseHTTPRequestHandler, error: ApiError, request_id: str) -> None:
        body = {
            "type": "error",
            "error": {"type": error.type, "message": error.message},
            "request_id": request_id,
        }
        self._json(handler, error.status, body, request_id, error.headers)


def serve(replies: Iterable[tuple[str, SSE | ApiError | Json]] = ()) -> Iterator[FakeAnthropic]:
    """A generator for pytest fixtures: ``yield from serve()``."""
    server = FakeAnthropic()
    for model, item in replies:
        server.script(model, item)
    with server:
        yield server
