"""Reading and writing text files the way every writing tool must.

* :func:`read_text` decodes a file and remembers how it was stored: encoding, BOM, line-ending
  style, mode. Bytes that are not valid UTF-8 survive a round trip (``surrogateescape``).
* :func:`write_text` / :func:`atomic_write` write through a temporary file in the target's
  directory and a rename, so a reader never sees half a file and a crash leaves the old one;
  an existing file keeps its mode, encoding, BOM and line endings; parents are created.
* :class:`PathLocks` serialises writers of one path (async tools and sync tools alike); several
  paths are locked in sorted order, so multi-file writers cannot deadlock.
* :func:`diff` and :func:`diff_stats` describe a change for permission asks and metadata.
* :func:`realpath_nearest` resolves symlinks (dangling ones too) of a path that may not exist yet.
"""

from __future__ import annotations

import codecs
import contextlib
import difflib
import os
import tempfile
import threading
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "PathLocks",
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


def atomic_write(path: str | os.PathLike[str], data: bytes, *, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename. ``mode`` defaults to
    the existing file's mode, else the umask's default. Parent directories are created."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        try:
            mode = target.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = _default_mode()
    fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
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


def write_text(path: str | os.PathLike[str], text: str, *, like: TextFile | None = None) -> bytes:
    """Write ``text`` atomically. With ``like`` (the file as read before), its encoding, BOM,
    line-ending style and mode are kept: LF text written over a CRLF file becomes CRLF.
    Returns the bytes written."""
    if like is not None and like.exists:
        data = like.encode(to_newline(text, like.newline))
        atomic_write(path, data, mode=like.mode)
    else:
        data = text.encode("utf-8", errors="surrogateescape")
        atomic_write(path, data)
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
