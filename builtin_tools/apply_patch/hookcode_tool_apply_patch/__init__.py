"""apply_patch: add, update, move and delete files with one patch (reference/tools.md §7).

Order of a call:

1. parse the patch (:mod:`hookcode_tool_apply_patch.patch`);
2. one file-edit transaction (:mod:`hookcode.edits`) for every file named, move targets
   included, opened without the read-before-write rule (the context lines verify the content):
   the path locks (sorted order), ``external_directory`` for every path and move target outside
   the project (each directory once; symlinks followed, dangling ones too);
3. verify every hunk and compute every file's new text in memory, against the files as the
   earlier hunks of the same patch leave them; any failure ends the call here, with nothing
   written (ours: Codex's scenario 015 keeps the files written before the failure). A path
   under a dangling directory link, a symlink loop or a file is refused here
   (:func:`hookcode.writes.write_target`);
4. ONE ``edit`` ask: patterns = the worktree-relative paths of every file touched, move sources
   and targets included, as spelled and as resolved; always ``["*"]``, or the exact paths when
   one is protected (``hookcode.toml``, ``.git/**``, ...: ``metadata["protected"]`` then asks
   even where ``edit`` is allowed); metadata ``filepath`` (the patterns joined by ", "),
   ``diff`` (each hunk's diff, paths relative), ``files``;
5. write: every new text atomically (an existing file keeps its encoding, BOM and mode; a
   moved file those of its source; parents are created), then remove deleted files and move
   sources; ``file.edited`` (``file`` = absolute path, ``deleted``) for every changed path.

Decisions where the reference leaves room:

- An update keeps each line's own ending; only new lines take the file's style (CRLF when the
  file has any CRLF), so files with mixed endings are written byte for byte except for the
  lines the patch changed.
- ``Add File`` over an existing file replaces it and keeps its encoding, mode and line-ending
  style (like ``write``); ``Add File`` or ``Move to`` onto a directory, or below a file, fails
  verification.
- A file that is a symlink is written through the link (the link stays; a dangling one gets
  the file it points to created); ``Delete File`` and a move remove the link itself. Files are
  tracked by where the OS finds them, so two spellings of one file (a link and its target) in
  one patch apply in turn.
- Verification failures are worded as Codex words them: ``[Errno 21] Is a directory: '<path>'``
  for a directory where a file is added or deleted, ``[Errno 2] No such file or directory:
  '<path>'`` for a missing file to delete.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from hookcode import ToolContext, ToolError, ToolResult, hookimpl, tool

if TYPE_CHECKING:
    from hookcode.edits import EditTransaction

__all__ = ["apply_patch"]

DESCRIPTION = """\
Use the `apply_patch` tool to edit files. Your patch language is a stripped-down, file-oriented
diff format designed to be easy to parse and safe to apply. You can think of it as a high-level
envelope:

*** Begin Patch
[ one or more file sections ]
*** End Patch

Within that envelope, you get a sequence of file operations. You MUST include a header to
specify the action you are taking. Each operation starts with one of three headers:

*** Add File: <path> - create a new file. Every following line is a + line (the initial contents).
*** Delete File: <path> - remove an existing file. Nothing follows.
*** Update File: <path> - patch an existing file in place (optionally with a rename).

An update may be followed immediately by *** Move to: <new path> if you want to rename the file.
Then one or more "hunks", each introduced by @@ (optionally followed by a hunk header such as a
class or function name to locate the change).
Within a hunk each line starts with:
  ' ' (space) for context, '-' for a line to remove, '+' for a line to add.

For context, show 3 lines of code immediately above and 3 lines immediately below each change.
If a change is within 3 lines of a previous change, do NOT duplicate the first change's lines.
If 3 lines of context are not enough to identify the place uniquely, use @@ with the class or
function the code is in (e.g. "@@ class BaseClass" or "@@ def method():").
End a hunk with "*** End of File" when it must match the end of the file.

Example:

*** Begin Patch
*** Add File: hello.txt
+Hello world
*** Update File: src/app.py
*** Move to: src/main.py
@@ def greet():
-print("Hi")
+print("Hello, world!")
*** Delete File: obsolete.txt
*** End Patch

