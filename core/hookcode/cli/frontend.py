"""The CLI's front ends: the terminal permission prompt and question prompt, ``--yes``, the
display of a run (text with a spinner per running tool, or JSON lines), and the chat.

Output discipline: the model's text goes to stdout; tool activity, prompts, usage and errors
go to stderr. While a permission prompt waits for an answer, the display holds its output
back, so the prompt is never garbled by a concurrent tool finishing.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sys
import threading
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any

from hookcode.permission import PermissionRequest, Reply
from hookcode.plugins import hookimpl

if TYPE_CHECKING:
    from hookcode.runtime import Runtime
    from hookcode.session import RunResult
    from hookcode.store import SessionRecord

__all__ = [
    "JSON_SCHEMA",
    "AutoApprove",
    "JsonDisplay",
    "ResultDisplay",
    "TerminalFrontend",
    "TextDisplay",
    "chat",
    "json_line",
    "run_cli",
]

#: output held back while a prompt is on the terminal
_prompt_lock = threading.Lock()
_prompting = threading.Event()
_held: list[tuple[IO[str], str]] = []
_display: Any = None  # the TextDisplay of the run in progress (its spinner stops for prompts)
#: set when SIGHUP aborted a run: the terminal is gone, the chat ends
hung_up = threading.Event()


def _write(stream: IO[str], text: str) -> None:
    with _prompt_lock:
        if _prompting.is_set():
            _held.append((stream, text))
            return
    stream.write(text)
    stream.flush()


@contextlib.contextmanager
def _prompt_active() -> Iterator[None]:
    """Stop the spinner and hold other output while the user answers a prompt."""
    with _prompt_lock:
        _prompting.set()
    display = _display
    if display is not None:
        with contextlib.suppress(Exception):
            display._stop_spinner()  # the next tool event starts it again
    try:
        yield
    finally:
        with _prompt_lock:
            _prompting.clear()
            held = list(_held)
            _held.clear()
        for stream, text in held:
            stream.write(text)
            stream.flush()


class AutoApprove:
    """``--yes``: answer every ask with "once". Denies stay denies (they never reach a prompt),
    and a write of a protected path (``metadata["protected"]``) is not approved: it needs a
    person, or a rule naming the path."""

    @hookimpl
    def permission_prompt(self, request: PermissionRequest) -> Reply | None:
        if request.metadata.get("protected"):
            return None
        return Reply("once")


PROMPT_CHOICES = (
    "\\[o] allow once  \\[a] always (this session)  \\[p] always (this project)  "
    "\\[r] reject  \\[f] reject with feedback"
)


#: the names the CLI registers its front ends under
TERMINAL_PLUGIN = "cli_terminal"
YES_PLUGIN = "cli_yes"


class TerminalFrontend:
    """Asks on the terminal (stderr for the prompt, stdin for the answer)."""

    @hookimpl
    def permission_prompt(self, request: PermissionRequest) -> Reply | None:
        from rich.console import Console
        from rich.prompt import Prompt

        console = Console(stderr=True, highlight=False)
        with _prompt_active():
            _show_request(console, request)
            try:
                answer = Prompt.ask(
                    PROMPT_CHOICES,
                    choices=["o", "a", "p", "r", "f"],
                    default="o",
                    console=console,
                    show_choices=False,
                )
                if answer == "f":
                    feedback = Prompt.ask(
                        "Feedback for the model", default="", console=console, show_default=False
                    )
                    return Reply("reject", feedback=feedback.strip() or None)
            except (EOFError, KeyboardInterrupt):
                console.print()
                return Reply("reject")
        if answer == "o":
            return Reply("once")
        if answer == "a":
            return Reply("always", scope="session")
        if answer == "p":
            return Reply("always", scope="project")
        return Reply("reject")

    @hookimpl
    def question_prompt(self, request: Any) -> list[list[str]] | None:
        from rich.console import Console
        from rich.markup import escape
        from rich.prompt import Prompt

        console = Console(stderr=True)
        answers: list[list[str]] = []
        with _prompt_active():
            try:
                for question in request.questions:
                    # the model's words: escaped, never read as markup (`list[str]`, `[/x]`)
                    header = escape(question.header or "Question")
                    console.print(f"\n[bold]{header}[/]: {escape(question.question)}")
                    for i, option in enumerate(question.options, 1):
                        console.print(
                            f"  {i}. {escape(option.label)}  [dim]{escape(option.description)}[/]"
                        )
                    raw = Prompt.ask(
                        "Answer (numbers separated by commas, or text)", console=console
                    )
                    chosen: list[str] = []
                    for piece in raw.split(","):
                        piece = piece.strip()
                        if piece.isdigit() and 1 <= int(piece) <= len(question.options):
                            chosen.append(question.options[int(piece) - 1].label)
                        elif piece and question.custom:
                            chosen.append(piece)
                    answers.append(chosen)
            except (EOFError, KeyboardInterrupt):
                print(file=sys.stderr)
                return None
        return answers


def _show_request(console: Any, request: PermissionRequest) -> None:
    from rich.markup import escape
    from rich.syntax import Syntax

    tool = request.tool.get("name") or "?"
    console.print(
        f"\n[bold yellow]Permission required:[/] [bold]{escape(request.permission)}[/]"
        f"  [dim](tool {escape(str(tool))}, agent {escape(request.agent)})[/]"
    )
    for pattern in request.patterns:
        console.print(f"  [cyan]{escape(pattern)}[/]")
    metadata = dict(request.metadata or {})
    diff = metadata.pop("diff", None)
    for key, value in metadata.items():
        if value in (None, "", [], {}):
            continue
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        if len(text) > 300:
            text = text[:300] + "…"
        console.print(f"  [dim]{escape(str(key))}:[/] {escape(text)}")
    if diff:
        text = str(diff)
        lines = text.splitlines()
        if len(lines) > 200:
            text = "\n".join(lines[:200]) + f"\n… ({len(lines) - 200} more lines)"
        console.print(Syntax(text, "diff", theme="ansi_dark", background_color="default"))


# ---------------------------------------------------------------------------------------------
# displays of a run
# ---------------------------------------------------------------------------------------------


def _summary(tool: str, args: Any) -> str:
    """``read a.txt``: the tool and its first string argument, shortened."""
    if isinstance(args, dict):
        for key in ("command", "filePath", "file_path", "path", "pattern", "url", "query"):
            value = args.get(key)
            if isinstance(value, str) and value:
                break
        else:
            value = next((v for v in args.values() if isinstance(v, str) and v), "")
        value = " ".join(str(value).split())
        if len(value) > 70:
            value = value[:69] + "…"
        return f"{tool} {value}".rstrip()
    return tool


class TextDisplay:
    """Text on stdout as it streams; tool calls on stderr (a spinner while they run when
    stderr is a terminal); usage and cost at the end."""

    def __init__(self, stdout: IO[str] | None = None, stderr: IO[str] | None = None) -> None:
        self.out = stdout or sys.stdout
        self.err = stderr or sys.stderr
        self.tty = self.err.isatty()
        self.at_line_start = True
        self.running: dict[str, str] = {}
        self.status: Any = None
        self.console: Any = None
        if self.tty:
            from rich.console import Console

            self.console = Console(file=self.err, highlight=False)
        global _display
        _display = self

    # the event callback of the loop
    def event(self, kind: str, data: dict[str, Any]) -> None:
        handler = getattr(self, f"on_{kind}", None)
        if handler is not None:
            handler(data)

    def _line(self, text: str, style: str | None = None) -> None:
        if not self.at_line_start:
            _write(self.out, "\n")
            self.at_line_start = True
        if self.console is not None and not _prompting.is_set():
            from rich.markup import escape

            self.console.print(f"[{style}]{escape(text)}[/]" if style else escape(text))
        else:
            _write(self.err, text + "\n")

    def on_session(self, data: dict[str, Any]) -> None:
        if data.get("resumed"):
            self._line(f"session {data['session_id']} (continued)", "dim")

    def on_recovered(self, data: dict[str, Any]) -> None:
        self._line(
            f"{data['parts']} tool call(s) left running by an earlier process were marked aborted",
            "yellow",
        )

    def on_text(self, data: dict[str, Any]) -> None:
        text = data["text"]
        self._stop_spinner()
        _write(self.out, text)
        self.at_line_start = text.endswith("\n")

    def on_reasoning(self, data: dict[str, Any]) -> None:
        return  # reasoning is stored, not shown

    def on_tool(self, data: dict[str, Any]) -> None:
        if data["status"] != "running":
            return
        label = _summary(data["tool"], data.get("input"))
        self.running[data["call_id"]] = label
        if not self.at_line_start:
            _write(self.out, "\n")
            self.at_line_start = True
        if self.tty:
            self._spin()
        else:
            self._line(f"-> {label}")

    def on_tool_result(self, data: dict[str, Any]) -> None:
        label = self.running.pop(data["call_id"], data["tool"])
        if data["ok"]:
            title = data.get("title") or ""
            text = f"✓ {label}" + (f"  ({title})" if title and title not in label else "")
            self._line(text, "green")
        else:
            error = (data.get("error") or "").strip().splitlines()
            self._line(f"✗ {label}: {error[0] if error else 'failed'}", "red")
        if self.tty:
            self._spin()

    def on_retry(self, data: dict[str, Any]) -> None:
        self._line(
            f"model error ({data['error']}); retry {data['attempt']} in {data['delay']:g} s",
            "yellow",
        )

    def on_stop_refused(self, data: dict[str, Any]) -> None:
        first = (data.get("text") or "").strip().splitlines()
        self._line(f"a stop hook kept the agent going: {first[0] if first else ''}", "yellow")

    def on_compaction(self, data: dict[str, Any]) -> None:
        if data["status"] == "started":
            self._line("compacting the conversation (it nears the model's context window)", "dim")

    def _spin(self) -> None:
        if not self.running or _prompting.is_set():
            self._stop_spinner()
            return
        from rich.text import Text

        # the tools' inputs: a Text, never read as markup (`cat [/etc/hosts]`)
        text = Text("running " + ", ".join(self.running.values()))
        if self.status is None:
            self.status = self.console.status(text, spinner="dots")
            self.status.start()
        else:
            self.status.update(text)

    def _stop_spinner(self) -> None:
        status, self.status = self.status, None
        if status is not None:
            status.stop()

    def close(self) -> None:
        global _display
        self._stop_spinner()
        if _display is self:
            _display = None

    def finish(self, result: RunResult | None) -> None:
        self._stop_spinner()
        if not self.at_line_start:
            _write(self.out, "\n")
            self.at_line_start = True
        if result is None:
            return
        u = result.usage
        cost = f" · cost ${u.cost:.4f}" if u.cost else ""
        self._line(
            f"tokens in {u.input:,} out {u.output:,}{cost} · {result.steps} step(s) · "
            f"session {result.session_id}",
            "dim",
        )


#: the version of the objects ``hookcode run --format json`` / ``json-result`` prints (each
#: carries it as ``"schema"``); raised when a field is removed or changes meaning, not when
#: one is added. docs/reference/json-output.md lists every event type and its fields.
JSON_SCHEMA = 1


def json_line(kind: str, data: dict[str, Any]) -> str:
    """One object of the JSON output: ``{"type": kind, "schema": JSON_SCHEMA, **data}``."""
    return json.dumps(
        {"type": kind, "schema": JSON_SCHEMA, **data}, default=str, ensure_ascii=False
    )


class JsonDisplay:
    """``--format json``: one JSON object per line per event, ending with the ``result``
    object."""

    def __init__(self, stdout: IO[str] | None = None) -> None:
        self.out = stdout or sys.stdout

    def event(self, kind: str, data: dict[str, Any]) -> None:
        _write(self.out, json_line(kind, data) + "\n")

    def close(self) -> None:
        pass

    def finish(self, result: RunResult | None) -> None:
        if result is not None:
            self.event("result", {k: v for k, v in result.to_dict().items() if k != "type"})


class ResultDisplay(JsonDisplay):
    """``--format json-result``: nothing while the run goes, then the ``result`` object alone
    (as Claude Code's ``--output-format json``)."""

    def event(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "result":
            super().event(kind, data)


# ---------------------------------------------------------------------------------------------
# running
# ---------------------------------------------------------------------------------------------


def run_turn(
    runtime: Runtime,
    text: str,
    display: Any,
    *,
    model: str | None = None,
    agent: str | None = None,
    session: SessionRecord | None = None,
) -> RunResult | None:
    """Run the loop once with ``display``; Ctrl-C (SIGINT), SIGTERM or SIGHUP (the terminal
    closed) aborts the run: running tools are cancelled and marked aborted, their process trees
    killed, the session stored. A second Ctrl-C interrupts at once. Returns None when
    interrupted that way. Output that cannot be written (a closed terminal or pipe) is
    dropped: it never stops the run from being stored."""
    import asyncio

    from hookcode.session import SessionLoop
    from hookcode.tools import AbortSignal

    abort = AbortSignal()

    def emit(kind: str, data: dict[str, Any]) -> None:
        with contextlib.suppress(OSError):
            display.event(kind, data)

    loop_obj = SessionLoop(
        runtime,
        model=model,
        agent=agent,
        session=session,
        abort=abort,
        on_event=emit,
    )

    async def main() -> RunResult:
        loop = asyncio.get_running_loop()
        installed: list[int] = []

        def on_signal(signum: int) -> None:
            abort.abort("interrupted")
            if signum == signal.SIGHUP:
                hung_up.set()
            with contextlib.suppress(Exception):
                loop.remove_signal_handler(signum)  # a second one interrupts for good
            if signum == signal.SIGINT:
                with contextlib.suppress(OSError):
                    _write(sys.stderr, "\nhookcode: aborting (Ctrl-C again to quit at once)\n")

        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            try:
                loop.add_signal_handler(signum, on_signal, signum)
                installed.append(signum)
            except (NotImplementedError, RuntimeError, ValueError):
                pass
        try:
            return await loop_obj.run(text)
        finally:
            for signum in installed:
                with contextlib.suppress(Exception):
                    loop.remove_signal_handler(signum)

    try:
        return asyncio.run(main())
    except KeyboardInterrupt:
        return None
    finally:
        with contextlib.suppress(OSError):
            display.close()


def has_terminal(runtime: Runtime) -> bool:
    """Whether the terminal prompt answers permission asks in this run (otherwise a refusal
    was for want of an approver: ``--non-interactive``, no TTY)."""
    pm = getattr(runtime.plugins, "pm", None)
    return bool(pm is not None and pm.has_plugin(TERMINAL_PLUGIN))


def exit_code(runtime: Runtime, result: RunResult | None, *, stderr: IO[str] | None = None) -> int:
    """0 ok; 1 failed or refused for want of an approver; 130 aborted."""
    err = stderr or sys.stderr
    if result is None:
        err.write("hookcode: interrupted\n")
        return 130
    if result.error:
        err.write(f"hookcode: error: {result.error}\n")
        return 1
    if result.aborted:
        err.write("hookcode: aborted\n")
        return 130
    if result.refused and not has_terminal(runtime):
        names = ", ".join(
            f"{r['tool']} {r['permission']} {' '.join(r['patterns'])} ({r['call_id']})"
            for r in result.refused
        )
        protected = any((r.get("metadata") or {}).get("protected") for r in result.refused)
        err.write(
            f"hookcode: refused tool calls (nobody to approve them: {approval_hint(protected)}): "
            f"{names}\n"
        )
        return 1
    return 0


def approval_hint(protected: bool) -> str:
    """How a headless refusal could have been approved."""
    if protected:
        return (
            "a protected path needs a person in a terminal or a rule naming it, such as "
            'edit = { "hookcode.toml" = "allow" } (--yes does not approve it)'
        )
    return "run in a terminal, or pass --yes or a rule in hookcode.toml"


def run_cli(
    runtime: Runtime,
    text: str,
    *,
    model: str | None = None,
    agent: str | None = None,
    session: SessionRecord | None = None,
    fmt: str = "text",
) -> int:
    """``hookcode run``: stream the run with the chosen display; returns the exit code."""
    displays = {"json": JsonDisplay, "json-result": ResultDisplay}
    display: Any = displays.get(fmt, TextDisplay)()
    result = run_turn(runtime, text, display, model=model, agent=agent, session=session)
    with contextlib.suppress(OSError):  # the terminal may be gone (SIGHUP)
        display.finish(result)
    try:
        return exit_code(runtime, result)
    except OSError:
        return 130 if result is None or result.aborted else 1


# ---------------------------------------------------------------------------------------------
# chat
# ---------------------------------------------------------------------------------------------

CHAT_HELP = (
    "Type a message and press Enter. /new starts a new session, /compact summarises this one, "
    "/session shows its id, /exit (or Ctrl-D) quits. Ctrl-C stops a reply."
)


def chat(
    runtime: Runtime,
    *,
    model: str | None = None,
    agent: str | None = None,
    session: SessionRecord | None = None,
    stdin: IO[str] | None = None,
) -> int:
    """The interactive chat: one loop run per message, all in one session. With a terminal
    the prompt is rich's; otherwise every stdin line is a message (scripts and tests)."""
    from rich.console import Console

    from hookcode.session import SessionLoop

    source = stdin or sys.stdin
    interactive = source.isatty() and sys.stderr.isatty()
    from rich.markup import escape

    console = Console(stderr=True, highlight=False)
    probe = SessionLoop(runtime, model=model, agent=agent, session=session, lock=False)
    console.print(
        f"[bold]hookcode[/] · model {escape(probe.model_id)} · agent {escape(probe.spec.name)}"
        + (f" · session {session.id}" if session else "")
    )
    if interactive:
        console.print(f"[dim]{CHAT_HELP}[/]")
    code = 0
    while True:
        try:
            if interactive:
                from rich.prompt import Prompt

                line = Prompt.ask("[bold cyan]>[/]", console=console)
            else:
                line = source.readline()
                if not line:
                    break
        except (EOFError, KeyboardInterrupt):
            console.print()
            break
        line = line.strip()
        if not line:
            continue
        if line in ("/exit", "/quit"):
            break
        if line == "/help":
            console.print(CHAT_HELP)
            continue
        if line == "/new":
            session = None
            console.print("[dim]new session[/]")
            continue
        if line == "/session":
            console.print(session.id if session else "(no session yet)")
            continue
        if line == "/compact":
            if session is None:
                console.print("[dim]nothing to compact yet[/]")
                continue
            _compact(runtime, session, model=model, agent=agent)
            continue
        if line.startswith("/"):
            expanded = chat_command(runtime, line, console)
            if expanded is None:
                continue
            line = expanded
        display = TextDisplay()
        result = run_turn(runtime, line, display, model=model, agent=agent, session=session)
        if hung_up.is_set():  # the terminal is gone: nobody to talk to
            return 130
        display.finish(result)
        code = exit_code(runtime, result)
        if result is not None:
            session = runtime.store.get_session(result.session_id)
        runtime.refusals.clear()
    return code


def chat_command(runtime: Runtime, line: str, console: Any) -> str | None:
    """A ``/command`` line the chat does not know, through the ``chat_command`` hook: the
    text a plugin makes of it (an MCP prompt), the line itself when no plugin takes it, or
    None when a plugin refused it (its message is printed)."""
    from hookcode.errors import HookcodeError

    name, _, arguments = line[1:].partition(" ")
    outcomes = runtime.plugins.call_each_outcomes(
        "chat_command", name=name, arguments=arguments.strip(), runtime=runtime
    )
    for plugin, value, error in outcomes:
        if isinstance(error, HookcodeError):
            console.print(f"/{name}: {error}", style="red", markup=False, highlight=False)
            return None
        if error is not None:
            runtime.plugins.report(plugin, "chat_command", error)
        elif value is not None:
            return str(value)
    return line


def _compact(
    runtime: Runtime, session: SessionRecord, *, model: str | None, agent: str | None
) -> None:
    import asyncio

    from hookcode.session import SessionLoop, load_messages

    loop = SessionLoop(runtime, model=model, agent=agent, session=session)

    async def main() -> bool:
        runtime.store.lock_session(session.id)
        try:
            loop.messages = load_messages(runtime.store, session.id)
            return await loop.compact(auto=False)
        finally:
            runtime.store.unlock_session(session.id)

    ok = asyncio.run(main())
    sys.stderr.write("compacted\n" if ok else f"compaction failed: {loop.result.error}\n")
