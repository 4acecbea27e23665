"""``hookcode trust``: trust a folder (its own tools, hooks, MCP servers, skills and settings
may run), revoke that, list the trusted folders. See :mod:`hookcode.trust`.

These commands never build a runtime: nothing of the folder is loaded to trust it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from hookcode.cli.state import fail, print_json
from hookcode.errors import HookcodeError

if TYPE_CHECKING:
    from hookcode.cli.state import CliState
    from hookcode.trust import TrustStore


def register(app: typer.Typer, state: CliState) -> None:
    @app.command("trust")
    def trust(
        directory: str = typer.Argument(
            None,
            metavar="[DIR]",
            help="The folder (its git root is what is trusted); default: this worktree.",
        ),
        revoke: bool = typer.Option(False, "--revoke", help="Stop trusting the folder."),
        list_: bool = typer.Option(False, "--list", help="List the trusted folders."),
        as_json: bool = typer.Option(False, "--json", help="Print JSON (with --list)."),
    ) -> None:
        """Trust a folder: its .hookcode/tools, shell hooks, MCP servers, skills, allow rules
        and provider settings load from now on. A trusted folder trusts everything below it.

        Exit codes: 0 done; 1 no such directory, not trusted (--revoke), or an unreadable
        trust store; 2 bad arguments.
        """
        from hookcode.configfiles import data_dir_for, find_worktree
        from hookcode.trust import TrustStore

        if list_ and (revoke or directory is not None):
            raise typer.BadParameter("--list takes no DIR and no --revoke")
        if as_json and not list_:
            raise typer.BadParameter("--json goes with --list")
        store = TrustStore(data_dir_for(os.environ))
        base = state.options.cwd or os.getcwd()
        given = Path(base, directory) if directory is not None else Path(base)
        if not given.is_dir():
            raise fail(f"{directory or base}: no such directory")
        folder = find_worktree(Path(os.path.realpath(given)))
        try:
            if list_:
                _list(store, folder, as_json)
            elif revoke:
                _revoke(store, folder)
            else:
                _trust(store, folder)
        except (HookcodeError, OSError) as exc:
            raise fail(str(exc)) from None


def _trust(store: TrustStore, folder: Path) -> None:
    by = store.trusted_by(folder)
    if by is not None:
        also = "" if by == folder else f" (through {by})"
        typer.echo(f"{folder} is already trusted{also}")
        return
    path, _added = store.add(folder)
    typer.echo(f"trusted {path}")


def _revoke(store: TrustStore, folder: Path) -> None:
    path, removed = store.remove(folder)
    if removed:
        by = store.trusted_by(path)
        typer.echo(f"no longer trusted: {path}")
        if by is not None:
            typer.echo(f"(still trusted through {by}: `hookcode trust --revoke {by}`)")
        return
    by = store.trusted_by(path)
    if by is not None:
        raise fail(
            f"{path} is trusted through {by}; revoke that with `hookcode trust --revoke {by}`"
        )
    raise fail(f"{path} is not trusted")


def _list(store: TrustStore, folder: Path, as_json: bool) -> None:
    folders = store.folders()
    by = store.trusted_by(folder)
    if as_json:
        print_json(
            {
                "store": str(store.path),
                "folders": [{"path": str(f), "exists": f.is_dir()} for f in folders],
                "current": {
                    "path": str(folder),
                    "trusted": by is not None,
                    "by": str(by) if by is not None else None,
                },
            }
        )
        return
    if not folders:
        typer.echo("No trusted folders.")
    for f in folders:
        typer.echo(str(f) + ("" if f.is_dir() else "  (missing)"))
    status = "not trusted" if by is None else "trusted" if by == folder else f"trusted through {by}"
    typer.echo(f"this folder: {folder} ({status})")
