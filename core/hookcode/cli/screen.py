"""The terminal shared by a run's display and the prompts: output written while a prompt waits
for an answer is held back and written when the prompt is done, so the prompt is never garbled
by a concurrent tool finishing; the display's spinner stops for the prompt."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import IO, Protocol

__all__ = ["Spinning", "hung_up", "prompt_active", "prompting", "set_display", "write"]


class Spinning(Protocol):
    """A display whose live parts (spinner, tool output) stop while a prompt asks."""

    def pause(self) -> None: ...

    def resume(self) -> None: ...


_lock = threading.Lock()
#: set while a prompt is on the terminal
prompting = threading.Event()
_held: list[tuple[IO[str], str]] = []
_display: list[Spinning] = []  # the display of the run in progress, if any
#: set when SIGHUP aborted a run: the terminal is gone, the chat ends
hung_up = threading.Event()


def set_display(display: Spinning | None) -> None:
    """The display of the run in progress (None when it closes)."""
    _display[:] = [display] if display is not None else []


def current_display() -> Spinning | None:
    return _display[0] if _display else None


def write(stream: IO[str], text: str) -> None:
    """Write ``text`` now, or after the prompt on the terminal is answered."""
    with _lock:
        if prompting.is_set():
            _held.append((stream, text))
            return
    stream.write(text)
    stream.flush()


@contextlib.contextmanager
def prompt_active() -> Iterator[None]:
    """Pause the display's live parts and hold other output while the user answers a prompt;
    then write what was held and resume the display (its spinner comes back)."""
    with _lock:
        prompting.set()
    display = current_display()
    if display is not None:
        with contextlib.suppress(Exception):
            display.pause()
    try:
        yield
    finally:
        with _lock:
            prompting.clear()
            held = list(_held)
            _held.clear()
        for stream, text in held:
            stream.write(text)
            stream.flush()
        display = current_display()
        if display is not None:
            with contextlib.suppress(Exception):
                display.resume()
