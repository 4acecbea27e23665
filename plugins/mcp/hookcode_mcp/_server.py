"""One configured MCP server: its state, its session and the run that holds it open.

Each run of a server (its first start, every restart) is one task on the MCP loop
(:mod:`hookcode_mcp._loop`) that enters the transport and the ``ClientSession`` and stays
inside them until the server is stopped (anyio's cancel scopes must be left by the task that
entered them). A run that loses its connection marks the server failed, saying why; the next
request starts it again (:mod:`hookcode_mcp._restart`). Requests go through
:mod:`hookcode_mcp._request`; ``notifications/tools/list_changed`` re-lists the tools, which
reach the registry through :meth:`Manager.changed`.

The ``mcp`` SDK is imported when a server first connects.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hookcode.errors import ToolError

from hookcode_mcp._errors import (
    authorization_required,
    describe,
    describe_parse_error,
    http_status,
)
from hookcode_mcp._loop import CLOSE_TIMEOUT, LOOP
from hookcode_mcp._request import failure, perform
from hookcode_mcp._server_log import ServerLog

if TYPE_CHECKING:
    from hookcode_mcp._config import McpServerConfig
    from hookcode_mcp._protocols import ServerOwner
    from hookcode_mcp._tool import McpTool

__all__ = ["CHECK_TIMEOUT", "MAX_PAGES", "Server"]

#: pages of tools/list followed before giving up (a paginator that never ends)
MAX_PAGES = 100
#: seconds a status check waits for a streamable-HTTP server's ping
CHECK_TIMEOUT = 5.0


@dataclass
class Server:
    """One configured server: its state, its session, its tools."""

    name: str
    config: McpServerConfig
    manager: ServerOwner
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
    #: when it was restarted (:mod:`hookcode_mcp._restart` keeps the recent ones)
    _restart_times: list[float] = field(default_factory=list)
    #: the restart under way, shared by the calls that wait for it
    _restarting: asyncio.Task[None] | None = None
    #: the run whose session the server said it no longer knew (``_session_gone``)
    _expired: int | None = None
    #: tools/list_changed re-lists still running
    _refreshes: set[asyncio.Task[None]] = field(default_factory=set)
    _gave_up: bool = False
    _connect_failure: BaseException | None = None
    _connect_scope: Any = None
    #: a local server's stderr
    _log: ServerLog | None = None

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
        tail = self._log.tail() if self._log is not None else ""
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
        tail = self._log.tail() if self._log is not None else ""
        if tail:
            message += f"; stderr: {tail}"
        self._lose(generation, f"connection lost: {message}")

    def _session_gone(self, generation: int, why: str, refused: bool) -> None:
        """The streamable-HTTP server no longer knows this run's session (it restarted, or
        dropped it): the run ends, and the next call starts a new session; ``refused``: the
        server said so to a request of ours, which :func:`hookcode_mcp._request.perform` then
        makes once more."""
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
        self._lost_cause = self.error  # the next call starts it again (hookcode_mcp._restart)
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
        if self._log is None:  # a server may print its tokens: a private directory
            self._log = ServerLog(self.manager.log_dir, self.name)
        errlog = self._log.open(self.config.command)
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
        future = LOOP.submit(perform(self, what, send))
        try:
            return await asyncio.wrap_future(future)
        except ToolError:
            raise
        except Exception as exc:
            raise ToolError(failure(self, what, exc)) from exc

    def request_sync(self, what: str, send: Callable[[Any, Any], Any]) -> Any:
        """:meth:`request` from a thread without an event loop (the CLI, the chat)."""
        self.manager.start()
        future = LOOP.submit(perform(self, what, send))
        try:
            return future.result()
        except ToolError:
            raise
        except Exception as exc:
            raise ToolError(failure(self, what, exc)) from exc
