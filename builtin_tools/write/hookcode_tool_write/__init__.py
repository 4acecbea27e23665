"""write: create or overwrite a file (reference/tools.md §4).

Order of a call: resolve the path (against the working directory), then one file-edit
transaction (:mod:`hookcode.edits`): the path lock, ``external_directory`` (file; symlinks
followed, dangling ones too); the file as stored (a symlink is written through to its target,
a path under a dangling directory link is refused, a directory is refused; an existing file
must have been read in this session and not modified since: the read-before-write rule, §24);
then the ``edit`` ask with the diff (patterns the worktree-relative path as spelled and as
resolved; always ``*``, or the exact paths for a protected one, which ``metadata["protected"]``
marks; metadata ``filepath``, ``diff``) -> atomic write -> ``file.edited`` -> the read time is
recorded.

An existing file keeps its mode, encoding (BOM included) and line-ending style: LF content
written over a CRLF file is written with CRLF (the reference writes the content verbatim). A
new file gets the content as given, parents created, the umask's default mode.

The result's metadata: ``filepath``, ``exists`` (whether the file was there before), and, as
``edit``'s, ``diff`` (the diff that was asked; for a new file every line is an addition),
``filediff`` (``before``, ``after``, ``additions``, ``deletions``) and ``diagnostics`` (``{}``:
LSP diagnostics are added by the lsp plugin's after-hook).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from hookcode import ToolContext, ToolError, ToolResult, hookimpl, tool

if TYPE_CHECKING:
    from hookcode.edits import EditTransaction

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

    if not file_path:
        raise ToolError("filePath is required")
    path = ctx.resolve(file_path)
    async with ctx.edit_files(path) as tx:
        exists = await asyncio.to_thread(_write, tx, path, content)
    return ToolResult(
        output=OUTPUT,
        title=ctx.relative(path),
        metadata={"filepath": str(path), "exists": exists, **tx.result_metadata()},
    )


@hookimpl
def register_tools(register: Callable[..., None]) -> None:
    register(write)


def _write(tx: EditTransaction, path: Path, content: str) -> bool:
    """Write ``content`` in the file's line-ending style; whether the file existed."""
    from hookcode.fileio import to_newline

    current = tx.read(path)
    tx.write(path, to_newline(content, current.newline) if current.exists else content)
    return current.exists
