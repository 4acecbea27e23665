"""What the parts of a server need of each other, as Protocols (no part imports the one above).

:class:`hookcode_mcp._client.Manager` is a :class:`ServerOwner`;
:class:`hookcode_mcp._server.Server` is a :class:`ServerState`, the state that its restarts
(:mod:`hookcode_mcp._restart`) and its requests (:mod:`hookcode_mcp._request`) read and set.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from hookcode.process import Processes

    from hookcode_mcp._config import McpServerConfig
    from hookcode_mcp._tool import McpTool

__all__ = ["ServerOwner", "ServerState"]


class ServerOwner(Protocol):
    """What a server needs of the manager of its runtime's servers."""

    @property
    def closed(self) -> bool: ...
    @property
    def cwd(self) -> Path: ...
    @property
    def env(self) -> Mapping[str, str]: ...
    @property
    def data_dir(self) -> Path: ...
    @property
    def log_dir(self) -> Path: ...
    @property
    def processes(self) -> Processes: ...
    @property
    def thread(self) -> int | None: ...

    def warn(self, line: str) -> None:
        """Report ``line`` to the user (once, through the plugins' warnings)."""
        ...

    def start(self) -> None:
        """Start every server of the runtime (idempotent)."""
        ...

    def registry_names(self) -> dict[str, Any] | None:
        """Each registered tool name and the tool holding it (None: the runtime is gone)."""
        ...

    def changed(self, server: Any, tools: list[McpTool]) -> None:
        """The server re-listed its tools (on the MCP loop)."""
        ...

    def apply_pending(self) -> list[str]:
        """Bring the registry up to date with re-listed tools (on the runtime's thread)."""
        ...


class ServerState(Protocol):
    """A server's state as its restarts and its requests read and set it (all of it on the
    MCP loop): see :class:`hookcode_mcp._server.Server` for what each member means."""

    name: str
    status: str
    error: str | None
    session: Any
    restarts: int
    _generation: int
    _stop: asyncio.Event | None
    _task: asyncio.Task[None] | None
    _run_ready: asyncio.Event | None
    _run_connected: bool
    _lost_cause: str | None
    _gave_up: bool
    _restart_times: list[float]
    _restarting: asyncio.Task[None] | None
    _expired: int | None

    @property
    def config(self) -> McpServerConfig: ...
    @property
    def manager(self) -> ServerOwner: ...
    @property
    def timeout(self) -> float: ...

    def launch(self) -> None:
        """Start a new run of the server (a new session), on the MCP loop."""
        ...

    def _fail(self, exc: BaseException) -> None:
        """Mark the server failed with what ``exc`` says."""
        ...
