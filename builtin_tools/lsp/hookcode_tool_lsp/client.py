"""A small Language Server Protocol client: JSON-RPC 2.0 over a server's stdio.

Why our own and not ``pygls``' client or ``lsprotocol``'s types: what hookcode needs is a
handful of requests whose results it passes on as JSON, the ``publishDiagnostics``
notifications, and a few server-to-client requests to answer. That is ~300 lines of asyncio
with no dependency, no import cost (``lsprotocol`` pulls in ``attrs`` and ``cattrs`` and
structures every message into classes we would turn straight back into JSON), and full control
over what matters here: noticing that the server died (EOF, exit code, the tail of its
stderr), failing every pending request at once, and killing the server's whole process tree
(``basedpyright-langserver`` is a Python script that runs ``node`` as a child). The server runs
below the runtime's process guardian (:mod:`hookcode.process`): its tree, ``setsid`` and
double-forked children included, dies when the client kills it, when the runtime closes and
when hookcode dies.

Messages are ``Content-Length: N\\r\\n\\r\\n`` followed by N bytes of UTF-8 JSON. Everything
in this module runs on one event loop (the plugin's background loop); nothing is thread-safe.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hookcode_tool_lsp.protocol import (
    CLIENT_CAPABILITIES,
    METHOD_NOT_FOUND,
    LspError,
    ServerGone,
    path_to_uri,
    uri_to_path,
)

if TYPE_CHECKING:
    from hookcode.process import AsyncChild, Processes

__all__ = ["LspClient", "LspError", "ServerGone", "Waited", "path_to_uri", "uri_to_path"]

#: bytes of the server's stderr kept for error messages
STDERR_TAIL = 4096


@dataclass
class Publication:
    """The latest ``publishDiagnostics`` for one document."""

    diagnostics: list[dict[str, Any]]
    version: int | None
    seq: int


@dataclass(frozen=True)
class Waited:
    """How a wait for diagnostics ended: whether fresh ones came, and the seconds the wait
    allowed in the end (the plain wait, or longer for a busy server)."""

    fresh: bool
    limit: float


@dataclass
class Document:
    version: int
    text: str


class LspClient:
    """One running language server for one workspace root."""

    def __init__(
        self,
        name: str,
        command: Sequence[str],
        root: Path,
        *,
        env: Mapping[str, str] | None = None,
        initialization_options: Any = None,
        processes: Processes | None = None,
    ) -> None:
        """``processes``: the guardian to start the server below (the runtime's); without
        one the client starts its own, stopped by :meth:`kill`."""
        self.name = name
        self.command = list(command)
        self.root = root
        self.env = dict(os.environ if env is None else env)
        self.initialization_options = initialization_options
        self.capabilities: dict[str, Any] = {}
        self.proc: AsyncChild | None = None
        self._processes = processes
        self._own_processes: Processes | None = None
        self.exit_code: int | None = None
        self.documents: dict[str, Document] = {}
        self.publications: dict[str, Publication] = {}
        #: methods the server registered for itself (``client/registerCapability``)
        self.registered: set[str] = set()
        self._pending: dict[int, tuple[str, asyncio.Future[Any]]] = {}
        self._next_id = 0
        self._seq = 0
        self._waiters: dict[str, set[asyncio.Event]] = {}
        self._any_waiters: set[asyncio.Event] = set()
        self._stderr: deque[bytes] = deque()
        self._stderr_size = 0
        self._tasks: list[asyncio.Task[Any]] = []
        self._gone: ServerGone | None = None
        self._exited = asyncio.Event()
        self._closing = False
        #: ``$/progress`` tokens whose work has begun and not ended (the server is busy)
        self.work: set[Any] = set()
        #: the loop time at which the last reported work ended (None: none has)
        self.idle_since: float | None = None
        #: whether the server has shown it is ready: it published diagnostics, finished
        #: reported work, or a wait for it already ran out (until then it counts as busy)
        self.warmed = False

    # -- life cycle ---------------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        return self.proc is not None and self._gone is None and self.proc.returncode is None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    async def start(self, timeout: float) -> None:
        """Spawn the server and run ``initialize`` / ``initialized``; raise :class:`ServerGone`
        (with the reason) when it cannot be started or dies first, TimeoutError when
        ``initialize`` takes longer than ``timeout`` seconds (the server is then killed)."""
        processes = self._processes
        if processes is None:
            from hookcode.process import Processes

            processes = self._own_processes = Processes()
        try:
            self.proc = await processes.spawn_async(self.command, cwd=str(self.root), env=self.env)
        except OSError as exc:
            self._gone = ServerGone(f"could not run {self.command[0]}: {exc.strerror or exc}")
            self._exited.set()
            raise self._gone from None
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._read_messages(), name=f"lsp-{self.name}-stdout"),
            loop.create_task(self._read_stderr(), name=f"lsp-{self.name}-stderr"),
        ]
        root_uri = path_to_uri(self.root)
        params = {
            "processId": os.getpid(),
            "clientInfo": {"name": "hookcode"},
            "rootPath": str(self.root),
            "rootUri": root_uri,
            "workspaceFolders": [{"uri": root_uri, "name": self.root.name or str(self.root)}],
            "capabilities": CLIENT_CAPABILITIES,
            "initializationOptions": self.initialization_options,
        }
        try:
            result = await self.request("initialize", params, timeout=timeout)
        except TimeoutError:
            await self.kill()
            raise
        self.capabilities = (result or {}).get("capabilities") or {}
        await self.notify("initialized", {})

    async def shutdown(self, timeout: float = 2.0) -> None:
        """``shutdown`` then ``exit``; the process tree is killed (what lingers of it)."""
        self._closing = True
        if self.alive:
            with contextlib.suppress(Exception):
                await self.request("shutdown", None, timeout=timeout / 2)
                await self.notify("exit", None)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._exited.wait(), timeout / 2)
        await self.kill()

    async def kill(self) -> None:
        """Kill the server's process tree and wait until it is gone."""
        self._closing = True
        proc = self.proc
        if proc is not None:
            await proc.kill()
        self._lose(ServerGone(self.exit_reason()))
        for task in self._tasks:
            task.cancel()
        if proc is not None:
            proc.close()
        if self._own_processes is not None:
            self._own_processes.close()

    def exit_reason(self) -> str:
        """Why the server is gone, for messages: its exit status and last stderr line."""
        if self._gone is not None and self.proc is None:
            return str(self._gone)
        code = self.exit_code
        if code is None and self.proc is not None:
            code = self.proc.returncode
        if code is None:
            status = "stopped responding"
        elif code < 0:
            status = f"was killed by signal {-code}"
        else:
            status = f"exited with code {code}"
        tail = self.stderr_tail().strip().splitlines()
        if tail:
            status += f": {tail[-1].strip()[:300]}"
        return status

    def stderr_tail(self) -> str:
        return b"".join(self._stderr).decode("utf-8", "replace")

    # -- messages -----------------------------------------------------------------------------
    async def request(self, method: str, params: Any, *, timeout: float | None = None) -> Any:
        """Send a request and return its result; LspError for an error answer, ServerGone
        when the server dies first, TimeoutError (the request is cancelled) after ``timeout``."""
        self._next_id += 1
        request_id = self._next_id
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = (method, future)
        try:
            await self._send(
                {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
            )
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        except TimeoutError:
            with contextlib.suppress(ServerGone):
                await self.notify("$/cancelRequest", {"id": request_id})
            raise
        finally:
            self._pending.pop(request_id, None)
            if not future.done():
                future.cancel()

    async def notify(self, method: str, params: Any) -> None:
        await self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def _send(self, message: dict[str, Any]) -> None:
        if self._gone is not None:
            raise self._gone
        assert self.proc is not None and self.proc.stdin is not None
        body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        try:
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            await self.proc.stdin.drain()
        except (ConnectionError, RuntimeError) as exc:
            self._lose(
                ServerGone(
                    self.exit_reason()
                    if self.proc.returncode is not None
                    else f"could not be written to: {exc}"
                )
            )
            raise self._gone from None  # type: ignore[misc]

    async def _read_messages(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        stdout = self.proc.stdout
        try:
            while True:
                length = None
                while True:
                    line = await stdout.readline()
                    if not line:
                        raise EOFError
                    line = line.strip()
                    if not line:
                        break
                    name, _, value = line.decode("ascii", "replace").partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value.strip())
                if length is None:
                    continue
                body = await stdout.readexactly(length)
                try:
                    message = json.loads(body)
                except ValueError:
                    continue
                if isinstance(message, dict):
                    await self._dispatch(message)
        except (EOFError, asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        # the server closed its stdout: it is gone (or going)
        proc = self.proc
        with contextlib.suppress(TimeoutError):
            self.exit_code = await asyncio.wait_for(proc.wait(), 1)
        await proc.kill()  # the server if it lingers, and whatever it left behind
        self.exit_code = proc.returncode
        # let the stderr reader take the last lines before the reason is worded
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(self._tasks[1]), 0.5)
        self._lose(ServerGone(self.exit_reason()))

    async def _read_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        while True:
            chunk = await self.proc.stderr.read(4096)
            if not chunk:
                return
            self._stderr.append(chunk)
            self._stderr_size += len(chunk)
            while self._stderr_size > STDERR_TAIL and len(self._stderr) > 1:
                self._stderr_size -= len(self._stderr.popleft())

    def _lose(self, gone: ServerGone) -> None:
        if self._gone is None:
            self._gone = gone
        self._exited.set()
        for _method, future in list(self._pending.values()):
            if not future.done():
                future.set_exception(self._gone)
        self._pending.clear()
        self._wake_all()

    async def _dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is None:  # a response
            entry = self._pending.get(message.get("id"))  # type: ignore[arg-type]
            if entry is None:
                return
            name, future = entry
            if future.done():
                return
            error = message.get("error")
            if error is not None:
                future.set_exception(
                    LspError(name, int(error.get("code", 0)), str(error.get("message", "")))
                )
            else:
                future.set_result(message.get("result"))
            return
        params = message.get("params")
        if "id" in message:  # a request from the server
            await self._answer(message["id"], method, params)
            return
        if method == "textDocument/publishDiagnostics" and isinstance(params, dict):
            self._published(params)
        elif method == "$/progress" and isinstance(params, dict):
            self._progress(params)

    def _progress(self, params: dict[str, Any]) -> None:
        """Work the server reports (``$/progress`` begin / report / end): while some runs, a
        wait for diagnostics is extended (a cold server is still loading the project)."""
        value = params.get("value")
        token = params.get("token")
        if not isinstance(value, dict) or not isinstance(token, str | int):
            return
        kind = value.get("kind")
        if kind == "begin":
            self.work.add(token)
        elif kind == "end" and token in self.work:
            self.work.discard(token)
            if not self.work:
                self.idle_since = asyncio.get_running_loop().time()
                self.warmed = True
        else:
            return
        self._wake_all()  # waiters recompute their deadline

    async def _answer(self, request_id: Any, method: str, params: Any) -> None:
        error: dict[str, Any] | None = None
        result: Any = None
        if method == "workspace/configuration":
            items = (params or {}).get("items") or []
            result = [None] * len(items)
        elif method in (
            "window/workDoneProgress/create",
            "window/showMessageRequest",
            "window/showDocument",
        ):
            result = None
        elif method == "client/registerCapability":
            for registration in (params or {}).get("registrations") or []:
                self.registered.add(str(registration.get("method")))
        elif method == "client/unregisterCapability":
            for registration in (params or {}).get("unregisterations") or []:
                self.registered.discard(str(registration.get("method")))
        elif method == "workspace/workspaceFolders":
            result = [{"uri": path_to_uri(self.root), "name": self.root.name}]
        elif method == "workspace/applyEdit":
            result = {"applied": False, "failureReason": "hookcode does not apply server edits"}
        elif method.startswith("workspace/") and method.endswith("/refresh"):
            result = None
        else:
            error = {"code": METHOD_NOT_FOUND, "message": f"Unhandled method {method}"}
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        if error is not None:
            reply["error"] = error
        else:
            reply["result"] = result
        with contextlib.suppress(ServerGone):
            await self._send(reply)

    # -- documents and diagnostics ------------------------------------------------------------
    async def sync_document(self, path: str, text: str, language_id: str) -> tuple[int, bool]:
        """Open the document, or send its new full text; returns (version, whether anything
        was sent). Unchanged text sends nothing."""
        uri = path_to_uri(path)
        doc = self.documents.get(uri)
        if doc is None:
            doc = self.documents[uri] = Document(0, text)
            await self.notify(
                "textDocument/didOpen",
                {
                    "textDocument": {
                        "uri": uri,
                        "languageId": language_id,
                        "version": 0,
                        "text": text,
                    }
                },
            )
            return 0, True
        if doc.text == text:
            return doc.version, False
        doc.version += 1
        doc.text = text
        await self.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": uri, "version": doc.version},
                "contentChanges": [{"text": text}],
            },
        )
        return doc.version, True

    async def close_document(self, path: str) -> None:
        uri = path_to_uri(path)
        if self.documents.pop(uri, None) is not None:
            await self.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        self.publications.pop(uri, None)

    async def files_changed(self, changes: list[tuple[str, int]]) -> None:
        """``workspace/didChangeWatchedFiles`` (1 created, 2 changed, 3 deleted), sent only
        to a server that registered for it."""
        if changes and "workspace/didChangeWatchedFiles" in self.registered:
            await self.notify(
                "workspace/didChangeWatchedFiles",
                {"changes": [{"uri": path_to_uri(p), "type": t} for p, t in changes]},
            )

    def last_seq(self, path: str) -> int:
        publication = self.publications.get(path_to_uri(path))
        return publication.seq if publication is not None else 0

    @property
    def busy(self) -> bool:
        """Whether the server is still loading: it reports work in progress, or it is cold
        (nothing published, no work finished yet)."""
        return bool(self.work) or not self.warmed

    def _published(self, params: dict[str, Any]) -> None:
        self.warmed = True
        uri = str(params.get("uri", ""))
        diagnostics = params.get("diagnostics") or []
        version = params.get("version")
        self._seq += 1
        if uri not in self.documents and (
            not diagnostics or (uri.startswith("file:") and not os.path.exists(uri_to_path(uri)))
        ):
            # a closed document's: the server clearing it, or a check of a file that is gone
            # which arrived after its didClose; either way it has nothing to report
            self.publications.pop(uri, None)
        else:
            self.publications[uri] = Publication(
                [d for d in diagnostics if isinstance(d, dict)],
                version if isinstance(version, int) else None,
                self._seq,
            )
        for event in self._waiters.get(uri, ()):
            event.set()
        for event in self._any_waiters:
            event.set()

    def _wake_all(self) -> None:
        for events in self._waiters.values():
            for event in events:
                event.set()
        for event in self._any_waiters:
            event.set()

    async def wait_diagnostics(
        self,
        path: str,
        *,
        since: int,
        version: int | None,
        debounce: float = 0.15,
        timeout: float = 3.0,
        quiet_all: bool = False,
        busy_cap: float = 0.0,
    ) -> Waited:
        """Wait for diagnostics of ``path`` published after sequence number ``since`` (for
        ``version`` or later when the server says which version it checked), then until the
        server has been quiet about the file (``quiet_all``: about every file, so the files
        that depend on this one are in too) for ``debounce`` seconds; at most ``timeout``
        seconds in all, unless the server is :attr:`busy` (cold, or reporting work in
        progress through ``$/progress``): then the wait goes on while it is and for
        ``timeout`` seconds after its work ended, never beyond ``busy_cap`` seconds in all.
        ``Waited(True, ...)`` when fresh diagnostics came; ``Waited(False, seconds allowed)``
        when none did in time (a cold server is then taken as ready: the next wait is a
        plain one); ServerGone if the server died before they did."""
        uri = path_to_uri(path)
        loop = asyncio.get_running_loop()
        started = loop.time()
        cap = started + max(timeout, busy_cap)

        def deadline() -> float:
            end = started + timeout
            if self.busy:
                return cap
            if self.idle_since is not None and self.idle_since > started:
                end = max(end, self.idle_since + timeout)
            return min(end, cap)

        event = asyncio.Event()
        self._waiters.setdefault(uri, set()).add(event)

        def fresh() -> bool:
            publication = self.publications.get(uri)
            if publication is None or publication.seq <= since:
                return False
            return version is None or publication.version is None or publication.version >= version

        try:
            while not fresh():
                if self._gone is not None:
                    raise self._gone
                limit = deadline()
                remaining = limit - loop.time()
                if remaining <= 0:
                    if busy_cap > timeout:
                        self.warmed = True  # it had its long wait: the next ones are plain
                    return Waited(False, limit - started)
                event.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(event.wait(), remaining)
            if quiet_all:
                self._any_waiters.add(event)
            while self._gone is None:
                remaining = min(debounce, deadline() - loop.time())
                if remaining <= 0:
                    break
                event.clear()
                try:
                    await asyncio.wait_for(event.wait(), remaining)
                except TimeoutError:
                    break
            return Waited(True, deadline() - started)
        finally:
            self._any_waiters.discard(event)
            waiters = self._waiters.get(uri)
            if waiters is not None:
                waiters.discard(event)
                if not waiters:
                    del self._waiters[uri]

    def diagnostics(self) -> dict[str, list[dict[str, Any]]]:
        """Every document's latest diagnostics, by absolute path."""
        return {uri_to_path(uri): p.diagnostics for uri, p in self.publications.items()}
