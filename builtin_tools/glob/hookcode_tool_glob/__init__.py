"""The ``glob`` tool: files whose path matches a glob pattern, newest first (reference/tools.md §8).

Files are listed by ripgrep (``rg --files``): hidden files included, ``.git`` excluded, ignore
files honoured (even for files the pattern matches: see :func:`hookcode_ripgrep.glob_filter`),
symlinks not followed. Paths the ``read`` rules deny are left out before anything counts
(names of paths whose reading asks are shown: only contents need the permission). At most
100 paths are returned (sorted by modification time, newest first); ``truncated`` says a
101st exists.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

from hookcode import ToolContext, ToolError, ToolResult, hookimpl, tool

LIMIT = 100

DESCRIPTION = """\
Fast file pattern matching that works with any codebase size.
- Supports glob patterns like "**/*.js" or "src/**/*.ts"
- Returns matching file paths sorted by modification time (newest first)
- Hidden files are included; files ignored by .gitignore and the .git directory are not
- At most 100 files are returned; use a more specific path or pattern when results are truncated
- Use this tool when you need to find files by name patterns
- When an open-ended search may need several rounds of globbing and grepping, use the task
  tool instead"""


@tool(name="glob", description=DESCRIPTION, asks_permission=True)
async def glob(
    ctx: ToolContext,
    pattern: Annotated[str, "The glob pattern to match files against"],
    path: Annotated[
        str | None,
        "The directory to search in. If not specified, the current working directory will be "
        'used. IMPORTANT: Omit this field to use the default directory. DO NOT enter "undefined" '
        'or "null" - simply omit it for the default behavior. Must be a valid directory path if '
        "provided.",
    ] = None,
) -> ToolResult:
    from hookcode_ripgrep import files, glob_filter, name_glob

    if not pattern.strip():
        raise ToolError("pattern is required")
    await ctx.ask("glob", [pattern], ["*"], metadata={"pattern": pattern, "path": path})
    search = ctx.resolve(path) if path else ctx.cwd
    await ctx.ask_external_directory(search, "directory")

    # rg lists the files (ignore files honoured); the pattern filters them with rg's own glob
    # semantics. As an rg --glob it would be an override that lists ignored files it matches.
    match = glob_filter(pattern)
    globs = [pattern] if match is None else []
    names = name_glob(pattern) if match is not None else None
    if names is not None:
        match = None  # rg selects exactly these files by name itself
    entries: list[tuple[int, str]] = []
    prefix = os.path.join(search, "")

    def dated(relative: str) -> None:  # as rg finds it, while rg goes on walking
        full = prefix + relative
        try:
            mtime = os.stat(full).st_mtime_ns
        except OSError:
            mtime = 0
        entries.append((mtime, full))

    _found, truncated = await files(
        search,
        globs,
        limit=LIMIT,
        abort=ctx.abort,
        match=match,
        name_glob=names,
        on_path=dated,
        keep=ctx.read_rules().visible_under(search),  # denied paths never count or show
    )
    entries.sort(key=lambda entry: (-entry[0], entry[1]))  # newest first; path among ties

    if not entries:
        output = "No files found"
    else:
        lines = [full for _, full in entries]
        if truncated:
            lines += [
                "",
                f"(Results are truncated: showing first {LIMIT} results. "
                "Consider using a more specific path or pattern.)",
            ]
        output = "\n".join(lines)
    return ToolResult(
        title=_relative(ctx.worktree, search),
        output=output,
        metadata={"count": len(entries), "truncated": truncated},
    )


def _relative(worktree: Path, path: Path) -> str:
    return os.path.relpath(path, worktree).replace(os.sep, "/")


@hookimpl
def register_tools(register: Callable[..., None]) -> None:
    register(glob)
