"""read: a file (paged, streamed), a directory listing, an image or a PDF (reference/tools.md §3).

Order of a call: resolve the path (against the working directory) -> stat (a missing path is
fine so far) -> ``external_directory`` when the target is outside the project -> ask ``read``
-> existence ("Did you mean ...") -> dispatch: directory listing, image/PDF attachment, binary
refusal, or text.

Text is streamed: the file is read in chunks, only the kept lines are held, and the rest is
scanned (newlines counted) without being stored, so reading 2000 lines near the end of a
multi-GB file stays within a few MB. The tool sets ``metadata["truncated"]`` itself, so the
pipeline's truncation layer leaves its output alone.

Decisions where the reference leaves room:

- ``read`` is asked with patterns ``[<absolute path>]``; when symlinks make the real path differ,
  the real path is asked about too (a symlink cannot dodge a ``*.env`` rule). The
  ``external_directory`` check is core's (``ctx.ask_external_directory_sync``: real paths).
- Instruction files (``AGENTS.md``, ``CLAUDE.md``, ``CONTEXT.md``; the first found in each
  directory): walking from the file's directory upwards, stopping at the first directory that
  is the working directory or one of its ancestors up to the worktree. Those are the directories
  whose instruction files the system prompt already carries (the "global" ones), so they are
  never repeated here; a file outside the project gets none. Paths are real paths.
- "Already loaded in this session" is a per-session set kept in the runtime's stash (so it
  dies with the runtime), seeded the first time from the ``loaded`` metadata of the session's
  stored ``read`` parts, so a resumed session does not get them again. A path is claimed before the result is returned, so
  parallel reads in one session attach it once.
- Directory entries are sorted case-insensitively (ties by code point), approximating the
  reference's locale order independently of the process locale. Entries the ``read`` rules
  deny are not listed (nor counted); instruction files are attached only where the ``read``
  rules allow them.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

from hookcode import Attachment, ToolContext, ToolError, ToolResult, hookimpl, tool
from hookcode.errors import ToolAborted
from hookcode.stash import StashKey

__all__ = ["read"]

DEFAULT_LIMIT = 2000
MAX_LINE_LENGTH = 2000
MAX_LINE_SUFFIX = f"... (line truncated to {MAX_LINE_LENGTH} chars)"
MAX_BYTES = 50 * 1024
MAX_BYTES_LABEL = "50 KB"
PREVIEW_LINES = 20
#: bytes read at a time while streaming a text file
CHUNK_SIZE = 1 << 20
#: bytes kept of one line: enough for MAX_LINE_LENGTH characters (<= 4 bytes each) plus a cut
_LINE_BYTES = MAX_LINE_LENGTH * 4 + 4
#: bytes sniffed for the binary check
SNIFF_BYTES = 4096
INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md", "CONTEXT.md")

BINARY_EXTENSIONS = frozenset(
    {
        ".zip",
        ".tar",
        ".gz",
        ".exe",
        ".dll",
        ".so",
        ".class",
        ".jar",
        ".war",
        ".7z",
        ".doc",
        ".docx",
        ".xls",
        ".xlsx",
        ".ppt",
        ".pptx",
        ".odt",
        ".ods",
        ".odp",
        ".bin",
        ".dat",
        ".obj",
        ".o",
        ".a",
        ".lib",
        ".wasm",
        ".pyc",
        ".pyo",
    }
)
#: read as text although some tables call them images or schemas
TEXT_EXTENSIONS = frozenset({".svg", ".svgz", ".fbs"})
_ATTACHMENT_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".bmp": "image/bmp",
    ".ico": "image/vnd.microsoft.icon",
    ".tif": "image/tiff",
    ".tiff": "image/tiff",
    ".avif": "image/avif",
    ".heic": "image/heic",
    ".heif": "image/heif",
    ".pdf": "application/pdf",
}

DESCRIPTION = """\
Read a file or a directory from the local filesystem.

Usage:
- filePath should be an absolute path; a relative path is resolved against the working directory.
- By default up to 2000 lines are returned from the start of the file. Use offset (1-based line
  number) and limit to page through longer files; the output says how to continue.
