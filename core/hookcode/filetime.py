"""The per-session read-time registry every file tool shares (``ctx.files``).

The read-before-write rule: a file that exists must have been read (or written) in this
session, and not modified on disk since, before a tool may overwrite or edit it.
"""

from __future__ import annotations

import os
import threading
from datetime import UTC, datetime
from pathlib import Path

from hookcode.errors import ToolError

__all__ = ["FileTimes"]

#: modifications within this many seconds after the recorded read still count as "read"
TOLERANCE = 0.05


class FileTimes:
    """When each file (by resolved absolute path) was last read or written in one session."""

    def __init__(self) -> None:
        self._times: dict[str, float] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _key(path: str | Path) -> str:
        return os.path.realpath(path)

    def record(self, path: str | Path, when: float | None = None) -> None:
        """Remember that ``path`` was read or written now (or at ``when``, epoch seconds)."""
        import time

        with self._lock:
            self._times[self._key(path)] = time.time() if when is None else when

    def last_read(self, path: str | Path) -> float | None:
        with self._lock:
            return self._times.get(self._key(path))

    def forget(self, path: str | Path) -> None:
        with self._lock:
            self._times.pop(self._key(path), None)

    def assert_fresh(self, path: str | Path) -> None:
        """Raise a ToolError unless ``path`` was read since its last modification.

        Disabled by ``HOOKCODE_DISABLE_FILETIME_CHECK``. A missing file passes.
        """
        if os.environ.get("HOOKCODE_DISABLE_FILETIME_CHECK"):
            return
        absolute = self._key(path)
        read = self.last_read(absolute)
        if read is None:
            raise ToolError(
                f"You must read file {absolute} before overwriting it. Use the Read tool first"
            )
        try:
            modified = os.stat(absolute).st_mtime
        except FileNotFoundError:
            return
        if modified > read + TOLERANCE:
            raise ToolError(
                f"File {absolute} has been modified since it was last read.\n"
                f"Last modification: {_iso(modified)}\n"
                f"Last read: {_iso(read)}\n\n"
                "Please read the file again before modifying it."
            )


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).isoformat().replace("+00:00", "Z")
