"""One request to a server, on the MCP loop: the path every ``tools/call``,
``resources/read`` and ``prompts/get`` takes (:meth:`Server.request`).

A server that lost its connection is started again first (:mod:`hookcode_mcp._restart`); a
request the server refused because it no longer knew the session is made once more in a new
session (it never ran); the request's timeout restarts with every progress notification.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hookcode.errors import ToolError, ToolTimeout

from hookcode_mcp._errors import connection_closed, describe
from hookcode_mcp._loop import CLOSE_TIMEOUT
from hookcode_mcp._restart import RESTART_LIMIT, recent_restarts, restartable, restarted

if TYPE_CHECKING:
    from hookcode_mcp._protocols import ServerState

__all__ = ["failure", "perform"]


async def perform(server: ServerState, what: str, send: Callable[[Any, Any], Any]) -> Any:
    """``send(session, on_progress)`` on the current session, started again first if it
    was lost; repeated once in a new session when the server said it did not know the
    session."""
    for attempt in (1, 2):
        if server._restarting is not None or restartable(server):
            await restarted(server)
        session = server.session
        if session is None or server.status != "connected":
            raise ToolError(
                f"MCP server {server.name!r} is not connected ({server.status}: "
                f"{server.error or 'no session'})"
            )
        generation = server._generation
        try:
            return await _send(server, session, generation, what, send)
        except ToolTimeout:
            raise
        except Exception:
            if attempt == 1 and server._expired == generation:
                continue  # refused, not run: once more in a new session
            raise
    raise AssertionError("unreachable")  # pragma: no cover


def failure(server: ServerState, what: str, exc: BaseException) -> str:
    """The error of a request that failed with ``exc``: the server's own, when it died under
    the request (which is not repeated: it may have done its work before the end)."""
    if server.status == "failed" and server.error:
        message = f"MCP server {server.name!r}: {what}: {server.error}"
        if restartable(server) and len(recent_restarts(server)) < RESTART_LIMIT:
            message += "; it will be restarted on next use"
        return message
    return f"MCP server {server.name!r}: {what}: {describe(exc)}"


async def _send(
    server: ServerState, session: Any, generation: int, name: str, send: Callable[[Any, Any], Any]
) -> Any:
    """One request; its timeout restarts with every progress notification."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + server.timeout

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        nonlocal deadline
        deadline = loop.time() + server.timeout

    task = asyncio.ensure_future(send(session, on_progress))
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=max(deadline - loop.time(), 0))
            if task in done:
                if connection_closed(task):
                    await _settle(server, generation)
                return task.result()
            if loop.time() >= deadline:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
                raise ToolTimeout(
                    f"MCP server {server.name!r} did not answer {name!r} within "
                    f"{server.config.timeout} ms"
                )
    finally:
        if not task.done():
            task.cancel()


async def _settle(server: ServerState, generation: int) -> None:
    """The connection closed under a call: let the run that held it end first, so that the
    call's error says why (the session fails its calls before the transport's error reaches
    :meth:`Server.run`)."""
    task = server._task
    if generation == server._generation and task is not None and not task.done():
        await asyncio.wait({task}, timeout=CLOSE_TIMEOUT)
