"""Building the typer application: global options, the built-in command groups, plugin commands."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer

from hookcode.errors import HookcodeError
from hookcode.plugins import Plugins, create_plugins

__all__ = ["CliState", "GlobalOptions", "build_app", "parse_globals"]


@dataclass
class GlobalOptions:
    cwd: str | None = None
    strict_plugins: bool = False


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


@dataclass
class CliState:
    """What the commands share: the plugins (loaded once) and a lazily built runtime."""

    options: GlobalOptions
    plugins: Plugins
    _runtime: Any = None
    extra: dict[str, Any] = field(default_factory=dict)

    def runtime(self, *, yes: bool = False) -> Any:
        if self._runtime is None:
            from hookcode.cli.frontend import AutoApprove, TerminalFrontend
            from hookcode.runtime import Runtime

            if yes:
                self.plugins.register(AutoApprove(), "cli_yes")
            elif sys.stdin.isatty() and sys.stderr.isatty():
                self.plugins.register(TerminalFrontend(), "cli_terminal")
            self._runtime = Runtime(cwd=self.options.cwd, plugins=self.plugins)
        return self._runtime

    def close(self) -> None:
        if self._runtime is not None:
            self._runtime.close()


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print ``hookcode: error: <message>`` on stderr and return the Exit to raise."""
    typer.echo(f"hookcode: error: {message}", err=True)
    return typer.Exit(code)


def print_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, default=str, ensure_ascii=False))


def build_app(options: GlobalOptions) -> typer.Typer:
    app = typer.Typer(
        name="hookcode",
        help="hookcode: a plugin-first framework for AI coding agents.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    try:
        plugins = create_plugins(env=os.environ, strict=options.strict_plugins)
    except HookcodeError as exc:
        typer.echo(f"hookcode: error: {exc}", err=True)
        raise SystemExit(1) from None
    state = CliState(options, plugins)

    @app.callback()
    def root(
        cwd: str = typer.Option(
            None, "-C", "--cwd", metavar="DIR", help="Run as if started in DIR."
        ),
        strict_plugins: bool = typer.Option(
            False, "--strict-plugins", help="Fail when any plugin fails to load."
        ),
    ) -> None:
        """hookcode: a plugin-first framework for AI coding agents."""
        if cwd is not None and not Path(cwd).is_dir():
            raise fail(f"-C {cwd}: no such directory")

    from hookcode.cli import commands

    commands.register(app, state)
    for plugin, value, error in plugins.call_each_outcomes("cli", app=app):
        if error is not None:
            plugins.report(plugin, "cli", error)
    return app
