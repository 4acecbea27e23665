"""The audit log file: hash-chained JSON lines, appended under a lock, and their verification.

Every line is one JSON object carrying ``seq`` (1, 2, 3, ...) and ``prev``: the SHA-256 (hex) of
the previous line's exact bytes (without its newline); the first line's ``prev`` is
:data:`GENESIS`. A writer opens the file with ``O_APPEND``, takes an exclusive ``flock``, reads
the last line, chains onto it and writes its line with one ``write`` (rolled back with
``ftruncate`` if the write fails half-way), so processes writing at once interleave whole lines
and the chain stays valid.

What the chain proves: each line's predecessors are exactly the lines before it. An edited,
removed, inserted or reordered line breaks it at that point, and so does a cut last line. Lines
removed from the END, or an edited last line, leave a shorter valid chain: compare the head
(the hash of the last line, printed by ``verify``) with one kept elsewhere (``--anchor``).

A log kept in a store (``[audit] to = "store"``, :mod:`hookcode_audit.stored`) holds the same
lines: :func:`build_line` makes them, :func:`~hookcode.store.audit_log.line_hash` chains them
and :func:`verify_lines` checks them, whichever holds them.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hookcode.store.audit_log import GENESIS, line_hash

__all__ = [
    "GENESIS",
    "AuditLog",
    "Verification",
    "build_line",
    "line_hash",
    "parse_records",
    "read_records",
    "verify",
    "verify_lines",
]

_CHUNK = 8192


def build_line(record: dict[str, Any], seq: int, prev: str) -> str:
    """The line of ``record`` as the ``seq``-th of the chain after a line hashing to ``prev``:
    compact JSON, ``seq`` first and ``prev`` last; a lone surrogate (a byte that was not UTF-8)
    becomes ``?``, so the line is exactly what its UTF-8 bytes say (the bytes that are hashed)."""
    line = json.dumps(
        {"seq": seq, **record, "prev": prev},
        ensure_ascii=False,
        separators=(",", ":"),
        default=str,
    )
    return line.encode("utf-8", "replace").decode("utf-8")


@contextlib.contextmanager
def _flock(fd: int, exclusive: bool) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: O_APPEND alone
        yield
        return
    fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def _last_line(fd: int, size: int) -> tuple[bytes | None, bool]:
    """The last line of the file (without its newline; None for an empty file) and whether the
    file ends with a newline (False: the last write was cut)."""
    if size == 0:
        return None, True
    end = size
    last = os.pread(fd, 1, size - 1)
    complete = last == b"\n"
    if complete:
        end -= 1
    pieces: list[bytes] = []
    position = end
    while position > 0:
        start = max(0, position - _CHUNK)
        chunk = os.pread(fd, position - start, start)
        cut = chunk.rfind(b"\n")
        if cut >= 0:
            pieces.append(chunk[cut + 1 :])
            break
        pieces.append(chunk)
        position = start
    return b"".join(reversed(pieces)), complete


class AuditLog:
    """Appends records to one audit file (thread-safe within a process, ``flock`` across).

    The log remembers the line it wrote last. When, under the lock, the file still ends with
    exactly that line (same file, same size, and those bytes at its end), the next record
    chains onto it without reading and parsing it again; anything else (another writer, an
    edited or replaced file) sends it back to reading the file's last line."""

    def __init__(self, path: Path, *, fsync: bool = False) -> None:
        self.path = path
        self.fsync = fsync
        self._lock = threading.Lock()
        # what this log wrote last: ((device, inode, size after), the line, its hash, its seq)
        self._head: tuple[tuple[int, int, int], bytes, str, int] | None = None

    def append(self, record: dict[str, Any]) -> str:
        """Write ``record`` with its ``seq`` and ``prev``; returns the line written. Raises
        OSError when the file cannot be written (nothing of the line is left behind)."""
        with self._lock:
            flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
            try:
                fd = os.open(self.path, flags, 0o600)
            except FileNotFoundError:  # the directory is missing: made (private), then again
                from hookcode.datadir import private_dir

                private_dir(self.path.parent, tighten=False)
                fd = os.open(self.path, flags, 0o600)
            try:
                with _flock(fd, exclusive=True):
                    stat = os.fstat(fd)
                    size = stat.st_size
                    prev, seq, complete = self._chain_head(fd, stat)
                    line = build_line(record, seq, prev)
                    encoded = line.encode("utf-8")
                    # a cut last line stays as it is (verify reports it); we start a new line
                    data = (b"" if complete else b"\n") + encoded + b"\n"
                    self._head = None
                    try:
                        view = memoryview(data)
                        while view:
                            written = os.write(fd, view)
                            view = view[written:]
                        if self.fsync:
                            os.fsync(fd)
                    except OSError:
                        with contextlib.suppress(OSError):
                            os.ftruncate(fd, size)  # we hold the lock: nobody wrote after us
                        raise
                    after = (stat.st_dev, stat.st_ino, size + len(data))
                    self._head = (after, encoded, line_hash(encoded), seq)
            finally:
                os.close(fd)
        return line

    def _chain_head(self, fd: int, stat: os.stat_result) -> tuple[str, int, bool]:
        """(``prev``, ``seq``, whether the file ends with a newline) for the next record."""
        head = self._head
        if head is not None and head[0] == (stat.st_dev, stat.st_ino, stat.st_size):
            _key, line, digest, seq = head
            end = len(line) + 1
            if stat.st_size >= end and os.pread(fd, end, stat.st_size - end) == line + b"\n":
                return digest, seq + 1, True
        last, complete = _last_line(fd, stat.st_size)
        if last is None:
            return GENESIS, 1, complete
        return line_hash(last), _seq_of(last) + 1, complete


