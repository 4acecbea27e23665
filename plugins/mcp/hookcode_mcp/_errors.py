"""What went wrong with an MCP server, read out of the SDK's exceptions (often exception groups
from anyio's task groups): one line for a person, the HTTP status, a login to make."""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = [
    "HttpStatus",
    "authorization_required",
    "connection_closed",
    "describe",
    "describe_parse_error",
    "http_status",
    "leaves",
]


class HttpStatus(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(f"HTTP {code}")
        self.status_code = code


def authorization_required(exc: BaseException) -> Any:
    """The :class:`~hookcode_mcp._oauth.AuthorizationRequired` among ``exc``'s leaves."""
    import sys

    oauth = sys.modules.get("hookcode_mcp._oauth")  # imported when a provider was made
    if oauth is None:
        return None
    for error in leaves(exc):
        if isinstance(error, oauth.AuthorizationRequired):
            return error
    return None


def http_status(exc: BaseException) -> int | None:
    for error in leaves(exc):
        code = getattr(error, "status_code", None)
        if code is None:
            response = getattr(error, "response", None)
            code = getattr(response, "status_code", None)
        if isinstance(code, int):
            return code
    return None


def connection_closed(task: asyncio.Task[Any]) -> bool:
    """Whether a finished request failed because the session's connection closed."""
    if task.cancelled():
        return False
    error = task.exception()
    from mcp.shared.exceptions import MCPError
    from mcp.types import CONNECTION_CLOSED

    return (
        isinstance(error, MCPError)
        and error.code == CONNECTION_CLOSED
        and error.message == "Connection closed"
    )


def leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        out: list[BaseException] = []
        for inner in exc.exceptions:
            out += leaves(inner)
        return out
    return [exc]


#: exceptions whose message is shown without their class's name
_PLAIN = ("RuntimeError", "Exception", "MCPError", "HookcodeError")


def describe(exc: BaseException) -> str:
    """One line naming what went wrong (exception groups unwrapped)."""
    found = [e for e in leaves(exc) if not isinstance(e, asyncio.CancelledError)] or [exc]
    parts = []
    for error in found:
        text = " ".join(str(error).split())
        if isinstance(error, FileNotFoundError) and error.filename:
            text = f"command not found: {error.filename}"
        name = type(error).__name__
        if not text:
            text = name
        elif name not in _PLAIN and not text.startswith(name):
            text = f"{name}: {text}"
        if text not in parts:
            parts.append(text)
    return "; ".join(parts)


def describe_parse_error(exc: BaseException) -> str:
    """A line the server wrote that is not JSON-RPC: what is wrong, and how it starts."""
    if hasattr(exc, "errors"):  # a pydantic ValidationError
        try:
            first: Any = exc.errors()[0]  # type: ignore[attr-defined]
            text = str(first.get("input", ""))
            return f"{first.get('msg', 'invalid message')} in {text[:80]!r}"
        except Exception:
            pass
    return describe(exc)
