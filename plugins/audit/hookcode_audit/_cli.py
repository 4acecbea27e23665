"""``hookcode audit verify|show|path``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from hookcode_audit.stored import StoredAuditLog

__all__ = ["register"]

PATH_HELP = (
    "The log file to read (default: the configured log: [audit] path, else "
    '<data dir>/audit.jsonl; the store\'s with [audit] to = "store").'
)


@contextlib.contextmanager
def _log(ctx: typer.Context, given: str | None) -> Iterator[Path | StoredAuditLog]:
    """The log to read: the file ``--path`` names, else the configured one (a file, or the
    store's audit log, read while the runtime is open)."""
    if given:
        yield Path(given).expanduser()
        return
    from hookcode.cli import fail
    from hookcode.errors import HookcodeError
    from hookcode.runtime import Runtime

    from hookcode_audit import open_log
    from hookcode_audit.chain import AuditLog

    try:
        runtime = Runtime(cwd=ctx.find_root().params.get("cwd"))
    except HookcodeError as exc:
        raise fail(str(exc)) from None
    try:
        try:
            log = open_log(runtime)
        except HookcodeError as exc:  # a store without an audit log, or one that cannot open
            raise fail(f"audit: {exc}") from None
        yield log.path if isinstance(log, AuditLog) else log
    finally:
        runtime.close()


def register(app: typer.Typer) -> None:
    audit_app = typer.Typer(
        help="Check and read the audit log of tool calls and permission decisions.",
        no_args_is_help=True,
    )
    app.add_typer(audit_app, name="audit")

    @audit_app.command("verify")
    def audit_verify(
        ctx: typer.Context,
        path: str = typer.Option(None, "--path", help=PATH_HELP),
        anchor: str = typer.Option(
            None,
            "--anchor",
            metavar="HASH",
            help="A head printed by an earlier verify: that record must still be in the log "
            "(catches records removed from the end).",
        ),
        as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Check the hash chain: exit 0 when intact, 1 naming the first broken record."""
        from hookcode.cli import print_json

        from hookcode_audit.chain import verify

        with _log(ctx, path) as log:
            result = (
                verify(log, anchor=anchor) if isinstance(log, Path) else log.verify(anchor=anchor)
            )
        if as_json:
            print_json(result.to_dict())
        elif result.ok:
            typer.echo(f"audit log ok: {result.path} ({result.records} records)")
            if result.head:
                typer.echo(f"head: {result.head}")
        else:
            typer.echo(f"hookcode: audit: {result.path}: {result.error}", err=True)
        raise typer.Exit(0 if result.ok else 1)

    @audit_app.command("show")
    def audit_show(
        ctx: typer.Context,
        path: str = typer.Option(None, "--path", help=PATH_HELP),
        tail: int = typer.Option(20, "--tail", "-n", min=0, help="Show the last N records."),
        as_json: bool = typer.Option(False, "--json", help="Print JSON lines."),
    ) -> None:
        """Print the last records of the audit log."""
        import json

        from hookcode.cli import fail
        from hookcode.errors import HookcodeError

        from hookcode_audit.chain import read_records

        with _log(ctx, path) as log:
            where = log if isinstance(log, Path) else log.path
            try:
                records = read_records(log) if isinstance(log, Path) else log.records()
            except FileNotFoundError:
                raise fail(f"no audit log at {where}") from None
            except OSError as exc:
                raise fail(f"cannot read {where}: {exc.strerror or exc}") from None
            except HookcodeError as exc:  # a StoreError
                raise fail(f"cannot read the audit log: {exc}") from None
        for record in records[-tail:] if tail else []:
            if as_json:
                typer.echo(json.dumps(record, ensure_ascii=False))
            else:
                typer.echo(_line(record))

    @audit_app.command("path")
    def audit_path_command(ctx: typer.Context) -> None:
        """Print where the audit log is written (a file, or the store's location)."""
        with _log(ctx, None) as log:
            typer.echo(str(log if isinstance(log, Path) else log.path))


def _line(record: dict) -> str:
    import json

    head = f"{record.get('seq', '?'):>5} {record.get('time', '')} {record.get('type', '?')}"
    kind = record.get("type")
    if kind == "tool.call":
        return (
            f"{head} {record.get('tool')} {record.get('call_id')} {json.dumps(record.get('args'))}"
        )
    if kind == "tool.result":
        what = "ok" if record.get("ok") else f"error: {record.get('error')}"
        cached = " (cached)" if record.get("cached") else ""
        return f"{head} {record.get('tool')} {record.get('call_id')} {what}{cached}"
    if kind == "permission":
        by = record.get("by") or {}
        who = by.get("kind", "?")
        if who == "user":
            who = f"user via {by.get('front_end')}"
        patterns = ", ".join(record.get("patterns") or [])
        return f"{head} {record.get('permission')} [{patterns}] -> {record.get('decision')} ({who})"
    return head
