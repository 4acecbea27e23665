"""Restarting a server that lost its connection after it connected (its process exited, a
remote server closed the connection or forgot the session).

The next request starts it again with the same config, as the lsp tool does with a language
server that died: at most :data:`RESTART_LIMIT` times within :data:`RESTART_WINDOW` seconds,
then it stays failed (a server that crashes on every start must not be started on every
call). Calls that come together while the server is down share one restart. Everything here
runs on the MCP loop (:mod:`hookcode_mcp._loop`); the outcome is in the server's ``status``
and ``error``, where the waiting calls read it.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from hookcode_mcp._loop import CLOSE_TIMEOUT

if TYPE_CHECKING:
    from hookcode_mcp._protocols import ServerState

__all__ = [
    "RESTART_LIMIT",
    "RESTART_WINDOW",
    "recent_restarts",
    "restartable",
    "restarted",
]

#: a server that lost its connection is started again on next use, at most RESTART_LIMIT
#: times within RESTART_WINDOW seconds; lost once more within the window, it stays failed
RESTART_LIMIT = 3
RESTART_WINDOW = 60.0


def restartable(server: ServerState) -> bool:
    """Lost after connecting (not a failed start, a login to make, a server given up)."""
    return (
        server.status == "failed"
        and server._lost_cause is not None
        and not server._gave_up
        and not server.manager.closed
    )


def recent_restarts(server: ServerState) -> list[float]:
    """When the server was restarted within the last :data:`RESTART_WINDOW` seconds."""
    now = time.monotonic()
    return [t for t in server._restart_times if now - t < RESTART_WINDOW]


async def restarted(server: ServerState) -> None:
    """Wait for the server's restart, starting it unless one runs: calls that come together
    while the server is down share one restart."""
    task = server._restarting
    if task is None:
        task = asyncio.get_running_loop().create_task(_restart(server))
        server._restarting = task

        def done(task: asyncio.Task[None]) -> None:
            if server._restarting is task:
                server._restarting = None
            if not task.cancelled():
                task.exception()  # retrieved: it is raised in the calls that waited for it

        task.add_done_callback(done)
    await asyncio.shield(task)  # a cancelled call leaves the restart to the others


async def _restart(server: ServerState) -> None:
    """Start the server again with the same config (a remote one reconnects), unless it was
    restarted RESTART_LIMIT times within RESTART_WINDOW seconds: then give up."""
    cause = server._lost_cause or server.error or "connection lost"
    recent = recent_restarts(server)
    if len(recent) >= RESTART_LIMIT:
        server._gave_up = True
        server.status = "failed"
        server.error = (
            f"{cause}; restarted {len(recent)} times within {RESTART_WINDOW:g} s, gave up "
            "(the next hookcode run starts it again)"
        )
        server.manager.warn(f"MCP server {server.name!r} is not restarted again: {server.error}")
        return
    await _wind_down(server)  # the old session closed, its process reaped
    if server.manager.closed:
        return
    server._restart_times = [*recent, time.monotonic()]
    server.restarts += 1
    server.status, server.error = "pending", None
    server.launch()
    ready = server._run_ready
    assert ready is not None
    try:
        # the server's own timeout bounds each phase of its connect; this only guards
        await asyncio.wait_for(ready.wait(), 2 * server.timeout + 5.0)
    except TimeoutError:
        task = server._task
        if task is not None:
            task.cancel()
            await asyncio.wait({task}, timeout=CLOSE_TIMEOUT)
        server._run_connected = False
        server._fail(TimeoutError())
    if server.manager.closed:
        return
    if server._run_connected:  # even if lost again at once: the call then says so
        server.manager.warn(f"MCP server {server.name!r} was restarted after: {cause}")
        return
    failure = server.error or server.status
    if server.status == "pending":  # the run ended without a word (cannot happen)
        server.status = "failed"
    server.error = f"{cause}; restarting it failed: {failure}"
    server.manager.warn(f"MCP server {server.name!r} could not be restarted: {server.error}")


async def _wind_down(server: ServerState) -> None:
    """Let the server's current run end (its session closed, a local server's process
    reaped)."""
    task = server._task
    if task is None or task.done():
        return
    if server._stop is not None:
        server._stop.set()
    done, _ = await asyncio.wait({task}, timeout=CLOSE_TIMEOUT)
    if not done:
        task.cancel()
        await asyncio.wait({task}, timeout=CLOSE_TIMEOUT)
