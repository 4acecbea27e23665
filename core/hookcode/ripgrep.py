"""Finding and running ripgrep (``rg``), shared by the file-search tools (glob, list, grep).

The binary comes from the ``ripgrep`` wheel (pinned ``ripgrep==14.1.0``: the newest release is
source-only), which installs ``rg`` next to the interpreter in the virtual environment; PATH is
the fallback. That order makes the pinned version win over whatever the system has.

``rg`` always runs as a subprocess with an argument list (never through a shell), with
``--no-config`` so a user's ``RIPGREP_CONFIG_PATH`` cannot change what the tools see, and it is
killed when the call's abort signal fires or the calling task is cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from hookcode.errors import ToolAborted, ToolError

if TYPE_CHECKING:
    from hookcode.tools import AbortSignal

__all__ = ["INSTALL_HINT", "RipgrepMissing", "files", "find_rg"]

INSTALL_HINT = "pip install ripgrep==14.1.0"

_EXE = "rg.exe" if os.name == "nt" else "rg"


class RipgrepMissing(ToolError):
    """No ``rg`` binary was found; the message names the package to install."""

    def __init__(self) -> None:
        super().__init__(
            "ripgrep (rg) is not installed: install it with `" + INSTALL_HINT + "` "
            "in hookcode's environment, or put rg on PATH"
        )


def find_rg() -> str:
    """The path of ``rg``: next to ``sys.executable`` (the venv's bin, where the wheel puts it),
    then the interpreter's scripts directory, then PATH. Raises :class:`RipgrepMissing`."""
    candidates: list[Path] = []
    if sys.executable:
        candidates.append(Path(sys.executable).parent / _EXE)
    with contextlib.suppress(KeyError):
        candidates.append(Path(sysconfig.get_path("scripts")) / _EXE)
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("rg")
    if found:
        return found
    raise RipgrepMissing()


async def files(
    cwd: str | Path,
    globs: Sequence[str] = (),
    *,
    limit: int,
    abort: AbortSignal | None = None,
    hidden: bool = True,
) -> tuple[list[str], bool]:
    """Run ``rg --files`` in ``cwd``; return the first ``limit`` paths (relative to ``cwd``,
    forward slashes, in path order) and whether there were more.

    Hidden files are included, every ``.git`` is excluded, ignore files (``.gitignore`` inside a
    git repository, ``.ignore``, ``.rgignore``) are honoured, symlinks are not followed.
    ``globs`` are passed as ``--glob`` options in order (later ones win; ``!x`` excludes).
    ``rg`` is stopped as soon as ``limit + 1`` paths were read. Raises :class:`ToolError`
    (``No such file or directory``) when ``cwd`` is not a directory, ``ripgrep failed: ...``
    when rg fails without output (an invalid glob), :class:`ToolAborted` on abort.
    """
    directory = Path(cwd)
    if not directory.is_dir():
        raise ToolError(f"No such file or directory: '{directory}'")
    args = [find_rg(), "--no-config", "--files", "--null", "--sort=path"]
    if hidden:
        args.append("--hidden")
    args += [f"--glob={g}" for g in globs]
    args.append("--glob=!.git")  # last, so no user glob can whitelist it back
    if abort is not None and abort.is_set():
        raise ToolAborted()

    proc = await asyncio.create_subprocess_exec(
        *args,
        cwd=str(directory),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )

    loop = asyncio.get_running_loop()
    running = True

    def kill() -> None:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()

    def on_abort() -> None:  # may run in any thread, possibly after the call ended
        if running:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nothing to kill
                loop.call_soon_threadsafe(kill)

    if abort is not None:
        abort.add_callback(on_abort)
    paths: list[str] = []
    more = False
    stderr_task = asyncio.ensure_future(_read_head(proc.stderr))
    try:
        assert proc.stdout is not None
        buffer = b""
        while True:
            chunk = await proc.stdout.read(65536)
            if not chunk:
                break
            buffer += chunk
            *complete, buffer = buffer.split(b"\0")
            for raw in complete:
                if len(paths) >= limit:
                    more = True
                    break
                paths.append(os.fsdecode(raw).replace(os.sep, "/"))
            if more:
                break
            if abort is not None and abort.is_set():
                raise ToolAborted()
        if more:
            kill()
        returncode = await proc.wait()
        stderr = (await stderr_task).decode("utf-8", "replace").strip()
    finally:
        if proc.returncode is None:
            kill()
            with contextlib.suppress(Exception):
                await asyncio.shield(proc.wait())
        stderr_task.cancel()
        running = False
    if abort is not None and abort.is_set():
        raise ToolAborted()
    if not more and not paths and returncode not in (0, 1) and stderr:
        raise ToolError(f"ripgrep failed: {stderr}")
    return paths, more


async def _read_head(stream: asyncio.StreamReader | None, keep: int = 4096) -> bytes:
    """Drain ``stream`` (so rg never blocks on a full pipe), keeping its first ``keep`` bytes."""
    if stream is None:
        return b""
    head = b""
    while chunk := await stream.read(65536):
        if len(head) < keep:
            head += chunk[: keep - len(head)]
    return head
