"""A local server's stderr: appended to a private log file, its last lines quoted in errors."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import IO

__all__ = ["STDERR_LINES", "ServerLog"]

#: stderr lines of a failed local server quoted in its error
STDERR_LINES = 5


class ServerLog:
    """``<log_dir>/mcp-<name>.log`` (private: a server may print its tokens); each run of the
    server appends a header line, and :meth:`tail` reads what this run wrote."""

    def __init__(self, log_dir: Path, name: str) -> None:
        self.log_dir = log_dir
        self.name = name
        self.path: Path | None = None
        self._offset = 0

    def open(self, command: list[str] | None) -> IO[str]:
        """The file the server's stderr goes to, opened for this run (the caller closes it)."""
        from hookcode.datadir import PRIVATE_FILE, private_dir

        directory = private_dir(self.log_dir)
        self.path = directory / f"mcp-{_safe(self.name)}.log"
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(self.path, flags, PRIVATE_FILE)
        handle = open(fd, "a", encoding="utf-8", errors="replace")  # noqa: SIM115
        handle.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} {command}\n")
        handle.flush()
        self._offset = handle.tell()
        return handle

    def tail(self) -> str:
        """The last :data:`STDERR_LINES` non-blank lines of this run, joined by ``|``."""
        if self.path is None:
            return ""
        try:
            with open(self.path, encoding="utf-8", errors="replace") as handle:
                handle.seek(self._offset)
                lines = [line.rstrip() for line in handle.read().splitlines() if line.strip()]
        except OSError:
            return ""
        return " | ".join(lines[-STDERR_LINES:])


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
