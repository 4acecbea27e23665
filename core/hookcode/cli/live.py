"""The live part of a run's text display on a terminal (stderr): a spinner with the elapsed
time while the model is asked and while tools run, under it the last lines of each running
tool's output (``tool.updated`` events: bash streams its output through them). Rich's
``Live``; every text in it is a ``Text`` (never read as markup)."""

from __future__ import annotations

import threading
import time
from typing import Any

__all__ = ["TAIL_LINES", "LiveStatus"]

#: lines of a running tool's output shown under the spinner
TAIL_LINES = 5


class LiveStatus:
    """What the spinner says: "waiting for the model" or the running tools, each with its
    elapsed time, and their last output lines. Thread-safe: tool updates arrive from the
    tools' threads."""

    def __init__(self, console: Any) -> None:
        from rich.spinner import Spinner

        self.console = console
        self.spinner = Spinner("dots")
        self.lock = threading.Lock()
        self.waiting_since: float | None = None  # the model is being asked
        self.tools: dict[str, tuple[str, float]] = {}  # call id -> (label, started)
        self.tails: dict[str, list[str]] = {}  # call id -> last output lines
        self.live: Any = None

    # -- what is going on ----------------------------------------------------------------------
    def waiting(self, on: bool) -> None:
        with self.lock:
            self.waiting_since = (self.waiting_since or time.monotonic()) if on else None

    def tool_started(self, call_id: str, label: str) -> None:
        with self.lock:
            self.tools[call_id] = (label, time.monotonic())

    def tool_ended(self, call_id: str) -> str | None:
        with self.lock:
            self.tails.pop(call_id, None)
            found = self.tools.pop(call_id, None)
        return found[0] if found else None

    def tool_output(self, call_id: str, text: str) -> None:
        lines = [line.rstrip() for line in text.rstrip("\n").splitlines() if line.strip()]
        with self.lock:
            if call_id in self.tools:
                self.tails[call_id] = [line[:200] for line in lines[-TAIL_LINES:]]

    @property
    def busy(self) -> bool:
        return bool(self.tools) or self.waiting_since is not None

    # -- on the terminal -----------------------------------------------------------------------
    def show(self) -> None:
        """Start (or keep) the live display when something is going on; stop it otherwise."""
        if not self.busy:
            self.hide()
            return
        if self.live is None:
            from rich.live import Live

            self.live = Live(
                self,
                console=self.console,
                refresh_per_second=8,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self.live.start()

    def hide(self) -> None:
        live, self.live = self.live, None
        if live is not None:
            live.stop()

    def __rich__(self) -> Any:
        from rich.console import Group
        from rich.text import Text

        now = time.monotonic()
        with self.lock:
            tools = list(self.tools.items())
            tails = {k: list(v) for k, v in self.tails.items()}
            waiting = self.waiting_since
        if tools:
            started = min(t for _, (_, t) in tools)
            head = Text("running " + ", ".join(label for _, (label, _) in tools))
        else:
            started = waiting if waiting is not None else now
            head = Text("waiting for the model")
        head.append(f"  {now - started:.0f}s", style="dim")
        self.spinner.update(text=head)
        parts: list[Any] = [self.spinner]
        for call_id, _ in tools:
            for line in tails.get(call_id, []):
                parts.append(Text("  │ " + line, style="dim", no_wrap=True, overflow="ellipsis"))
        return Group(*parts)
