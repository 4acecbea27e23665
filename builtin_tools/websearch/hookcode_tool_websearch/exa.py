"""The Exa client that ``websearch`` and ``codesearch`` share (reference/tools.md §14).

Both tools POST one JSON-RPC ``tools/call`` to Exa's hosted MCP endpoint and read the first
``data: `` line of the (server-sent events) answer whose JSON carries ``result.content[0]``.
No API key is sent. The endpoint is ``HOOKCODE_EXA_URL`` (default :data:`DEFAULT_URL`).

The tools are listed always but refuse calls until the user enables them (the query leaves the
machine for a third party): ``HOOKCODE_ENABLE_EXA=1`` or ``[experimental] exa = true``.

Only the standard library and hookcode are imported here; httpx when a call is made.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from hookcode import ToolError

# defined in the package, which the tools' definitions need without this module
from hookcode_tool_websearch import ENABLE_ENV, Range

if TYPE_CHECKING:
    from hookcode import ToolContext

__all__ = [
    "DEFAULT_URL",
    "ENABLE_ENV",
    "URL_ENV",
    "Range",
    "call",
    "enabled",
    "endpoint",
    "require_enabled",
]

DEFAULT_URL = "https://mcp.exa.ai/mcp"
URL_ENV = "HOOKCODE_EXA_URL"
#: how much of an error reply's body is quoted in the error
ERROR_BODY_LIMIT = 64 * 1024

_TRUE = ("1", "true", "yes", "on")


def enabled(ctx: ToolContext) -> bool:
    """``HOOKCODE_ENABLE_EXA`` is set to a true value, or ``[experimental] exa = true``."""
    if ctx.runtime.env.get(ENABLE_ENV, "").strip().lower() in _TRUE:
        return True
    experimental = getattr(ctx.config, "experimental", None) or {}
    flag = experimental.get("exa") if isinstance(experimental, dict) else None
    return flag is True or (isinstance(flag, str) and flag.strip().lower() in _TRUE)


def endpoint(ctx: ToolContext) -> str:
    return ctx.runtime.env.get(URL_ENV, "").strip() or DEFAULT_URL


def require_enabled(ctx: ToolContext, tool: str) -> None:
    """Refuse the call, naming both ways to enable the tool, unless Exa is enabled."""
    if enabled(ctx):
        return
    raise ToolError(
        f"The {tool} tool is disabled: it sends the query to Exa's hosted search service "
        f"({endpoint(ctx)}). To enable it, set {ENABLE_ENV}=1 in the environment, or add "
        "`exa = true` under `[experimental]` in hookcode.toml."
    )


async def call(
    ctx: ToolContext,
    remote_tool: str,
    arguments: dict[str, Any],
    *,
    timeout: float,
    error: str,
    timed_out: str,
) -> str | None:
    """Call ``remote_tool`` on the Exa endpoint; the first content text, or None when the
    answer has none.

    ``error`` prefixes failures (``<error> (<status>): <body>``); ``timed_out`` is the whole
    message when ``timeout`` seconds pass first.
    """
    import asyncio

    import httpx

    url = endpoint(ctx)
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": remote_tool, "arguments": arguments},
    }
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    try:
        async with (
            asyncio.timeout(timeout),
            httpx.AsyncClient(timeout=None) as client,
            client.stream("POST", url, content=json.dumps(request), headers=headers) as response,
        ):
            if not response.is_success:
                body = await _head(response, ERROR_BODY_LIMIT)
                raise ToolError(f"{error} ({response.status_code}): {body}")
            return await _first_content(response, error)
    except TimeoutError:
        raise ToolError(timed_out) from None
    except httpx.HTTPError as exc:
        raise ToolError(
            f"{error}: could not reach {url}: {str(exc) or type(exc).__name__}"
        ) from None


async def _first_content(response: Any, error: str) -> str | None:
    """The text of the first ``data: `` line with ``result.content[0]``; stops reading there.

    A JSON-RPC error or an MCP result with ``isError`` is a failure."""
    rpc_error: str | None = None
    async for line in response.aiter_lines():
        if not line.startswith("data: "):
            continue
        try:
            data = json.loads(line[6:])
        except json.JSONDecodeError:
            continue
        if not isinstance(data, dict):
            continue
        result = data.get("result")
        if not isinstance(result, dict):
            result = {}
        content = result.get("content")
        if isinstance(content, list) and content:
            first = content[0]
            text = first.get("text", "") if isinstance(first, dict) else str(first)
            if result.get("isError"):
                raise ToolError(f"{error}: {text}")
            return str(text)
        problem = data.get("error")
        if isinstance(problem, dict) and rpc_error is None:
            rpc_error = str(problem.get("message") or problem)
    if rpc_error is not None:
        raise ToolError(f"{error}: {rpc_error}")
    return None


async def _head(response: Any, limit: int) -> str:
    """Up to ``limit`` bytes of the body, decoded."""
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) >= limit:
            del body[limit:]
            break
    return body.decode("utf-8", errors="replace")
