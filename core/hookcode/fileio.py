"""Reading and writing text files the way every writing tool must.

* :func:`read_text` decodes a file and remembers how it was stored: encoding, BOM, line-ending
  style, mode. Bytes that are not valid UTF-8 survive a round trip (``surrogateescape``).
* :func:`write_text` / :func:`atomic_write` write through a temporary file in the target's
  directory and a rename, so a reader never sees half a file and a crash leaves the old one;
  an existing file keeps its mode, encoding, BOM and line endings; parents are created. On
  Linux the temporary file has no name while it is written (``O_TMPFILE``): a process killed
  meanwhile leaves nothing behind; it gets a name (linked through ``/proc/self/fd``) only for
  the microseconds before the rename. Elsewhere it is a named file recorded in
  :class:`PendingWrites`, which a later run removes if the writer was killed.
* :class:`PathLocks` serialises writers of one path (async tools and sync tools alike); several
  paths are locked in sorted order, so multi-file writers cannot deadlock.
* :func:`diff` and :func:`diff_stats` describe a change for permission asks and metadata.
* :func:`realpath_nearest` resolves symlinks (dangling ones too) of a path that may not exist yet.
"""

from __future__ import annotations

import codecs
import contextlib
import difflib
import errno
import os
import secrets
import threading
import time
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "PathLocks",
    "PendingWrites",
    "TextFile",
    "atomic_write",
    "diff",
    "diff_stats",
    "newline_style",
    "read_text",
    "realpath_nearest",
    "to_newline",
    "write_text",
]


def realpath_nearest(path: Path) -> Path:
    """Where the OS will find ``path``: every symlink followed, dangling ones included (the
    readlink chain is followed to its end, so ``dl -> /outside/file`` resolves to
    ``/outside/file`` even when that file does not exist yet), ``..`` taken after the symlink
    before it; the missing rest of the path is kept as it is spelled. A symlink loop is
    left unresolved at the loop (the OS refuses to open it)."""
    return Path(os.path.realpath(path))


_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


@dataclass
class TextFile:
    """A decoded text file and how it was stored."""

    path: Path
    text: str  # as in the file (its own line endings)
    encoding: str = "utf-8"
    bom: bytes = b""
    newline: str = "\n"  # "\r\n" when the file has any CRLF
    mode: int | None = None
    exists: bool = True

    @property
    def lf_text(self) -> str:
        """The text with every CRLF turned into LF."""
        return self.text.replace("\r\n", "\n")

    def encode(self, text: str) -> bytes:
        """``text`` encoded the way this file is stored (BOM included)."""
        errors = "surrogateescape" if self.encoding == "utf-8" else "strict"
        return self.bom + text.encode(self.encoding, errors=errors)


def newline_style(text: str) -> str:
    """``"\\r\\n"`` if the text contains any CRLF, else ``"\\n"``."""
    return "\r\n" if "\r\n" in text else "\n"


def to_newline(text: str, newline: str) -> str:
    """``text`` with every line ending (CRLF or LF) turned into ``newline``."""
    lf = text.replace("\r\n", "\n")
    return lf if newline == "\n" else lf.replace("\n", newline)


def decode(data: bytes) -> tuple[str, str, bytes]:
    """(text, encoding, bom) of raw bytes: BOMs are honoured, else UTF-8 with undecodable
    bytes kept as surrogates so they are written back unchanged."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            errors = "surrogateescape" if encoding == "utf-8" else "replace"
            return data[len(bom) :].decode(encoding, errors=errors), encoding, bom
    return data.decode("utf-8", errors="surrogateescape"), "utf-8", b""


def read_text(path: str | os.PathLike[str]) -> TextFile:
    """Read a text file; a missing file gives an empty ``TextFile`` with ``exists=False``."""
    target = Path(path)
    try:
        data = target.read_bytes()
        mode = target.stat().st_mode & 0o7777
    except FileNotFoundError:
        return TextFile(target, "", exists=False)
    text, encoding, bom = decode(data)
    return TextFile(target, text, encoding, bom, newline_style(text), mode, True)


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def atomic_write(
    path: str | os.PathLike[str],
    data: bytes,
    *,
    mode: int | None = None,
    pending: PendingWrites | None = None,
) -> None:
    """Write ``data`` to ``path`` through a temporary file (fsynced) and a rename. ``mode``
    defaults to the existing file's mode, else the umask's default. Parent directories are
    created. ``pending`` records the temporary file where it must have a name (no
    ``O_TMPFILE``), so a later run removes what a killed writer left."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        try:
            mode = target.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = _default_mode()
    unnamed = _unnamed_file(target.parent)
    if unnamed is not None and _write_unnamed(*unnamed, target.name, data, mode):
        return
    # the record comes first: a kill right after the file is created must find it recorded
    while True:
        temp = str(target.parent / f".{target.name}.{secrets.token_hex(6)}.tmp")
        record = pending.record(temp) if pending is not None else None
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            break
        except BaseException as exc:
            if record is not None and pending is not None:
                pending.done(record)
            if not isinstance(exc, FileExistsError):
                raise
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    finally:
        if record is not None and pending is not None:
            pending.done(record)


