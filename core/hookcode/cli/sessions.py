"""``hookcode run``, ``hookcode chat`` (also ``hookcode`` alone) and ``hookcode sessions``."""

from __future__ import annotations

import os
import sys
import time
from enum import StrEnum
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from hookcode.cli.session_ref import resolve_session
from hookcode.cli.state import fail, print_json
from hookcode.errors import HookcodeError

if TYPE_CHECKING:
    from hookcode.cli.state import CliState

__all__ = ["register", "session_export", "session_show"]


class Format(StrEnum):
    text = "text"
    json = "json"
    json_result = "json-result"


#: ``--continue`` and ``--session``, the same for ``run`` and ``chat``
CONTINUE = typer.Option(
    False,
    "--continue",
    "-c",
    help="Continue this project's most recent session (with --session ID: that session, from "
    "any machine sharing the store).",
)
SESSION = typer.Option(
    None,
    "--session",
    "-s",
    metavar="ID",
    help="Continue session ID (a unique prefix of it is enough).",
)


def _pick_session(rt: Any, cont: bool, session_id: str | None) -> Any:
    """The session ``--continue`` / ``--session`` name (None: a new one). Resuming a session
    first cleans up after runs that died (a crash may have ended the one being resumed)."""
    record = None
    if session_id:
        record = resolve_session(rt.store, session_id)
    elif cont:
        record = rt.store.latest_session(rt.project)
        if record is None:
            raise HookcodeError(
                f"no session to continue in {rt.worktree}: start one with `hookcode run MESSAGE`"
            )
    if record is not None:
        _clean_up_after_crashes(rt)
    return record


def _clean_up_after_crashes(rt: Any) -> None:
    """Kill what runs that died with their process guardian left running, and remove the
    temporary files of writes they were killed in (``hookcode.guardian.sweep``,
    ``hookcode.fileio.PendingWrites``)."""
    rt.processes.sweep()
    rt.pending_writes.clean()


