"""A stdio MCP server for the process-tree tests (mcp 2.x ``MCPServer``) that starts children
which leave its process group: a ``setsid`` one and a double-forked one, each writing its pid
into the directory given as the first argument. Tool: ``echo`` (returns its text)."""

from __future__ import annotations

import subprocess
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("hookcode-test-forky")


@server.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


if __name__ == "__main__":
    out = sys.argv[1]
    subprocess.Popen(
        [
            "setsid",
            "sh",
            "-c",
            f"echo $$ > {out}/setsid.tmp; mv {out}/setsid.tmp {out}/setsid; exec sleep 303",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    subprocess.Popen(
        [
            "sh",
            "-c",
            f"(sh -c 'echo $$ > {out}/double.tmp; mv {out}/double.tmp {out}/double; "
            "exec sleep 304' &) &",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    server.run("stdio")
