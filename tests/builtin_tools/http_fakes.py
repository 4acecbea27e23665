"""A real local HTTP server for the network tools' tests (webfetch, websearch, codesearch,
sourcegraph): the standard library's ``ThreadingHTTPServer`` on 127.0.0.1, port 0, in a thread.

Routes map a path to a handler that gets the request (:class:`Handler`) and answers it with
:meth:`Handler.reply`, :meth:`Handler.stream` or by never answering (:meth:`Handler.hang`).
Every request is recorded in :attr:`FakeServer.requests`. Closing the server releases handlers
that hang, so no thread outlives a test.

    with FakeServer() as server:
        server.route("/page", reply(200, b"<h1>Hi</h1>", content_type="text/html"))
        url = server.url("/page")
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

__all__ = ["FakeServer", "Handler", "Seen", "hang", "redirect", "reply", "sse"]


@dataclass
class Seen:
    """One request as the server received it (header names lower-cased)."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes = b""

    def json(self) -> Any:
        import json

        return json.loads(self.body)


@dataclass
class _Stats:
    #: bytes a streaming handler managed to write before it finished or the client went away
    sent: dict[str, int] = field(default_factory=dict)
    #: paths whose client went away while a handler was still writing
    disconnected: dict[str, threading.Event] = field(default_factory=dict)


class Handler(BaseHTTPRequestHandler):
    """The request being served; handlers answer through the helpers below."""

    server: _Server  # type: ignore[assignment]
    body: bytes = b""

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def _dispatch(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        self.body = self.rfile.read(length) if length else b""
        path = urlsplit(self.path).path
        fake = self.server.fake
        fake.requests.append(
            Seen(
                self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, self.body
            )
        )
        handler = fake.routes.get(path)
        if handler is None:
            self.reply(404, b"no such route", content_type="text/plain")
            return
        handler(self)

    # -- answering ---------------------------------------------------------------------------
    def head(
        self,
        status: int = 200,
        *,
        content_type: str | None = None,
        length: int | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """Status line and headers; ``length`` None sends no Content-Length (the body then
        ends when the connection closes)."""
        self.send_response(status)
        if content_type is not None:
            self.send_header("Content-Type", content_type)
        if length is not None:
            self.send_header("Content-Length", str(length))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()

    def reply(
        self,
        status: int = 200,
        body: bytes | str = b"",
        *,
        content_type: str | None = "text/plain; charset=utf-8",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        data = body.encode() if isinstance(body, str) else body
        self.head(status, content_type=content_type, length=len(data), headers=headers)
        self.wfile.write(data)

    def stream(self, chunks: Iterable[bytes], *, delay: float = 0.0) -> int:
        """Write ``chunks`` (after :meth:`head`) until they run out, the client goes away or
        the server closes; returns the bytes written and records them under this path."""
        path = urlsplit(self.path).path
        fake = self.server.fake
        sent = 0
        try:
            for chunk in chunks:
                if fake.closing.is_set():
                    break
                self.wfile.write(chunk)
                sent += len(chunk)
                fake.stats.sent[path] = sent
                if delay:
                    time.sleep(delay)
        except (BrokenPipeError, ConnectionResetError):
            fake.disconnected(path).set()
        return sent

    def hang(self) -> None:
        """Never answer (until the server closes)."""
        self.server.fake.closing.wait()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hung up early is what several tests are about


class FakeServer:
    """A real HTTP server on 127.0.0.1 (port 0), served from a thread while open."""

    def __init__(self) -> None:
        self.routes: dict[str, Callable[[Handler], None]] = {}
        self.requests: list[Seen] = []
        self.stats = _Stats()
        self.closing = threading.Event()
        self._server = _Server(("127.0.0.1", 0), Handler)
        self._server.fake = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def url(self, path: str = "/") -> str:
        return self.base + path

    def route(self, path: str, handler: Callable[[Handler], None]) -> str:
        """Serve ``path`` with ``handler``; returns its URL."""
        self.routes[path] = handler
        return self.url(path)

    def seen(self, path: str) -> list[Seen]:
        return [r for r in self.requests if urlsplit(r.path).path == path]

    def sent(self, path: str) -> int:
        return self.stats.sent.get(path, 0)

    def disconnected(self, path: str) -> threading.Event:
        return self.stats.disconnected.setdefault(path, threading.Event())

    def start(self) -> FakeServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self.closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- handler factories -------------------------------------------------------------------------


def reply(
    status: int = 200,
    body: bytes | str = b"",
    *,
    content_type: str | None = "text/plain; charset=utf-8",
    headers: Mapping[str, str] | None = None,
) -> Callable[[Handler], None]:
    """A handler answering every request the same way."""
    return lambda h: h.reply(status, body, content_type=content_type, headers=headers)


def redirect(location: str, status: int = 302) -> Callable[[Handler], None]:
    return lambda h: h.reply(status, b"", content_type=None, headers={"Location": location})


def hang(h: Handler) -> None:
    """A handler that never answers."""
    h.hang()


def sse(*events: Any, status: int = 200) -> Callable[[Handler], None]:
    """A handler answering with server-sent events: each event a JSON-able value (sent as one
    ``event: message`` / ``data: <json>`` pair) or a raw ``str`` line block."""
    import json

    def handle(h: Handler) -> None:
        parts = []
        for event in events:
            if isinstance(event, str):
                parts.append(event)
            else:
                parts.append(f"event: message\ndata: {json.dumps(event)}\n\n")
        h.reply(status, "".join(parts), content_type="text/event-stream")

    return handle
