"""The command line's start-up: Python's cyclic garbage collector is paused while it starts.

Starting ``hookcode run`` creates tens of thousands of long-lived objects (modules, classes,
plugin and config objects), over 150,000 with a provider SDK's models imported meanwhile. Each collection
of the oldest generation walks all of them again, finds nothing to free, and costs about a
tenth of start-up. So the console script pauses collection (:func:`pause`) and resumes it
(:func:`resume`) once start-up is over: when the first model reply of a run has been
streamed, when the chat first waits for input, when the command ends, and in any case
:data:`PAUSE_LIMIT` seconds after the pause (a timer), so a long command never runs without
it. Reference counting still frees everything else meanwhile; only garbage in reference
cycles waits for the collector.

When collection resumes, the objects start-up made are frozen (``gc.freeze()``): no later
collection walks them again, nor the one at the interpreter's exit. The price is that what
start-up left as garbage in reference cycles is never freed: measured, about 700 objects
for ``hookcode --help`` and 2,000 for a run to its first reply, well under a megabyte,
once per process. (Collecting them instead cost 25 ms, and 140 ms with the Anthropic SDK
imported: the walk over everything the pause saved.)

Only the console script pauses (:mod:`hookcode.console`: ``hookcode``, ``python -m hookcode``);
:func:`resume` is a no-op in a process that did not, such as a test calling
:func:`hookcode.cli.main`.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["PAUSE_LIMIT", "pause", "paused", "pausing", "resume"]

#: the longest the collector stays paused, in seconds
PAUSE_LIMIT = 5.0

_lock = threading.Lock()
_timer: threading.Timer | None = None


def pause(limit: float = PAUSE_LIMIT) -> None:
    """Pause cyclic garbage collection for at most ``limit`` seconds (until :func:`resume`).
    Nothing happens when collection is already off (``gc.disable()`` by the embedding
    program: it keeps its own setting)."""
    global _timer
    with _lock:
        if _timer is not None or not gc.isenabled():
            return
        gc.disable()
        _timer = threading.Timer(limit, resume)
        _timer.daemon = True
        _timer.name = "hookcode-startup-gc"
        _timer.start()


def resume() -> None:
    """End the pause :func:`pause` began (at once; a no-op when there is none). Every object
    tracked so far is frozen first (``gc.freeze()``, which costs nothing): later collections
    leave them alone, and the first one does not walk all of start-up at once."""
    global _timer
    with _lock:
        timer, _timer = _timer, None
        if timer is None:
            return
        gc.freeze()
        gc.enable()
    if timer is not threading.current_thread():
        timer.cancel()


def paused() -> bool:
    """Whether :func:`pause` is in effect."""
    return _timer is not None


@contextmanager
def pausing(limit: float = PAUSE_LIMIT) -> Iterator[None]:
    """:func:`pause` for the ``with`` block (at most ``limit`` seconds), then :func:`resume`."""
    pause(limit)
    try:
        yield
    finally:
        resume()
