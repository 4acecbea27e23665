"""A streamable-HTTP MCP server for the MCP client's tests (mcp 2.x ``MCPServer``).

Binds 127.0.0.1 on a free port, prints ``PORT <n>`` on stdout, serves ``/mcp`` until killed
(``--sse``: the older HTTP+SSE transport on ``/sse``; ``--bearer TOKEN``: ``/mcp`` answers 401
unless ``Authorization: Bearer TOKEN`` is sent, and no OAuth metadata is published; ``--port N``:
port N, as a server started again where the last one was).
Tools: ``add`` (a number, structured), ``fail`` (raises: an ``isError`` result), ``picture``
(text and a PNG image), ``report`` (an embedded text resource and a PDF blob), ``patch`` (a
name that clashes with apply_patch when the server is called ``apply``), ``enable_extra``
(adds the ``extra`` tool and sends ``notifications/tools/list_changed``).
"""

from __future__ import annotations

import asyncio
import base64
import socket
import sys
from typing import Any

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import (
    BlobResourceContents,
    EmbeddedResource,
    ImageContent,
    TextContent,
    TextResourceContents,
)

PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000100e221bc330000000049454e44ae426082"
    )
).decode()

server = MCPServer("hookcode-test-http")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def fail(reason: str = "it broke") -> str:
    """Always fails."""
    raise ValueError(reason)


@server.tool()
def picture() -> list[TextContent | ImageContent]:
    """A caption and a 1x1 PNG."""
    return [
        TextContent(type="text", text="a tiny picture"),
        ImageContent(type="image", data=PNG, mime_type="image/png"),
    ]


@server.tool()
def report() -> list[TextContent | EmbeddedResource]:
    """Text, an embedded text resource, a PDF blob and an unsupported blob."""
    return [
        TextContent(type="text", text="the report"),
        EmbeddedResource(
            type="resource",
            resource=TextResourceContents(
                uri="file:///notes.txt", mime_type="text/plain", text="notes: all good"
            ),
        ),
        EmbeddedResource(
            type="resource",
            resource=BlobResourceContents(
                uri="file:///report.pdf",
                mime_type="application/pdf",
                blob=base64.b64encode(b"%PDF-1.4 tiny").decode(),
            ),
        ),
        EmbeddedResource(
            type="resource",
            resource=BlobResourceContents(
                uri="file:///data.bin",
                mime_type="application/octet-stream",
                blob=base64.b64encode(b"\x00\x01\x02\x03").decode(),
            ),
        ),
    ]


@server.tool()
def lines(count: int) -> str:
    """``count`` numbered lines."""
    return "\n".join(f"line {i}" for i in range(1, count + 1))


@server.tool()
def patch(text: str) -> str:
    """Clashes with the built-in apply_patch when this server is named "apply"."""
    return text


@server.tool()
async def enable_extra(ctx: Context) -> str:
    """Add the ``extra`` tool and tell the client its tool list changed."""

    def extra(word: str) -> str:
        """The tool that appeared later."""
        return f"extra: {word}"

    server.add_tool(extra, name="extra")
    await ctx.session.send_tool_list_changed()
    return "extra enabled"


def _require_bearer(app: Any, token: str) -> Any:
    """``app`` behind a static bearer token (the MCP endpoint only: other paths are 404)."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        protected = scope["type"] == "http" and scope["path"].startswith("/mcp")
        if protected and dict(scope["headers"]).get(b"authorization") != expected:
            body = b'{"error": "invalid_token"}'
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode()),
                        (b"www-authenticate", b"Bearer"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await app(scope, receive, send)

    return guarded


def main() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    port = int(sys.argv[sys.argv.index("--port") + 1]) if "--port" in sys.argv else 0
    sock.bind(("127.0.0.1", port))
    sock.listen(128)  # connections queue from now on: the port is usable once printed
    port = sock.getsockname()[1]
    if "--sse" in sys.argv:  # the old HTTP+SSE transport: GET /sse, POST /messages/
        app = server.sse_app(host="127.0.0.1")
    else:
        app = server.streamable_http_app(host="127.0.0.1")
    if "--bearer" in sys.argv:
        app = _require_bearer(app, sys.argv[sys.argv.index("--bearer") + 1])
    config = uvicorn.Config(app, log_level="warning")
    print(f"PORT {port}", flush=True)
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    sys.exit(main())
