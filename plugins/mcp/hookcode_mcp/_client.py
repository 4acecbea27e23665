"""MCP sessions on a background event loop.

The CLI runs one ``asyncio.run`` per command and the agent loop may run several, so the MCP
sessions cannot live on the caller's loop: one daemon thread runs an event loop that owns
every session of every runtime in this process. Each server has one task that enters the
transport and the ``ClientSession`` and stays inside them until the server is closed (anyio's
cancel scopes must be left by the task that entered them). Tool calls reach that loop with
``run_coroutine_threadsafe``; the sessions are closed when their runtime ends
(``runtime.on_close``: closed, collected or at exit) or by :meth:`Manager.close`.

A server whose connection is lost after it connected (its process exited, a remote server
closed the connection) is started again by the next call of one of its tools, as the lsp tool
does with a language server that died: at most :data:`RESTART_LIMIT` times within
:data:`RESTART_WINDOW` seconds, then it stays failed. Its new tool list reaches the registry
like a ``tools/list_changed`` one (:meth:`Manager.apply_pending`, on the runtime's thread).

The ``mcp`` SDK is imported here, and this module only when a server is configured.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from hookcode.background import BackgroundLoop
from hookcode.errors import ToolError, ToolTimeout
from hookcode.stash import StashKey

from hookcode_mcp._errors import (
    authorization_required,
    connection_closed,
    describe,
    describe_parse_error,
    http_status,
)

if TYPE_CHECKING:
    from hookcode.runtime import Runtime

    from hookcode_mcp._config import McpServerConfig
    from hookcode_mcp._tool import McpTool

__all__ = [
    "Manager",
    "Server",
    "close_all",
    "existing_manager",
    "manager_for",
    "quiet_sdk_logger",
]

T = TypeVar("T")
#: pages of tools/list followed before giving up (a paginator that never ends)
MAX_PAGES = 100
#: seconds ``close`` waits for the sessions to wind down
CLOSE_TIMEOUT = 5.0
#: stderr lines of a failed local server quoted in its error
STDERR_LINES = 5
#: a server that lost its connection is started again on next use, at most RESTART_LIMIT
#: times within RESTART_WINDOW seconds; lost once more within the window, it stays failed
#: (a server that crashes on every start must not be started on every call)
RESTART_LIMIT = 3
RESTART_WINDOW = 60.0
#: seconds a status check waits for a streamable-HTTP server's ping
CHECK_TIMEOUT = 5.0


# ---------------------------------------------------------------------------------------------
# the background loop
# ---------------------------------------------------------------------------------------------


_LOOP = BackgroundLoop("hookcode-mcp")
#: the runtime's manager
_MANAGER = StashKey["Manager"]()
_MANAGERS_LOCK = threading.Lock()
_ALL: weakref.WeakSet[Manager] = weakref.WeakSet()


def manager_for(runtime: Runtime) -> Manager:
    """The MCP manager of ``runtime`` (one per runtime, created on first use); its sessions
    stop when the runtime ends (``runtime.on_close``)."""
    with _MANAGERS_LOCK:
        manager = runtime.stash.get(_MANAGER, None)
        if manager is None:
            manager = runtime.stash[_MANAGER] = Manager(runtime)
            _ALL.add(manager)
            runtime.on_close(manager.close)
        return manager


def existing_manager(runtime: Runtime) -> Manager | None:
    """The manager of ``runtime`` if one was made (no server was started otherwise)."""
    return runtime.stash.get(_MANAGER, None)


def close_all() -> None:
    """Close every session of every runtime in this process (tests stop their servers)."""
    for manager in list(_ALL):
        manager.close()


# ---------------------------------------------------------------------------------------------
# one server
# ---------------------------------------------------------------------------------------------


@dataclass
class Server:
    """One configured server: its state, its session, its tools."""

    name: str
    config: McpServerConfig
    manager: Manager
    #: pending, connected, disabled, failed, needs_auth, needs_client_registration
    status: str = "pending"
    error: str | None = None
    transport: str | None = None
    server_info: dict[str, Any] | None = None
    #: what the server said it offers (``ServerCapabilities``: tools, prompts, resources)
    capabilities: Any = None
    tools: list[McpTool] = field(default_factory=list)
    session: Any = None
    started: float | None = None
    #: how many times the server was started again after losing its connection
    restarts: int = 0
    _stop: asyncio.Event | None = None
    _task: asyncio.Task[None] | None = None
    #: set once a run has connected or failed (Manager.start waits for the first one)
    _ready: threading.Event = field(default_factory=threading.Event)
    #: the same for the current run, on the MCP loop (a restart waits for it)
    _run_ready: asyncio.Event | None = None
    #: the current run connected (even if it was lost at once)
    _run_connected: bool = False
    #: each run (the first start, every restart) has its own number: what an older run's
    #: tasks do once they wind down never touches the newer one's state
    _generation: int = 0
    #: the server's messages ended (set by _watch_end), maybe before it was marked connected
    _ended: bool = False
    #: why the last connection was lost (``connection lost: ...``): the server may restart
    _lost_cause: str | None = None
    _restart_times: list[float] = field(default_factory=list)
    _restarting: asyncio.Task[None] | None = None
    #: the run whose session the server said it no longer knew (``_session_gone``)
    _expired: int | None = None
    #: tools/list_changed re-lists still running
    _refreshes: set[asyncio.Task[None]] = field(default_factory=set)
    _gave_up: bool = False
    _connect_failure: BaseException | None = None
    _connect_scope: Any = None
    _log_path: Path | None = None
    _log_offset: int = 0

    @property
    def timeout(self) -> float:
        return self.config.timeout / 1000.0

    def to_dict(self) -> dict[str, Any]:
        from hookcode.tools import valid_tool_name

        registry = self.manager.registry_names() or {}
        tools = []
        for tool in self.tools:
            holder = registry.get(tool.name)
            skipped = tool.unsupported
            if skipped is not None:
                pass
            elif not valid_tool_name(tool.name):
                skipped = "not a valid tool name (letters, digits, '_' and '-', at most 64)"
            elif holder is not None and holder is not tool:
                skipped = f"the name is taken by plugin {getattr(holder, 'plugin', None)!r}"
            tools.append(
                {
                    "name": tool.name,
                    "tool": tool.remote_name,
                    "registered": skipped is None,
                    "skipped": skipped,
                }
            )
        return {
            "name": self.name,
            "type": self.config.kind,
            "status": self.status,
            "error": self.error,
            "transport": self.transport,
            "server": self.server_info,
            "restarts": self.restarts,
            "tools": tools,
        }

    # -- on the background loop ---------------------------------------------------------------
    def launch(self) -> None:
        """Start a run of the server: the first start, or a restart (on the MCP loop)."""
        self._generation += 1
        self._stop = asyncio.Event()
        self._run_ready = asyncio.Event()
        self._ended = False
        self._run_connected = False
        self._connect_failure = None
        self._task = asyncio.get_running_loop().create_task(self.run(self._generation))

    async def run(self, generation: int) -> None:
        """Connect, list the tools, then hold the session open until stopped.

        Only the awaits that enter no context (initialize, tools/list) run under the
        timeout: anyio's scopes must be left in the order they were entered. A restart's
        tool list goes to the registry through :meth:`Manager.changed`."""
        import anyio

        stop = self._stop
        assert stop is not None
        restart = self.restarts > 0
        self.started = time.monotonic()
        tools: list[McpTool] = []
        try:
            async with contextlib.AsyncExitStack() as stack:
                try:
                    session = await self._connect(stack)
                    with anyio.CancelScope() as scope:
                        self._connect_scope = scope
                        with anyio.fail_after(self.timeout):
                            await session.initialize()
                            self.session = session
                            tools = await self._list_tools()
                    self._connect_scope = None
                    if self._connect_failure is not None:
                        raise self._connect_failure
                    if scope.cancelled_caught:
                        raise RuntimeError("connection cancelled")
                    self.capabilities = session.server_capabilities
                    info = session.server_info
                    if info is not None:
                        self.server_info = {"name": info.name, "version": info.version}
                except Exception as exc:
                    # known at once; the transport winds down (and the process is reaped)
                    # after the caller has moved on
                    self._connect_scope = None
                    self.session = None
                    if not restart:
                        self.tools = []  # a restart keeps the listed tools: they fail clearly
                    self._fail(exc)
                    self._set_ready(generation)
                    return
                if restart:
                    self.manager.changed(self, tools)
                else:
                    self.tools = tools
                self.status, self.error = "connected", None
                self._run_connected = True
                if self._ended:  # it was gone before this line: lost at once
                    self._lost(generation)
                self._set_ready(generation)
                await stop.wait()
        except Exception as exc:
            if generation != self._generation:
                pass  # a newer run owns the state
            elif self.status == "connected":
                self.status, self.error = "failed", f"connection lost: {describe(exc)}"
                self._lost_cause = self.error
            elif self.status == "pending":
                self._fail(exc)
        finally:
            if generation == self._generation:
                self.session = None
                self._set_ready(generation)

    def _set_ready(self, generation: int) -> None:
        if generation == self._generation:
            self._ready.set()
            if self._run_ready is not None:
                self._run_ready.set()

    def _fail(self, exc: BaseException) -> None:
        status, message = "failed", describe(exc)
        if self.config.kind == "local" and message.lower().startswith("connection closed"):
            message = "the server exited (or closed its output) before answering initialize"
        if isinstance(exc, TimeoutError):
            message = (
                f"timed out after {self.config.timeout} ms (connecting and listing tools; "
                f"raise [mcp.{self.name}] timeout if the server is slow to start)"
            )
        required = authorization_required(exc)
        if required is not None:
            status, message = required.status, required.message
        elif http_status(exc) == 401:
            status = "needs_auth"
            message = (
                "the server requires authorization (HTTP 401); set headers = "
                '{ Authorization = "Bearer ..." }'
            )
            if self.config.oauth is False:
                message += " (OAuth is off: oauth = false)"
        tail = self._stderr_tail()
        if tail:
            message += f"; stderr: {tail}"
        self.status, self.error = status, message

    async def _connect(self, stack: contextlib.AsyncExitStack) -> Any:
        from mcp import types
        from mcp.client.session import ClientSession

        if self.config.kind == "local":
            read, write = await self._local(stack)
        else:
            from hookcode_mcp._http import connect_remote

            generation = self._generation

            def on_transport(name: str) -> None:
                self.transport = name

            read, write = await connect_remote(
                self.name,
                self.config,
                self.manager.data_dir,
                stack,
                self.timeout,
                on_transport,
                lambda why, refused: self._session_gone(generation, why, refused),
            )
        read = await self._watch_end(stack, read)
        from hookcode import __version__

        session = ClientSession(
            read,
            write,
            message_handler=self._on_message,
            client_info=types.Implementation(name="hookcode", version=__version__),
        )
        return await stack.enter_async_context(session)

    async def _watch_end(self, stack: contextlib.AsyncExitStack, read: Any) -> Any:
        """The server's messages, passed on as they come; when they end while connected (the
        process exited, the connection dropped), the server is marked failed at once, saying
        so, and its session is wound down (a local server's process is reaped)."""
        import anyio

        send, receive = anyio.create_memory_object_stream[Any](0)
        group = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(group.cancel_scope.cancel)  # runs first: the group ends at once
        generation = self._generation

        async def forward() -> None:
            async with send, read:
                async for item in read:
                    await send.send(item)
                if generation == self._generation:
                    # the end may come between the last answer of the connect and the line
                    # that marks the server connected: run() looks at _ended there
                    self._ended = True
                    self._lost(generation)  # before the session hears (and fails what waits)

        group.start_soon(forward)
        return receive

    def _lost(self, generation: int) -> None:
        if self.config.kind == "local":
            message = "the server exited (or closed its output)"
        else:
            message = "the server closed the connection"
        tail = self._stderr_tail()
        if tail:
            message += f"; stderr: {tail}"
        self._lose(generation, f"connection lost: {message}")

    def _session_gone(self, generation: int, why: str, refused: bool) -> None:
        """The streamable-HTTP server no longer knows this run's session (it restarted, or
        dropped it): the run ends, and the next call starts a new session; ``refused``: the
        server said so to a request of ours, which :meth:`_request` then makes once more."""
        lost = self._lose(generation, f"session expired: the server no longer knows it ({why})")
        if refused and (lost or generation == self._generation):
            self._expired = generation

    def _lose(self, generation: int, cause: str) -> bool:
        """Mark the run ``generation`` lost with ``cause`` and wind it down; False when it is
        not the connected current run (still connecting, a newer run, closing)."""
        if generation != self._generation or self.status != "connected":
            return False  # still connecting (that failure is reported as such), or a newer run
        if self._stop is not None and self._stop.is_set():
            return False  # closing
        self.status, self.error = "failed", cause
        self._lost_cause = self.error  # the next call starts it again (_restart)
        self.session = None
        if self._stop is not None:
            self._stop.set()  # wind the session down
        return True

    async def _local(self, stack: contextlib.AsyncExitStack) -> Any:
        """Over stdio, the server started below the runtime's process guardian (see
        :mod:`hookcode_mcp._stdio`)."""
        from hookcode_mcp._stdio import stdio_transport

        command = list(self.config.command or [])
        env = {**self.manager.env, **self.config.environment}
        errlog = self._open_log()
        stack.callback(errlog.close)
        self.transport = "stdio"
        return await stack.enter_async_context(
            stdio_transport(
                self.manager.processes,
                command,
                cwd=str(self.manager.cwd),
                env=env,
                errlog=errlog.fileno(),
            )
        )

    async def _on_message(self, message: Any) -> None:
        from mcp import types

        if isinstance(message, Exception):
            if self.status != "connected" and self._connect_scope is not None:
                self._connect_failure = RuntimeError(
                    f"the server sent malformed JSON-RPC: {describe_parse_error(message)}"
                )
                self._connect_scope.cancel()
            return
        if isinstance(message, types.ToolListChangedNotification):
            task = asyncio.get_running_loop().create_task(self._refresh(self._generation))
            self._refreshes.add(task)
            task.add_done_callback(self._refreshes.discard)

    async def _refresh(self, generation: int) -> None:
        """``notifications/tools/list_changed``: list again; the registry takes the new
        list at its next safe point (:meth:`Manager.apply_pending`). One still running when
        the server stops is cancelled (:meth:`stop`); one that fails then says nothing."""
        stop = self._stop
        try:
            tools = await asyncio.wait_for(self._list_tools(), self.timeout)
        except Exception as exc:
            stopping = self.manager.closed or (stop is not None and stop.is_set())
            if generation == self._generation and self.status == "connected" and not stopping:
                self.manager.warn(
                    f"MCP server {self.name!r}: re-listing tools failed: {describe(exc)}"
                )
            return
        if generation == self._generation:  # not a list from a session since replaced
            self.manager.changed(self, tools)

    async def _list_tools(self) -> list[McpTool]:
        from mcp import types

        from hookcode_mcp._tool import McpTool

        session = self.session
        if session is None:
            raise RuntimeError(f"not connected ({self.status})")
        found: list[Any] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            found.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        return [McpTool(self, remote) for remote in found]

    async def _request(self, what: str, send: Callable[[Any, Any], Any]) -> Any:
        """``send(session, on_progress)`` on the current session, started again first if it
        was lost; repeated once in a new session when the server said it did not know the
        session."""
        for attempt in (1, 2):
            if self._restarting is not None or self._restartable():
                await self._restarted()
            session = self.session
            if session is None or self.status != "connected":
                raise ToolError(
                    f"MCP server {self.name!r} is not connected ({self.status}: "
                    f"{self.error or 'no session'})"
                )
            generation = self._generation
            try:
                return await self._send(session, generation, what, send)
            except ToolTimeout:
                raise
            except Exception:
                if attempt == 1 and self._expired == generation:
                    continue  # refused, not run: once more in a new session
                raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def _send(
        self, session: Any, generation: int, name: str, send: Callable[[Any, Any], Any]
    ) -> Any:
        """One request; its timeout restarts with every progress notification."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            nonlocal deadline
            deadline = loop.time() + self.timeout

        task = asyncio.ensure_future(send(session, on_progress))
        try:
            while True:
                done, _ = await asyncio.wait({task}, timeout=max(deadline - loop.time(), 0))
                if task in done:
                    if connection_closed(task):
                        await self._settle(generation)
                    return task.result()
                if loop.time() >= deadline:
                    task.cancel()
                    with contextlib.suppress(BaseException):
                        await task
                    raise ToolTimeout(
                        f"MCP server {self.name!r} did not answer {name!r} within "
                        f"{self.config.timeout} ms"
                    )
        finally:
            if not task.done():
                task.cancel()

    async def _settle(self, generation: int) -> None:
        """The connection closed under a call: let the run that held it end first, so that
        the call's error says why (the session fails its calls before the transport's error
        reaches :meth:`run`)."""
        task = self._task
        if generation == self._generation and task is not None and not task.done():
            await asyncio.wait({task}, timeout=CLOSE_TIMEOUT)

    # -- restarting (on the background loop) --------------------------------------------------
    def _restartable(self) -> bool:
        """Lost after connecting (not a failed start, a login to make, a server given up)."""
        return (
            self.status == "failed"
            and self._lost_cause is not None
            and not self._gave_up
            and not self.manager.closed
        )

    def _recent_restarts(self) -> list[float]:
        now = time.monotonic()
        return [t for t in self._restart_times if now - t < RESTART_WINDOW]

    async def _restarted(self) -> None:
        """Wait for the server's restart, starting it unless one runs: calls that come
        together while the server is down share one restart."""
        task = self._restarting
        if task is None:
            task = asyncio.get_running_loop().create_task(self._restart())
            self._restarting = task
            task.add_done_callback(self._restart_done)
        await asyncio.shield(task)  # a cancelled call leaves the restart to the others

    def _restart_done(self, task: asyncio.Task[None]) -> None:
        if self._restarting is task:
            self._restarting = None
        if not task.cancelled():
            task.exception()  # retrieved: it is raised in the calls that waited for it

    async def _restart(self) -> None:
        """Start the server again with the same config (a remote one reconnects), unless it
        was restarted RESTART_LIMIT times within RESTART_WINDOW seconds: then give up. The
        outcome is in ``status`` / ``error``; the calls read it there."""
        cause = self._lost_cause or self.error or "connection lost"
        recent = self._recent_restarts()
        if len(recent) >= RESTART_LIMIT:
            self._gave_up = True
            self.status = "failed"
            self.error = (
                f"{cause}; restarted {len(recent)} times within {RESTART_WINDOW:g} s, gave up "
                "(the next hookcode run starts it again)"
            )
            self.manager.warn(f"MCP server {self.name!r} is not restarted again: {self.error}")
            return
        await self._wind_down()  # the old session closed, its process reaped
        if self.manager.closed:
            return
        self._restart_times = [*recent, time.monotonic()]
        self.restarts += 1
        self.status, self.error = "pending", None
        self.launch()
        ready = self._run_ready
        assert ready is not None
        try:
            # the server's own timeout bounds each phase of its connect; this only guards
            await asyncio.wait_for(ready.wait(), 2 * self.timeout + 5.0)
        except TimeoutError:
            task = self._task
            if task is not None:
                task.cancel()
                await asyncio.wait({task}, timeout=CLOSE_TIMEOUT)
            self._run_connected = False
            self._fail(TimeoutError())
        if self.manager.closed:
            return
        if self._run_connected:  # even if lost again at once: the call then says so
            self.manager.warn(f"MCP server {self.name!r} was restarted after: {cause}")
            return
        failure = self.error or self.status
        if self.status == "pending":  # the run ended without a word (cannot happen)
            self.status = "failed"
        self.error = f"{cause}; restarting it failed: {failure}"
        self.manager.warn(f"MCP server {self.name!r} could not be restarted: {self.error}")

    async def _wind_down(self) -> None:
        """Let the current run end (its session closed, a local server's process reaped)."""
        task = self._task
        if task is None or task.done():
            return
        if self._stop is not None:
            self._stop.set()
        done, _ = await asyncio.wait({task}, timeout=CLOSE_TIMEOUT)
        if not done:
            task.cancel()
            await asyncio.wait({task}, timeout=CLOSE_TIMEOUT)

    async def stop(self) -> None:
        if self._stop is not None:
            self._stop.set()
        refreshes = list(self._refreshes)
        for refresh in refreshes:
            refresh.cancel()
        if refreshes:
            await asyncio.wait(refreshes, timeout=CLOSE_TIMEOUT)
        task = self._task
        if task is not None and not task.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), CLOSE_TIMEOUT)
            except (TimeoutError, asyncio.CancelledError):
                task.cancel()
        if self.status in ("connected", "pending"):
            self.status = "closed"

    async def check(self) -> None:
        """Ping a connected streamable-HTTP server (nothing streams from it between calls):
        one that forgot the session says so (marked lost by the response hook, see
        :mod:`hookcode_mcp._http`), one that does not answer at all is marked lost; the next
        call starts it again. A slow answer changes nothing."""
        session, generation = self.session, self._generation
        if session is None or self.status != "connected" or self.transport != "streamable-http":
            return
        try:
            await asyncio.wait_for(session.send_ping(), min(self.timeout, CHECK_TIMEOUT))
        except TimeoutError:
            return
        except Exception as exc:
            self._lose(generation, f"connection lost: the server does not answer ({describe(exc)})")

    # -- from any thread ----------------------------------------------------------------------
    def before_call(self) -> None:
        """Bring the registry up to date with re-listed tools, when called from the runtime's
        own thread (the only one that may touch its registry)."""
        if self.manager.thread == threading.get_ident():
            self.manager.apply_pending()

    async def call(self, name: str, args: dict[str, Any]) -> Any:
        """``tools/call`` from the caller's event loop (the session lives on the MCP loop), on
        a server started again first if it had lost its connection; a call the server refused
        because it no longer knew the session is made once more in a new session (it never
        ran)."""
        return await self.request(
            name,
            lambda session, on_progress: session.call_tool(
                name, args, progress_callback=on_progress
            ),
        )

    async def request(self, what: str, send: Callable[[Any, Any], Any]) -> Any:
        """Any request from the caller's event loop: ``send(session, on_progress)`` returns
        the SDK's awaitable (``session.read_resource(...)``); ``what`` names it in errors."""
        future = _LOOP.submit(self._request(what, send))
        try:
            return await asyncio.wrap_future(future)
        except ToolError:
            raise
        except Exception as exc:
            raise ToolError(self._failure(what, exc)) from exc

    def request_sync(self, what: str, send: Callable[[Any, Any], Any]) -> Any:
        """:meth:`request` from a thread without an event loop (the CLI, the chat)."""
        self.manager.start()
        future = _LOOP.submit(self._request(what, send))
        try:
            return future.result()
        except ToolError:
            raise
        except Exception as exc:
            raise ToolError(self._failure(what, exc)) from exc

    def _failure(self, what: str, exc: BaseException) -> str:
        if self.status == "failed" and self.error:  # it died under this request
            message = f"MCP server {self.name!r}: {what}: {self.error}"
            # the request is not repeated: it may have done its work before the end
            if self._restartable() and len(self._recent_restarts()) < RESTART_LIMIT:
                message += "; it will be restarted on next use"
            return message
        return f"MCP server {self.name!r}: {what}: {describe(exc)}"

    # -- the server's stderr ------------------------------------------------------------------
    def _open_log(self) -> Any:
        from hookcode.datadir import PRIVATE_FILE, private_dir

        directory = private_dir(self.manager.log_dir)  # a server may print its tokens: private
        self._log_path = directory / f"mcp-{_safe(self.name)}.log"
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(self._log_path, flags, PRIVATE_FILE)
        handle = open(fd, "a", encoding="utf-8", errors="replace")  # noqa: SIM115
        handle.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} {self.config.command}\n")
        handle.flush()
        self._log_offset = handle.tell()
        return handle

    def _stderr_tail(self) -> str:
        if self._log_path is None:
            return ""
        try:
            with open(self._log_path, encoding="utf-8", errors="replace") as handle:
                handle.seek(self._log_offset)
                lines = [line.rstrip() for line in handle.read().splitlines() if line.strip()]
        except OSError:
            return ""
        return " | ".join(lines[-STDERR_LINES:])


