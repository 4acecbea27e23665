"""The interactive chat (``hookcode`` / ``hookcode chat``): one loop run per message, all in
one session; ``/commands`` are :mod:`hookcode.cli.chat_commands`'."""

from __future__ import annotations

import sys
from typing import IO, TYPE_CHECKING

from hookcode.cli.chat_commands import ChatState, run_command
from hookcode.cli.display import TextDisplay
from hookcode.cli.running import exit_code, run_turn
from hookcode.cli.screen import hung_up
from hookcode.startup import resume as resume_collection

if TYPE_CHECKING:
    from hookcode.runtime import Runtime
    from hookcode.store import SessionRecord

__all__ = ["CHAT_HELP", "chat"]

CHAT_HELP = (
    "Type a message and press Enter (Alt-Enter for a new line). /help lists the commands and "
    "keys; /exit or Ctrl-D quits. Ctrl-C stops a reply."
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
    the line editor reads them (:mod:`hookcode.cli.chat_input`); otherwise every stdin line
    is a message (scripts and tests)."""
    from rich.console import Console

    source = stdin or sys.stdin
    interactive = source.isatty() and sys.stderr.isatty()
    console = Console(stderr=True, highlight=False)
    state = ChatState(runtime, console, model=model, agent=agent, session=session)
    probe = state.probe()
    state.note(
        f"hookcode · model {probe.model_id} · agent {probe.spec.name}"
        + (f" · session {session.id}" if session else ""),
        "bold",
    )
    if interactive:
        state.note(CHAT_HELP)
    editor = None
    if interactive:
        from hookcode.cli.chat_input import LineEditor

        editor = LineEditor(runtime.data_dir)
    code = 0
    while not state.done:
        resume_collection()  # start-up is over once the chat waits (hookcode.startup)
        try:
            if editor is not None:
                line = editor.read()
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
        if line.startswith("/") and "/" not in line.split()[0][1:]:  # not a path (/etc/x)
            expanded = run_command(state, line)
            if expanded is None:
                continue
            line = expanded
        display = TextDisplay()
        result = run_turn(
            runtime, line, display, model=state.model, agent=state.agent, session=state.session
        )
        if hung_up.is_set():  # the terminal is gone: nobody to talk to
            return 130
        display.finish(result)
        code = exit_code(runtime, result)
        if result is not None:
            state.session = runtime.store.get_session(result.session_id)
        runtime.refusals.clear()
    return code
