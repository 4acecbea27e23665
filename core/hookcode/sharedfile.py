"""A private file of the data directory that several hookcode processes change: ``auth.json``
(``hookcode auth login``), ``trust.json`` (``hookcode trust``), ``mcp-auth.json`` (MCP logins
and token refreshes).

:func:`update` is the one way to change such a file: a read-modify-write under an exclusive
inter-process lock on the sibling ``<name>.lock`` (``filelock``, imported on first use; the
lock file is created 0600 and left in place, so that every waiter locks the same file), written
only when the content changed, atomically (temporary file + rename, mode 0600) through
:func:`hookcode.fileio.atomic_write`. Two processes adding entries at once keep both. Reading
needs no lock: the file is only ever replaced whole.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

__all__ = ["lock_path", "update"]

T = TypeVar("T")
R = TypeVar("R")


def lock_path(path: Path) -> Path:
    """The lock file that guards ``path``."""
    return path.with_name(path.name + ".lock")


def update(
    path: Path,
    read: Callable[[], T],
    change: Callable[[T], R],
    dump: Callable[[T], bytes],
) -> R:
    """Under the lock of ``path``: ``read()`` its value, let ``change`` modify it in place, and
    write ``dump(value)`` when that differs from what ``dump`` made of it before the change.
    Returns what ``change`` returned; an exception in ``read`` or ``change`` writes nothing."""
    from filelock import FileLock

    from hookcode.datadir import PRIVATE_FILE, private_dir
    from hookcode.fileio import atomic_write

    private_dir(path.parent)
    with FileLock(lock_path(path), mode=PRIVATE_FILE, preserve_lock_file=True):
        value = read()
        before = dump(value)
        result = change(value)
        after = dump(value)
        if after != before:
            atomic_write(path, after, mode=PRIVATE_FILE)
    return result
