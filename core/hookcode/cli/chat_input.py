"""The chat's line editor on a terminal (prompt_toolkit, imported when the chat starts): line
editing, history (Up/Down, Ctrl-R) kept in ``<data dir>/chat_history``, multi-line input
(Alt-Enter or Esc then Enter adds a line; a pasted block stays one message), Ctrl-C clears
the line and a second Ctrl-C at an empty prompt quits, as does Ctrl-D. The prompt is drawn on
stderr: stdout carries only the model's words."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

__all__ = ["HISTORY_FILE", "LineEditor"]

#: the history file, in hookcode's data directory
HISTORY_FILE = "chat_history"


class LineEditor:
    """Reads the chat's messages. :meth:`read` returns a message, or raises EOFError when the
    user quits (Ctrl-D, or Ctrl-C twice at an empty prompt)."""

    def __init__(self, data_dir: Path) -> None:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory
        from prompt_toolkit.key_binding import KeyBindings
        from prompt_toolkit.output import create_output

        data_dir.mkdir(parents=True, exist_ok=True)
        self.armed = False  # Ctrl-C was pressed at an empty prompt: another one quits
        keys = KeyBindings()

        @keys.add("escape", "enter")
        def _newline(event: Any) -> None:
            event.current_buffer.insert_text("\n")

        @keys.add("c-c")
        def _interrupt(event: Any) -> None:
            buffer = event.current_buffer
            if buffer.text:
                buffer.reset()
                self.armed = False
            elif self.armed:
                event.app.exit(exception=EOFError())
            else:
                event.app.exit(exception=KeyboardInterrupt())

        self.session: Any = PromptSession(
            history=FileHistory(str(data_dir / HISTORY_FILE)),
            key_bindings=keys,
            output=create_output(stdout=sys.stderr),
            multiline=False,
            prompt_continuation=lambda width, line, wrapped: "… ".rjust(width),
        )

    def read(self) -> str:
        """The next message (may be empty)."""
        import signal

        # Between two prompts the terminal is not the editor's: a Ctrl-C typed then is a
        # SIGINT, which would interrupt the editor's start half-way. It is noted here and
        # acted on once the editor runs (``pre_run``), as if it were the key.
        pending: list[int] = []
        previous = signal.signal(signal.SIGINT, lambda signum, frame: pending.append(signum))

        def act_on_pending() -> None:
            if pending:
                pending.clear()
                from prompt_toolkit.application import get_app

                get_app().exit(exception=EOFError() if self.armed else KeyboardInterrupt())

        try:
            while True:
                try:
                    text = self.session.prompt("> ", pre_run=act_on_pending)
                except KeyboardInterrupt:  # Ctrl-C at an empty prompt, the first time
                    self.armed = True
                    sys.stderr.write("(Ctrl-C again, or Ctrl-D, quits)\n")
                    sys.stderr.flush()
                    continue
                self.armed = False
                return str(text)
        finally:
            signal.signal(signal.SIGINT, previous)
