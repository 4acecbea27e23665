"""The truncation layer: cut long tool output, spill the full text to a file, and say where.

Behaviour: reference/truncation.md. ``head`` and ``tail`` follow §2 of it exactly; ``both`` is
ours (bash, ARCHITECTURE.md "Settled points"): head AND tail, each with half the budgets, joined by
one block saying how much was left out and where the full output is.

The spill files (their directory, cap and retention) are :mod:`hookcode.spill`'s.

Two ways in, one result: :meth:`Truncator.truncate` takes a string; :meth:`Truncator.writer`
returns a :class:`StreamingOutput` that takes chunks (bytes or str) and holds only O(budget)
characters in memory. Both produce the same :class:`Truncated` for the same text.

Known secrets (a truncator given ``runtime.secrets.redactor``, see :mod:`hookcode.secrets`)
never reach a spill file: a streamed output is redacted as it comes (a secret split between
two chunks included), a string when it is spilled. Spill files are created with mode 0600 in
a 0700 directory.

Why a bounded window is enough: the kept head is a prefix of the text no longer than ``max_bytes``
bytes, and the kept tail a suffix no longer than that. So the first (or last) ``max_bytes + 1``
*characters* (each at least one byte) decide the cut: every line that ends inside the window is
the same line in the full text, and the one line the window cuts off is longer than the budget
in both, so it is never kept and stops the scan by the byte limit in both. Both paths therefore
run the same cut code on such windows.
"""

from __future__ import annotations

import codecs
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Literal

from hookcode.spill import (
    CLEANUP_EVERY,
    DEFAULT_SPILL_MAX,
    RETENTION_SECONDS,
    WRITE_SLICE,
    SpillFile,
    cleanup,
    cleanup_due,
    new_spill_path,
    open_spill,
)

if TYPE_CHECKING:
    from hookcode.redaction import Redactor

__all__ = [
    "CLEANUP_EVERY",
    "DEFAULT_ADVICE",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LINES",
    "DEFAULT_SPILL_MAX",
    "PREVIEW_CHARS",
    "RETENTION_SECONDS",
    "Advice",
    "Direction",
    "StreamingOutput",
    "Truncated",
    "Truncator",
    "hint_text",
]

DEFAULT_MAX_LINES = 2000
DEFAULT_MAX_BYTES = 51200
#: what bash's live metadata shows: the first this many characters (StreamingOutput.preview)
PREVIEW_CHARS = 30000
#: how much of the newest output :meth:`StreamingOutput.latest` keeps (a live display's tail)
LATEST_CHARS = 4096

Direction = Literal["head", "tail", "both"]
_DIRECTIONS = ("head", "tail", "both")

_HINT_FIRST = "The tool call succeeded but the output was truncated. Full output saved to: {path}"
#: the advice after the saved file's line, unless the tools offered give their own
#: (``Tool.truncation_hint``, see :meth:`hookcode.registry.Registry.truncation_hint`)
DEFAULT_ADVICE = (
    "Use Grep to search the full content, or Read with offset/limit to view parts of it."
)

#: the advice a cut may give: a text, None for :data:`DEFAULT_ADVICE`, or a function giving
#: either, asked only when the output is cut
Advice = str | None | Callable[[], str | None]

# "surrogatepass": a str with lone surrogates (e.g. from surrogateescape) still counts and
# writes, 3 bytes each, as Node's Buffer.byteLength counts them; the file size equals total_bytes
_ERRORS = "surrogatepass"
# small chunks would otherwise leave thousands of tiny strings in the windows
_MAX_PARTS = 64


@dataclass
class Truncated:
    """The result of truncation: what the model sees, and where the full text is."""

    content: str  # what the model sees
    truncated: bool
    output_path: Path | None  # the spill file, None when not truncated
    total_lines: int
    total_bytes: int


def hint_text(path: Path | str, advice: str | None = None) -> str:
    """The hint after a cut (truncation.md §3): where the full output is, then ``advice``
    (default: :data:`DEFAULT_ADVICE`)."""
    return _HINT_FIRST.format(path=path) + "\n" + (advice or DEFAULT_ADVICE)


def _advice(advice: Advice) -> str | None:
    return advice() if callable(advice) else advice


