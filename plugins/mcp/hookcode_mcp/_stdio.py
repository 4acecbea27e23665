"""The stdio transport of a local MCP server, its process started below the runtime's process
guardian (:mod:`hookcode.process`): its whole tree (``setsid`` and double-forked children
too) dies when the session ends, when the runtime closes and when hookcode dies, by any signal.

Why not the SDK's ``mcp.client.stdio.stdio_client``: it starts the server itself
(``anyio.open_process`` in ``_create_platform_compatible_process``) and takes neither a
process nor streams of ours; its kill reaches the server's process group only (a child that
called ``setsid`` or double-forked survives it), and nothing kills the server when hookcode
is killed by SIGKILL. The MCP session (``ClientSession``) takes any pair of message streams,
so this module gives it ours, speaking as the SDK's transport does: one JSON-RPC message a
line (parsed with the SDK's adapter; a line that does not parse reaches the session as the
exception), the SDK's default environment under the configured one, stderr to the server's
log; and the shutdown of the MCP specification: stdin closed, up to
:data:`EXIT_WAIT` seconds to exit, then the whole tree killed.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hookcode.process import AsyncChild, Processes

__all__ = ["EXIT_WAIT", "stdio_transport"]

#: seconds a server has to exit after its stdin closed (the SDK's grace period)
EXIT_WAIT = 2.0


@contextlib.asynccontextmanager
async def stdio_transport(
    processes: Processes,
    command: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    errlog: int,
) -> AsyncIterator[tuple[Any, Any]]:
    """Start ``command`` and yield (messages from the server, messages to it): anyio memory
    streams of ``SessionMessage`` for ``ClientSession``. ``errlog``: the file descriptor the
    server's stderr goes to. Raises the OSError of a server that cannot be started."""
    import anyio
    from mcp.client.stdio import get_default_environment

    proc = await processes.spawn_async(
        command, cwd=cwd, env={**get_default_environment(), **env}, stderr_to=errlog
    )
    from_server, read_stream = anyio.create_memory_object_stream[Any](0)
    write_stream, to_server = anyio.create_memory_object_stream[Any](0)
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(_read, proc, from_server)
            group.start_soon(_write, proc, to_server, from_server)
            try:
                yield read_stream, write_stream
            finally:
                with anyio.CancelScope(shield=True):
                    await _stop(proc)
                group.cancel_scope.cancel()
    finally:
        proc.close()
        for stream in (read_stream, write_stream, from_server, to_server):
            stream.close()


async def _read(proc: AsyncChild, sink: Any) -> None:
    """The server's stdout, a message a line, into ``sink`` until it ends."""
    import anyio
    from mcp import types
    from mcp.shared.message import SessionMessage

    assert proc.stdout is not None
    buffer = b""
    async with sink:
        while chunk := await proc.stdout.read(65536):
            *lines, buffer = (buffer + chunk).split(b"\n")
            for line in lines:
                try:
                    item: Any = SessionMessage(
                        types.jsonrpc_message_adapter.validate_json(
                            line.decode("utf-8"), by_name=False
                        )
                    )
                except ValueError as exc:  # not UTF-8, not JSON-RPC: the session reports it
                    item = exc
                try:
                    await sink.send(item)
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return  # the session is gone


async def _write(proc: AsyncChild, source: Any, sink: Any) -> None:
    """Messages from the session to the server's stdin; when the server stops reading, the
    messages from it end too, so nothing waits for an answer that cannot come."""
    import anyio

    assert proc.stdin is not None
    try:
        async with source:
            async for message in source:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                proc.stdin.write(data.encode("utf-8") + b"\n")
                await proc.stdin.drain()
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        await sink.aclose()


async def _stop(proc: AsyncChild) -> None:
    """Close stdin, give the server :data:`EXIT_WAIT` seconds, then kill its whole tree (what
    it left running too, had it exited)."""
    import asyncio

    if proc.stdin is not None:
        proc.stdin.close()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(proc.wait(), EXIT_WAIT)
    await proc.kill()
