"""The patch format of ``apply_patch``: parsing and applying, pure (no file system).

reference/tools.md §7, reading the lenient form the way Codex does where ARCHITECTURE.md says so
(indented headers, a first chunk without ``@@``, ``*** End of File``, line endings)::

    *** Begin Patch
    *** Add File: path/new.txt
    +first line
    *** Delete File: path/old.txt
    *** Update File: path/file.py
    *** Move to: path/renamed.py
    @@ def f():
     context
    -old
    +new
    *** End of File
    *** End Patch

:func:`parse` turns the text into hunks (:class:`AddFile`, :class:`DeleteFile`,
:class:`UpdateFile`); :func:`apply_chunks` computes the new text of one file from its current
text and the chunks of an update. Errors carry the message the model reads, without the tool's
``apply_patch verification failed: `` prefix (see :class:`EmptyPatch` for the exception).

Choices where the contract leaves room:

- A context line (`` x``) keeps the file's own line, text and line ending alike, even when the
  tolerant matching passes found it (the patch's spelling is only used for lines it adds).
- A line inside a chunk that is indented and starts with ``***`` ends the chunk only when it is
  a header or marker (``*** Update File: ...``, ``*** End of File``, ...): `` ***`` is a valid
  context line for a file holding ``***``.
- A ``***`` line that is no header or marker (``*** Frobnicate File: x``) fails the whole patch,
  naming the line (Codex's message), where the reference skips it: the issue asks for a clear
  message for unknown headers, and skipping would apply the rest of a patch the model got wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = [
    "AddFile",
    "Chunk",
    "DeleteFile",
    "EmptyPatch",
    "Hunk",
    "PatchError",
    "UpdateFile",
    "apply_chunks",
    "normalize",
    "parse",
    "seek",
    "split_lines",
]

BEGIN = "*** Begin Patch"
END = "*** End Patch"
ADD = "*** Add File:"
DELETE = "*** Delete File:"
UPDATE = "*** Update File:"
MOVE = "*** Move to:"
END_OF_FILE = "*** End of File"


class PatchError(Exception):
    """The patch cannot be parsed or applied; ``str(error)`` is the message."""


class EmptyPatch(PatchError):
    """Nothing between the markers (the tool says ``patch rejected: empty patch``)."""

    def __init__(self) -> None:
        super().__init__("empty patch")


@dataclass
class Chunk:
    """One ``@@`` chunk of an update.

    ``new_source[j]`` is the index in ``old_lines`` of the context line that new line ``j``
    repeats, or None for an added line.
    """

    context: str | None = None
    old_lines: list[str] = field(default_factory=list)
    new_lines: list[str] = field(default_factory=list)
    new_source: list[int | None] = field(default_factory=list)
    end_of_file: bool = False

    def add_context(self, line: str) -> None:
        self.old_lines.append(line)
        self.new_lines.append(line)
        self.new_source.append(len(self.old_lines) - 1)

    def add_old(self, line: str) -> None:
        self.old_lines.append(line)

    def add_new(self, line: str) -> None:
        self.new_lines.append(line)
        self.new_source.append(None)


@dataclass
class AddFile:
    path: str
    contents: str  # the ``+`` lines joined by "\n" (no final newline added yet)
    move_path: None = None


@dataclass
class DeleteFile:
    path: str
    move_path: None = None


@dataclass
class UpdateFile:
    path: str
    move_path: str | None = None
    chunks: list[Chunk] = field(default_factory=list)


Hunk = AddFile | DeleteFile | UpdateFile

# ---------------------------------------------------------------------------------------------
# parsing
# ---------------------------------------------------------------------------------------------

_HEREDOC = re.compile(r"^(?:cat\s+)?<<\s*(['\"]?)(\w+)\1[ \t]*\r?\n(.*)\r?\n\2[ \t]*$", re.DOTALL)


def strip_heredoc(text: str) -> str:
    """The body of ``[cat ]<<WORD`` / ``<<'WORD'`` / ``<<"WORD"`` ... ``WORD``, else ``text``."""
    match = _HEREDOC.match(text)
    return match.group(3) if match else text


def _header(line: str) -> tuple[str, str] | None:
    """(kind, path) of an Add/Delete/Update header (leading whitespace allowed), else None.
    An empty path voids the header."""
    stripped = line.strip()
    for prefix, kind in ((ADD, "add"), (DELETE, "delete"), (UPDATE, "update")):
        if stripped.startswith(prefix):
            path = stripped[len(prefix) :].strip()
            return (kind, path) if path else None
    return None


def _is_marker(line: str) -> bool:
    stripped = line.strip()
    return stripped in (BEGIN, END, END_OF_FILE) or stripped.startswith((ADD, DELETE, UPDATE, MOVE))


def _ends_section(line: str) -> bool:
    """A line starting with ``***`` (an indented one only if it is a header or marker)."""
    return line.startswith("***") or (line.lstrip().startswith("***") and _is_marker(line))


def parse(text: str) -> list[Hunk]:
    """The hunks of a patch, in order. Raises :class:`PatchError` (or :class:`EmptyPatch`)."""
    body = strip_heredoc(text.strip())
    lines = [line[:-1] if line.endswith("\r") else line for line in body.split("\n")]
    begin = next((i for i, line in enumerate(lines) if line.strip() == BEGIN), -1)
    end = next((i for i, line in enumerate(lines) if line.strip() == END), -1)
    if begin < 0 or end < 0 or begin >= end:
        raise PatchError("Invalid patch format: missing Begin/End markers")
    inner = lines[begin + 1 : end]
    if not any(line.strip() for line in inner):
        raise EmptyPatch()

    hunks: list[Hunk] = []
    i = 0
    while i < len(inner):
        header = _header(inner[i])
        i += 1
        if header is None:
            stripped = inner[i - 1].strip()
            if stripped.startswith("***") and not _is_marker(stripped):
                raise PatchError(
                    f"'{stripped}' is not a valid hunk header. Valid hunk headers: "
                    "'*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'"
                )
            continue  # outside a section: skipped
        kind, path = header
        if kind == "add":
            contents: list[str] = []
            while i < len(inner) and not _ends_section(inner[i]):
                if inner[i].startswith("+"):
                    contents.append(inner[i][1:])
                i += 1
            hunks.append(AddFile(path, "\n".join(contents)))
        elif kind == "delete":
            hunks.append(DeleteFile(path))
        else:
            move_path = None
            if i < len(inner) and inner[i].strip().startswith(MOVE):
                move_path = inner[i].strip()[len(MOVE) :].strip() or None
                if move_path is not None:
                    i += 1
            i, chunks = _parse_chunks(inner, i)
            if not chunks and move_path is None:
                raise PatchError(f"Update file hunk for path '{path}' is empty")
            hunks.append(UpdateFile(path, move_path, chunks))
    if not hunks:
        raise PatchError("no hunks found")
    return hunks


def _parse_chunks(lines: list[str], i: int) -> tuple[int, list[Chunk]]:
    """The chunks of an Update section starting at line ``i``; returns (next line, chunks)."""
    chunks: list[Chunk] = []
    current: Chunk | None = None
    while i < len(lines):
        line = lines[i]
        if line.strip() == END_OF_FILE:
            if current is not None:
                current.end_of_file = True
                current = None
        elif _ends_section(line):
            break
        elif line.startswith("@@"):
            current = Chunk(context=line[2:].strip() or None)
            chunks.append(current)
        elif line[:1] in (" ", "-", "+"):
            if current is None and not chunks:
                # the first chunk may omit its "@@" line (as Codex reads it)
                current = Chunk()
                chunks.append(current)
            if current is not None:
                if line[0] == " ":
                    current.add_context(line[1:])
                elif line[0] == "-":
                    current.add_old(line[1:])
                else:
                    current.add_new(line[1:])
        # any other line (an empty one included) is ignored
        i += 1
    return i, chunks


# ---------------------------------------------------------------------------------------------
# applying
# ---------------------------------------------------------------------------------------------

_PUNCTUATION = str.maketrans(
    {
        **dict.fromkeys("\u2018\u2019\u201a\u201b", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f", '"'),
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
        "\u2026": "...",
        **dict.fromkeys(
            "\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000", " "
        ),
    }
)


def normalize(line: str) -> str:
    """Pass 4's key: both ends trimmed, typographic quotes, dashes, ellipsis and spaces folded
    to ASCII."""
    return line.strip().translate(_PUNCTUATION).strip()


def _exact(line: str) -> str:
    return line


#: the matching passes, in order; each is a full scan before the next
PASSES = (_exact, str.rstrip, str.strip, normalize)


class _Keyed:
    """The file's lines under each pass's key, computed on first use."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self._cache: dict[int, list[str]] = {}

    def get(self, index: int) -> list[str]:
        keyed = self._cache.get(index)
        if keyed is None:
            key = PASSES[index]
            keyed = self._cache[index] = [key(line) for line in self.lines]
        return keyed