class Truncator:
    """Cuts outputs for one data dir; spill files go to ``<data_dir>/tool-output/``."""

    def __init__(
        self,
        data_dir: Path,
        redactor: Callable[[], Redactor | None] | None = None,
        *,
        spill_max: int = DEFAULT_SPILL_MAX,
    ) -> None:
        if spill_max <= 0:
            raise ValueError("spill_max must be positive")
        # not created here: a process that never truncates leaves no directory behind
        self.spill_dir: Path = Path(data_dir) / "tool-output"
        #: the current redactor of known secrets (``runtime.secrets.redactor``), if any
        self.redactor = redactor
        #: the most bytes one spill file holds (its head and tail past that)
        self.spill_max = spill_max

    def new_spill_path(self) -> Path:
        """A fresh spill file path; the id sorts by, and encodes, its creation time."""
        return new_spill_path(self.spill_dir)

    def _open_spill(self) -> tuple[Path, SpillFile]:
        return open_spill(self.spill_dir, self.spill_max)

    def _redactor(self) -> Redactor | None:
        found = self.redactor() if self.redactor is not None else None
        return found if found else None

    def truncate(
        self,
        text: str,
        *,
        max_lines: int = DEFAULT_MAX_LINES,
        max_bytes: int = DEFAULT_MAX_BYTES,
        direction: Direction = "head",
        advice: Advice = None,
    ) -> Truncated:
        """Cut ``text`` to the budgets; when cut, the full text goes to a new spill file and
        the hint says where, followed by ``advice`` (:data:`Advice`)."""
        _check(max_lines, max_bytes, direction)
        total_lines = text.count("\n") + 1
        total_bytes = _nbytes(text)
        if total_lines <= max_lines and total_bytes <= max_bytes:
            return Truncated(text, False, None, total_lines, total_bytes)
        redactor = self._redactor()
        if redactor is not None:  # what goes to the file is redacted (the rest: by the caller)
            redacted = redactor.redact(text)
            if redacted is not text:
                text = redacted
                total_lines, total_bytes = text.count("\n") + 1, _nbytes(text)
                if total_lines <= max_lines and total_bytes <= max_bytes:
                    return Truncated(text, False, None, total_lines, total_bytes)
        path, f = self._open_spill()
        try:
            for start in range(0, len(text), WRITE_SLICE):
                f.write(text[start : start + WRITE_SLICE].encode("utf-8", _ERRORS))
        finally:
            f.close()
        head_cap, tail_cap = _windows(direction, max_bytes)
        content = _cut(
            text[:head_cap],
            text[max(0, len(text) - tail_cap) :] if tail_cap else "",
            total_lines,
            total_bytes,
            max_lines=max_lines,
            max_bytes=max_bytes,
            direction=direction,
            hint=hint_text(path, _advice(advice)),
        )
        return Truncated(content, True, path, total_lines, total_bytes)

    def writer(
        self,
        *,
        max_lines: int = DEFAULT_MAX_LINES,
        max_bytes: int = DEFAULT_MAX_BYTES,
        direction: Direction = "head",
        advice: Advice = None,
    ) -> StreamingOutput:
        """A chunk sink whose :meth:`StreamingOutput.finish` equals :meth:`truncate` on the
        concatenated text."""
        return StreamingOutput(
            self,
            max_lines=max_lines,
            max_bytes=max_bytes,
            direction=direction,
            advice=advice,
            redactor=self._redactor(),
        )

    def cleanup_due(self, now: float | None = None, every: float = CLEANUP_EVERY) -> bool:
        """Whether the spill directory's last cleanup (by any process) is more than ``every``
        seconds old (:func:`hookcode.spill.cleanup_due`)."""
        return cleanup_due(self.spill_dir, now, every)

    def cleanup(self, now: float | None = None, retention: float = RETENTION_SECONDS) -> int:
        """Delete spill files older than ``retention`` seconds; returns how many
        (:func:`hookcode.spill.cleanup`)."""
        return cleanup(self.spill_dir, now, retention)


