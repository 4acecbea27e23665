"""The MCP servers of one runtime: started together on first need, closed with the runtime.

One :class:`Manager` per runtime (:func:`manager_for`, kept in ``runtime.stash``) holds its
configured servers (:class:`~hookcode_mcp._server.Server`), starts them in parallel on the
MCP loop (:mod:`hookcode_mcp._loop`), reports their status, and brings the runtime's registry
up to date with re-listed tools (``tools/list_changed``, or a restarted server's new list:
:meth:`Manager.apply_pending`, on the runtime's own thread). The sessions are closed when
their runtime ends (``runtime.on_close``: closed, collected or at exit) or by
:meth:`Manager.close`. A server that lost its connection is started again by its next
request (:mod:`hookcode_mcp._restart`).

The ``mcp`` SDK is imported by the servers, and this module only when a server is configured.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hookcode.stash import StashKey

from hookcode_mcp._loop import CLOSE_TIMEOUT
from hookcode_mcp._loop import LOOP as _LOOP
from hookcode_mcp._restart import RESTART_LIMIT, RESTART_WINDOW
from hookcode_mcp._server import CHECK_TIMEOUT, Server

if TYPE_CHECKING:
    from hookcode.runtime import Runtime

    from hookcode_mcp._tool import McpTool

__all__ = [
    "RESTART_LIMIT",
    "RESTART_WINDOW",
    "Manager",
    "Server",
    "close_all",
    "existing_manager",
    "manager_for",
    "quiet_sdk_logger",
]


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

    def status(self) -> list[dict[str, Any]]:
        """Each server's state (:meth:`Server.to_dict`); a connected streamable-HTTP server is
        pinged first, so a dead session is never reported connected. Its prompts and
        resources are :func:`hookcode_mcp._catalog.describe_catalog`'s."""
        self.start()
        if not _LOOP.in_loop() and not self.closed:
            checks = [_LOOP.submit(s.check()) for s in self.servers.values() if s.session]
            for future in checks:
                with contextlib.suppress(Exception):
                    future.result(CHECK_TIMEOUT + 5.0)
        return [server.to_dict() for server in self.servers.values()]

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


def quiet_sdk_logger() -> None:
    """The SDK logs what it reports through us (a line that is not JSON-RPC, an OAuth flow
    error, with their tracebacks); without a handler Python would print that on stderr."""
    import logging

    sdk_logger = logging.getLogger("mcp")
    if not sdk_logger.handlers:
        sdk_logger.addHandler(logging.NullHandler())
