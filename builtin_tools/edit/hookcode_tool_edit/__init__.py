"""edit: replace a string in a file (reference/tools.md §5).

Checks, in order: an empty ``filePath`` -> ``filePath is required``; ``oldString == newString``
-> ``No changes to apply: ...``; ``external_directory`` (file; symlinks followed, dangling ones
too); then, holding the path lock until the write is done: the write target
(:func:`hookcode.writes.write_target`: a symlink is edited through, its target written and the
link kept; a path under a dangling directory link is refused); a directory -> ``Path is a
directory, not a file: <abs>``; an existing file must have been read in this session and not
modified since (the read-before-write rule, §24, which also covers an empty ``oldString`` over
an existing file — the reference skips it there); a missing file -> ``File <abs> not found``
unless ``oldString`` is empty (create); the replacement (:mod:`hookcode_tool_edit.replace`);
one ``edit`` ask with the diff (:func:`hookcode.writes.ask_edit`: the path as spelled and as
resolved; a protected path is marked and asks even where ``edit`` is allowed); the write;
``file.edited``; the read time is recorded.

Line endings: the file is CRLF if it has any ``\\r\\n``; ``oldString`` and ``newString`` are
normalised to LF and then converted to the file's style before matching, so the file keeps its
style. The write is atomic and keeps the file's encoding, BOM and mode; bytes outside the
replaced text are written back as they were. A new file gets ``newString`` as given.

The helpers below (:func:`load`, :func:`apply_edit`, :func:`commit`) are shared with the
``multiedit`` tool, which applies several edits in memory before one ask and one write.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from hookcode import ToolContext, ToolError, ToolResult, hookimpl, tool

if TYPE_CHECKING:
    from hookcode.fileio import PendingWrites, TextFile

__all__ = [
    "OUTPUT",
    "Target",
    "apply_edit",
    "commit",
    "edit",
    "load",
    "relative",
    "require_path",
    "trim_diff",
]

OUTPUT = "Edit applied successfully."


# The replacer cascade (:mod:`hookcode_tool_edit.replace`) is imported when an edit is first
# applied, not when the plugin loads; its ``IDENTICAL`` message is importable from here too.
def __getattr__(name: str) -> Any:
    if name == "IDENTICAL":
        from hookcode_tool_edit.replace import IDENTICAL

        return IDENTICAL
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


DESCRIPTION = """\
Performs exact string replacements in a file.

Usage:
- You must use the Read tool at least once in the conversation before editing an existing file.
  Editing a file that has changed since you last read it fails: read it again first.
- When editing text from the Read tool's output, preserve the exact indentation (tabs/spaces)
  as it appears AFTER the line number prefix. Never include any part of the line number prefix
  in oldString or newString.
- ALWAYS prefer editing existing files. NEVER write new files unless explicitly required.
- The edit FAILS if oldString is not found in the file: "Could not find oldString in the file".
- The edit FAILS if oldString matches more than once: "Found multiple matches for oldString".
  Provide more surrounding context to make it unique, or use replaceAll to change every
  instance of oldString.
- Use replaceAll for replacing and renaming strings across the file (e.g. renaming a variable).
- An empty oldString creates the file with newString as its content (or replaces the whole
  content of an existing file, which you must have read first)."""


# ---------------------------------------------------------------------------------------------
# the tool
# ---------------------------------------------------------------------------------------------


@tool(
    name="edit",
    description=DESCRIPTION,
    permission="edit",
    asks_permission=True,
    edits_files=True,
    aliases={
        "file_path": "filePath",
        "old_string": "oldString",
        "new_string": "newString",
        "replace_all": "replaceAll",
    },
)
async def edit(
    ctx: ToolContext,
    file_path: Annotated[str, "The absolute path to the file to modify"],
    old_string: Annotated[str, "The text to replace"],
    new_string: Annotated[str, "The text to replace it with (must be different from oldString)"],
    replace_all: Annotated[bool, "Replace all occurrences of oldString (default false)"] = False,
) -> ToolResult:
    import asyncio

    require_path(file_path)
    if old_string == new_string:
        from hookcode_tool_edit.replace import IDENTICAL

        raise ToolError(IDENTICAL)
    path = ctx.resolve(file_path)
    await ctx.ask_external_directory(path, "file")
    async with ctx.runtime.path_locks.hold(path):
        target, before = await load(ctx, path)
        after = await asyncio.to_thread(
            apply_edit, path, before, old_string, new_string, replace_all
        )
        metadata = await commit(ctx, path, target, before, after)
    return ToolResult(output=OUTPUT, title=relative(ctx, path), metadata=metadata)


@hookimpl
def tool() -> list[Any]:
    return [edit]


# ---------------------------------------------------------------------------------------------
# shared with multiedit
# ---------------------------------------------------------------------------------------------


def require_path(file_path: str) -> None:
    """Reject an empty ``filePath`` with the reference's message."""
    if not file_path:
        raise ToolError("filePath is required")


