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

__all__ = ["in_pty"]


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
