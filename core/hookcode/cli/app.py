"""Building the typer application: global options, the built-in command groups, plugin commands."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import typer

from hookcode.cli.helpfmt import HookcodeGroup
from hookcode.cli.state import CliState, GlobalOptions, fail
from hookcode.errors import HookcodeError
from hookcode.plugins import create_plugins

__all__ = ["build_app", "escape_markup", "parse_globals", "plain_help"]

# rich's markup escape (``rich.markup.escape``) without importing rich: help texts are escaped
# on every start, and importing rich.markup costs more than the whole start-up budget
_MARKUP_TAG = re.compile(r"(\\*)(\[[a-z#/@][^[]*?])")


def escape_markup(text: str) -> str:
    """``text`` with everything rich would read as a markup tag (``[audit]``, ``[/etc]``)
    escaped, so that it is shown as written."""
    if "[" in text:  # most help texts have none: no regex for them
        text = _MARKUP_TAG.sub(lambda m: f"{m[1]}{m[1]}\\{m[2]}", text)
    if text.endswith("\\") and not text.endswith("\\\\"):
        text += "\\"
    return text


def plain_help(command: Any) -> Any:
    """Escape the help texts of ``command`` and all its sub-commands (core's and every
    plugin's): they are plain text, but typer renders them as rich markup, where ``[audit]``
    would vanish as an unknown style and ``[/x]`` would end the command with a MarkupError."""
    stack = [command]
    while stack:
        cmd = stack.pop()
        for attr in ("help", "short_help", "epilog"):
            value = getattr(cmd, attr, None)
            if isinstance(value, str):
                setattr(cmd, attr, escape_markup(value))
        for param in getattr(cmd, "params", ()):
            value = getattr(param, "help", None)
            if isinstance(value, str):
                param.help = escape_markup(value)
        stack.extend((getattr(cmd, "commands", None) or {}).values())
    return command


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
