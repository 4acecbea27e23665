"""Building the typer application: global options, the built-in command groups, plugin commands."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from hookcode.cli.helpfmt import HookcodeGroup
from hookcode.cli.state import CliState, GlobalOptions, fail
from hookcode.errors import HookcodeError
from hookcode.plugins import create_plugins

__all__ = ["build_app", "parse_globals"]


def parse_globals(args: list[str]) -> GlobalOptions:
    """Read the global options (they come before the command) ahead of typer, because the
    plugins must be loaded before the app is built."""
    options = GlobalOptions()
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-C", "--cwd") and i + 1 < len(args):
            options.cwd = args[i + 1]
            i += 2
            continue
        if arg.startswith("--cwd="):
            options.cwd = arg.split("=", 1)[1]
        elif arg.startswith("-C") and len(arg) > 2:
            options.cwd = arg[2:]
        elif arg == "--strict-plugins":
            options.strict_plugins = True
        elif not arg.startswith("-"):
            break
        i += 1
    return options


def _print_version(value: bool) -> None:
    if value:
        from hookcode.version import __version__

        typer.echo(f"hookcode {__version__}")
        raise typer.Exit()


def build_app(options: GlobalOptions) -> typer.Typer:
    app = typer.Typer(
        name="hookcode",
        help="hookcode: a plugin-first framework for AI coding agents.",
        cls=HookcodeGroup,
        no_args_is_help=False,  # `hookcode` alone opens the chat
        add_completion=True,  # --install-completion, --show-completion (typer's)
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    try:
        cwd = options.cwd if options.cwd and Path(options.cwd).is_dir() else os.getcwd()
        plugins = create_plugins(env=os.environ, strict=options.strict_plugins, cwd=cwd)
    except HookcodeError as exc:
        typer.echo(f"hookcode: error: {exc}", err=True)
        raise SystemExit(1) from None
    state = CliState(options, plugins)

    @app.callback(invoke_without_command=True)
    def root(
        ctx: typer.Context,
        cwd: str = typer.Option(
            None, "-C", "--cwd", metavar="DIR", help="Run as if started in DIR."
        ),
        strict_plugins: bool = typer.Option(
            False, "--strict-plugins", help="Fail when any plugin fails to load."
        ),
        version: bool = typer.Option(
            False,
            "--version",
            "-V",
            is_eager=True,
            callback=_print_version,
            help="Print hookcode's version and exit.",
        ),
    ) -> None:
        """hookcode: a plugin-first framework for AI coding agents."""
        if cwd is not None and not Path(cwd).is_dir():
            raise fail(f"-C {cwd}: no such directory")
        # the command's runtime (if it built one) ends with the command, however it ends:
        # its close callbacks stop what plugins started (shells, language servers)
        ctx.call_on_close(state.close)
        if ctx.invoked_subcommand is None:
            from hookcode.cli.sessions import start_chat

            start_chat(state)

    from hookcode.cli.commands import register

    register(app, state)
    for plugin, _value, error in plugins.call_each_outcomes("cli", app=app):
        if error is not None:
            plugins.report(plugin, "cli", error)
    return app
