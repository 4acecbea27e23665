"""Spill files: where the full text of a cut tool output goes (:mod:`hookcode.truncate`).

They live in ``<data dir>/tool-output/`` (a 0700 directory, each file 0600, created with
``O_EXCL``), named by :func:`hookcode.ids.new_id` (``tool_...``), so a name says when the file
was made. One holds at most ``spill_max`` bytes (``[truncation] spill_max``,
:data:`DEFAULT_SPILL_MAX`): past it, its first half and its last half are kept, joined by a
line saying how many bytes were dropped (the tail waits in an anonymous file beside it, so
memory stays bounded). Old spill files are deleted after :data:`RETENTION_SECONDS`; the
directory is walked for them at most once per :data:`CLEANUP_EVERY`, which a marker file's
modification time records for every process.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from pathlib import Path
from typing import BinaryIO

from hookcode.datadir import PRIVATE_FILE, private_dir
from hookcode.ids import id_time, new_id

__all__ = [
    "CLEANUP_EVERY",
    "DEFAULT_SPILL_MAX",
    "RETENTION_SECONDS",
    "WRITE_SLICE",
    "SpillFile",
    "cleanup",
    "cleanup_due",
    "new_spill_path",
    "open_spill",
]

RETENTION_SECONDS = 7 * 24 * 3600
#: the spill directory is walked for old files at most this often (by any process)
CLEANUP_EVERY = 24 * 3600
#: the most bytes one spill file holds (``[truncation] spill_max``)
DEFAULT_SPILL_MAX = 100 * 1024 * 1024
#: spill writes of a big text go out in slices of this many bytes (or characters), so
#: encoding never doubles its memory
WRITE_SLICE = 1 << 20
#: the marker file (in the spill directory) whose mtime is the last cleanup's time
_CLEANUP_MARKER = ".last-cleanup"
# spill files are named by hookcode.ids.new_id("tool"): anything else in the dir is not ours
_SPILL_NAME = re.compile(r"tool_[0-9a-f]{12,}")


def new_spill_path(directory: Path) -> Path:
    """A fresh spill file path in ``directory``; the id sorts by, and encodes, its creation
    time."""
    return directory / new_id("tool")


def open_spill(directory: Path, cap: int) -> tuple[Path, SpillFile]:
    """A new spill file in ``directory`` (made private if new), holding at most ``cap``
    bytes."""
    private_dir(directory)
    path = new_spill_path(directory)
    # O_EXCL: never clobber another spill file (nor follow a link put in its place)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    f = os.fdopen(os.open(path, flags, PRIVATE_FILE), "wb")
    return path, SpillFile(f, directory, cap)


def cleanup_due(directory: Path, now: float | None = None, every: float = CLEANUP_EVERY) -> bool:
    """Whether the last cleanup of ``directory`` (by any process) is more than ``every``
    seconds old; one ``stat`` of the marker file, so it is cheap enough for every start."""
    if now is None:
        now = time.time()
    try:
        return os.stat(directory / _CLEANUP_MARKER).st_mtime <= now - every
    except FileNotFoundError:
        return directory.is_dir()  # no directory: nothing to clean
    except OSError:
        return True


def cleanup(directory: Path, now: float | None = None, retention: float = RETENTION_SECONDS) -> int:
    """Delete spill files whose id time is more than ``retention`` seconds before ``now``;
    returns how many. Files of other processes count the same; foreign files are left."""
    if now is None:
        now = time.time()
    try:
        entries = list(directory.iterdir())
    except FileNotFoundError:
        return 0
    marker = directory / _CLEANUP_MARKER
    # the marker first: a process starting meanwhile finds the cleanup done
    with open(os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, PRIVATE_FILE), "wb"):
        pass
    os.utime(marker, (now, now))
    removed = 0
    for entry in entries:
        if not _SPILL_NAME.fullmatch(entry.name):
            continue
        created = id_time(entry.name)
        if created is None or created >= now - retention or not entry.is_file():
            continue
        try:
            entry.unlink()
        except FileNotFoundError:
            continue  # another process's cleanup got there first
        removed += 1
    return removed


class SpillFile:
    """A spill file capped at ``cap`` bytes: the first half is written as it comes, the rest
    goes round a ring of the last half in an anonymous file (memory stays bounded); closing
    joins them, with a line saying how many bytes were dropped between them when some were.
    Cuts fall between UTF-8 sequences, never inside one."""

    def __init__(self, f: BinaryIO, directory: Path, cap: int) -> None:
        self._f = f
        self._dir = directory
        self._head_room = cap // 2
        self._tail_cap = cap - self._head_room
        self._ring: BinaryIO | None = None
        self._pos = 0  # where the ring's next byte goes
        self._ring_len = 0  # bytes the ring holds
        self._passed = 0  # bytes that went to the ring in all (the dropped ones included)

    def write(self, data: bytes) -> None:
        if self._head_room:
            if len(data) <= self._head_room:
                self._f.write(data)
                self._head_room -= len(data)
                return
            cut = _utf8_start(data, self._head_room)
            self._f.write(data[:cut])
            self._head_room = 0  # the head is complete
            data = data[cut:]
        self._to_ring(data)

    def _to_ring(self, data: bytes) -> None:
        if not data or not self._tail_cap:
            self._passed += len(data)
            return
        if self._ring is None:
            # closed in close(); never named, so nothing is left behind by a killed process
            self._ring = tempfile.TemporaryFile(dir=self._dir)  # noqa: SIM115
        self._passed += len(data)
        view = memoryview(data)[-self._tail_cap :]
        while view:
            n = min(len(view), self._tail_cap - self._pos)
            self._ring.seek(self._pos)
            self._ring.write(view[:n])
            self._pos = (self._pos + n) % self._tail_cap
            self._ring_len = min(self._tail_cap, self._ring_len + n)
            view = view[n:]

    def close(self) -> None:
        try:
            if self._ring is not None:
                with self._ring:
                    self._join_ring(self._ring)
        finally:
            self._f.close()

    def _join_ring(self, ring: BinaryIO) -> None:
        wrapped = self._passed > self._ring_len
        start = self._pos if wrapped else 0
        pieces = [(start, self._ring_len - start), (0, start)] if wrapped else [(0, self._ring_len)]
        skip = 0
        if wrapped:  # the oldest kept bytes may begin inside a UTF-8 sequence: drop those too
            ring.seek(start)
            first = ring.read(min(4, self._ring_len - start))
            while skip < len(first) and first[skip] & 0xC0 == 0x80:
                skip += 1
        dropped = self._passed - self._ring_len + skip
        if dropped:
            self._f.write(
                f"\n\n[... {dropped} bytes dropped here: the output was longer than the spill "
                f"file's limit ([truncation] spill_max) ...]\n\n".encode()
            )
        for offset, size in pieces:
            take = min(skip, size)
            offset, size, skip = offset + take, size - take, skip - take
            ring.seek(offset)
            while size > 0:
                chunk = ring.read(min(size, WRITE_SLICE))
                if not chunk:
                    break
                self._f.write(chunk)
                size -= len(chunk)


def _utf8_start(data: bytes, index: int) -> int:
    """The nearest index at or before ``index`` where a UTF-8 sequence starts."""
    while 0 < index < len(data) and data[index] & 0xC0 == 0x80:
        index -= 1
    return index
