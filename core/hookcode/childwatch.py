"""A thread-free way for asyncio to learn that a child process exited, on Python 3.11.

asyncio 3.11 on Linux watches each child process with a thread of its own
(``ThreadedChildWatcher``): every ``create_subprocess_exec`` starts a thread and waits until
it runs, a few milliseconds on a busy machine, which is most of what a quick ``rg`` costs
beyond ``rg`` itself. Python 3.12 watches children with a pidfd polled by the event loop
instead; :func:`ensure_child_watcher` installs the same watcher on 3.11 (Linux 5.3+), so
every subprocess of the process benefits (ripgrep, language servers, MCP stdio servers,
Claude-Code hooks). It never replaces a watcher an application chose, nor touches another
event-loop policy (uvloop), nor does anything on 3.12+ or where pidfds are missing.

Call it before starting a subprocess from a coroutine; it is cheap after the first call.
(This module imports asyncio: import it where a subprocess is started, not at start-up.)
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["ensure_child_watcher", "watch_exit"]

_checked = False


def ensure_child_watcher() -> None:
    """Install the pidfd child watcher if asyncio would otherwise start a thread per child."""
    global _checked
    if _checked:
        return
    _checked = True
    if sys.version_info >= (3, 12) or not hasattr(os, "pidfd_open"):
        return
    policy = asyncio.get_event_loop_policy()
    if type(policy) is not asyncio.DefaultEventLoopPolicy:
        return  # someone else's policy: theirs to decide
    if type(asyncio.get_child_watcher()) is not asyncio.ThreadedChildWatcher:
        return  # a watcher chosen by the application
    try:
        os.close(os.pidfd_open(os.getpid()))  # the kernel supports pidfds (Linux 5.3+)
    except OSError:
        return
    asyncio.set_child_watcher(_PidfdChildWatcher())


def watch_exit(
    loop: asyncio.AbstractEventLoop, pid: int, on_exit: Callable[[], object]
) -> Callable[[], None] | None:
    """Call ``on_exit()`` on ``loop`` once the child ``pid`` has exited (its pidfd became
    readable; the child is not reaped). Returns a function that stops watching (nothing
    happens if it already fired), or None where there are no pidfds (not Linux 5.3+)."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None
    watching = True

    def stop() -> None:
        nonlocal watching
        if watching:
            watching = False
            loop.remove_reader(pidfd)
            os.close(pidfd)

    def ready() -> None:
        stop()
        on_exit()

    loop.add_reader(pidfd, ready)
    return stop


class _PidfdChildWatcher(asyncio.AbstractChildWatcher):
    """The watcher of Python 3.12 (``asyncio.unix_events._PidfdChildWatcher``): each child's
    pidfd is polled by the event loop that started the child; no thread, no signal handler,
    any number of loops. (3.11's own ``PidfdChildWatcher`` is bound to a single loop.)"""

    def __enter__(self) -> _PidfdChildWatcher:
        return self

    def __exit__(self, *exc_info: object) -> None:
        pass

    def is_active(self) -> bool:
        return True

    def close(self) -> None:
        pass

    def attach_loop(self, loop: Any) -> None:
        pass

    def add_child_handler(self, pid: int, callback: Any, *args: Any) -> None:
        def reap() -> None:
            try:
                _, status = os.waitpid(pid, 0)
            except ChildProcessError:  # reaped elsewhere: the status is lost
                returncode = 255
            else:
                returncode = os.waitstatus_to_exitcode(status)
            callback(pid, returncode, *args)

        if watch_exit(asyncio.get_running_loop(), pid, reap) is None:
            raise OSError(f"cannot watch process {pid}: no pidfd")

    def remove_child_handler(self, pid: int) -> bool:
        # asyncio only calls this for a child it could not start; the pidfd reader goes
        # with the child's exit
        return True
