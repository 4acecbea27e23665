"""Running ``hookcode`` in a real pseudo-terminal (stdin, stdout and stderr a pty), typing
replies when prompts appear."""

from __future__ import annotations

import os
import select
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from helpers.fakedist import cli_command

__all__ = ["Terminal", "in_pty", "strip_ansi"]


def in_pty(
    args: Sequence[str],
    env: dict[str, str],
    cwd: Path,
    replies: Sequence[tuple[str, str]] = (),
    *,
    term: str = "dumb",
    timeout: float = 90,
) -> tuple[int, str]:
    """Run ``hookcode ARGS`` with a real pseudo-terminal as stdin, stdout and stderr (``TERM``
    ``term``, 200 columns). ``replies`` are (prompt, answer) pairs, in order: once ``prompt``
    has appeared (after the previous one), ``answer`` and Enter are typed. Returns (exit code,
    everything printed, with ``\\r\\n`` as ``\\n``)."""
    master, slave = os.openpty()
    proc = subprocess.Popen(
        [*cli_command(), *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env={**env, "TERM": term, "COLUMNS": "200"},
        cwd=cwd,
        start_new_session=True,
    )
    os.close(slave)
    output = b""
    pending = list(replies)
    searched = 0  # where the next prompt is looked for
    deadline = time.monotonic() + timeout
    try:
        while True:
            if time.monotonic() > deadline:
                proc.kill()
                raise AssertionError(
                    f"timed out; output so far:\n{output.decode(errors='replace')}"
                )
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: the child closed the terminal
                    chunk = b""
                if not chunk:
                    break
                output += chunk
                while pending:
                    found = output.find(pending[0][0].encode(), searched)
                    if found < 0:
                        break
                    searched = found + len(pending[0][0])
                    os.write(master, pending.pop(0)[1].encode() + b"\n")
            elif proc.poll() is not None:
                break
    finally:
        os.close(master)
    return proc.wait(timeout=30), output.decode(errors="replace").replace("\r\n", "\n")


class Terminal:
    """``hookcode ARGS`` in a real pseudo-terminal (``rows`` x ``cols``), driven key by key:
    :meth:`type` sends keys, :meth:`expect` waits until the output (ANSI sequences removed)
    shows a text, up to a generous cap. Use as a context manager (the process is killed on
    exit if still running)."""

    def __init__(
        self,
        args: Sequence[str],
        env: dict[str, str],
        cwd: Path,
        *,
        term: str = "xterm-256color",
        cols: int = 120,
        rows: int = 40,
    ) -> None:
        import fcntl
        import struct
        import termios

        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.proc = subprocess.Popen(
            [*cli_command(), *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env={**env, "TERM": term, "COLUMNS": str(cols), "LINES": str(rows)},
            cwd=cwd,
            start_new_session=True,
            # the terminal is the process's controlling one: Ctrl-C is SIGINT, as in a shell
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
        )
        os.close(slave)
        self.rows = rows
        self.raw = b""
        self.searched = 0  # where the next expect looks from
        self.closed = False

    @property
    def text(self) -> str:
        """Everything printed so far, ANSI sequences removed, ``\\r\\n`` as ``\\n``."""
        return strip_ansi(self.raw.decode(errors="replace"))

    def _read(self, wait: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], wait)
        if not ready:
            return True
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # EIO: the child closed the terminal
            chunk = b""
        if not chunk:
            self.closed = True
            return False
        self.raw += chunk
        for _ in range(chunk.count(b"\x1b[6n")):  # a cursor position request (prompt_toolkit
            # asks): answered as a terminal does, the row told by the lines printed so far
            row = min(self.rows, self.raw.count(b"\n") + 1)
            os.write(self.master, f"\x1b[{row};1R".encode())
        return True

    def expect(self, text: str, timeout: float = 60) -> str:
        """Wait until ``text`` appears after the previous expected text; returns the output
        from there to its end. Fails, with the output, after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.text.find(text, self.searched)
            if found >= 0:
                seen, self.searched = self.text[self.searched : found], found + len(text)
                return seen
            if self.closed or time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never showed; the output:\n{self.text}")
            self._read(0.1)

    def type(self, keys: str | bytes) -> None:
        os.write(self.master, keys.encode() if isinstance(keys, str) else keys)

    def wait(self, timeout: float = 60) -> int:
        """Read until the process ends; its exit code."""
        deadline = time.monotonic() + timeout
        while not self.closed and time.monotonic() < deadline:
            if not self._read(0.1) or self.proc.poll() is not None:
                while self._read(0.05) and not self.closed:
                    if not select.select([self.master], [], [], 0)[0]:
                        break
                break
        return self.proc.wait(timeout=max(1.0, deadline - time.monotonic()))

    def __enter__(self) -> Terminal:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        os.close(self.master)


def strip_ansi(text: str) -> str:
    """``text`` without ANSI escape sequences and carriage returns before newlines."""
    import re

    text = re.sub(
        r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[()][0-9A-B]|\x1b[=>78MDEc]",
        "",
        text,
    )
    return text.replace("\r\n", "\n")
