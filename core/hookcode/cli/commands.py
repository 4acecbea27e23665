"""The built-in command groups: tools, plugins, config, permissions, run."""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING, Any

import typer

from hookcode.cli.state import fail, print_json
from hookcode.errors import HookcodeError

if TYPE_CHECKING:
    from hookcode.cli.state import CliState

JSON_HELP = "Print JSON."


def _table(title: str | None, columns: list[str], rows: list[list[str]]) -> None:
    """A table: rich on a terminal; aligned plain text when piped (cheaper, and grep-friendly;
    scripts should use ``--json``)."""
    if not sys.stdout.isatty():
        if title:
            typer.echo(title)
        widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(columns)]
        for row in [columns, *rows]:
            cells = [cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])]
            typer.echo("  ".join([*cells, row[-1]]).rstrip())
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title, show_lines=False, box=None, pad_edge=False)
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        # cells hold plugins' and users' text (descriptions, errors, patterns): never markup
        table.add_row(*(Text(cell) for cell in row))
    Console(soft_wrap=False).print(table)


def _first_line(text: str) -> str:
    return (text or "").strip().splitlines()[0] if (text or "").strip() else ""


def _print_outcome(
    rt: Any, name: str, outcome: Any, session_id: str, *, agent: str, as_json: bool, yes: bool
) -> None:
    """What ``tools call`` prints: the result (or JSON), or why it failed, said to a person."""
    if as_json:
        print_json(outcome.to_dict())  # the error as recorded (what the model read)
    elif outcome.ok:
        output = outcome.result.output
        typer.echo(output, nl=not output.endswith("\n"))
    if not outcome.ok:  # said to a person on stderr, also beside --json's stdout
        from hookcode.cli.callerrors import failure_message

        message = failure_message(rt, name, outcome, session_id, agent=agent, yes=yes)
        typer.echo(f"hookcode: {message}", err=True)


