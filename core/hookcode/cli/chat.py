"""The interactive chat (``hookcode`` / ``hookcode chat``): one loop run per message, all in
one session, and the chat's ``/commands``."""

from __future__ import annotations

import sys
from typing import IO, TYPE_CHECKING, Any

from hookcode.cli.display import TextDisplay
from hookcode.cli.running import exit_code, run_turn
from hookcode.cli.screen import hung_up

if TYPE_CHECKING:
    from hookcode.runtime import Runtime
    from hookcode.store import SessionRecord

__all__ = ["chat", "chat_command"]


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
