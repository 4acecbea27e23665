"""A stdio MCP server for the MCP client's tests (mcp 2.x ``MCPServer``) that can die.

Tools: ``echo`` (returns its text), ``die`` (writes a last word on stderr and exits the
process with code 7 before answering: a server that crashes after connecting).
"""

from __future__ import annotations

import os
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("hookcode-test-dying")


@server.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


@server.tool()
def die() -> str:
    """Exit the server process at once."""
    print("dying server: out of luck", file=sys.stderr, flush=True)
    os._exit(7)


if __name__ == "__main__":
    server.run("stdio")
