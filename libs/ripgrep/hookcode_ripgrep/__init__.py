"""hookcode-ripgrep: finding and running ripgrep (``rg``), shared by the file-search tools
(glob, list, grep), which depend on this library; core does not.

The binary comes from the ``ripgrep`` wheel (pinned ``ripgrep==14.1.0``: the newest release is
source-only), which installs ``rg`` next to the interpreter in the virtual environment; PATH is
the fallback. That order makes the pinned version win over whatever the system has.

``rg`` always runs as a subprocess with an argument list (never through a shell), with
``--no-config`` so a user's ``RIPGREP_CONFIG_PATH`` cannot change what the tools see, and it is
killed when the call's abort signal fires or the calling task is cancelled
(:class:`hookcode.process.DirectKill`). It is started directly, a *direct child* of
:mod:`hookcode.process`, not below its process guardian: it starts no process of
its own (no ``--pre``), so killing it kills its tree, and the guardian's round trip (or a
``preexec_fn``, which turns the spawn into a full fork) doubled a short search (7 ms to 13-14
ms measured); see docs/processes.md.

* :func:`files` lists files (``rg --files``), :func:`run_lines` streams the lines of any other
  rg run (grep's ``rg --json``).
* :mod:`hookcode_ripgrep.globs` (:func:`glob_filter`, :func:`name_glob`, re-exported here) gives
  rg's ``--glob`` meaning to globs that must not override the ignore files.

Like a plugin module, this package imports only the standard library and ``hookcode`` (and,
where used, its own glob module): the tools import it when they first run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
import sysconfig
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from hookcode.errors import ToolAborted, ToolError

from hookcode_ripgrep.globs import glob_filter, name_glob

if TYPE_CHECKING:
    from hookcode.tools import AbortSignal

__all__ = [
    "INSTALL_HINT",
    "RipgrepMissing",
    "files",
    "find_rg",
    "glob_filter",
    "name_glob",
    "run_lines",
]

INSTALL_HINT = "pip install ripgrep==14.1.0"

_EXE = "rg.exe" if os.name == "nt" else "rg"
_SEP = None if os.sep == "/" else os.sep  # rg's path separator, where it is not "/"


class RipgrepMissing(ToolError):
    """No ``rg`` binary was found; the message names the package to install."""

    def __init__(self) -> None:
        super().__init__(
            "ripgrep (rg) is not installed: install it with `" + INSTALL_HINT + "` "
            "in hookcode's environment, or put rg on PATH"
        )


def _candidates() -> Iterator[Path]:
    if sys.executable:
        yield Path(sys.executable).parent / _EXE
    with contextlib.suppress(KeyError):  # looked up only when the first is not there
        yield Path(sysconfig.get_path("scripts")) / _EXE


def find_rg() -> str:
    """The path of ``rg``: next to ``sys.executable`` (the venv's bin, where the wheel puts it),
    then the interpreter's scripts directory, then PATH. Raises :class:`RipgrepMissing`."""
    for candidate in _candidates():
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
    match: Callable[[str], bool] | None = None,
    name_glob: str | None = None,
    sort: bool = False,
    on_path: Callable[[str], object] | None = None,
    keep: Callable[[str], bool] | None = None,
) -> tuple[list[str], bool]:
    """Run ``rg --files`` in ``cwd``; return the first ``limit`` paths rg finds (relative to
    ``cwd``, forward slashes; in path order with ``sort``, else in rg's parallel walk order)
    and whether there were more.

    Hidden files are included, every ``.git`` is excluded, ignore files (``.gitignore`` inside a
    git repository, ``.ignore``, ``.rgignore``) are honoured, symlinks are not followed.
    ``globs`` are passed as ``--glob`` options in order (later ones win; ``!x`` excludes);
    ``match`` (see :func:`glob_filter`), when given, keeps only the paths it accepts;
    ``name_glob`` (see :func:`name_glob`) lets rg itself select files by name, as a file type
    (unlike ``--glob``, a type does not override ignore files), so far fewer paths come back.
    ``keep`` drops the paths it refuses before they count towards ``limit`` (the read rules'
    denies); unlike ``match`` it is meant to drop few, so rg still writes a line at a time.
    ``on_path`` is called with each kept path, once, in order: as soon as it is read while rg
    goes on walking (work per path done there overlaps the search), and for the last ones
    while rg is being stopped; what it raises, ``files`` raises once rg is gone. ``rg`` is
    stopped as soon as ``limit + 1`` paths were read (where every path rg prints is kept, rg
    writes them a line at a time, so that happens as soon as it found them). Raises
    :class:`ToolError` (``No such file or directory``, or ``Not a directory`` for a file)
    when ``cwd`` is not a directory, ``ripgrep failed: ...`` when rg fails without listing
    anything (an invalid glob), :class:`ToolAborted` on abort.
    """
    directory = Path(cwd)
    if not directory.is_dir():
        if directory.exists():
            raise ToolError(f"Not a directory: '{directory}'")
        raise ToolError(f"No such file or directory: '{directory}'")
    # --sort=path makes rg walk on one thread: only when the caller needs a stable selection
    args = [find_rg(), "--no-config", "--files", "--null", *(["--sort=path"] if sort else [])]
    if hidden:
        args.append("--hidden")
    if name_glob is not None:
        args += [f"--type-add=hookcodename:{name_glob}", "--type=hookcodename"]
    args += [f"--glob={g}" for g in globs]
    args.append("--glob=!.git")  # last, so no user glob can whitelist it back
    if match is None:
        # Every path rg prints is kept, and rg is stopped after limit + 1 of them. Written in
        # blocks (rg's way into a pipe), the first paths would come only once rg had found
        # a few hundred, and it would walk on for paths nobody reads; written a line at a time
        # they come as found (and are dated while rg walks on). Where ``match`` filters,
        # rg prints every file, and a write per file would cost more than it saves.
        args.append("--line-buffered")
    paths: list[str] = []
    buffer = b""
    unreported: list[str] = []  # kept paths not passed to on_path yet
    failure: list[BaseException] = []
    loop = asyncio.get_running_loop()

    def report() -> None:
        if failure:
            return
        done = 0
        try:
            for path in unreported:
                done += 1
                on_path(path)  # type: ignore[misc]
        except BaseException as exc:
            failure.append(exc)
        finally:
            del unreported[:done]

    def consume(chunk: bytes) -> bool:
        nonlocal buffer
        complete, nul, buffer = (buffer + chunk).rpartition(b"\0")
        if not nul:
            return False
        # one decode for the whole chunk: NUL is never part of a multi-byte character
        found = os.fsdecode(complete).split("\0")
        if _SEP is not None:
            found = [path.replace(_SEP, "/") for path in found]
        if match is not None:
            found = [path for path in found if match(path)]
        if keep is not None:
            found = [path for path in found if keep(path)]
        room = limit - len(paths)
        stop = len(found) > room  # one more than the limit exists: stop rg
        kept = found[:room] if stop else found
        paths.extend(kept)
        if on_path is None or not kept:
            return stop
        unreported.extend(kept)
        if stop:
            loop.call_soon(report)  # rg is killed when this returns: dated while it dies
            return True
        report()  # while rg goes on walking
        if failure:
            raise failure[0]
        return False

    returncode, stderr, produced, more = await _stream(args, directory, abort, consume)
    if on_path is not None:
        report()  # whatever the loop had no turn for
        if failure:
            raise failure[0]
    if not produced and returncode not in (0, 1) and stderr:
        raise ToolError(f"ripgrep failed: {stderr}")
    return paths, more


