"""``hookcode mcp``: ``list [--json]`` (the configured servers, their status and tools),
``auth NAME`` (an OAuth login to a remote server) and ``logout NAME`` (forget it)."""

from __future__ import annotations

from typing import Any

import typer

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    from hookcode_mcp._auth import DEFAULT_PORT

    mcp_app = typer.Typer(
        help="The configured MCP servers: list them, log in to them (OAuth).", no_args_is_help=True
    )
    app.add_typer(mcp_app, name="mcp")

    @mcp_app.command("list")
    def mcp_list(
        ctx: typer.Context,
        as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """List the MCP servers with their status (connected, failed, needs_auth...) and tools."""
        from hookcode.cli import print_json

        from hookcode_mcp import close, status

        runtime = _runtime(ctx)
        try:
            _ = runtime.registry.entries  # starts the servers; clashes are decided here
            servers = status(runtime, catalog=True)
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
            for line in _catalog_lines(server):
                typer.echo(f"  {line}")

    @mcp_app.command("auth")
    def mcp_auth(
        ctx: typer.Context,
        name: str = typer.Argument(..., help="The server's name (NAME in its mcp.NAME table)."),
        port: int = typer.Option(
            DEFAULT_PORT,
            "--port",
            min=0,
            max=65535,
            help="Port of the local callback server on 127.0.0.1; the redirect URI is "
            "http://127.0.0.1:PORT/mcp/oauth/callback (0: any free port).",
        ),
        timeout: float = typer.Option(
            300.0, "--timeout", min=1.0, help="Seconds to wait for the browser to come back."
        ),
        no_browser: bool = typer.Option(
            False, "--no-browser", help="Only print the authorization URL."
        ),
    ) -> None:
        """Log in to the remote MCP server NAME with OAuth, in the browser.

        The tokens go to <data dir>/mcp-auth.json (mode 0600); they are refreshed as needed."""
        import asyncio

        from hookcode.cli import fail

        from hookcode_mcp._auth import AuthStore
        from hookcode_mcp._client import quiet_sdk_logger
        from hookcode_mcp._login import LoginError, login

        runtime = _runtime(ctx)
        try:
            config = _remote_server(runtime, name)
            store = AuthStore(runtime.data_dir)
        finally:
            runtime.close()
        quiet_sdk_logger()
        try:
            asyncio.run(
                login(
                    name,
                    config,
                    store,
                    port=port,
                    timeout=timeout,
                    open_browser=not no_browser,
                    echo=typer.echo,
                )
            )
        except LoginError as exc:
            raise fail(f"MCP server '{name}': OAuth login failed: {exc}; nothing stored") from None
        except KeyboardInterrupt:
            raise fail(f"MCP server '{name}': OAuth login cancelled; nothing stored") from None
        typer.echo(f"Logged in to MCP server '{name}'; tokens stored in {store.path}")

    @mcp_app.command("logout")
    def mcp_logout(
        name: str = typer.Argument(..., help="The server's name (NAME in its mcp.NAME table)."),
    ) -> None:
        """Remove the stored OAuth login of MCP server NAME."""
        import os

        from hookcode.cli import fail
        from hookcode.errors import HookcodeError
        from hookcode.runtime import data_dir_for

        from hookcode_mcp._auth import AuthStore

        # no runtime: logging out works with a broken config too
        store = AuthStore(data_dir_for(os.environ))
        try:
            removed = store.remove(name)
        except HookcodeError as exc:
            raise fail(str(exc)) from None
        if not removed:
            raise fail(f"no stored OAuth login for MCP server '{name}' (in {store.path})")
        typer.echo(f"Removed the OAuth login of MCP server '{name}' from {store.path}")


def _runtime(ctx: typer.Context) -> Any:
    from hookcode.cli import fail
    from hookcode.errors import HookcodeError
    from hookcode.runtime import Runtime

    try:
        return Runtime(cwd=ctx.find_root().params.get("cwd"))
    except HookcodeError as exc:
        raise fail(str(exc)) from None


def _remote_server(runtime: Any, name: str) -> Any:
    """The config of remote server ``name`` that may log in with OAuth, else a clear error."""
    from hookcode.cli import fail

    from hookcode_mcp import _configured

    names = _configured(runtime.config)
    if name not in names:
        known = ", ".join(names) or "none (add an [mcp.NAME] table to hookcode.toml)"
        raise fail(f"unknown MCP server '{name}'; configured servers: {known}")
    config = runtime.config.section(f"mcp.{name}")
    if config.kind != "remote" or not config.url:
        raise fail(
            f"MCP server '{name}' is local (stdio): OAuth is for remote servers (type = "
            '"remote", url = "...")'
        )
    if config.oauth is False:
        raise fail(
            f"MCP server '{name}' has OAuth turned off (oauth = false in [mcp.{name}]); remove "
            "that line to log in"
        )
    return config


def _catalog_lines(server: dict[str, Any]) -> list[str]:
    """The prompts (as the chat commands they are) and resources of a server."""
    lines = []
    prompts = server.get("prompts") or []
    if prompts:
        commands = []
        for prompt in prompts:
            words = [
                f"<{a['name']}>" if a["required"] else f"[{a['name']}]" for a in prompt["arguments"]
            ]
            commands.append(" ".join([prompt["command"], *words]))
        lines.append(f"prompts: {', '.join(commands)}")
    resources = server.get("resources") or []
    templates = server.get("resource_templates") or []
    if resources or templates:
        shown = ", ".join(r["uri"] for r in resources[:5]) + (", ..." if len(resources) > 5 else "")
        text = f"resources: {len(resources)}" + (f" ({shown})" if shown else "")
        if templates:
            text += f"; templates: {', '.join(t['uri'] for t in templates)}"
        lines.append(text + " (tools mcp_list_resources, mcp_read_resource)")
    if server.get("catalog_error"):
        lines.append(f"prompts and resources not listed: {server['catalog_error']}")
    return lines


def _line(server: dict[str, Any]) -> str:
    where = f" [{server['transport']}]" if server.get("transport") else ""
    text = f"{server['name']}: {server['status']}{where}"
    if server["status"] == "connected":
        count = len(server["tools"])
        text += f", {count} tool{'s' if count != 1 else ''}"
    restarts = server.get("restarts") or 0
    if restarts:
        text += f", restarted {restarts} time{'s' if restarts != 1 else ''}"
    if server.get("error"):
        text += f": {server['error']}"
    return text
