"""``hookcode mcp list [--json]``: the configured servers, their status and tools."""

from __future__ import annotations

from typing import Any

import typer

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    mcp_app = typer.Typer(help="Inspect the configured MCP servers.", no_args_is_help=True)
    app.add_typer(mcp_app, name="mcp")

    @mcp_app.command("list")
    def mcp_list(
        ctx: typer.Context,
        as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """List the MCP servers with their status (connected, disabled, failed) and tools."""
        from hookcode.cli.state import fail, print_json
        from hookcode.errors import HookcodeError
        from hookcode.runtime import Runtime

        from hookcode_mcp import close, status

        cwd = ctx.find_root().params.get("cwd")
        try:
            runtime = Runtime(cwd=cwd)
        except HookcodeError as exc:
            raise fail(str(exc)) from None
        try:
            _ = runtime.registry.entries  # starts the servers; clashes are decided here
            servers = status(runtime)
        finally:
            close(runtime)
            runtime.close()
        if as_json:
            print_json(servers)
            return
        if not servers:
            typer.echo("No MCP servers are configured (add an [mcp.NAME] table to hookcode.toml).")
            return
        for server in servers:
            typer.echo(_line(server))
            for item in server["tools"]:
                note = f"  (skipped: {item['skipped']})" if item["skipped"] else ""
                typer.echo(f"    {item['name']}{note}")


def _line(server: dict[str, Any]) -> str:
    where = f" [{server['transport']}]" if server.get("transport") else ""
    text = f"{server['name']}: {server['status']}{where}"
    if server["status"] == "connected":
        count = len(server["tools"])
        text += f", {count} tool{'s' if count != 1 else ''}"
    if server.get("error"):
        text += f": {server['error']}"
    return text