class StreamingOutput:
    """Takes a tool's output as chunks; holds at most the budget in memory.

    Until a limit is crossed everything seen is held (it is within the budget then). The
    moment one is crossed the spill file is opened, the held text written, and every later
    chunk appended directly; from then on only bounded windows are kept: the first characters
    (the head, and the live preview) and the last ones (the tail). Chunks may split UTF-8
    sequences and lines; invalid bytes become U+FFFD, in the result and in the spill file.
    Not thread-safe: one writer per tool call.
    """

    def __init__(
        self,
        truncator: Truncator,
        *,
        max_lines: int = DEFAULT_MAX_LINES,
        max_bytes: int = DEFAULT_MAX_BYTES,
        direction: Direction = "head",
        advice: Advice = None,
        redactor: Redactor | None = None,
    ) -> None:
        _check(max_lines, max_bytes, direction)
        self._truncator = truncator
        # known secrets are replaced as the text comes, before anything keeps or writes it
        self._redact = redactor.stream() if redactor else None
        self._max_lines = max_lines
        self._max_bytes = max_bytes
        self._direction: Direction = direction
        self._advice = advice
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._newlines = 0
        self._bytes = 0
        self._chars = 0
        self._head_cap, self._tail_cap = _windows(direction, max_bytes)
        # one prefix window serves both the head cut and the live preview
        self._prefix = _Prefix(max(self._head_cap, PREVIEW_CHARS))
        self._suffix = _Suffix(self._tail_cap)
        # the newest text, for a live display's last lines (the tail window when it is as big)
        self._latest = self._suffix if self._tail_cap >= LATEST_CHARS else _Suffix(LATEST_CHARS)
        self._held: list[str] = []  # everything, while no limit is crossed
        self._path: Path | None = None
        self._file: SpillFile | None = None
        self._result: Truncated | None = None

    @property
    def total_lines(self) -> int:
        """Lines seen so far, split on "\\n" (so the empty output is one line)."""
        return self._newlines + 1

    @property
    def total_bytes(self) -> int:
        """UTF-8 bytes of the decoded text seen so far."""
        return self._bytes

    @property
    def output_path(self) -> Path | None:
        """The spill file once a limit was crossed, else None."""
        return self._path

    def write(self, chunk: bytes | str) -> None:
        """Add a chunk; bytes may end inside a UTF-8 sequence (the rest comes next)."""
        if self._result is not None:
            raise ValueError("write() after finish()")
        if not chunk:
            return
        if isinstance(chunk, str):
            # a str cannot continue a split byte sequence: what dangles is invalid
            text = self._decoder.decode(b"", final=True) + chunk
            self._decoder.reset()
        else:
            text = self._decoder.decode(chunk)
        if text and self._redact is not None:
            text = self._redact.feed(text)
        if text:
            self._feed(text)

    def _feed(self, text: str) -> None:
        self._newlines += text.count("\n")
        self._chars += len(text)
        self._prefix.add(text)
        self._suffix.add(text)
        if self._latest is not self._suffix:
            self._latest.add(text)
        if self._file is not None:
            data = text.encode("utf-8", _ERRORS)
            self._bytes += len(data)
            self._file.write(data)
            return
        self._bytes += _nbytes(text)
        self._held.append(text)
        if len(self._held) > _MAX_PARTS:
            self._held = ["".join(self._held)]
        self._spill_if_over()

    def _spill_if_over(self) -> None:
        if self._file is None and (
            self.total_lines > self._max_lines or self._bytes > self._max_bytes
        ):
            self._path, self._file = self._truncator._open_spill()
            for part in self._held:
                self._file.write(part.encode("utf-8", _ERRORS))
            self._held = []

    def preview(self, limit_chars: int = PREVIEW_CHARS) -> str:
        """The first ``limit_chars`` characters seen so far, plus "\\n\\n..." if there are more."""
        if limit_chars > self._prefix.cap:
            raise ValueError(f"preview keeps at most {self._prefix.cap} characters")
        head = self._prefix.text()[:limit_chars]
        return head + "\n\n..." if self._chars > limit_chars else head

    def latest(self, limit_chars: int = LATEST_CHARS) -> str:
        """The last ``limit_chars`` characters seen so far (redacted like the rest): what a live
        display shows of a running command whose output outgrew :meth:`preview`."""
        if limit_chars > LATEST_CHARS:
            raise ValueError(f"latest keeps at most {LATEST_CHARS} characters")
        text = self._latest.text()
        return text[max(0, len(text) - limit_chars) :]

    def finish(self) -> Truncated:
        """Flush, close the spill file and return the result; later calls return it again."""
        if self._result is not None:
            return self._result
        try:
            rest = self._decoder.decode(b"", final=True)
            if self._redact is not None:
                rest = (
                    self._redact.feed(rest) + self._redact.flush() if rest else self._redact.flush()
                )
            if rest:
                self._feed(rest)
            self._spill_if_over()  # max_lines=0: even no output is one line too many
        finally:
            # closed whatever happens, so the file holds all that was written
            if self._file is not None:
                self._file.close()
        if self._path is None:
            text = "".join(self._held)
            self._result = Truncated(text, False, None, self.total_lines, self._bytes)
        else:
            content = _cut(
                self._prefix.text()[: self._head_cap],
                self._suffix.text(),
                self.total_lines,
                self._bytes,
                max_lines=self._max_lines,
                max_bytes=self._max_bytes,
                direction=self._direction,
                hint=hint_text(self._path, _advice(self._advice)),
            )
            self._result = Truncated(content, True, self._path, self.total_lines, self._bytes)
        self._held = []
        return self._result

    def __enter__(self) -> StreamingOutput:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.finish()


