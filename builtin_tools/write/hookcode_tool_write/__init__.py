"""write: create or overwrite a file (reference/tools.md §4).

Order of a call: resolve the path (against the working directory) -> ``external_directory``
(file; symlinks followed, dangling ones too) -> then, holding the path lock until the write is
done: the write target (:func:`hookcode.writes.write_target`: a symlink is written through to
its target, a path under a dangling directory link is refused); a directory is refused; an
existing file must have been read in this session and not modified since (the read-before-write
rule, §24) -> diff old -> new -> ask ``edit`` (:func:`hookcode.writes.ask_edit`: patterns the
worktree-relative path as spelled and as resolved; always ``*``, or the exact paths for a
protected one, which ``metadata["protected"]`` marks; metadata ``filepath``, ``diff``) ->
atomic write -> ``file.edited`` -> the read time is recorded.

An existing file keeps its mode, encoding (BOM included) and line-ending style: LF content
written over a CRLF file is written with CRLF (the reference writes the content verbatim). A
new file gets the content as given, parents created, the umask's default mode.

``diagnostics`` is ``{}``: LSP diagnostics are added by the lsp plugin's after-hook.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from hookcode import ToolContext, ToolError, ToolResult, hookimpl, tool

if TYPE_CHECKING:
    from hookcode.fileio import PendingWrites, TextFile

__all__ = ["write"]

OUTPUT = "Wrote file successfully."

DESCRIPTION = """\
Writes a file to the local filesystem.

Usage:
- This tool will overwrite the existing file if there is one at the provided path.
- If this is an existing file, you MUST use the Read tool first to read the file's contents.
  This tool will fail if you did not read the file first.
- ALWAYS prefer editing existing files in the codebase. NEVER write new files unless
  explicitly required.
- NEVER proactively create documentation files (*.md) or README files. Only create
  documentation files if explicitly requested by the user.
- Only use emojis if the user explicitly requests it. Avoid writing emojis to files unless asked."""


@tool(
    name="write",
    description=DESCRIPTION,
    permission="edit",
    asks_permission=True,
    edits_files=True,
    aliases={"file_path": "filePath"},
)
async def write(
    ctx: ToolContext,
    content: Annotated[str, "The content to write to the file"],
    file_path: Annotated[
        str, "The absolute path to the file to write (must be absolute, not relative)"
    ],
) -> ToolResult:
    import asyncio

    from hookcode.fileio import diff, read_text
    from hookcode.writes import ask_edit, resolution, unchanged, write_target

    if not file_path:
        raise ToolError("filePath is required")
    path = ctx.resolve(file_path)
    title = os.path.relpath(path, ctx.worktree).replace(os.sep, "/")
    await ctx.ask_external_directory(path, "file")
    async with ctx.runtime.path_locks.hold(path):
        resolved = resolution([path])
        target = write_target(path)  # through symlinks; a dangling directory link refused
        if target.is_dir():
            raise ToolError(f"Path is a directory, not a file: {path}")
        existing: TextFile | None = None
        if target.exists():
            ctx.files.assert_fresh(target)
            existing = await asyncio.to_thread(read_text, target)
            if not existing.exists:
                existing = None
        before = existing.text if existing is not None else ""
        patch = _trim_diff(diff(str(path), before, content))
        await ask_edit(ctx, [path], {"filepath": str(path), "diff": patch})
        unchanged(resolved, [path])  # the ask may have waited for a person
        await asyncio.to_thread(_write, target, content, existing, ctx.runtime.pending_writes)
        ctx.publish("file.edited", file=str(path))
        ctx.files.record(path)
    return ToolResult(
        output=OUTPUT,
        title=title,
        metadata={"diagnostics": {}, "filepath": str(path), "exists": existing is not None},
    )


@hookimpl
def tool() -> list[Any]:
    return [write]


def _write(path: Path, content: str, existing: TextFile | None, pending: PendingWrites) -> None:
    from hookcode.fileio import write_text

    write_text(path, content, like=existing, pending=pending)


def _trim_diff(patch: str) -> str:
    """The diff with the common indentation of its body lines removed (as ``edit`` shows it;
    the ``edit`` distribution is not a dependency of this one)."""
    import re

    lines = patch.split("\n")

    def is_body(line: str) -> bool:
        return line[:1] in ("+", "-", " ") and not line.startswith(("---", "+++"))

    indent: int | None = None
    for line in lines:
        if is_body(line) and line[1:].strip():
            width = len(re.match(r"\s*", line[1:]).group(0))  # type: ignore[union-attr]
            indent = width if indent is None else min(indent, width)
    if not indent:
        return patch
    return "\n".join(line[0] + line[1 + indent :] if is_body(line) else line for line in lines)
