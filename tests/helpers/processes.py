"""Waiting for a process to end as an event (a pidfd), not by sleeping and looking again."""

from __future__ import annotations

import os
import select
import time


def wait_exit(pid: int, timeout: float) -> bool:
    """Wait until process ``pid`` (any process, not only a child) has ended, at most
    ``timeout`` seconds; True when it ended (a zombie has ended). On Linux the wait is a pidfd
    becoming readable; elsewhere ``kill(pid, 0)`` is tried every 20 ms."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    except (AttributeError, OSError):
        return _poll_exit(pid, timeout)
    try:
        readable, _, _ = select.select([fd], [], [], timeout)
        return bool(readable)
    finally:
        os.close(fd)


def _poll_exit(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            pass
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)


def recorded_pid(path: os.PathLike[str] | str) -> int | None:
    """The pid a process wrote to ``path`` (``echo $$ > path``), None if it wrote none (it was
    killed before it got there)."""
    try:
        with open(path) as handle:
            text = handle.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
