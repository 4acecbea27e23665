"""edit: replace a string in a file (reference/tools.md §5).

Checks, in order: an empty ``filePath`` -> ``filePath is required``; ``oldString == newString``
-> ``No changes to apply: ...``; then one file-edit transaction (:mod:`hookcode.edits`): the
path lock and ``external_directory`` (file; symlinks followed, dangling ones too); the file as
stored (a symlink is edited through, its target written and the link kept; a path under a
dangling directory link is refused); a directory -> ``Path is a directory, not a file: <abs>``;
an existing file must have been read in this session and not modified since (the
read-before-write rule, §24, which also covers an empty ``oldString`` over an existing file —
the reference skips it there); a missing file -> ``File <abs> not found`` unless ``oldString``
is empty (create); the replacement (:mod:`hookcode_tool_edit.replace`); one ``edit`` ask with
the diff (the path as spelled and as resolved; a protected path is marked and asks even where
``edit`` is allowed); the write; ``file.edited``; the read time is recorded.

Line endings: the file is CRLF if it has any ``\\r\\n``; ``oldString`` and ``newString`` are
normalised to LF and then converted to the file's style before matching, so the file keeps its
style. The write is atomic and keeps the file's encoding, BOM and mode; bytes outside the
replaced text are written back as they were. A new file gets ``newString`` as given.

:func:`apply_edit` and :func:`result_metadata` are shared with the ``multiedit`` tool, which
applies several edits in memory before one ask and one write.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from hookcode import ToolContext, ToolError, ToolResult, hookimpl, tool

if TYPE_CHECKING:
    from hookcode.edits import EditTransaction
    from hookcode.fileio import TextFile

__all__ = ["OUTPUT", "apply_edit", "edit", "require_path", "result_metadata"]

OUTPUT = "Edit applied successfully."


# The replacer cascade (:mod:`hookcode_tool_edit.replace`) is imported when an edit is first
# applied, not when the plugin loads; its ``IDENTICAL`` message is importable from here too,
# and so is ``trim_diff`` (:func:`hookcode.edits.trim_diff`, how the diff is shown).
def __getattr__(name: str) -> Any:
    if name == "IDENTICAL":
        from hookcode_tool_edit.replace import IDENTICAL

        return IDENTICAL
    if name == "trim_diff":
        from hookcode.edits import trim_diff

        return trim_diff
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
    async with ctx.edit_files(path) as tx:
        await asyncio.to_thread(_edit, tx, path, old_string, new_string, replace_all)
    return ToolResult(output=OUTPUT, title=ctx.relative(path), metadata=result_metadata(tx))


@hookimpl
def register_tools(register: Callable[..., None]) -> None:
    register(edit)


# ---------------------------------------------------------------------------------------------
# shared with multiedit
# ---------------------------------------------------------------------------------------------


def require_path(file_path: str) -> None:
    """Reject an empty ``filePath`` with the reference's message."""
    if not file_path:
        raise ToolError("filePath is required")


def apply_edit(
    path: Path, current: TextFile | str | None, old: str, new: str, replace_all: bool = False
) -> str:
    """The text after one edit of ``current`` (a file as read, its text, or None: the file
    does not exist), with §5's rules and messages: an empty ``old`` creates (``new`` as
    given) or overwrites; otherwise ``old`` and ``new`` are converted to the text's line-ending
    style and replaced by the cascade."""
    from hookcode.fileio import newline_style, to_newline

    from hookcode_tool_edit.replace import IDENTICAL, replace

    if old == new:
        raise ToolError(IDENTICAL)
    if current is None or isinstance(current, str):
        text = current
    else:
        text = current.text if current.exists else None
    if text is None:
        if old == "":
            return new
        raise ToolError(f"File {path} not found")
    newline = newline_style(text)
    old, new = to_newline(old, newline), to_newline(new, newline)
    if old == "":
        return new
    return replace(text, old, new, replace_all)


def result_metadata(tx: EditTransaction) -> dict[str, Any]:
    """``diff`` (as asked), ``filediff`` and ``diagnostics`` of a transaction that wrote one
    file (:meth:`hookcode.edits.EditTransaction.result_metadata`, which ``write`` uses too)."""
    return tx.result_metadata()


def _edit(tx: EditTransaction, path: Path, old: str, new: str, replace_all: bool) -> None:
    tx.write(path, apply_edit(path, tx.read(path), old, new, replace_all))
