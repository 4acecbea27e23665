"""Path helpers shared by the file tools: the ``external_directory`` check.

reference/permissions.md §7: a tool touching a target outside the project (inside = inside
the working directory, or inside the worktree unless it is ``/``; symlinks resolved, a missing
path judged by its nearest existing ancestor) asks ``external_directory`` first. The directory
asked about is the target itself when it is a directory, else its parent; patterns = always =
``[<dir>/*]`` (forward slashes); metadata ``filepath`` and ``parentDir``.

Ours adds one thing: when symlinks make the real directory differ from the spelled one, BOTH
``<spelled dir>/*`` and ``<real dir>/*`` are asked about (rules deny if either is denied, allow
only if both are allowed), so a symlink can neither dodge a rule written for the real location
nor one written for the spelled path.

Usage (async tools / sync tools in a worker thread)::

    from hookcode.paths import ask_external_directory, ask_external_directory_sync

    await ask_external_directory(ctx, path)          # kind taken from stat
    ask_external_directory_sync(ctx, path, kind="directory")
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from hookcode.tools import ToolContext

__all__ = [
    "ExternalDirectory",
    "ask_external_directory",
    "ask_external_directory_sync",
    "dir_pattern",
    "external_directory",
]

Kind = Literal["file", "directory"]


@dataclass
class ExternalDirectory:
    """An ``external_directory`` request: what to pass to ``ctx.ask``."""

    directory: Path  # the directory asked about (as spelled, absolute)
    patterns: list[str]
    metadata: dict[str, Any]

    @property
    def always(self) -> list[str]:
        return list(self.patterns)


def dir_pattern(directory: str | Path) -> str:
    """``<dir>/*`` with forward slashes (the pattern an external directory is asked with)."""
    text = str(directory).replace(os.sep, "/").rstrip("/")
    return f"{text}/*"


def external_directory(
    ctx: ToolContext, target: str | Path, *, kind: Kind | None = None
) -> ExternalDirectory | None:
    """The request to make for ``target`` (resolved against the working directory), or None
    when it is inside the project. ``kind`` None: a directory if ``target`` is one (symlinks
    followed), else a file (a missing path counts as a file)."""
    from hookcode.runtime import realpath_nearest

    path = ctx.resolve(target)
    if ctx.runtime.is_inside_project(path):
        return None
    if kind is None:
        kind = "directory" if path.is_dir() else "file"
    directory = path if kind == "directory" else path.parent
    patterns = [dir_pattern(directory)]
    real = dir_pattern(realpath_nearest(directory))
    if real not in patterns:
        patterns.append(real)
    return ExternalDirectory(
        directory=directory,
        patterns=patterns,
        metadata={"filepath": str(path), "parentDir": str(directory)},
    )


async def ask_external_directory(
    ctx: ToolContext, target: str | Path | None, *, kind: Kind | None = None,
    bypass: bool = False,
) -> None:
    """Ask ``external_directory`` when ``target`` is outside the project; return when allowed
    (or nothing to ask), raise a PermissionRefused otherwise. No target or ``bypass``: nothing."""
    if target is None or bypass:
        return
    request = external_directory(ctx, target, kind=kind)
    if request is not None:
        await ctx.ask("external_directory", request.patterns, request.always, request.metadata)


def ask_external_directory_sync(
    ctx: ToolContext, target: str | Path | None, *, kind: Kind | None = None,
    bypass: bool = False,
) -> None:
    """:func:`ask_external_directory` for sync tools running in a worker thread."""
    if target is None or bypass:
        return
    request = external_directory(ctx, target, kind=kind)
    if request is not None:
        ctx.ask_sync("external_directory", request.patterns, request.always, request.metadata)