def register(app: typer.Typer, state: CliState) -> None:
    @app.command("run")
    def run(
        message: list[str] = typer.Argument(
            None,
            help="What to ask the agent. Text piped on stdin is added after it (or is the "
            "message, when none is given).",
        ),
        model: str = typer.Option(
            None, "--model", "-m", help="provider/model, e.g. scripted/demo."
        ),
        agent: str = typer.Option(None, "--agent", help="Agent to run (default: build)."),
        cont: bool = CONTINUE,
        session_id: str = SESSION,
        yes: bool = typer.Option(False, "--yes", "-y", help="Approve permission asks."),
        non_interactive: bool = typer.Option(
            False,
            "--non-interactive",
            help="Never prompt: permission asks are refused (and the run exits 1).",
        ),
        fmt: Format = typer.Option(
            Format.text,
            "--format",
            help="text; json: one JSON object per line per event, the result last; "
            "json-result: the result object alone (docs: reference/json-output.md).",
        ),
        as_json: bool = typer.Option(False, "--json", hidden=True, help="Same as --format json."),
        script: str = typer.Option(
            None,
            "--script",
            metavar="FILE",
            help="Script for the scripted provider (scripted/NAME); sets HOOKCODE_SCRIPT.",
        ),
    ) -> None:
        """Run the agent on MESSAGE until it is done.

        Exit codes: 0 done (a tool error or a configured deny that the model read is not a
        failure); 1 the run failed, or a call was refused for want of an approver; 130
        aborted (Ctrl-C).
        """
        from hookcode.cli.running import run_cli

        fmt = Format.json if as_json else fmt
        json_out = fmt != Format.text
        if script:
            os.environ["HOOKCODE_SCRIPT"] = os.path.abspath(script)
        text = " ".join(message or [])
        if not sys.stdin.isatty():
            from hookcode.cli.piped import WAIT_ENV, compose, read_piped

            try:
                piped, gave_up = read_piped(sys.stdin, wait=bool(text.strip()))
            except HookcodeError as exc:
                _fail(json_out, str(exc))
            if gave_up:
                typer.echo(
                    f"hookcode: nothing arrived on stdin; going on without it (pipe into the "
                    f"command, redirect stdin from /dev/null, or set {WAIT_ENV} to wait longer)",
                    err=True,
                )
            text = compose(text, piped)
        if not text.strip():
            _fail(json_out, "empty message: pass MESSAGE, or pipe it on stdin")
        try:
            rt = state.runtime(
                yes=yes, interactive=not non_interactive, ask_trust=not non_interactive
            )
            session = _pick_session(rt, cont, session_id)
            code = run_cli(
                rt,
                text.strip("\n"),
                model=model,
                agent=agent,
                session=session,
                fmt=fmt.value,
            )
        except HookcodeError as exc:
            _fail(json_out, str(exc))
        raise typer.Exit(code)

    @app.command("chat")
    def chat_command(
        model: str = typer.Option(None, "--model", "-m", help="provider/model."),
        agent: str = typer.Option(None, "--agent", help="Agent to talk to (default: build)."),
        cont: bool = CONTINUE,
        session_id: str = SESSION,
        yes: bool = typer.Option(False, "--yes", "-y", help="Approve permission asks."),
        script: str = typer.Option(
            None, "--script", metavar="FILE", help="Script for the scripted provider."
        ),
    ) -> None:
        """Chat with the agent in the terminal (also: `hookcode` with no command)."""
        start_chat(
            state,
            model=model,
            agent=agent,
            cont=cont,
            session_id=session_id,
            yes=yes,
            script=script,
        )

    # ------------------------------------------------------------------------------ sessions
    sessions_app = typer.Typer(help="List, show, export and delete sessions.", no_args_is_help=True)
    app.add_typer(sessions_app, name="sessions")

    def runtime() -> Any:
        try:
            return state.runtime(interactive=False)
        except HookcodeError as exc:
            raise fail(str(exc)) from None

    def resolve(rt: Any, ref: str) -> Any:
        try:
            return resolve_session(rt.store, ref)
        except HookcodeError as exc:
            raise fail(str(exc)) from None

    @sessions_app.command("list")
    def sessions_list(
        as_json: bool = typer.Option(False, "--json", help="Print JSON."),
        all_projects: bool = typer.Option(False, "--all", help="Sessions of every project."),
        all_hosts: bool = typer.Option(
            False,
            "--all-hosts",
            help="Sessions of every machine sharing the store (a HOST column; JSON: "
            '"host", "user"), not only this one\'s.',
        ),
        tool_calls: bool = typer.Option(
            False,
            "--tool-calls",
            help="Also the sessions `hookcode tools call` made (marked [tools call]; JSON: "
            '"origin").',
        ),
    ) -> None:
        """This project's sessions made on this machine, most recent first (--all: every
        project's; --all-hosts: every machine's)."""
        import socket

        rt = runtime()
        project = None if all_projects else rt.project
        host = None if all_hosts else socket.gethostname()
        redact = rt.secrets.redactor().redact  # titles stored before a secret was known
        if as_json:
            rows = rt.store.sessions_json(project, conversations=not tool_calls, host=host)
            rows = [redact(row) for row in rows]
            sys.stdout.write("[\n  " + ",\n  ".join(rows) + "\n]\n" if rows else "[]\n")
            return
        records = rt.store.list_sessions(project, conversations=not tool_calls, host=host)
        if not records:
            typer.echo("No sessions yet. Start one with `hookcode run MESSAGE`.")
            return
        lines = []
        width = max(len(r.host or "-") for r in records)
        if all_hosts:
            lines.append(
                f"{'ID':<{len(records[0].id)}}  {'UPDATED':<16}  {'HOST':<{width}}  "
                f"{'COST':<9} {'AGENT':<8} {'MODEL':<24} TITLE"
            )
        for r in records:
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.updated))
            child = f"  (child of {r.parent_id})" if r.parent_id else ""
            extra = f"  [{r.origin}]" if r.origin else ""
            extra += f"  [{r.project}]" if all_projects else ""
            where = f"{r.host or '-':<{width}}  " if all_hosts else ""
            lines.append(
                f"{r.id}  {when}  {where}${r.cost:<8.4f} {r.agent:<8} {r.model or '-':<24} "
                f"{redact(r.title)}{child}{extra}"
            )
        sys.stdout.write("\n".join(lines) + "\n")

    @sessions_app.command("show")
    def sessions_show(
        session_id: str = typer.Argument(..., metavar="ID"),
        as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Show a session: its messages, text and tool calls. ID: the id, or a unique prefix."""
        rt = runtime()
        data = session_show(rt.store, resolve(rt, session_id).id)
        if data is None:
            raise fail(f"no session '{session_id}' (see `hookcode sessions list`)")
        data = rt.secrets.redact_value(data)  # stored before a secret was known, too
        if as_json:  # one line: the C encoder (indent= would use the slow Python one)
            import json

            sys.stdout.write(json.dumps(data, default=str, ensure_ascii=False) + "\n")
            return
        sys.stdout.write(_render(data))

    @sessions_app.command("export")
    def sessions_export(session_id: str = typer.Argument(..., metavar="ID")) -> None:
        """Print a session as JSON: everything stored (messages, parts, todos, children), with
        every secret this runtime knows redacted. ID: the id, or a unique prefix."""
        rt = runtime()
        data = session_export(rt.store, resolve(rt, session_id).id)
        if data is None:
            raise fail(f"no session '{session_id}' (see `hookcode sessions list`)")
        print_json(rt.secrets.redact_value(data))  # stored before a secret was known, too

    @sessions_app.command("delete")
    def sessions_delete(session_id: str = typer.Argument(..., metavar="ID")) -> None:
        """Delete a session with its messages, tool calls, approvals and child sessions. ID:
        the id, or a unique prefix."""
        rt = runtime()
        session_id = resolve(rt, session_id).id
        held = rt.store.session_lock(session_id)
        if held is not None:
            raise fail(f"session {session_id} is busy (pid {held[0]} on {held[1]}); not deleted")
        rt.store.delete_session(session_id)
        typer.echo(f"deleted {session_id}")


def start_chat(
    state: CliState,
    *,
    model: str | None = None,
    agent: str | None = None,
    cont: bool = False,
    session_id: str | None = None,
    yes: bool = False,
    script: str | None = None,
) -> None:
    from hookcode.cli.chat import chat

    if script:
        os.environ["HOOKCODE_SCRIPT"] = os.path.abspath(script)
    try:
        rt = state.runtime(yes=yes, ask_trust=True)
        session = _pick_session(rt, cont, session_id)
        code = chat(rt, model=model, agent=agent, session=session)
    except HookcodeError as exc:
        raise fail(str(exc)) from None
    raise typer.Exit(code)


def _fail(json_out: bool, message: str) -> NoReturn:
    """End ``run`` with ``message``; in JSON output, after a ``result`` object carrying it."""
    if json_out:
        from hookcode.cli.display import json_line
        from hookcode.session import RunResult

        result = RunResult(session_id="", error=message).to_dict()
        result.update(session_id=None)
        del result["type"]
        typer.echo(json_line("result", result))
    raise fail(message)


# ---------------------------------------------------------------------------------------------
# session documents
# ---------------------------------------------------------------------------------------------


def _session_dict(record: Any) -> dict[str, Any]:
    data = record.to_dict()
    data.update(
        {
            "project": record.project,
            "directory": record.directory,
            "host": record.host,
            "user": record.user,
            "tokens": {
                "input": record.tokens_in,
                "output": record.tokens_out,
                "reasoning": record.tokens_reasoning,
                "cache_read": record.tokens_cache_read,
                "cache_write": record.tokens_cache_write,
            },
        }
    )
    return data


def _message_dict(message: dict[str, Any], *, full: bool) -> dict[str, Any]:
    from hookcode.messages import part_to_public

    out = {"id": message["id"], "role": message["role"]}
    keys = ["agent", "model", "created"]
    if message["role"] == "assistant":
        keys += ["completed", "finish", "error", "tokens", "cost"]
    for key in keys:
        if key in message:
            out[key] = message[key]
    if message.get("summary"):
        out["summary"] = True
    out["parts"] = [p if full else part_to_public(p) for p in message["parts"]]
    return out


def session_show(store: Any, session_id: str) -> dict[str, Any] | None:
    """``sessions show --json``: ``{"session": {...}, "messages": [{"id", "role", "parts"}]}``."""
    record = store.get_session(session_id)
    if record is None:
        return None
    return {
        "session": _session_dict(record),
        "messages": [_message_dict(m, full=False) for m in store.messages(session_id)],
    }


def session_export(store: Any, session_id: str) -> dict[str, Any] | None:
    """Everything stored about a session (and, nested, its child sessions)."""
    record = store.get_session(session_id)
    if record is None:
        return None
    return {
        "version": 1,
        "session": _session_dict(record),
        "messages": [_message_dict(m, full=True) for m in store.messages(session_id)],
        "todos": store.todos(session_id),
        "children": [session_export(store, c.id) for c in store.children(session_id)],
    }


def _render(data: dict[str, Any]) -> str:
    import json

    s = data["session"]
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(s["updated"]))
    lines = [
        f"{s['id']}  {s['title']}",
        f"  agent {s['agent']} · model {s['model'] or '-'} · updated {when} · "
        f"tokens in {s['tokens']['input']:,} out {s['tokens']['output']:,} · cost ${s['cost']:.4f}",
    ]
    if s.get("host") or s.get("user"):
        lines.append(f"  on {s.get('host') or '?'} by {s.get('user') or '?'} · in {s['directory']}")
    if s.get("parent_id"):
        lines.append(f"  child of {s['parent_id']}")
    for message in data["messages"]:
        role = message["role"]
        label = "summary" if message.get("summary") else role
        lines.append("")
        lines.append(f"── {label}" + (f" ({message['agent']})" if role == "assistant" else ""))
        for part in message["parts"]:
            kind = part.get("type")
            if kind == "reasoning" and not part.get("text"):
                if part.get("redacted"):
                    lines.append("  (reasoning, redacted by the provider)")
            elif kind in ("text", "reasoning"):
                text = part.get("text") or ""
                prefix = "(reasoning) " if kind == "reasoning" else ""
                lines.extend("  " + prefix + line for line in text.splitlines() or [""])
            elif kind == "file":
                lines.append(f"  [file {part.get('filename') or part.get('mime')}]")
            elif kind == "compaction":
                lines.append("  [compaction requested]")
            elif kind == "tool":
                st = part["state"]
                args = json.dumps(st.get("input"), ensure_ascii=False, default=str)
                if len(args) > 120:
                    args = args[:119] + "…"
                mark = {"completed": "✓", "error": "✗"}.get(st["status"], "…")
                title = f"  {st['title']}" if st.get("title") else ""
                lines.append(f"  {mark} {part['tool']} {args}{title}")
                body = st.get("output") if st["status"] == "completed" else st.get("error")
                body_lines = (body or "").splitlines()
                for line in body_lines[:8]:
                    lines.append("      " + line[:200])
                if len(body_lines) > 8:
                    lines.append(f"      … {len(body_lines) - 8} more lines")
        if message.get("error"):
            lines.append(f"  error: {message['error']}")
    return "\n".join(lines) + "\n"
