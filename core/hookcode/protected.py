"""Protected paths: the agent's own configuration and the repository's execution hooks.

Writing one of these changes what hookcode allows or what runs next (a rewritten
``hookcode.toml`` loosens the policy, a ``.git/config`` with ``core.fsmonitor`` runs a command
on the next ``git status``), so every tool that writes a file marks such a path in its
permission request (``metadata["protected"]``: pattern -> entry name) and core keeps the
request at ``ask`` unless the rule that allows it names the path itself: a pattern whose literal
text (wildcards aside) contains the entry's name, such as ``edit = { "hookcode.toml" = "allow" }``
or ``".git/hooks/*"``. ``*`` or ``**/*.toml`` never do. ``--yes`` does not approve them.

The protected entries, matched on every component of the path as spelled and as resolved
(case-insensitively, so a case-insensitive file system is covered too):

* ``hookcode.toml`` and everything under ``.hookcode/`` (project config, local tools, agents),
* ``.git`` and everything under it (config, hooks, info, modules' configs),
* ``.claude/settings*.json`` (Claude Code hooks), ``.gitmodules``, ``.envrc`` (direnv),
* the user config directory (``~/.config/hookcode``) and hookcode's data directory (the trust
  store, credentials, the sessions database).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ProtectedPaths", "names_entry"]

_WILDCARDS = re.compile(r"[*?]")


@dataclass(frozen=True)
class ProtectedPaths:
    """The protected entries of one runtime: the fixed names plus its user config and data
    directories."""

    config_dir: Path
    data_dir: Path

    def entry(self, *paths: str | os.PathLike[str]) -> str | None:
        """The protected entry that any of ``paths`` (the same path as spelled and as
        resolved: absolute, normalised) falls under, else None."""
        for path in paths:
            found = self._entry_of(os.path.normpath(os.fspath(path)))
            if found is not None:
                return found
        return None

    def _entry_of(self, path: str) -> str | None:
        parts = [p.lower() for p in path.replace("\\", "/").split("/") if p]
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if part == ".git":
                return ".git"
            if part == ".hookcode":
                return ".hookcode"
            if last and part in ("hookcode.toml", ".gitmodules", ".envrc"):
                return part
            if (
                last
                and i > 0
                and parts[i - 1] == ".claude"
                and part.startswith("settings")
                and part.endswith(".json")
            ):
                return ".claude/settings"
        for directory in (self.config_dir, self.data_dir):
            for spelled in _spellings(directory):
                if _within(path, spelled):
                    return _tail(spelled)
        return None

    def entry_within(self, directory: str | os.PathLike[str], roots: Iterable[Path]) -> str | None:
        """The protected entry that a recursive write of ``directory`` (``rm -r``, ``find
        -delete``) would touch: ``directory`` itself inside one, or a protected file or
        directory below it: the user config and data directories, and the entries of
        ``directory`` and of each of ``roots`` (the project directories)."""
        found = self.entry(directory, os.path.realpath(directory))
        if found is not None:
            return found
        top = os.path.realpath(directory)
        candidates: list[str] = [str(self.config_dir), str(self.data_dir)]
        for root in [Path(directory), *roots]:
            candidates += [str(root / name) for name in _TOP_LEVEL]
        for candidate in candidates:
            if os.path.lexists(candidate) and _within(os.path.realpath(candidate), top):
                return self.entry(candidate) or os.path.basename(candidate)
        return None


#: the protected names that sit at the top of a project directory
_TOP_LEVEL = (
    ".git",
    ".hookcode",
    "hookcode.toml",
    ".gitmodules",
    ".envrc",
    ".claude/settings.json",
    ".claude/settings.local.json",
)


def names_entry(pattern: str, entry: str) -> bool:
    """Whether a rule ``pattern`` names the protected ``entry``: one of its literal pieces
    (the text between wildcards) contains the entry's name, case-insensitively."""
    wanted = entry.lower()
    return any(wanted in piece.lower() for piece in _WILDCARDS.split(pattern))


def protected_patterns(
    protected: ProtectedPaths, items: Iterable[tuple[str, Iterable[str | os.PathLike[str]]]]
) -> dict[str, str]:
    """``{pattern: entry}`` for the ``(pattern, paths)`` pairs whose paths are protected."""
    found: dict[str, str] = {}
    for pattern, paths in items:
        entry = protected.entry(*paths)
        if entry is not None:
            found[pattern] = entry
    return found


def _spellings(directory: Path) -> list[str]:
    spelled = os.path.normpath(os.path.abspath(directory))
    real = os.path.realpath(spelled)
    return [spelled] if real == spelled else [spelled, real]


def _within(path: str, directory: str) -> bool:
    a, b = os.path.normcase(path), os.path.normcase(directory)
    return a == b or a.startswith(b.rstrip("/") + "/")


def _tail(directory: str) -> str:
    """The name a rule must contain to name a directory: its last two components
    (``.config/hookcode``)."""
    parts = [p for p in directory.replace("\\", "/").split("/") if p]
    return "/".join(parts[-2:]) if parts else directory
