"""What the CLI's commands share: options, the loaded plugins, a lazily built runtime; and
how they print."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import typer

from hookcode.plugins import Plugins

__all__ = ["CliState", "GlobalOptions", "fail", "print_json"]


@dataclass
class GlobalOptions:
    cwd: str | None = None
    strict_plugins: bool = False


@dataclass
class CliState:
    """What the commands share: the plugins (loaded once) and a lazily built runtime."""

    options: GlobalOptions
    plugins: Plugins
    _runtime: Any = None
    extra: dict[str, Any] = field(default_factory=dict)

    def runtime(self, *, yes: bool = False, interactive: bool = True) -> Any:
        """The runtime, built on first use. ``yes`` approves permission asks; otherwise asks go
        to the terminal when stdin and stderr are terminals and ``interactive`` is true, else
        they are refused (headless)."""
        if self._runtime is None:
            from hookcode.cli.frontend import AutoApprove, TerminalFrontend
            from hookcode.runtime import Runtime

            if yes:
                self.plugins.register(AutoApprove(), "cli_yes")
            elif interactive and sys.stdin.isatty() and sys.stderr.isatty():
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
    import json

    typer.echo(json.dumps(data, indent=2, default=str, ensure_ascii=False))