async def run_lines(
    args: Sequence[str],
    on_line: Callable[[bytes], object],
    *,
    cwd: str | Path,
    abort: AbortSignal | None = None,
) -> tuple[int, str]:
    """Run ``rg --no-config ARGS`` in ``cwd`` (no shell, stdin closed) and pass each line of its
    stdout, without the ``\\n``, to ``on_line`` as it arrives; return rg's exit code and the
    head of its stderr (stripped). rg is killed when ``abort`` fires (:class:`ToolAborted` is
    raised) or the caller is cancelled; raises :class:`RipgrepMissing` without an rg."""
    pending: list[bytes] = []  # the start of a line not complete yet (a long line: many)

    def consume(chunk: bytes) -> bool:
        nonlocal pending
        if b"\n" in chunk:
            first, *complete, last = chunk.split(b"\n")
            pending.append(first)
            on_line(b"".join(pending))
            for line in complete:
                on_line(line)
            pending = [last] if last else []
        else:
            pending.append(chunk)
        return False

    command = [find_rg(), "--no-config", *args]
    returncode, stderr, _produced, _stopped = await _stream(command, Path(cwd), abort, consume)
    if pending:
        on_line(b"".join(pending))
    return returncode, stderr


async def _stream(
    command: Sequence[str],
    cwd: Path,
    abort: AbortSignal | None,
    consume: Callable[[bytes], bool],
) -> tuple[int, str, bool, bool]:
    """Run ``command`` in ``cwd`` (no shell, stdin closed), feeding stdout chunks to ``consume``
    until it returns True (then the process is killed) or the output ends. Returns (exit code,
    head of stderr, whether any output came, whether ``consume`` stopped it). The process is
    killed when ``abort`` fires (:class:`ToolAborted`) or the caller is cancelled."""
    if abort is not None and abort.is_set():
        raise ToolAborted()
    if os.name == "posix":
        return await _stream_posix(command, cwd, abort, consume)
    from hookcode.process import DirectKill, ensure_child_watcher

    ensure_child_watcher()  # no thread per rg process on Python 3.11
    proc = await asyncio.create_subprocess_exec(
        *command,
        cwd=str(cwd),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    killer = DirectKill(proc, asyncio.get_running_loop())
    kill = killer.kill
    if abort is not None:
        abort.add_callback(killer.on_abort)
    produced = stopped = False
    stderr_task = asyncio.ensure_future(_read_head(proc.stderr))
    try:
        assert proc.stdout is not None
        while chunk := await proc.stdout.read(65536):
            produced = True
            if consume(chunk):
                stopped = True
                kill()
                break
            if abort is not None and abort.is_set():
                raise ToolAborted()
        returncode = await proc.wait()
        stderr = (await stderr_task).decode("utf-8", "replace").strip()
    finally:
        if proc.returncode is None:
            kill()
            with contextlib.suppress(Exception):
                await asyncio.shield(proc.wait())
        stderr_task.cancel()
        killer.running = False
    if abort is not None and abort.is_set():
        raise ToolAborted()
    return returncode, stderr, produced, stopped


async def _stream_posix(
    command: Sequence[str],
    cwd: Path,
    abort: AbortSignal | None,
    consume: Callable[[bytes], bool],
) -> tuple[int, str, bool, bool]:
    """:func:`_stream` on POSIX: the pipes are read by event-loop callbacks as data comes
    (``os.read`` on a non-blocking descriptor), not through asyncio's subprocess transports and
    stream readers, whose set-up and per-chunk hand-offs cost about as much as a short rg run
    is long; the exit is awaited with a pidfd where there is one."""
    import subprocess

    from hookcode.process import DirectKill, exit_code

    loop = asyncio.get_running_loop()
    proc = subprocess.Popen(
        list(command),
        cwd=str(cwd),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    os.set_blocking(out_fd, False)
    os.set_blocking(err_fd, False)
    ended: asyncio.Future[None] = loop.create_future()
    reading = {out_fd, err_fd}
    head = bytearray()
    produced = stopped = False
    killer = DirectKill(proc, loop)
    kill, on_abort = killer.kill, killer.on_abort

    def done_with(fd: int) -> None:
        if fd in reading:
            reading.discard(fd)
            loop.remove_reader(fd)
        if not reading and not ended.done():
            ended.set_result(None)

    def on_stdout() -> None:
        nonlocal produced, stopped
        try:
            chunk = os.read(out_fd, 65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            kill()
            done_with(out_fd)
            if not ended.done():
                ended.set_exception(exc)
            return
        if not chunk:
            done_with(out_fd)
            return
        produced = True
        try:
            stop = consume(chunk)
        except BaseException as exc:  # the caller's consumer failed: stop rg, report it
            kill()
            reading.clear()
            loop.remove_reader(out_fd)
            loop.remove_reader(err_fd)
            if not ended.done():
                ended.set_exception(exc)
            return
        if stop:
            stopped = True
            kill()
            done_with(out_fd)
        elif abort is not None and abort.is_set():
            kill()

    def on_stderr() -> None:  # drained so rg never blocks on a full pipe; the head is kept
        try:
            chunk = os.read(err_fd, 65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:
            done_with(err_fd)
        elif len(head) < 4096:
            head.extend(chunk[: 4096 - len(head)])

    if abort is not None:
        abort.add_callback(on_abort)
    loop.add_reader(out_fd, on_stdout)
    loop.add_reader(err_fd, on_stderr)
    try:
        await ended
        returncode = await exit_code(proc, loop)
    finally:
        killer.running = False
        for fd in list(reading):
            loop.remove_reader(fd)
        if proc.returncode is None:
            kill()
            with contextlib.suppress(Exception):
                proc.wait(timeout=5)  # killed: gone at once; reaped here, never left a zombie
        proc.stdout.close()
        proc.stderr.close()
        if abort is not None:
            abort.remove_callback(on_abort)
    if abort is not None and abort.is_set():
        raise ToolAborted()
    return returncode, head.decode("utf-8", "replace").strip(), produced, stopped


async def _read_head(stream: asyncio.StreamReader | None, keep: int = 4096) -> bytes:
    """Drain ``stream`` (so rg never blocks on a full pipe), keeping its first ``keep`` bytes."""
    if stream is None:
        return b""
    head = b""
    while chunk := await stream.read(65536):
        if len(head) < keep:
            head += chunk[: keep - len(head)]
    return head