def seek(
    lines: list[str] | _Keyed, pattern: list[str], start: int, eof: bool = False
) -> int | None:
    """The index where ``pattern`` occurs in ``lines`` at or after ``start``, trying each
    matching pass over the whole range before the next; ``eof``: the very end is tried first.
    None when not found."""
    keyed = lines if isinstance(lines, _Keyed) else _Keyed(lines)
    n, m = len(keyed.lines), len(pattern)
    if m == 0:
        return start
    if m > n:
        return None
    for index, key in enumerate(PASSES):
        candidates = keyed.get(index)
        wanted = [key(line) for line in pattern]
        first = wanted[0]
        if eof and n - m >= start and candidates[n - m : n] == wanted:
            return n - m
        for i in range(start, n - m + 1):
            if candidates[i] == first and candidates[i : i + m] == wanted:
                return i
    return None


def split_lines(text: str) -> tuple[list[str], list[str]]:
    """(contents, endings): ``text`` split on ``\\n`` only; an ending is ``\\r\\n``, ``\\n``
    or ``""`` (a last line without newline). The empty element after a final newline is
    dropped."""
    parts = text.split("\n")
    contents: list[str] = []
    endings: list[str] = []
    for part in parts[:-1]:
        if part.endswith("\r"):
            contents.append(part[:-1])
            endings.append("\r\n")
        else:
            contents.append(part)
            endings.append("\n")
    if parts[-1]:
        contents.append(parts[-1])
        endings.append("")
    return contents, endings


