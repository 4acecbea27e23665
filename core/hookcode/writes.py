"""Where a file tool's write lands, and the ``edit`` request that allows it: the lower layer
of :mod:`hookcode.edits` (the file-edit transaction every writing tool uses), so that they
agree on symlinks and on protected paths:

* :func:`write_target` is the file the OS will write: every symlink followed, dangling ones
  included, as ``open(path, "w")`` would. A write goes THROUGH a symlink to its target (the
  link stays a link, as an editor leaves it); the permission checks judge that target too.
  A path under a dangling directory link (``dd/file`` with ``dd -> missing``), under a
  symlink loop, or under something that is not a directory is refused with one line naming
  the culprit, before anything is created: the only directories a write creates are the
  missing ones the path itself spells.
* :func:`edit_request` is the ``edit`` request for a set of paths: the patterns are each path
  worktree-relative as spelled and, when symlinks make it differ, as resolved (a rule on
  either applies); a path that is protected (:mod:`hookcode.protected`: ``hookcode.toml``,
  ``.git/**``, ...) marks the request ``metadata["protected"]`` so that only a person or a
  rule naming it allows it, and an "always" reply then remembers the exact paths, never ``*``.
* :func:`resolution` and :func:`unchanged`: how the paths resolve before the ask, checked
  again after it (a symlink on the way changed while a person was asked: nothing is written).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from hookcode.errors import ToolError

if TYPE_CHECKING:
    from hookcode.protocols import EditContext

__all__ = ["EditRequest", "edit_request", "resolution", "unchanged", "write_target"]


def write_target(path: Path) -> Path:
    """The real file a write of ``path`` (absolute, normalised) lands in: symlinks followed,
    dangling ones included. Raises :class:`ToolError` naming the culprit when the write could
    only go through a dangling directory link, a symlink loop, a missing link target's
    directory, or a parent that is not a directory."""
    parts = path.parts
    current = Path(parts[0])
    for index, name in enumerate(parts[1:], 1):
        candidate = current / name
        if os.path.exists(candidate):
            current = candidate
            continue
        if os.path.islink(candidate):
            if index < len(parts) - 1:
                raise ToolError(f"Cannot write {path}: {_dangling_directory(candidate)}")
            return _dangling_file_target(path, candidate)
        break  # a missing name: from here on the path spells the directories to create
    if current != path and not os.path.isdir(current):
        raise ToolError(f"Cannot write {path}: {current} is not a directory")
    return Path(os.path.realpath(path))


def _dangling_directory(link: Path) -> str:
    """Why a dangling link cannot stand for a directory to write in."""
    real = os.path.realpath(link)
    if os.path.islink(real):
        return f"{link} is a symbolic link that loops ({real}), so it cannot hold a file"
    return (
        f"{link} is a symbolic link to {real}, which does not exist, so it cannot hold a "
        "file. Create that directory first or write to a real path."
    )


def _dangling_file_target(path: Path, link: Path) -> Path:
    """A write to a dangling file link creates the file the link points to (as the OS
    would), provided the directory it names exists."""
    target = Path(os.path.realpath(link))
    if os.path.islink(target):
        raise ToolError(f"Cannot write {path}: it is a symbolic link that loops ({target})")
    if not os.path.isdir(target.parent):
        raise ToolError(
            f"Cannot write {path}: it is a symbolic link to {target}, whose directory "
            f"{target.parent} does not exist"
        )
    return target


def resolution(paths: Iterable[Path]) -> list[tuple[str, str]]:
    """How ``paths`` resolve now: each one's directory and itself, symlinks followed. Taken
    before a permission ask (which may wait for a person) and compared after it by
    :func:`unchanged`."""
    return [(os.path.realpath(p.parent), os.path.realpath(p)) for p in paths]


def unchanged(before: list[tuple[str, str]], paths: Iterable[Path]) -> None:
    """Raise :class:`ToolError` when ``paths`` no longer resolve as they did (a symlink on the
    way was made or changed while the permission was asked): the write would land elsewhere
    than where it was checked, so nothing is written."""
    paths = list(paths)
    now = resolution(paths)
    for path, then, current in zip(paths, before, now, strict=True):
        if then != current:
            raise ToolError(
                f"Not written: {path} now leads to {current[1]}, not {then[1]} as when the "
                "permission was asked (a symbolic link on the way changed). Try again."
            )


class EditRequest:
    """The ``edit`` request for a set of paths (see :func:`edit_request`)."""

    __slots__ = ("always", "patterns", "protected")

    def __init__(self, patterns: list[str], protected: dict[str, str]) -> None:
        #: worktree-relative paths, as spelled and (where different) as resolved
        self.patterns = patterns
        #: ``{pattern: protected entry}`` for the patterns that name a protected path
        self.protected = protected
        #: what an "always" reply remembers: ``*``, or the exact paths when one is protected
        self.always = list(patterns) if protected else ["*"]


def edit_request(ctx: EditContext, paths: Iterable[Path]) -> EditRequest:
    """The patterns, the protected entries and the "always" of an ``edit`` ask for ``paths``
    (absolute, as :meth:`ToolContext.resolve` gives them)."""
    protected = ctx.runtime.protected
    patterns: list[str] = []
    marked: dict[str, str] = {}
    for path in paths:
        spelled = os.fspath(path)
        real = os.path.realpath(spelled)
        for form in (spelled, real) if real != spelled else (spelled,):
            pattern = ctx.relative(form)
            if pattern in patterns:
                continue
            patterns.append(pattern)
            entry = protected.entry(form)
            if entry is not None:
                marked[pattern] = entry
    return EditRequest(patterns, marked)