- Each line is returned as `<line number>: <content>`. Lines longer than 2000 characters are cut.
- A directory returns its entries, one per line, with a trailing `/` on subdirectories.
- Images and PDFs are returned as attachments. Binary files cannot be read.
- Reading several files that may be useful at once is better done with parallel calls.
- Avoid re-reading a file you have just read unless it may have changed."""


@tool(name="read", description=DESCRIPTION, asks_permission=True, aliases={"file_path": "filePath"})
def read(
    ctx: ToolContext,
    file_path: Annotated[str, "The absolute path to the file or directory to read"],
    offset: Annotated[
        int | None, "The line number to start reading from (1-indexed; default 1)"
    ] = None,
    limit: Annotated[int | None, "The maximum number of lines to read (default 2000)"] = None,
) -> ToolResult:
    if offset is not None and offset < 1:
        raise ToolError("offset must be greater than or equal to 1")
    if limit is not None and limit < 1:
        raise ToolError("limit must be greater than or equal to 1")
    start = offset or 1
    count = limit or DEFAULT_LIMIT

    path = ctx.resolve(file_path)
    title = os.path.relpath(path, ctx.worktree).replace(os.sep, "/")
    try:
        st: os.stat_result | None = path.stat()
    except (OSError, ValueError):
        st = None
    is_dir = st is not None and stat.S_ISDIR(st.st_mode)

    ctx.ask_external_directory_sync(path, "directory" if is_dir else "file")
    patterns = [str(path)]
    real = os.path.realpath(path)
    if real != str(path):
        patterns.append(real)
    ctx.ask_sync("read", patterns, ["*"], {"filepath": str(path)})

    if st is None:
        raise ToolError(_not_found(path))
    if is_dir:
        return _directory(ctx, path, title, start, count)
    if not stat.S_ISREG(st.st_mode):  # a FIFO or a device would block or never end
        raise ToolError(f"Cannot read {path}: not a regular file")

    mime = _attachment_mime(path)
    if mime is not None:
        kind = "PDF" if mime == "application/pdf" else "Image"
        message = f"{kind} read successfully"
        import base64

        data = base64.b64encode(path.read_bytes()).decode("ascii")
        return ToolResult(
            title=title,
            output=message,
            metadata={"preview": message, "truncated": False, "loaded": []},
            attachments=[
                Attachment(mime=mime, url=f"data:{mime};base64,{data}", filename=path.name)
            ],
        )

    if _is_binary(path):
        raise ToolError(f"Cannot read binary file: {path}")

    text = _read_text(path, start, count, ctx)
    if text.total is not None and text.total < start and not (text.total == 0 and start == 1):
        raise ToolError(f"Offset {start} is out of range for this file ({text.total} lines)")
    ctx.files.record(path)

    last = start + len(text.lines) - 1
    if text.capped:
        footer = (
            f"(Output capped at {MAX_BYTES_LABEL}. Showing lines {start}-{last}. "
            f"Use offset={last + 1} to continue.)"
        )
    elif text.more:
        footer = (
            f"(Showing lines {start}-{last} of {text.total}. Use offset={last + 1} to continue.)"
        )
    else:
        footer = f"(End of file - total {text.total} lines)"
    body = "\n".join(f"{start + i}: {line}" for i, line in enumerate(text.lines))
    output = f"<path>{path}</path>\n<type>file</type>\n<content>\n{body}\n\n{footer}\n</content>"

    loaded: list[str] = []
    for instruction, content in _instructions(ctx, path):
        output += (
            f"\n\n<system-reminder>\nInstructions from: {instruction}\n"
            f"{content}\n</system-reminder>"
        )
        loaded.append(instruction)

    return ToolResult(
        title=title,
        output=output,
        metadata={
            "preview": "\n".join(text.lines[:PREVIEW_LINES]),
            "truncated": text.capped or text.more,
            "loaded": loaded,
        },
    )


@hookimpl
def register_tools(register: Callable[..., None]) -> None:
    register(read)


# ---------------------------------------------------------------------------------------------
# missing paths and directories
# ---------------------------------------------------------------------------------------------


def _not_found(path: Path) -> str:
    directory = path.parent
    base = path.name.lower()
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        names = []
    suggestions = [
        str(directory / name) for name in names if base in name.lower() or name.lower() in base
    ][:3]
    if suggestions:
        return f"File not found: {path}\n\nDid you mean one of these?\n" + "\n".join(suggestions)
    return f"File not found: {path}"


def _directory(ctx: ToolContext, path: Path, title: str, start: int, count: int) -> ToolResult:
    rules = ctx.read_rules()
    under = None if rules.allows_everything else rules.under(path)
    entries: list[str] = []
    with os.scandir(path) as scan:
        for entry in scan:
            if under is not None:
                # an entry the read rules deny is not listed (nor counted); a link is judged
                # where it leads too
                link = entry.is_symlink()
                action = rules(entry.path) if link else under(entry.name)
                if action == "deny":
                    continue
            try:
                is_dir = entry.is_dir()  # follows symlinks: a link to a directory counts
            except OSError:
                is_dir = False
            entries.append(entry.name + "/" if is_dir else entry.name)
    entries.sort(key=lambda name: (name.casefold(), name))
    shown = entries[start - 1 : start - 1 + count]
    truncated = start - 1 + len(shown) < len(entries)
    if truncated:
        footer = (
            f"(Showing {len(shown)} of {len(entries)} entries. "
            f"Use 'offset' parameter to read beyond entry {start + len(shown)})"
        )
    else:
        footer = f"({len(entries)} entries)"
    output = "\n".join(
        [
            f"<path>{path}</path>",
            "<type>directory</type>",
            "<entries>",
            *shown,
            "",
            footer,
            "</entries>",
        ]
    )
    return ToolResult(
        title=title,
        output=output,
        metadata={
            "preview": "\n".join(shown[:PREVIEW_LINES]),
            "truncated": truncated,
            "loaded": [],
        },
    )


# ---------------------------------------------------------------------------------------------
# file kinds
# ---------------------------------------------------------------------------------------------


def _extension(path: Path) -> str:
    """The last ``.ext`` of the name, lower case ("" when none; ``.bashrc`` is its own)."""
    name = path.name
    dot = name.rfind(".")
    return name[dot:].lower() if dot >= 0 and dot < len(name) - 1 else ""


def _attachment_mime(path: Path) -> str | None:
    """``image/*`` (but not SVG or ``.fbs``) or ``application/pdf`` by extension, else None."""
    ext = _extension(path)
    if not ext or ext in TEXT_EXTENSIONS:
        return None
    known = _ATTACHMENT_TYPES.get(ext)
    if known is not None:
        return known
    guessed = _mime_table().get(ext)
    if guessed and guessed.startswith("image/") and guessed != "image/svg+xml":
        return guessed
    return None


_MIME_TABLE: dict[str, str] | None = None


def _mime_table() -> dict[str, str]:
    """Python's built-in extension table (not the system's mime.types: same answer everywhere)."""
    global _MIME_TABLE
    if _MIME_TABLE is None:
        import mimetypes

        _MIME_TABLE = dict(mimetypes.MimeTypes(filenames=()).types_map[True])
    return _MIME_TABLE


def _is_binary(path: Path) -> bool:
    if _extension(path) in BINARY_EXTENSIONS:
        return True
    with open(path, "rb") as handle:
        head = handle.read(SNIFF_BYTES)
    if not head:
        return False  # an empty file is text
    if b"\x00" in head:
        return True
    control = sum(1 for byte in head if byte < 9 or 13 < byte < 32)
    return control / len(head) > 0.3


# ---------------------------------------------------------------------------------------------
# text, streamed
# ---------------------------------------------------------------------------------------------


class _Text:
    """What ``_read_text`` kept and counted (a plain class: a dataclass costs at import)."""

    __slots__ = ("capped", "lines", "more", "total")

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.total: int | None = None  # None when the byte cap stopped the scan
        self.capped = False  # the 50 KB cap was hit
        self.more = False  # lines remain after the kept ones


def _read_text(path: Path, start: int, count: int, ctx: ToolContext) -> _Text:
    """Skip ``start - 1`` lines, keep up to ``count`` (each line cut at MAX_LINE_LENGTH, the
    whole kept text at MAX_BYTES), count the rest. Lines end at ``\\n``; a trailing ``\\r``
    is dropped; invalid UTF-8 is replaced. Memory: one chunk plus the kept lines."""
    result = _Text()
    kept = result.lines
    size = 0  # bytes of the kept text (lines plus separators)
    skip = start - 1
    done = 0  # lines completed so far
    line = bytearray()  # the current kept line, at most _LINE_BYTES
    overflow = False  # the current kept line has more bytes than `line` holds
    ends_with_newline = True  # nothing read, or the last byte read was "\n"
    mode = "skip" if skip else "keep"

    def finish() -> bool:
        """Close the current kept line; False when the byte cap stops the read."""
        nonlocal size, overflow
        raw = bytes(line)
        if not overflow and raw.endswith(b"\r"):
            raw = raw[:-1]
        text = raw.decode("utf-8", "replace")
        if len(text) > MAX_LINE_LENGTH:
            text = text[:MAX_LINE_LENGTH] + MAX_LINE_SUFFIX
        line.clear()
        overflow = False
        cost = len(text.encode("utf-8")) + (1 if kept else 0)
        if size + cost > MAX_BYTES:
            result.capped = result.more = True
            return False
        kept.append(text)
        size += cost
        return True

    with open(path, "rb") as handle:
        while True:
            chunk = handle.read(CHUNK_SIZE)
            if not chunk:
                break
            if ctx.abort.is_set():
                raise ToolAborted()
            ends_with_newline = chunk.endswith(b"\n")
            pos, end = 0, len(chunk)
            while pos < end:
                if mode == "skip":
                    need = skip - done
                    found = chunk.count(b"\n", pos)
                    if found < need:
                        done += found
                        break
                    for _ in range(need):
                        pos = chunk.index(b"\n", pos) + 1
                    done += need
                    mode = "keep"
                elif mode == "keep":
                    newline = chunk.find(b"\n", pos)
                    stop = end if newline < 0 else newline
                    room = _LINE_BYTES - len(line)
                    if stop - pos > room:
                        line += chunk[pos : pos + room]
                        overflow = True
                    else:
                        line += chunk[pos:stop]
                    if newline < 0:
                        break
                    pos = newline + 1
                    done += 1
                    if not finish():
                        return result
                    if len(kept) >= count:
                        mode = "count"
                else:  # count the lines after the kept ones
                    done += chunk.count(b"\n", pos)
                    break
        if not ends_with_newline:  # a last line without a newline
            done += 1
            if mode == "keep" and not finish():
                return result
    result.total = done
    result.more = done > start - 1 + len(kept)
    return result


# ---------------------------------------------------------------------------------------------
# instruction files
# ---------------------------------------------------------------------------------------------

#: per session id: the instruction files already given to it
_LOADED = StashKey[dict[str, set[str]]]()
_LOADED_LOCK = threading.Lock()


def _loaded(ctx: ToolContext) -> set[str]:
    """The instruction files already given to this session (call with _LOADED_LOCK held)."""
    sessions = ctx.runtime.stash.setdefault(_LOADED, {})
    seen = sessions.get(ctx.session_id)
    if seen is None:
        seen = sessions[ctx.session_id] = set()
        try:
            parts = ctx.runtime.store.tool_parts(ctx.session_id)
        except Exception:
            parts = []
        for part in parts:
            metadata = part.metadata if isinstance(part.metadata, dict) else {}
            if part.tool == "read" and isinstance(metadata.get("loaded"), list):
                seen.update(p for p in metadata["loaded"] if isinstance(p, str))
    return seen


def _instruction_candidates(ctx: ToolContext, path: Path) -> list[Path]:
    """The first instruction file of each directory between the file and the project's
    system-prompt directories (nearest first); none for a file outside the project."""
    real = Path(os.path.realpath(path))
    cwd, worktree = Path(ctx.cwd), Path(ctx.worktree)
    stops = {cwd}
    if worktree != Path("/") and (worktree == cwd or worktree in cwd.parents):
        for directory in (cwd, *cwd.parents):
            stops.add(directory)
            if directory == worktree:
                break
    walk: list[Path] = []
    for directory in real.parents:
        if directory in stops:
            break
        walk.append(directory)
    else:
        return []  # never reached the project
    found: list[Path] = []
    for directory in walk:
        for name in INSTRUCTION_FILES:
            candidate = directory / name
            if candidate.is_file():
                if candidate != real:
                    found.append(candidate)
                break
    return found


def _instructions(ctx: ToolContext, path: Path) -> list[tuple[str, str]]:
    candidates = _instruction_candidates(ctx, path)
    if not candidates:
        return []
    rules = ctx.read_rules()
    if not rules.allows_everything:  # attached unasked: only what the read rules allow
        candidates = [c for c in candidates if rules(c) == "allow"]
    with _LOADED_LOCK:
        seen = _loaded(ctx)
        fresh = [str(c) for c in candidates if str(c) not in seen]
        seen.update(fresh)
    out: list[tuple[str, str]] = []
    for instruction in fresh:
        try:
            content = Path(instruction).read_text(encoding="utf-8", errors="replace")
        except OSError:
            with _LOADED_LOCK:
                seen.discard(instruction)
            continue
        out.append((instruction, content.rstrip("\n")))
    return out
