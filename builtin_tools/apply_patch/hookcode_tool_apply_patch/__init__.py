"""apply_patch: add, update, move and delete files with one patch (reference/tools.md §7).

Order of a call, all of it under the path locks of every file named (move targets included,
taken in sorted order):

1. parse the patch (:mod:`hookcode_tool_apply_patch.patch`);
2. ask ``external_directory`` for every path and move target outside the project (each
   directory once; symlinks followed, dangling ones too);
3. verify every hunk and compute every file's new text in memory, against the files as the
   earlier hunks of the same patch leave them; any failure ends the call here, with nothing
   written (ours: Codex's scenario 015 keeps the files written before the failure). A path
   under a dangling directory link, a symlink loop or a file is refused here
   (:func:`hookcode.writes.write_target`);
4. ONE ``edit`` ask (:func:`hookcode.writes.edit_request`): patterns = the worktree-relative
   paths of every file touched, move sources and targets included, as spelled and as
   resolved; always ``["*"]``, or the exact paths when one is protected (``hookcode.toml``,
   ``.git/**``, ...: ``metadata["protected"]`` then asks even where ``edit`` is allowed);
   metadata ``filepath``, ``diff``, ``files``;
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
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from hookcode import ToolContext, ToolError, ToolResult, hookimpl
from hookcode import tool as define_tool
from hookcode.errors import ToolAborted

if TYPE_CHECKING:
    from hookcode.fileio import PendingWrites

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


@define_tool(
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

    from hookcode.writes import edit_request, resolution, unchanged

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

    async with ctx.runtime.path_locks.hold(*paths):
        asked: set[str] = set()
        for path in paths:
            pattern = ctx.external_directory(path, "file")
            if pattern is not None and pattern not in asked:
                asked.add(pattern)
                await ctx.ask_external_directory(path, "file")

        resolved = resolution(paths)
        loop = asyncio.get_running_loop()
        plan = await loop.run_in_executor(ctx.runtime.executor, _plan, ctx, hunks)

        request = edit_request(ctx, paths)
        metadata: dict[str, Any] = {
            "filepath": ", ".join(request.patterns),
            "diff": plan.diff,
            "files": plan.files,
        }
        if request.protected:
            metadata["protected"] = request.protected
        await ctx.ask("edit", request.patterns, request.always, metadata)

        if ctx.abort.aborted:
            raise ToolAborted()
        unchanged(resolved, paths)  # the ask may have waited for a person
        # no await from here on: the files are written all together or not at all
        changed = _write(plan, ctx.runtime.pending_writes)

    for path, deleted in changed:
        ctx.publish("file.edited", file=str(plan.names.get(path, path)), deleted=deleted)

    output = "Success. Updated the following files:\n" + "\n".join(plan.summary)
    return ToolResult(title=output, output=output, metadata=metadata)


@hookimpl
def tool() -> list[Any]:
    return [apply_patch]


# ---------------------------------------------------------------------------------------------
# verification: every new text in memory
# ---------------------------------------------------------------------------------------------


class _Plan:
    """A verified patch (a plain class: a dataclass costs at import)."""

    __slots__ = ("diff", "files", "final", "names", "summary")

    def __init__(
        self,
        *,
        final: dict[Path, Any],
        names: dict[Path, Path],
        files: list[dict[str, Any]],
        diff: str,
        summary: list[str],
    ) -> None:
        #: the final state of every file touched, in order of first touch, by where the OS
        #: finds it (a write's key is its target, symlinks followed; a removal's the directory
        #: entry, a link itself): the file to write (its text and how to store it), or None
        #: to remove it
        self.final = final
        #: each key's path as the patch spelled it first (for the ``file.edited`` events)
        self.names = names
        self.files = files
        self.diff = diff
        self.summary = summary


def _relative(ctx: ToolContext, path: Path) -> str:
    return os.path.relpath(path, ctx.worktree).replace(os.sep, "/")


def _os_error(code: int, path: Path) -> OSError:
    return OSError(code, os.strerror(code), str(path))


def _clean(text: str) -> str:
    """``text`` safe for JSON and the store (undecodable bytes kept as surrogates become U+FFFD)."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _plan(ctx: ToolContext, hunks: list[Any]) -> _Plan:
    """Check every hunk and compute every file in memory; raise ToolError on the first failure."""
    import dataclasses

    from hookcode.fileio import TextFile, diff, diff_stats, read_text, to_newline
    from hookcode.writes import write_target

    from hookcode_tool_apply_patch.patch import AddFile, DeleteFile, PatchError, apply_chunks

    final: dict[Path, TextFile | None] = {}
    names: dict[Path, Path] = {}

    def entry(path: Path) -> Path:
        """The directory entry ``path`` names: its parent's symlinks resolved, not its own."""
        return Path(os.path.realpath(path.parent)) / path.name

    def source(path: Path) -> Path:
        """The key of a file read at ``path``: the entry when this patch already decided what
        is there (a link deleted by an earlier hunk is gone), else its real path."""
        place = entry(path)
        return place if place in final else Path(os.path.realpath(path))

    def current(key: Path) -> TextFile | None:
        """The file as the earlier hunks leave it; None when missing or not a regular file."""
        if key in final:
            return final[key]
        if not key.is_file():
            return None
        return read_text(key)

    def target(path: Path) -> Path:
        """The key a file written at ``path`` lands in (:func:`hookcode.writes.write_target`:
        through a symlink; a dangling directory link or a file among the parents refused),
        never a directory."""
        place = entry(path)
        if place in final:
            return place
        try:
            key = write_target(path)
        except ToolError as exc:
            raise ToolError(f"{PREFIX}{exc}") from None
        if key not in final and key.is_dir():
            raise _os_error(errno.EISDIR, path)
        return key

    def put(key: Path, path: Path, file: TextFile | None) -> None:
        final[key] = file
        names.setdefault(key, path)

    files: list[dict[str, Any]] = []
    diffs: list[str] = []
    summary: list[str] = []
    for hunk in hunks:
        path = ctx.resolve(hunk.path)
        relative = _relative(ctx, path)
        move_path: Path | None = None
        try:
            if isinstance(hunk, AddFile):
                kind = "add"
                key = target(path)
                text = hunk.contents
                if text and not text.endswith("\n"):
                    text += "\n"
                existing = current(key)
                before = existing.text if existing is not None else ""
                if existing is not None:
                    text = to_newline(text, existing.newline)
                    put(key, path, dataclasses.replace(existing, path=key, text=text))
                else:
                    put(key, path, TextFile(key, text, exists=False))
                after = text
                summary.append(f"A {relative}")
            elif isinstance(hunk, DeleteFile):
                kind = "delete"
                key = entry(path)
                if key in final:
                    existing = final[key]
                    if existing is None:
                        raise _os_error(errno.ENOENT, path)
                else:
                    existing = read_text(path)  # a directory raises IsADirectoryError
                    if not existing.exists:
                        raise _os_error(errno.ENOENT, path)
                before, after = existing.text, ""
                put(key, path, None)
                summary.append(f"D {relative}")
            else:
                key = source(path)
                try:
                    existing = current(key)
                except OSError:
                    existing = None
                if existing is None:
                    raise ToolError(f"{PREFIX}Failed to read file to update: {path}")
                before = existing.text
                after = apply_chunks(before, hunk.chunks, str(path))
                if hunk.move_path is not None:
                    kind = "move"
                    move_path = ctx.resolve(hunk.move_path)
                    destination = target(move_path)
                    put(entry(path), path, None)  # the source entry goes (a link itself)
                    moved = dataclasses.replace(existing, path=destination, text=after)
                    put(destination, move_path, moved)
                    summary.append(f"M {_relative(ctx, move_path)}")
                else:
                    kind = "update"
                    put(key, path, dataclasses.replace(existing, text=after))
                    summary.append(f"M {relative}")
        except PatchError as exc:
            raise ToolError(f"{PREFIX}{exc}") from None
        except OSError as exc:
            raise ToolError(f"{PREFIX}{exc}") from None

        file_diff = _clean(diff(relative, before, after))
        additions, deletions = diff_stats(before, after)
        diffs.append(file_diff + "\n")
        files.append(
            {
                "filePath": str(path),
                "relativePath": _relative(ctx, move_path or path),
                "type": kind,
                "diff": file_diff,
                "before": _clean(before),
                "after": _clean(after),
                "additions": additions,
                "deletions": deletions,
                "movePath": str(move_path) if move_path is not None else None,
            }
        )
    return _Plan(final=final, names=names, files=files, diff="".join(diffs), summary=summary)


# ---------------------------------------------------------------------------------------------
# writing
# ---------------------------------------------------------------------------------------------


def _write(plan: _Plan, pending: PendingWrites) -> list[tuple[Path, bool]]:
    """Write every new text, then remove deleted files; returns (key, deleted) per change.
    Every key is where the OS finds the file (see :class:`_Plan`): a write through a symlink
    goes to its target, so the link stays. ``pending`` records a named temporary file where
    the file system has no anonymous ones."""
    from hookcode.fileio import atomic_write, write_text

    changed: list[tuple[Path, bool]] = []
    removals: list[Path] = []
    for path, file in plan.final.items():
        if file is None:
            removals.append(path)
            continue
        if file.exists:
            # an existing file (or a moved one): its encoding, BOM and mode; the text already
            # has the line endings it must have (mixed ones included)
            atomic_write(path, file.encode(file.text), mode=file.mode, pending=pending)
        else:
            write_text(path, file.text, pending=pending)
        changed.append((path, False))
    for path in removals:
        if os.path.lexists(path):
            os.unlink(path)
            changed.append((path, True))
    return changed
