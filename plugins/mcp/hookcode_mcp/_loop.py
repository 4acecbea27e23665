"""The one event loop, on a daemon thread, that owns every MCP session of this process.

The CLI runs one ``asyncio.run`` per command and the agent loop may run several, so the
sessions cannot live on the caller's loop; requests reach this one with
``run_coroutine_threadsafe`` (:meth:`BackgroundLoop.submit`).
"""

from __future__ import annotations

from hookcode.background import BackgroundLoop

__all__ = ["CLOSE_TIMEOUT", "LOOP"]

#: the loop every session of every runtime runs on
LOOP = BackgroundLoop("hookcode-mcp")
#: seconds a closing session (or a run being wound down) is given to end
CLOSE_TIMEOUT = 5.0
