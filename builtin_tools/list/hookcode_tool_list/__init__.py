"""The ``list`` tool: a directory as an indented tree (reference/tools.md §10).

Files come from ripgrep (``rg --files``), like the reference: hidden files included, ``.git``
excluded, ignore files (``.gitignore`` in a git repository, ``.ignore``) honoured, symlinks
not followed, and the directories of :data:`IGNORED` skipped at any depth, plus the caller's
``ignore`` globs. Files the ``read`` rules deny are left out (names of files whose reading
asks are shown: only their contents need the permission), before the limit counts: the first
100 files left (in path order) make the tree; ``truncated`` is set when 100 were reached. The
directory's own ``external_directory`` check follows symlinks, dangling ones included.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable
from typing import Annotated

from hookcode import ToolContext, ToolResult, hookimpl, tool

LIMIT = 100

#: directories never listed (at any depth)
IGNORED = (
    "node_modules", "__pycache__", ".git", "dist", "build", "target", "vendor", "bin", "obj",
    ".idea", ".vscode", ".zig-cache", "zig-out", ".coverage", "coverage", "tmp", "temp",
    ".cache", "cache", "logs", ".venv", "venv", "env",
)  # fmt: skip
#: names the reference ignores as files too (its patterns for them have no trailing slash)
_ANY_KIND = frozenset({"zig-out", ".coverage"})

DESCRIPTION = """\
Lists files and directories in a given path as a tree (subdirectories first). The path \
parameter must be absolute; omit it to use the current workspace directory. You can optionally \
provide an array of glob patterns to ignore with the ignore parameter. Common build, cache and \
dependency directories (node_modules, .git, dist, build, .venv, ...) and files ignored by \
.gitignore are left out; at most 100 files are shown. You should generally prefer the glob and \
grep tools, if you know which directories to search."""


def ignore_globs(extra: list[str] | None = None) -> list[str]:
    """The ``--glob`` options: every :data:`IGNORED` directory, then the caller's globs."""
    globs = [f"!{name}" if name in _ANY_KIND else f"!{name}/" for name in IGNORED]
    return globs + [f"!{pattern}" for pattern in extra or []]


@tool(name="list", description=DESCRIPTION, asks_permission=True)
async def list_(
    ctx: ToolContext,
    path: Annotated[
        str | None,
        "The absolute path to the directory to list (must be absolute, not relative)",
    ] = None,
    ignore: Annotated[list[str] | None, "List of glob patterns to ignore"] = None,
) -> ToolResult:
    from hookcode_ripgrep import files

    search = ctx.resolve(path) if path else ctx.cwd
    await ctx.ask_external_directory(search, "directory")
    await ctx.ask("list", [str(search)], ["*"], metadata={"path": str(search)})

    # sorted walk: which 100 files a large tree shows must not change from call to call;
    # what the read rules deny is left out before it counts
    visible = ctx.read_rules().visible_under(search)
    found, _ = await files(
        search, ignore_globs(ignore), limit=LIMIT, abort=ctx.abort, sort=True, keep=visible
    )
    root = str(search)
    output = (root if root.endswith("/") else root + "/") + "\n" + render_tree(found)
    return ToolResult(
        title=os.path.relpath(search, ctx.worktree).replace(os.sep, "/"),
        output=output,
        metadata={"count": len(found), "truncated": len(found) >= LIMIT},
    )


def render_tree(paths: list[str]) -> str:
    """Relative ``/``-separated file paths as a tree: per level, subdirectories first (sorted,
    ``name/``), then files (sorted), indented two spaces per level."""
    dirs: set[str] = {"."}
    files_in: dict[str, list[str]] = {}
    for file in paths:
        parent = posixpath.dirname(file) or "."
        parts = [] if parent == "." else parent.split("/")
        for i in range(1, len(parts) + 1):
            dirs.add("/".join(parts[:i]))
        files_in.setdefault(parent, []).append(posixpath.basename(file))
    children: dict[str, list[str]] = {}
    for directory in dirs:
        if directory != ".":
            children.setdefault(posixpath.dirname(directory) or ".", []).append(directory)

    lines: list[str] = []

    def render(directory: str, depth: int) -> None:
        if depth > 0:
            lines.append("  " * depth + posixpath.basename(directory) + "/")
        for child in sorted(children.get(directory, [])):
            render(child, depth + 1)
        indent = "  " * (depth + 1)
        lines.extend(indent + name for name in sorted(files_in.get(directory, [])))

    render(".", 0)
    return "".join(line + "\n" for line in lines)


@hookimpl
def register_tools(register: Callable[..., None]) -> None:
    register(list_)
