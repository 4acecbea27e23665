"""``hookcode audit verify|show|path``."""

from __future__ import annotations

from pathlib import Path

import typer

__all__ = ["register"]

PATH_HELP = "The log to read (default: [audit] path, else <data dir>/audit.jsonl)."


def _path(ctx: typer.Context, given: str | None) -> Path:
    if given:
        return Path(given).expanduser()
    from hookcode.cli import fail
    from hookcode.errors import HookcodeError
    from hookcode.runtime import Runtime

    from hookcode_audit import audit_path

    try:
        runtime = Runtime(cwd=ctx.find_root().params.get("cwd"))
    except HookcodeError as exc:
        raise fail(str(exc)) from None
    try:
        return audit_path(runtime)
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
        """Check the hash chain: exit 0 when intact, 1 naming the first broken line."""
        from hookcode.cli import print_json

        from hookcode_audit.chain import verify

        result = verify(_path(ctx, path), anchor=anchor)
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

        from hookcode_audit.chain import read_records

        where = _path(ctx, path)
        try:
            records = read_records(where)
        except FileNotFoundError:
            raise fail(f"no audit log at {where}") from None
        except OSError as exc:
            raise fail(f"cannot read {where}: {exc.strerror or exc}") from None
        for record in records[-tail:] if tail else []:
            if as_json:
                typer.echo(json.dumps(record, ensure_ascii=False))
            else:
                typer.echo(_line(record))

    @audit_app.command("path")
    def audit_path_command(ctx: typer.Context) -> None:
        """Print where the audit log is written."""
        typer.echo(str(_path(ctx, None)))


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