def register(app: typer.Typer, state: CliState) -> None:
    from hookcode.cli.auth_commands import register as register_auth
    from hookcode.cli.store_commands import register as register_store
    from hookcode.cli.trust_commands import register as register_trust

    register_auth(app, state)
    register_trust(app, state)
    register_store(app, state)

    def runtime(**kwargs: Any) -> Any:
        try:
            return state.runtime(**kwargs)
        except HookcodeError as exc:
            raise fail(str(exc)) from None

    # ------------------------------------------------------------------------------ tools
    tools_app = typer.Typer(help="List, inspect and call tools.", no_args_is_help=True)
    app.add_typer(tools_app, name="tools")

    @tools_app.command("list")
    def tools_list(
        as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
        agent: str = typer.Option(None, "--agent", help="Only the tools this agent is offered."),
    ) -> None:
        """List the registered tools (and what each one shadows)."""
        rt = runtime()
        try:
            entries = rt.registry.available(agent) if agent else list(rt.registry.entries.values())
        except HookcodeError as exc:
            raise fail(str(exc)) from None
        if as_json:
            print_json([e.to_dict() for e in entries])
            return
        if not entries:
            typer.echo(
                "No tools are registered. Install a tool pack (pip install ...) "
                "or see `hookcode plugins list`."
            )
            return
        rows = []
        for e in sorted(entries, key=lambda e: e.name):
            shadow = ", ".join(s.plugin for s in e.shadows)
            rows.append(
                [
                    e.name,
                    e.plugin + (f" (shadows {shadow})" if shadow else ""),
                    _first_line(e.tool.description),
                ]
            )
        _table(None, ["tool", "plugin", "description"], rows)

    @tools_app.command("show")
    def tools_show(
        name: str = typer.Argument(..., help="Tool name."),
        as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
        agent: str = typer.Option(
            None, "--agent", help="Show what this agent is sent (default: the default agent)."
        ),
    ) -> None:
        """Show a tool's description and parameter schema, as the agent's model is sent them."""
        rt = runtime()
        entry = rt.registry.get(name)
        if entry is None:
            names = ", ".join(sorted(rt.registry.entries)) or "none"
            raise fail(f"unknown tool '{name}'; available tools: {names}")
        try:
            spec = rt.agent(agent)
            definition = rt.registry.definition(entry, spec.name)
            offered = any(e is entry for e in rt.registry.available(spec.name))
        except HookcodeError as exc:
            raise fail(str(exc)) from None
        data = entry.to_dict()
        data["description"] = definition["description"]
        data["parameters"] = definition["parameters"]
        data["agent"] = spec.name
        data["offered"] = offered
        if as_json:
            print_json(data)
            return
        typer.echo(f"{entry.name}  (plugin {entry.plugin}, {entry.distribution or '-'})")
        if entry.shadows:
            typer.echo("shadows: " + ", ".join(s.plugin for s in entry.shadows))
        typer.echo(f"permission: {entry.permission}")
        if offered:
            typer.echo(f"agent: {spec.name}\n")
        else:
            typer.echo(f"agent: {spec.name} (not offered: its rules deny {entry.permission!r})\n")
        typer.echo(str(definition["description"]).strip() + "\n")
        typer.echo("parameters:")
        import json

        typer.echo(json.dumps(data["parameters"], indent=2))

    @tools_app.command("call")
    def tools_call(
        name: str = typer.Argument(..., help="Tool name."),
        args_json: str = typer.Argument(
            None, metavar="[ARGS_JSON]", help="Arguments as a JSON object ('-' reads stdin)."
        ),
        as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
        yes: bool = typer.Option(False, "--yes", "-y", help="Approve permission asks."),
        agent: str = typer.Option(None, "--agent", help="Run as this agent."),
    ) -> None:
        """Call one tool through the whole pipeline, in a fresh session. SIGINT, SIGTERM and
        SIGHUP abort the call (its processes are killed, the call is stored as aborted)."""
        import asyncio

        if args_json == "-":
            args_json = sys.stdin.read()
        rt = runtime(yes=yes, ask_trust=True)
        try:
            agent_name = rt.agent(agent).name
            session = rt.create_session(
                title=f"tools call {name}", agent=agent_name, origin="tools call"
            )
        except HookcodeError as exc:
            raise fail(str(exc)) from None

        async def call() -> Any:
            import signal

            from hookcode.tools import AbortSignal

            abort = AbortSignal()
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                    loop.add_signal_handler(signum, abort.abort, "interrupted")
            return await rt.call_tool(
                name,
                args_json if args_json is not None else {},
                agent=agent_name,
                session_id=session.id,
                abort=abort,
            )

        outcome = asyncio.run(call())
        try:  # the call's tool part is committed (a store may write it behind) before it shows
            rt.store.flush()
        except HookcodeError as exc:
            raise fail(str(exc)) from None
        with contextlib.suppress(OSError):  # a closed terminal (SIGHUP) takes no output
            _print_outcome(
                rt, name, outcome, session.id, agent=agent_name, as_json=as_json, yes=yes
            )
        raise typer.Exit(0 if outcome.ok else 1)

    # ------------------------------------------------------------------------------ plugins
    plugins_app = typer.Typer(help="Inspect the installed plugins.", no_args_is_help=True)
    app.add_typer(plugins_app, name="plugins")

    @plugins_app.command("list")
    def plugins_list(as_json: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
        """List every plugin with its distribution, hooks and status."""
        infos = list(state.plugins.infos.values())
        if as_json:
            print_json([i.to_dict() for i in infos])
            return
        rows = [
            [
                i.name,
                f"{i.distribution or '-'} {i.version or ''}".strip(),
                i.status,
                ", ".join(i.hooks) if i.status == "loaded" else (i.error or ""),
            ]
            for i in infos
        ]
        _table(None, ["plugin", "distribution", "status", "hooks / error"], rows)

    # ------------------------------------------------------------------------------ config
    config_app = typer.Typer(help="Show the configuration and its schema.", no_args_is_help=True)
    app.add_typer(config_app, name="config")

    @config_app.command("show")
    def config_show(as_json: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
        """Show the effective configuration (every layer merged); secret values (headers, API
        keys, tokens, passwords) are shown as ****."""
        from hookcode.secrets import mask_config

        rt = runtime()
        cfg = rt.config
        data = mask_config(cfg.to_dict(), rt.secrets.redactor().redact)
        if as_json:
            print_json(data)
            return
        typer.echo("# layers: " + (", ".join(layer.source for layer in cfg.layers) or "none"))
        import json

        typer.echo(json.dumps(data, indent=2, default=str))

    @config_app.command("schema")
    def config_schema() -> None:
        """Print the JSON schema of the configuration (core and every loaded plugin)."""
        from hookcode.config import json_schema

        rt = runtime()
        claimed = {}
        for _plugin, sections in rt.plugins.collect("config_schema"):
            claimed.update(sections)
        print_json(json_schema(claimed))

    @config_app.command("path")
    def config_path(as_json: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
        """List the config files consulted, in order (later wins), and the data directory."""
        rt = runtime()
        cfg = rt.config
        existing = {layer.source for layer in cfg.layers}
        files = [
            {"path": str(p), "exists": str(p) in existing or p.exists()} for p in cfg.candidates
        ]
        if as_json:
            print_json(
                {
                    "files": files,
                    "env": [
                        layer.source for layer in cfg.layers if layer.source.startswith("HOOKCODE_")
                    ],
                    "data_dir": str(rt.data_dir),
                }
            )
            return
        for f in files:
            typer.echo(f"{'*' if f['exists'] else ' '} {f['path']}")
        for layer in cfg.layers:
            if layer.source.startswith("HOOKCODE_"):
                typer.echo(f"* {layer.source}")
        typer.echo(f"data: {rt.data_dir}")

    # ------------------------------------------------------------------------------ permissions
    perm_app = typer.Typer(
        help="Explain decisions; list and revoke approvals.", no_args_is_help=True
    )
    app.add_typer(perm_app, name="permissions")

    @perm_app.command("explain")
    def permissions_explain(
        permission: str = typer.Argument(..., help="Permission name (read, edit, bash, ...)."),
        pattern: str = typer.Argument(..., help="What is checked (a path, a command, '*')."),
        agent: str = typer.Option(None, "--agent", help="Agent (default: the default agent)."),
        as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """Show the decision for PERMISSION on PATTERN and the rule that made it (for bash:
        every request the command needs, and why it is opaque when it is)."""
        from hookcode.cli.explain import explain

        rt = runtime()
        try:
            spec = rt.agent(agent)
        except HookcodeError as exc:
            raise fail(str(exc)) from None
        explain(rt, spec.name, permission, pattern, as_json=as_json)

    @perm_app.command("list")
    def permissions_list(as_json: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
        """List the remembered "always" approvals of this project."""
        rt = runtime()
        rows = rt.store.approvals(project=rt.project, session_id=None)
        sessions = [s.id for s in rt.store.list_sessions(rt.project)]
        for session_id in sessions:
            rows += [
                a
                for a in rt.store.approvals(project=rt.project, session_id=session_id)
                if a.session_id
            ]
        data = [
            {
                "id": a.id,
                "permission": a.permission,
                "pattern": a.pattern,
                "scope": "session" if a.session_id else "project",
                "session_id": a.session_id,
                "directory": a.directory,
            }
            for a in rows
        ]
        if as_json:
            print_json(data)
            return
        if not data:
            typer.echo("No remembered approvals.")
            return
        _table(
            None,
            ["id", "scope", "permission", "pattern"],
            [[d["id"], d["scope"], d["permission"], d["pattern"]] for d in data],
        )

    @perm_app.command("revoke")
    def permissions_revoke(approval_id: str = typer.Argument(..., metavar="ID")) -> None:
        """Forget a remembered approval."""
        rt = runtime()
        if not rt.store.remove_approval(approval_id):
            raise fail(f"no approval with id '{approval_id}' (see `hookcode permissions list`)")
        typer.echo(f"revoked {approval_id}")

    # ------------------------------------------------------------------------------ run, chat
    from hookcode.cli.sessions import register as register_sessions

    register_sessions(app, state)