def _unnamed_file(directory: Path) -> tuple[int, int] | None:
    """(the directory, a file without a name in it): Linux ``O_TMPFILE``, mode 0600. None
    where the platform or the file system has none (the caller falls back to a named file)."""
    flag = getattr(os, "O_TMPFILE", None)
    if flag is None or not os.path.isdir("/proc/self/fd"):
        return None
    # O_PATH: a directory we may write to but not list still takes the file
    dir_fd = os.open(directory, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        return dir_fd, os.open(".", flag | os.O_WRONLY | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    except OSError as exc:
        os.close(dir_fd)
        # EISDIR: a kernel without O_TMPFILE; EOPNOTSUPP: a file system without it
        if exc.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
            return None
        raise


def _write_unnamed(dir_fd: int, fd: int, name: str, data: bytes, mode: int) -> bool:
    """Write and fsync the unnamed file ``fd``, give it ``mode``, then a name beside ``name``
    in ``dir_fd`` (a link cannot replace an existing file) and rename that over ``name``.
    False when the file cannot be given a name (``/proc`` hidden or locked down): the caller
    writes a named file instead."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
        os.fchmod(fd, mode)
        while True:
            temp = f".{name}.{secrets.token_hex(6)}.tmp"
            try:
                # a dir fd makes os.link use linkat(AT_SYMLINK_FOLLOW): it links the file
                # the /proc symlink stands for, not the symlink
                os.link(f"/proc/self/fd/{fd}", temp, dst_dir_fd=dir_fd, follow_symlinks=True)
                break
            except FileExistsError:
                continue
            except OSError as exc:
                if exc.errno in (errno.ENOENT, errno.EACCES, errno.EPERM, errno.EXDEV):
                    return False
                raise
        try:
            os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp, dir_fd=dir_fd)
            raise
        return True
    finally:
        os.close(fd)
        os.close(dir_fd)


class PendingWrites:
    """Where :func:`atomic_write` records a named temporary file while it writes it (only
    where ``O_TMPFILE`` is missing): one small file per write in ``directory`` (the data
    directory's ``pending-writes``) naming the writer (pid and start time) and the temporary
    file. :meth:`clean` removes the temporary files of writers that are gone."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def record(self, temp: str) -> Path | None:
        """Record ``temp``; returns the record (None if it could not be written: the write
        goes on, only a kill in the middle of it would then leave the file behind)."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            path = self.directory / f"{os.getpid()}-{secrets.token_hex(8)}"
            text = f"{os.getpid()}\n{_start_time(os.getpid())}\n{os.path.abspath(temp)}\n"
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            try:
                os.write(fd, text.encode("utf-8", "surrogateescape"))
            finally:
                os.close(fd)
            return path
        except OSError:
            return None

    def done(self, record: Path) -> None:
        with contextlib.suppress(OSError):
            record.unlink()

    def clean(self) -> list[str]:
        """Remove the temporary files whose writers are gone; returns their paths."""
        try:
            records = list(self.directory.iterdir())
        except OSError:
            return []
        removed = []
        for record in records:
            try:
                pid_line, start_line, temp = record.read_text(
                    errors="surrogateescape"
                ).splitlines()[:3]
                pid = int(pid_line)
            except (OSError, ValueError):
                # cut short by a kill while it was written: nothing was created after it
                with contextlib.suppress(OSError):
                    if time.time() - record.stat().st_mtime > 60:
                        record.unlink()
                continue
            if _alive(pid, start_line):
                continue
            name = os.path.basename(temp)
            if name.startswith(".") and name.endswith(".tmp"):
                try:
                    os.unlink(temp)  # a symlink put in its place is removed, not followed
                    removed.append(temp)
                except FileNotFoundError:
                    pass
                except OSError:
                    continue  # try again next time
            self.done(record)
        return removed


def _start_time(pid: int) -> str:
    from hookcode.guardian import start_time

    value = start_time(pid)
    return "" if value is None else str(value)


def _alive(pid: int, start: str) -> bool:
    """Whether the process that wrote a record still runs (its start time, where known,
    tells a reused pid apart)."""
    from hookcode.guardian import pid_alive

    return pid_alive(pid, int(start) if start.isdigit() else None)


def write_text(
    path: str | os.PathLike[str],
    text: str,
    *,
    like: TextFile | None = None,
    pending: PendingWrites | None = None,
) -> bytes:
    """Write ``text`` atomically. With ``like`` (the file as read before), its encoding, BOM,
    line-ending style and mode are kept: LF text written over a CRLF file becomes CRLF.
    Returns the bytes written. ``pending``: see :func:`atomic_write`."""
    if like is not None and like.exists:
        data = like.encode(to_newline(text, like.newline))
        atomic_write(path, data, mode=like.mode, pending=pending)
    else:
        data = text.encode("utf-8", errors="surrogateescape")
        atomic_write(path, data, pending=pending)
    return data


def diff(path: str, before: str, after: str, *, context: int = 3) -> str:
    """A unified diff of ``before`` -> ``after`` (line endings normalised) labelled ``path``."""
    a = before.replace("\r\n", "\n").splitlines(keepends=True)
    b = after.replace("\r\n", "\n").splitlines(keepends=True)
    lines = difflib.unified_diff(a, b, fromfile=path, tofile=path, n=context)
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def diff_stats(before: str, after: str) -> tuple[int, int]:
    """(additions, deletions) in lines, as the unified diff of :func:`diff` counts them.

    The common first and last lines are set aside before matching: difflib's matcher is
    quadratic on repeated lines, and an edit of a large file changes a small part of it."""
    a = before.replace("\r\n", "\n").splitlines()
    b = after.replace("\r\n", "\n").splitlines()
    start = 0
    while start < len(a) and start < len(b) and a[start] == b[start]:
        start += 1
    end = 0
    while end < len(a) - start and end < len(b) - start and a[-1 - end] == b[-1 - end]:
        end += 1
    a, b = a[start : len(a) - end], b[start : len(b) - end]
    additions = deletions = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b).get_opcodes():
        if tag in ("replace", "delete"):
            deletions += i2 - i1
        if tag in ("replace", "insert"):
            additions += j2 - j1
    return additions, deletions


class PathLocks:
    """One lock per resolved path, usable from async tools and from sync tools in threads."""

    def __init__(self) -> None:
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def _lock(self, path: str | os.PathLike[str]) -> threading.Lock:
        key = os.path.realpath(path)
        with self._guard:
            lock = self._locks.get(key)
            if lock is None:
                lock = self._locks[key] = threading.Lock()
            return lock

    def _ordered(self, paths: Iterable[str | os.PathLike[str]]) -> list[threading.Lock]:
        keys = sorted({os.path.realpath(p) for p in paths})
        return [self._lock(k) for k in keys]

    @contextlib.asynccontextmanager
    async def hold(self, *paths: str | os.PathLike[str]) -> AsyncIterator[None]:
        """``async with locks.hold(a, b):`` — lock every path (sorted order)."""
        import asyncio

        held: list[threading.Lock] = []
        try:
            for lock in self._ordered(paths):
                # Poll rather than block a worker thread in acquire(): such a thread cannot be
                # cancelled (a waiter aborted or timed out would take the lock later and never
                # release it), and many waiters would fill the default executor that the
                # holder itself may need (asyncio.to_thread) -> deadlock.
                delay = 0.001
                while not lock.acquire(blocking=False):
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 0.02)
                held.append(lock)
            yield
        finally:
            for lock in reversed(held):
                lock.release()

    @contextlib.contextmanager
    def hold_sync(self, *paths: str | os.PathLike[str]) -> Iterator[None]:
        """``with locks.hold_sync(a, b):`` — for sync tools running in worker threads."""
        held: list[threading.Lock] = []
        try:
            for lock in self._ordered(paths):
                lock.acquire()
                held.append(lock)
            yield
        finally:
            for lock in reversed(held):
                lock.release()