class _Prefix:
    """The first ``cap`` characters of a stream."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._parts: list[str] = []
        self._len = 0

    def add(self, text: str) -> None:
        if self._len >= self.cap:
            return
        piece = text[: self.cap - self._len]
        self._parts.append(piece)
        self._len += len(piece)
        if len(self._parts) > _MAX_PARTS:
            self._parts = ["".join(self._parts)]

    def text(self) -> str:
        return "".join(self._parts)


class _Suffix:
    """The last ``cap`` characters of a stream (nothing when ``cap`` is 0)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._parts: deque[str] = deque()
        self._len = 0

    def add(self, text: str) -> None:
        if not self.cap:
            return
        if len(text) >= self.cap:
            # this chunk alone fills the window: drop everything before it
            self._parts.clear()
            text = text[len(text) - self.cap :]
            self._len = 0
        self._parts.append(text)
        self._len += len(text)
        # drop whole parts the window no longer needs; the oldest kept one may overhang
        while self._len - len(self._parts[0]) >= self.cap:
            self._len -= len(self._parts.popleft())
        if len(self._parts) > _MAX_PARTS:
            joined = "".join(self._parts)[-self.cap :]
            self._parts = deque([joined])
            self._len = len(joined)

    def text(self) -> str:
        joined = "".join(self._parts)
        return joined[max(0, len(joined) - self.cap) :]


def _check(max_lines: int, max_bytes: int, direction: str) -> None:
    if direction not in _DIRECTIONS:
        raise ValueError(f"direction must be one of {_DIRECTIONS}, not {direction!r}")
    if max_lines < 0 or max_bytes < 0:
        raise ValueError("max_lines and max_bytes must not be negative")


def _nbytes(text: str) -> int:
    # ASCII (the common case) needs no encoding: one byte per character
    return len(text) if text.isascii() else len(text.encode("utf-8", _ERRORS))


def _windows(direction: str, max_bytes: int) -> tuple[int, int]:
    """How many first and last characters decide the cut (see the module docstring)."""
    if direction == "head":
        return max_bytes + 1, 0
    if direction == "tail":
        return 0, max_bytes + 1
    half = max_bytes // 2
    return half + 1, half + 1


def _keep(
    lines: Iterable[str], max_lines: int, max_bytes: int, *, sep_first: bool = False
) -> tuple[list[str], int, bool]:
    """§2.3 over ``lines`` in the order given: (kept lines, kept bytes, stopped by the byte
    limit). Each kept line after the first pays one separator; ``sep_first``: the first too."""
    kept: list[str] = []
    used = 0
    for line in lines:
        if len(kept) >= max_lines:
            return kept, used, False
        size = _nbytes(line) + (1 if kept or sep_first else 0)
        if used + size > max_bytes:
            return kept, used, True
        kept.append(line)
        used += size
    return kept, used, False


def _keep_tail(
    lines: Sequence[str], max_lines: int, max_bytes: int, *, sep_first: bool = False
) -> tuple[list[str], int, bool]:
    kept, used, hit = _keep(reversed(lines), max_lines, max_bytes, sep_first=sep_first)
    kept.reverse()
    return kept, used, hit


def _cut(
    head_src: str,
    tail_src: str,
    total_lines: int,
    total_bytes: int,
    *,
    max_lines: int,
    max_bytes: int,
    direction: str,
    hint: str,
) -> str:
    """The model-visible text of a truncated output, from its first and last windows."""
    if direction == "head":
        kept, used, hit = _keep(head_src.split("\n"), max_lines, max_bytes)
        removed = _removed(hit, total_lines, total_bytes, len(kept), used)
        return "\n".join(kept) + f"\n\n...{removed} truncated...\n\n{hint}"
    if direction == "tail":
        kept, used, hit = _keep_tail(tail_src.split("\n"), max_lines, max_bytes)
        removed = _removed(hit, total_lines, total_bytes, len(kept), used)
        return f"...{removed} truncated...\n\n{hint}\n\n" + "\n".join(kept)
    # both: half the budgets each. The tail also pays for the newline before each of its
    # lines, so head + tail never add up to more than the whole budget; since the output is
    # over budget, they can never meet, and at least one line is always left out.
    half_lines, half_bytes = max_lines // 2, max_bytes // 2
    head, head_used, head_hit = _keep(head_src.split("\n"), half_lines, half_bytes)
    tail, tail_used, tail_hit = _keep_tail(
        tail_src.split("\n"), half_lines, half_bytes, sep_first=True
    )
    removed = _removed(
        head_hit or tail_hit, total_lines, total_bytes, len(head) + len(tail), head_used + tail_used
    )
    return "\n".join(head) + f"\n\n...{removed} truncated...\n\n{hint}\n\n" + "\n".join(tail)


def _removed(hit_bytes: bool, total_lines: int, total_bytes: int, lines: int, used: int) -> str:
    """§2.4: "<removed> <unit>"."""
    if hit_bytes:
        return f"{total_bytes - used} bytes"
    return f"{total_lines - lines} lines"
