"""A stdio MCP server for the MCP client's restart tests, on the standard library only (it
starts in milliseconds, however often a test has it restarted).

``crashing_server.py STARTS [--die-after-list] [--fail-restarts] [--restart-delay SECONDS]``

Every start appends its process id as a line to the file STARTS, so a test counts the starts
and finds each one's process.
Tools: ``echo`` (returns its text), ``pid`` (its process id), ``die`` (a last word on stderr,
then the process exits with code 7 before answering).
``--die-after-list``: every start exits right after answering ``tools/list`` (connected, then
gone: a server that crashes on every start). ``--fail-restarts``: every start after the first
exits at once, before answering ``initialize``. ``--restart-delay SECONDS``: every start after
the first waits that long before reading anything (calls come in while a restart runs).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

TOOLS = [
    {
        "name": "echo",
        "description": "Return the text.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    },
    {"name": "pid", "description": "The server's process id.", "inputSchema": {"type": "object"}},
    {"name": "die", "description": "Exit the server at once.", "inputSchema": {"type": "object"}},
]


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def exit_now(last_words: str, code: int) -> None:
    print(f"crashing server {os.getpid()}: {last_words}", file=sys.stderr, flush=True)
    os._exit(code)


def text(value: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": value}], "isError": False}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("starts", type=Path)
    parser.add_argument("--die-after-list", action="store_true")
    parser.add_argument("--fail-restarts", action="store_true")
    parser.add_argument("--restart-delay", type=float, default=0.0)
    options = parser.parse_args()

    earlier = options.starts.read_text().split() if options.starts.exists() else []
    with open(options.starts, "a") as handle:
        handle.write(f"{os.getpid()}\n")
    if earlier and options.fail_restarts:
        exit_now("cannot start again", 3)
    if earlier and options.restart_delay:
        time.sleep(options.restart_delay)

    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method, ident = message.get("method"), message.get("id")
        if ident is None:
            continue  # a notification
        params = message.get("params") or {}
        if method == "initialize":
            send(
                {
                    "jsonrpc": "2.0",
                    "id": ident,
                    "result": {
                        "protocolVersion": params.get("protocolVersion"),
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "hookcode-test-crashing", "version": "1.0"},
                    },
                }
            )
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": ident, "result": {"tools": TOOLS}})
            if options.die_after_list:
                exit_now("crashed right after connecting", 5)
        elif method == "tools/call":
            name, args = params.get("name"), params.get("arguments") or {}
            if name == "die":
                exit_now("out of luck", 7)
            result = text(str(args.get("text", ""))) if name == "echo" else text(str(os.getpid()))
            send({"jsonrpc": "2.0", "id": ident, "result": result})
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": ident, "result": {}})
        else:
            error = {"code": -32601, "message": f"method not found: {method}"}
            send({"jsonrpc": "2.0", "id": ident, "error": error})


if __name__ == "__main__":
    main()