def _seq_of(line: bytes) -> int:
    """The ``seq`` of a line; 0 when it has none (a damaged line: the chain goes on from it)."""
    try:
        value = json.loads(line)
    except ValueError:
        return 0
    seq = value.get("seq") if isinstance(value, dict) else None
    return seq if isinstance(seq, int) and not isinstance(seq, bool) else 0


# ---------------------------------------------------------------------------------------------
# reading and verifying
# ---------------------------------------------------------------------------------------------


def _read_locked(path: Path) -> bytes:
    """The whole file, read under a shared lock (so no half-written line is seen)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        with _flock(fd, exclusive=False):
            chunks = []
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            return b"".join(chunks)
    finally:
        os.close(fd)


def read_records(path: Path) -> list[dict[str, Any]]:
    """Every record of the file that parses (damaged lines are skipped; ``verify`` reports
    them)."""
    return parse_records(_read_locked(path).split(b"\n"))


def parse_records(lines: Iterable[bytes | str]) -> list[dict[str, Any]]:
    """Every line that parses as a record, in order (damaged lines are skipped)."""
    out = []
    for line in lines:
        with contextlib.suppress(ValueError):
            value = json.loads(line)
            if isinstance(value, dict):
                out.append(value)
    return out


@dataclass
class Verification:
    """The result of :func:`verify`: ok, or the first broken line and why."""

    path: str
    ok: bool
    records: int = 0
    head: str | None = None  # the hash of the last line: an anchor to keep elsewhere
    line: int | None = None  # the first broken line (1-based)
    error: str | None = None
    anchor_found: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "ok": self.ok,
            "records": self.records,
            "head": self.head,
            "line": self.line,
            "error": self.error,
            "anchor_found": self.anchor_found,
        }


@dataclass
class _Line:
    number: int
    seq: int | None


def verify(path: Path, *, anchor: str | None = None) -> Verification:
    """Check the chain of ``path``: the first broken line and why (edited, removed, inserted,
    reordered, cut, not JSON). ``anchor``: the hash of a record that must still be in the log
    (a ``head`` printed by an earlier verify), which catches lines removed from the end."""
    where = str(path)
    try:
        data = _read_locked(path)
    except FileNotFoundError:
        return Verification(
            where, False, error=f"no audit log at {path} (nothing recorded yet, or removed)"
        )
    except OSError as exc:
        return Verification(where, False, error=f"cannot read {path}: {exc.strerror or exc}")
    raw_lines = data.split(b"\n")
    cut = raw_lines[-1] != b""  # the file does not end with a newline
    if not cut:
        raw_lines.pop()
    return verify_lines(raw_lines, where, cut=cut, anchor=anchor)


def verify_lines(
    raw_lines: list[bytes],
    where: str,
    *,
    cut: bool = False,
    anchor: str | None = None,
    unit: str = "line",
) -> Verification:
    """Check the chain of ``raw_lines`` (each without its newline), read from ``where``;
    ``cut``: the last one was cut off (a file not ending with a newline). Errors name the
    broken one as ``unit`` and its 1-based position (``line 7``; ``record 7`` for a log kept in
    a store, whose records are in ``seq`` order)."""
    if not raw_lines:
        if anchor is None:
            return Verification(where, True)
        return Verification(
            where, False, error="the log is empty: the anchor record is missing", anchor_found=False
        )
    expected = GENESIS
    previous: _Line | None = None
    hashes = [line_hash(raw) for raw in raw_lines]
    everywhere: dict[str, int] = {}  # every line's hash -> its position (for reorderings)
    for number, digest in enumerate(hashes, 1):
        everywhere.setdefault(digest, number)
    seen: dict[str, int] = {}  # line hash -> position
    count = 0

    def broken(number: int, why: str) -> Verification:
        return Verification(
            where, False, records=count, line=number, error=f"{unit} {number}: {why}"
        )

    for number, raw in enumerate(raw_lines, 1):
        if cut and number == len(raw_lines):
            return broken(
                number,
                "truncated: the last line is cut off (no newline at the end of the file); "
                "a write was interrupted or the file was cut",
            )
        try:
            record = json.loads(raw)
        except ValueError:
            return broken(number, f"not valid JSON: the {unit} was edited or damaged")
        if not isinstance(record, dict) or not isinstance(record.get("prev"), str):
            return broken(number, f"not an audit record (no 'prev' field): the {unit} was edited")
        seq = record.get("seq")
        seq = seq if isinstance(seq, int) and not isinstance(seq, bool) else None
        prev = record["prev"]
        if prev != expected:
            if previous is None:
                if seq is not None and seq > 1:
                    return broken(
                        number,
                        f"records removed from the start of the log (the first record has seq "
                        f"{seq}, not 1)",
                    )
                return broken(number, "edited: its 'prev' is not the chain's genesis value")
            if prev in seen:
                return broken(
                    number,
                    f"out of order: it follows {unit} {seen[prev]}, not {unit} "
                    f"{previous.number} ({unit}s were reordered or inserted)",
                )
            later = everywhere.get(prev)
            if later is not None and later > number:
                return broken(
                    number,
                    f"out of order: it follows {unit} {later}, which comes after it ({unit}s "
                    "were reordered)",
                )
            if seq is not None and previous.seq is not None:
                if seq == previous.seq + 1:
                    return broken(
                        previous.number,
                        f"edited: its SHA-256 no longer matches the 'prev' recorded by {unit} "
                        f"{number}",
                    )
                if seq > previous.seq + 1:
                    missing = seq - previous.seq - 1
                    return broken(
                        number,
                        f"{missing} record(s) removed before it (seq jumps from {previous.seq} "
                        f"to {seq})",
                    )
                return broken(
                    number,
                    f"out of order: seq {seq} after seq {previous.seq} ({unit}s were reordered)",
                )
            return broken(
                number,
                f"its 'prev' does not match {unit} {previous.number}: that {unit} was edited, "
                "or records between them were removed",
            )
        if (
            seq is not None
            and previous is not None
            and previous.seq is not None
            and seq != previous.seq + 1
        ):
            return broken(number, f"edited: seq {seq} does not follow {previous.seq}")
        digest = hashes[number - 1]
        seen.setdefault(digest, number)
        expected = digest
        previous = _Line(number, seq)
        count += 1
    result = Verification(where, True, records=count, head=expected)
    if anchor is not None:
        result.anchor_found = anchor in seen
        if not result.anchor_found:
            result.ok = False
            result.error = (
                f"the anchor record {anchor[:16]}... is not in the log: it was edited or "
                f"removed ({unit}s removed from the end leave a valid but shorter chain)"
            )
    return result