Remember:
- You must include a header with your intended action (Add/Delete/Update).
- You must prefix new lines with `+` even when creating a new file.
- File paths are relative to the working directory (or absolute).
- Every file is checked before any is written: if one hunk fails, nothing is changed."""

PREFIX = "apply_patch verification failed: "


@tool(
    name="apply_patch",
    description=DESCRIPTION,
    permission="edit",
    asks_permission=True,
    edits_files="patch",
    aliases={"patch_text": "patchText"},
)
async def apply_patch(
    ctx: ToolContext,
    patch_text: Annotated[str, "The full patch text that describes all changes to be made"],
) -> ToolResult:
    import asyncio

    from hookcode_tool_apply_patch.patch import EmptyPatch, PatchError, parse

    if not patch_text:
        raise ToolError("patchText is required")
    try:
        hunks = parse(patch_text)
    except EmptyPatch:
        raise ToolError("patch rejected: empty patch") from None
    except PatchError as exc:
        raise ToolError(f"{PREFIX}{exc}") from None

    paths: list[Path] = []
    for hunk in hunks:
        paths.append(ctx.resolve(hunk.path))
        if hunk.move_path is not None:
            paths.append(ctx.resolve(hunk.move_path))

    async with ctx.edit_files(*paths, require_read=False) as tx:
        loop = asyncio.get_running_loop()
        plan = await loop.run_in_executor(ctx.runtime.executor, _plan, ctx, tx, hunks)
        tx.metadata.update(
            filepath=", ".join(tx.request().patterns), diff=plan.diff, files=plan.files
        )

    output = "Success. Updated the following files:\n" + "\n".join(plan.summary)
    return ToolResult(title=output, output=output, metadata=tx.metadata)


@hookimpl
def register_tools(register: Callable[..., None]) -> None:
    register(apply_patch)


# ---------------------------------------------------------------------------------------------
# verification: every new text in memory
# ---------------------------------------------------------------------------------------------


class _Plan:
    """A verified patch (a plain class: a dataclass costs at import)."""

    __slots__ = ("diff", "files", "summary")

    def __init__(self, *, files: list[dict[str, Any]], diff: str, summary: list[str]) -> None:
        #: per hunk: what the ask's and the result's ``files`` say of it
        self.files = files
        self.diff = diff
        self.summary = summary


def _os_error(code: int, path: Path) -> OSError:
    return OSError(code, os.strerror(code), str(path))


def _clean(text: str) -> str:
    """``text`` safe for JSON and the store (undecodable bytes kept as surrogates become U+FFFD)."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _failed(exc: Exception) -> ToolError:
    """A verification failure, worded as Codex words it."""
    from hookcode.edits import MissingFile, NotAFile

    if isinstance(exc, NotAFile) and exc.directory:
        exc = _os_error(errno.EISDIR, exc.path)
    elif isinstance(exc, MissingFile):
        exc = _os_error(errno.ENOENT, exc.path)
    return ToolError(f"{PREFIX}{exc}")


def _plan(ctx: ToolContext, tx: EditTransaction, hunks: list[Any]) -> _Plan:
    """Check every hunk and make its change in the transaction (in memory); raise ToolError
    on the first failure."""
    from hookcode.fileio import diff, diff_stats, to_newline

    from hookcode_tool_apply_patch.patch import AddFile, DeleteFile, PatchError, apply_chunks

    files: list[dict[str, Any]] = []
    diffs: list[str] = []
    summary: list[str] = []
    for hunk in hunks:
        path = ctx.resolve(hunk.path)
        relative = ctx.relative(path)
        move_path: Path | None = None
        try:
            if isinstance(hunk, AddFile):
                kind = "add"
                text = hunk.contents
                if text and not text.endswith("\n"):
                    text += "\n"
                existing = tx.read(path)
                if existing.exists:
                    text = to_newline(text, existing.newline)
                before, after = existing.text, text
                tx.write(path, text)
                summary.append(f"A {relative}")
            elif isinstance(hunk, DeleteFile):
                kind = "delete"
                before, after = tx.delete(path).before.text, ""
                summary.append(f"D {relative}")
            else:
                try:
                    existing = tx.read(path)
                except (ToolError, OSError):
                    existing = None
                if existing is None or not existing.exists:
                    raise ToolError(f"Failed to read file to update: {path}")
                before = existing.text
                after = apply_chunks(before, hunk.chunks, str(path))
                if hunk.move_path is not None:
                    kind = "move"
                    move_path = ctx.resolve(hunk.move_path)
                    tx.move(path, move_path, after)
                    summary.append(f"M {ctx.relative(move_path)}")
                else:
                    kind = "update"
                    tx.write(path, after)
                    summary.append(f"M {relative}")
        except (PatchError, ToolError, OSError) as exc:
            raise _failed(exc) from None

        file_diff = _clean(diff(relative, before, after))
        additions, deletions = diff_stats(before, after)
        diffs.append(file_diff + "\n")
        files.append(
            {
                "filePath": str(path),
                "relativePath": ctx.relative(move_path or path),
                "type": kind,
                "diff": file_diff,
                "before": _clean(before),
                "after": _clean(after),
                "additions": additions,
                "deletions": deletions,
                "movePath": str(move_path) if move_path is not None else None,
            }
        )
    return _Plan(files=files, diff="".join(diffs), summary=summary)