def apply_chunks(text: str, chunks: list[Chunk], path: str) -> str:
    """The new text of a file whose current text (its own line endings, no BOM) is ``text``.

    New lines take the file's style (CRLF if it has any CRLF); untouched and context lines
    keep their own; the result ends with a newline unless it is empty. ``path`` names the
    file in error messages."""
    contents, endings = split_lines(text)
    newline = "\r\n" if "\r\n" in text else "\n"
    keyed = _Keyed(contents)
    replacements: list[tuple[int, int, list[tuple[str, str]]]] = []
    line_index = 0
    for chunk in chunks:
        if chunk.context is not None:
            found = seek(keyed, [chunk.context], line_index)
            if found is None:
                raise PatchError(f"Failed to find context '{chunk.context}' in {path}")
            line_index = found + 1
        if not chunk.old_lines:
            # a pure addition goes to the end of the file, whatever its context
            added = [(line, newline) for line in chunk.new_lines]
            replacements.append((len(contents), 0, added))
            continue
        old, new, source = chunk.old_lines, chunk.new_lines, chunk.new_source
        found = seek(keyed, old, line_index, chunk.end_of_file)
        if found is None and old[-1] == "":
            old = old[:-1]
            if new and new[-1] == "":
                new, source = new[:-1], source[:-1]
            found = seek(keyed, old, line_index, chunk.end_of_file)
        if found is None:
            raise PatchError(
                f"Failed to find expected lines in {path}:\n" + "\n".join(chunk.old_lines)
            )
        replacement: list[tuple[str, str]] = []
        for line, origin in zip(new, source, strict=True):
            if origin is not None and origin < len(old):
                # a context line: the file's own line, untouched
                replacement.append((contents[found + origin], endings[found + origin]))
            else:
                replacement.append((line, newline))
        replacements.append((found, len(old), replacement))
        line_index = found + len(old)

    result = list(zip(contents, endings, strict=True))
    # last to first; of two insertions at one place the later one is applied first, so the
    # earlier one ends up before it
    for start, length, replacement in reversed(sorted(replacements, key=lambda r: r[0])):
        result[start : start + length] = replacement
    return "".join(line + (ending or newline) for line, ending in result)