# ---------------------------------------------------------------------------------------------
# every server of one runtime
# ---------------------------------------------------------------------------------------------


class Manager:
    """The servers of one runtime: started together on first need, in parallel."""

    def __init__(self, runtime: Runtime) -> None:
        from hookcode_mcp._config import McpServerConfig

        quiet_sdk_logger()
        self._runtime = weakref.ref(runtime)
        self.cwd = runtime.cwd
        self.env = dict(runtime.env)
        self.data_dir = runtime.data_dir
        #: the guardian local servers run below
        self.processes = runtime.processes
        self.log_dir = runtime.data_dir / "log"
        self._warn: Callable[[str], None] = runtime.plugins.warn
        self.servers: dict[str, Server] = {}
        for key, section in runtime.config.sections.items():
            if key.startswith("mcp.") and isinstance(section, McpServerConfig):
                name = key[len("mcp.") :]
                self.servers[name] = Server(name, section, self)
        self._lock = threading.Lock()
        self._started = False
        self._pending: dict[str, list[McpTool]] = {}
        self._pending_lock = threading.Lock()
        self.closed = False
        #: the thread that started the servers: the registry's own thread
        self.thread: int | None = None

    def warn(self, line: str) -> None:
        self._warn(line)

    # -- starting -----------------------------------------------------------------------------
    def start(self) -> None:
        """Start every enabled server in parallel and wait until each is connected or has
        failed (each within its own ``timeout``); idempotent."""
        with self._lock:
            if self._started or self.closed:
                return
            self._started = True
            self.thread = threading.get_ident()
            enabled = []
            for server in self.servers.values():
                if not server.config.enabled:
                    server.status = "disabled"
                    server._ready.set()
                    continue
                enabled.append(server)
            if not enabled:
                return
            if _LOOP.in_loop():  # pragma: no cover - never called from the MCP loop itself
                raise RuntimeError("MCP servers cannot be started from the MCP loop")
            loop = _LOOP.loop
            for server in enabled:
                loop.call_soon_threadsafe(self._spawn, server)
            for server in enabled:
                # the server's own timeout bounds each phase of its connect (an SSE server
                # has two: the probe, then the stream); this wait only guards against a bug
                if not server._ready.wait(2 * server.timeout + 5.0):
                    server.status = "failed"
                    server.error = f"timed out after {server.config.timeout} ms"
            for server in enabled:
                if server.status == "failed":
                    self.warn(f"MCP server {server.name!r} failed: {server.error}")
                elif server.status in ("needs_auth", "needs_client_registration"):
                    self.warn(f"MCP server {server.name!r} is not authorized: {server.error}")

    def _spawn(self, server: Server) -> None:
        server.launch()

    def tools(self) -> list[McpTool]:
        self.start()
        return [
            tool
            for server in self.servers.values()
            for tool in server.tools
            if tool.unsupported is None
        ]

    def status(self, *, catalog: bool = False) -> list[dict[str, Any]]:
        """Each server's state (:meth:`Server.to_dict`); a connected streamable-HTTP server is
        pinged first, so a dead session is never reported connected."""
        self.start()
        if not _LOOP.in_loop() and not self.closed:
            checks = [_LOOP.submit(s.check()) for s in self.servers.values() if s.session]
            for future in checks:
                with contextlib.suppress(Exception):
                    future.result(CHECK_TIMEOUT + 5.0)
        out = [server.to_dict() for server in self.servers.values()]
        if catalog:
            from hookcode_mcp._catalog import describe_catalog

            for server, entry in zip(self.servers.values(), out, strict=True):
                entry.update(describe_catalog(server))
        return out

    def registry_names(self) -> dict[str, Any] | None:
        runtime = self._runtime()
        if runtime is None:
            return None
        return {name: entry.tool for name, entry in runtime.registry.entries.items()}

    # -- tools/list_changed -------------------------------------------------------------------
    def changed(self, server: Server, tools: list[McpTool]) -> None:
        """Called on the MCP loop: remember the new list for :meth:`apply_pending`."""
        with self._pending_lock:
            self._pending[server.name] = tools

    def apply_pending(self) -> list[str]:
        """Bring the registry up to date with re-listed servers; returns the changed tool
        names. Called from the runtime's own thread at safe points (before a model request,
        before an MCP call), never from the MCP loop: the registry is not thread-safe."""
        with self._pending_lock:
            pending, self._pending = self._pending, {}
        runtime = self._runtime()
        if not pending or runtime is None:
            return []
        registry = runtime.registry
        changed: list[str] = []
        for name, tools in pending.items():
            server = self.servers[name]
            old = {tool.name: tool for tool in server.tools}
            new = {tool.name: tool for tool in tools}
            server.tools = tools
            for tool_name, tool in old.items():
                entry = registry.get(tool_name)
                if entry is not None and entry.tool is tool:
                    registry.unregister(tool_name)
                    if tool_name not in new:
                        changed.append(tool_name)
            for tool_name, tool in new.items():
                if tool.unsupported is None:
                    registry.register(tool, "mcp")
                if tool_name not in old:
                    changed.append(tool_name)
            runtime.events.publish(
                "mcp.tools.changed",
                server=name,
                tools=sorted(new),
                added=sorted(set(new) - set(old)),
                removed=sorted(set(old) - set(new)),
            )
        return changed

    # -- closing ------------------------------------------------------------------------------
    def close(self, wait: bool = True) -> None:
        """Stop every session (and its server process); safe to call twice. ``wait=False``
        only asks the MCP loop to stop them (a finalizer must not block)."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
        running = [s for s in self.servers.values() if s._task is not None]
        if not running or _LOOP._loop is None or not _LOOP._loop.is_running():
            return

        async def stop_all() -> None:
            await asyncio.gather(*(s.stop() for s in running), return_exceptions=True)

        future = _LOOP.submit(stop_all())
        if wait and not _LOOP.in_loop():
            with contextlib.suppress(Exception):
                future.result(CLOSE_TIMEOUT + 1.0)


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


def quiet_sdk_logger() -> None:
    """The SDK logs what it reports through us (a line that is not JSON-RPC, an OAuth flow
    error, with their tracebacks); without a handler Python would print that on stderr."""
    import logging

    sdk_logger = logging.getLogger("mcp")
    if not sdk_logger.handlers:
        sdk_logger.addHandler(logging.NullHandler())


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
