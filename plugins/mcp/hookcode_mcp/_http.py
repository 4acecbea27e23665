"""The transport of a remote MCP server: streamable HTTP, else the older HTTP+SSE.

A streamable-HTTP server keeps a session (the ``Mcp-Session-Id`` header); one that restarted,
or that dropped the session, answers a request carrying it with HTTP 404 (the MCP
specification: "the client MUST start a new session") or, as many servers do (the reference
``server-everything`` among them), 400 "No valid session ID provided". The SDK turns that
answer into a JSON-RPC error of the request and keeps the transport up, so the status is read
here, on the HTTP responses (an httpx response hook): :func:`session_gone` tells the server,
which starts a new session (initialize, tools/list) and repeats a call the server refused that
way once (it never ran). Seen on the event stream (GET) instead, it marks the server lost at
once: the next call starts the new session.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hookcode_mcp._errors import HttpStatus, authorization_required, describe, http_status

if TYPE_CHECKING:
    from hookcode_mcp._config import McpServerConfig

__all__ = ["SESSION_HEADER", "connect_remote", "session_gone"]

SESSION_HEADER = "mcp-session-id"


async def session_gone(response: Any) -> str | None:
    """Why ``response`` says the session its request carried is unknown (``HTTP 404``, or a
    400 whose body speaks of the session), else None."""
    if SESSION_HEADER not in response.request.headers:
        return None
    if response.status_code == 404:
        return "HTTP 404"
    if response.status_code == 400:
        with contextlib.suppress(Exception):
            body = (await response.aread()).decode("utf-8", "replace")
            if "session" in body.lower():
                return f"HTTP 400: {_message(body)}"
    return None


def _message(body: str) -> str:
    """The JSON-RPC error message of a body, else its start."""
    import json

    with contextlib.suppress(ValueError, AttributeError, TypeError):
        message = json.loads(body)["error"]["message"]
        if isinstance(message, str):
            return message
    return " ".join(body.split())[:120]


async def connect_remote(
    name: str,
    config: McpServerConfig,
    data_dir: Any,
    stack: contextlib.AsyncExitStack,
    timeout: float,
    on_transport: Callable[[str], None],
    on_gone: Callable[[str, bool], None],
) -> tuple[Any, Any]:
    """Streamable HTTP; when that fails (other than unauthorised), SSE. Returns the message
    streams; ``on_transport(name)`` is told the transport tried once the probe chose it, and
    ``on_gone(why, refused)`` (on the MCP loop) when the server no longer knows the
    streamable-HTTP session: ``refused`` when it said so to a request we sent (a POST, which it
    did not run), not to the event stream's GET."""
    from mcp.client.sse import sse_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    url = str(config.url)
    headers = dict(config.headers)
    auth = None
    if config.oauth is not False:
        from hookcode_mcp._auth import AuthStore
        from hookcode_mcp._oauth import connecting_provider

        auth = connecting_provider(name, config, AuthStore(data_dir))
    http = await stack.enter_async_context(create_mcp_http_client(headers=headers, auth=auth))
    import anyio

    with anyio.fail_after(timeout):
        probe = await _probe_streamable(http, url, timeout)
    if probe is None or probe == 401:
        if probe == 401:
            raise HttpStatus(401)

        async def watch(response: Any) -> None:
            why = await session_gone(response)
            if why is not None:
                on_gone(why, response.request.method == "POST")

        http.event_hooks["response"] = [*http.event_hooks["response"], watch]
        on_transport("streamable-http")
        return await stack.enter_async_context(streamable_http_client(url, http_client=http))
    on_transport("sse")
    try:
        return await stack.enter_async_context(
            sse_client(url, headers=headers, timeout=timeout, auth=auth)
        )
    except Exception as exc:
        if authorization_required(exc) is not None or http_status(exc) == 401:
            raise  # an SSE server that wants a login: reported as such by the server's _fail
        raise RuntimeError(
            f"neither streamable HTTP (HTTP {probe}) nor SSE ({describe(exc)}) answered at {url}"
        ) from exc


async def _probe_streamable(http: Any, url: str, timeout: float) -> int | None:
    """None when ``url`` speaks streamable HTTP (or we cannot tell: let the SDK try); else
    the HTTP status that says it does not (404/405: an SSE-only server) or 401."""
    import httpx2

    body = {"jsonrpc": "2.0", "id": 0, "method": "ping"}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    try:
        response = await http.post(url, json=body, headers=headers, timeout=timeout)
    except httpx2.HTTPError:
        return None
    await response.aclose()
    if response.status_code in (401, 404, 405):
        return response.status_code
    return None