def relative(ctx: ToolContext, path: Path) -> str:
    """``path`` relative to the worktree, with forward slashes (titles and ``edit`` patterns)."""
    return os.path.relpath(path, ctx.worktree).replace(os.sep, "/")


async def load(ctx: ToolContext, path: Path) -> tuple[Target, TextFile | None]:
    """Where a write of ``path`` lands (:func:`hookcode.writes.write_target`: symlinks
    followed, a dangling directory link refused) and the file as it is now there (None when
    missing), after the directory check and, for an existing file, the read-before-write
    rule. Call it holding the path lock."""
    import asyncio

    from hookcode.fileio import read_text
    from hookcode.writes import resolution, write_target

    resolved = resolution([path])
    target = write_target(path)
    if target.is_dir():
        raise ToolError(f"Path is a directory, not a file: {path}")
    if not target.exists():
        return Target(target, resolved), None
    ctx.files.assert_fresh(target)
    current = await asyncio.to_thread(read_text, target)
    return Target(target, resolved), current if current.exists else None


class Target:
    """Where an edit of a path is written, and how the path resolved when that was found
    (compared again after the ask, which may wait for a person)."""

    __slots__ = ("path", "resolved")

    def __init__(self, path: Path, resolved: list[tuple[str, str]]) -> None:
        self.path = path
        self.resolved = resolved


def apply_edit(
    path: Path, current: TextFile | str | None, old: str, new: str, replace_all: bool = False
) -> str:
    """The text after one edit of ``current`` (a file as read, its text, or None when the
    file does not exist), with §5's rules and messages: an empty ``old`` creates (``new`` as
    given) or overwrites; otherwise ``old`` and ``new`` are converted to the text's line-ending
    style and replaced by the cascade."""
    from hookcode.fileio import newline_style, to_newline

    from hookcode_tool_edit.replace import IDENTICAL, replace

    if old == new:
        raise ToolError(IDENTICAL)
    text = current if isinstance(current, str) or current is None else current.text
    if text is None:
        if old == "":
            return new
        raise ToolError(f"File {path} not found")
    newline = newline_style(text)
    old, new = to_newline(old, newline), to_newline(new, newline)
    if old == "":
        return new
    return replace(text, old, new, replace_all)


async def commit(
    ctx: ToolContext, path: Path, target: Target, before: TextFile | None, after: str
) -> dict[str, Any]:
    """Ask ``edit`` with the diff (:func:`hookcode.writes.ask_edit`: the path as spelled and
    resolved; a protected one is marked), write ``after`` atomically to ``target`` (keeping
    an existing file's encoding, BOM and mode), publish ``file.edited``, record the read
    time. Returns the metadata ``diff``, ``filediff`` and ``diagnostics``. Call it holding
    the path lock."""
    import asyncio

    from hookcode.fileio import diff, diff_stats
    from hookcode.writes import ask_edit, unchanged

    before_text = before.text if before is not None else ""
    patch = trim_diff(diff(str(path), before_text, after))
    await ask_edit(ctx, [path], {"filepath": str(path), "diff": patch})
    unchanged(target.resolved, [path])  # the ask may have waited for a person
    await asyncio.to_thread(_write, target.path, before, after, ctx.runtime.pending_writes)
    ctx.publish("file.edited", file=str(path))
    ctx.files.record(path)
    additions, deletions = diff_stats(before_text, after)
    return {
        "diff": patch,
        "filediff": {
            "file": str(path),
            "before": before_text,
            "after": after,
            "additions": additions,
            "deletions": deletions,
        },
        "diagnostics": {},
    }


def _write(path: Path, before: TextFile | None, after: str, pending: PendingWrites) -> None:
    from hookcode.fileio import atomic_write, write_text

    if before is None:
        write_text(path, after, pending=pending)
    else:
        # ``after`` already has the file's line endings; written as is, so lines the edit did
        # not touch keep theirs even in a file with mixed endings
        atomic_write(path, before.encode(after), mode=before.mode, pending=pending)


def trim_diff(patch: str) -> str:
    """A unified diff with the common indentation of its body lines (``+``, ``-``, context;
    blank ones aside) removed, as the reference shows it."""
    import re

    leading = re.compile(r"\s*")
    lines = patch.split("\n")

    def is_body(line: str) -> bool:
        return line[:1] in ("+", "-", " ") and not line.startswith(("---", "+++"))

    indent: int | None = None
    for line in lines:
        if is_body(line) and line[1:].strip():
            width = len(leading.match(line, 1).group(0))  # type: ignore[union-attr]
            indent = width if indent is None else min(indent, width)
    if not indent:
        return patch
    return "\n".join(line[0] + line[1 + indent :] if is_body(line) else line for line in lines)
