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

    def runtime(
        self, *, yes: bool = False, interactive: bool = True, ask_trust: bool = False
    ) -> Any:
        """The runtime, built on first use. ``yes`` approves permission asks; otherwise asks go
        to the terminal when stdin and stderr are terminals and ``interactive`` is true, else
        they are refused (headless). With ``ask_trust`` and a terminal, an untrusted folder
        whose own code or settings would be skipped is offered for trust first (before
        anything of it is loaded)."""
        if self._runtime is None:
            from hookcode.cli.prompts import AutoApprove, TerminalFrontend
            from hookcode.runtime import Runtime

            trusted = None
            if ask_trust and sys.stdin.isatty() and sys.stderr.isatty():
                trusted = self._ask_trust()
            if yes:
                self.plugins.register(AutoApprove(), "cli_yes")
            elif interactive and sys.stdin.isatty() and sys.stderr.isatty():
                self.plugins.register(TerminalFrontend(), "cli_terminal")
            self._runtime = Runtime(cwd=self.options.cwd, plugins=self.plugins, trusted=trusted)
        return self._runtime

    def _ask_trust(self) -> bool:
        """Whether the worktree is trusted, asking on the terminal when it is not and something
        would be skipped; a yes is remembered in the trust store."""
        import os
        from pathlib import Path

        from hookcode.configfiles import data_dir_for, find_worktree, plugin_selection
        from hookcode.trust import TrustStore, ask_on_terminal
        from hookcode.untrusted import untrusted_items

        env = os.environ
        cwd = Path(os.path.realpath(self.options.cwd or os.getcwd()))
        worktree = find_worktree(cwd)
        store = TrustStore(data_dir_for(env))
        if store.trusted_by(worktree) is not None:
            return True
        items = untrusted_items(cwd, worktree, env, self.plugins)
        if not items or not ask_on_terminal(
            worktree, items, read=sys.stdin.readline, write=_write_stderr
        ):
            return False
        try:
            store.add(worktree)
        except OSError as exc:  # the user said yes: trust this run, say it is not remembered
            _write_stderr(f"hookcode: could not remember the trust in {store.path}: {exc}\n")
        if plugin_selection(cwd, worktree, env, trusted=True) != plugin_selection(
            cwd, worktree, env, trusted=False
        ):
            # the project's [plugins] table counts now: load the plugins it selects
            from hookcode.plugins import create_plugins

            self.plugins = create_plugins(
                env=env, strict=self.options.strict_plugins, cwd=cwd, trusted=True
            )
        return True

    def close(self) -> None:
        if self._runtime is not None:
            self._runtime.close()


def _write_stderr(text: str) -> None:
    sys.stderr.write(text)
    sys.stderr.flush()


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print ``hookcode: error: <message>`` on stderr and return the Exit to raise."""
    typer.echo(f"hookcode: error: {message}", err=True)
    return typer.Exit(code)


def print_json(data: Any) -> None:
    """Print ``data`` as indented JSON on stdout (what ``--json`` options print)."""
    import json

    typer.echo(json.dumps(data, indent=2, default=str, ensure_ascii=False))
