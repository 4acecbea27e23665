"""Where a shell command's paths lead: the working directories a command may be in as ``cd``
runs, paths resolved the way the OS will (symlinks followed, dangling ones too), globs
expanded as bash would, and what lies outside the project, is read or is written."""

from __future__ import annotations

import glob as globmod
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hookcode.configfiles import find_worktree
from hookcode.fileio import realpath_nearest

from hookcode_policy_shell.commands import NONE, PATH, READ, RW, WRITE
from hookcode_policy_shell.words import BRACE, GLOB, Word

__all__ = ["SPECIAL_FILES", "Places"]

#: redirection targets and arguments that are never "outside the project"
SPECIAL_FILES = frozenset(
    ["/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty", "/dev/zero",
     "/dev/random", "/dev/urandom", "/dev/fd/0", "/dev/fd/1", "/dev/fd/2"]
)  # fmt: skip
#: how many possible working directories are followed; past that, only the first ones are,
#: and a relative path that climbs (``..``) is opaque (or any relative path, when one of the
#: dropped directories was outside the project)
MAX_CWDS = 8
#: matches of one glob checked one by one; a glob naming more is opaque
MAX_GLOB_MATCHES = 256
#: nodes whose `cd` does not outlive them (bash runs a pipeline's parts in subshells)
SCOPES = frozenset({"subshell", "command_substitution", "process_substitution", "pipeline"})
#: nodes a `cd` passes through and still runs for certain before what follows
_TRANSPARENT = frozenset({"redirected_statement", "compound_statement", "negated_command"})


class Places:
    """The places of one analysis: where the command may be, and the paths it touches."""

    def __init__(self, cwd: str, opaque: Callable[[str], None]) -> None:
        self._opaque = opaque
        self.cwd = str(realpath_nearest(Path(os.path.abspath(cwd))))
        self.worktree = str(find_worktree(Path(self.cwd)))
        #: the directories the command may be in at this point of the walk
        self.cwds: list[str] = [self.cwd]
        self.cwd_known = True
        self.overflow = False
        self._resolved: dict[tuple[str, str], list[str]] = {}
        self._isdir: dict[str, bool] = {}
        self._exists: dict[tuple[str, str], tuple[bool, bool]] = {}
        self._done: set[tuple[str, str, str, str, bool]] = set()
        self.outside: dict[str, None] = {}
        self.reads: dict[str, None] = {}
        self.writes: dict[str, None] = {}

    def save(self) -> tuple[list[str], bool]:
        return list(self.cwds), self.cwd_known

    def restore(self, saved: tuple[list[str], bool]) -> None:
        self.cwds, self.cwd_known = list(saved[0]), saved[1]

    def argument(self, w: Word, role: str, *, recursive: bool = False, quiet: bool = False) -> None:
        """Check one path a command reads or writes: outside the project, read and written
        files. A path that cannot be known statically is opaque (``quiet``: skipped)."""
        if role == NONE:
            return
        if w.value is None and w.choices is not None:
            for choice in w.choices:
                self.argument(choice, role, recursive=recursive, quiet=quiet)
            return
        if w.value is None:
            if not quiet:
                self._opaque(f"the path {w.text} cannot be resolved statically")
            return
        value = w.value
        if not value:
            return
        if BRACE.search(w.mask):
            if not quiet:
                self._opaque(f"the path {w.text} uses brace expansion")
            return
        if w.mask.startswith("~"):
            expanded = _expand_tilde(w)
            if expanded is None:
                self._opaque(f"the path {w.text} cannot be resolved statically")
                return
            value = expanded
        if value in SPECIAL_FILES:
            return
        if not value.startswith("/"):
            if not self.cwd_known:
                self._opaque(
                    f"the path {w.text} is relative to a directory the analysis does not know"
                )
            elif self.overflow and ".." in value.split("/"):
                self._opaque(f"the path {w.text} climbs out of one of too many directories")
        glob_at = GLOB.search(w.mask)
        for base in self.cwds:
            key = (base, value, w.mask if glob_at else "", role, recursive)
            if key in self._done:
                continue  # the same path from the same place: nothing new to learn
            self._done.add(key)
            if glob_at:
                directories, matches = self.expand_glob(base, value, w.mask)
                for directory in directories:
                    self.check_place(directory, directory_only=True)
            else:
                matches = [value]
            for match in matches:
                spelled = os.path.normpath(os.path.join(base, match))
                for resolved in self.resolve(base, match):
                    self.check_place(resolved)
                    self.record(role, resolved, spelled, recursive=recursive)

    def isdir(self, path: str) -> bool:
        found = self._isdir.get(path)
        if found is None:
            found = self._isdir[path] = os.path.isdir(path)
        return found

    def record(self, role: str, resolved: str, spelled: str, *, recursive: bool) -> None:
        """Note a read or written path (as resolved and as spelled: a rule may name either);
        ``DIR/**`` for a directory read or written as a whole tree."""
        names = [resolved] if spelled == resolved else [resolved, spelled]
        is_dir = self.isdir(resolved)
        if role in (READ, RW) and (recursive or not is_dir):
            for name in names:
                self.reads.setdefault(_tree(name) if is_dir else name, None)
        if role in (WRITE, RW):
            tree = is_dir and (recursive or role == RW)
            for name in names:
                self.writes.setdefault(_tree(name) if tree else name, None)

    def expand_glob(self, base: str, value: str, mask: str) -> tuple[list[str], list[str]]:
        """What a glob argument names: (its directories: files created there later are named
        too; its matches now, as bash would expand them: hidden files only for a pattern that
        starts with a dot). With no match bash passes the pattern itself."""
        glob_at = GLOB.search(mask)
        assert glob_at is not None
        head = value[: glob_at.start()]
        directory = head if head.endswith("/") or not head else os.path.dirname(head)
        directories = self.resolve(base, directory or ".")
        try:
            matches = globmod.glob(_glob_pattern(value, mask), root_dir=base, include_hidden=False)
        except (OSError, ValueError):
            matches = []
        if len(matches) > MAX_GLOB_MATCHES:
            self._opaque(f"the glob {value!r} names too many files to check one by one")
            matches = matches[:MAX_GLOB_MATCHES]
        return directories, sorted(matches) or [value]

    def check_place(self, resolved: str, *, directory_only: bool = False) -> None:
        path = resolved.rstrip("/") or "/"
        if self.inside(path) or path in SPECIAL_FILES:
            return
        directory = path if directory_only or self.isdir(path) else os.path.dirname(path)
        if directory in self.outside or any(_within(directory, d) for d in self.outside):
            return  # asked about already, with a directory above it
        for known in [d for d in self.outside if _within(d, directory)]:
            del self.outside[known]
        self.outside[directory] = None

    def change_directory(self, name: str, args: list[Word]) -> None:
        targets = [w for w in args if not (w.value or "").startswith("-") or w.value == "-"]
        if name == "popd":
            self.cwd_known = False
            self._opaque("popd goes to a directory the analysis does not know")
            return
        if not targets:
            if name == "cd":
                self.chdir(Word("~", "~", "~"))
            return
        target = targets[0]
        if target.value == "-":
            self.cwd_known = False
            self._opaque("cd - goes to a directory the analysis does not know")
            return
        self.argument(target, PATH)
        node = target.node
        self.chdir(target, node.parent if node is not None else None)

    def chdir(self, w: Word, node: Any = None) -> None:
        """Follow ``cd``: an unconditional ``cd`` to an existing directory replaces the
        possible directories; any other (conditional, or to a directory that may not exist)
        adds to them."""
        if w.value is None or (w.expands and not w.mask.startswith("~")):
            self.cwd_known = False
            self._opaque(f"cd {w.text}: the directory is not known statically")
            return
        value = _expand_tilde(w)
        if value is None:
            self.cwd_known = False
            self._opaque(f"cd {w.text}: the directory is not known statically")
            return
        new = [self.resolve(base, value)[0] for base in self.cwds]
        if all(os.path.isdir(p) for p in new) and _unconditional(node):
            self.cwds = list(dict.fromkeys(new))
        else:
            self.cwds = _union(self.cwds, new)
        if len(self.cwds) > MAX_CWDS:
            dropped = self.cwds[MAX_CWDS:]
            self.cwds = self.cwds[:MAX_CWDS]
            self.overflow = True
            if not all(self.inside(d) for d in dropped):
                self.cwd_known = False

    def inside(self, path: str) -> bool:
        if _within(path, self.cwd):
            return True
        return self.worktree != "/" and _within(path, self.worktree)

    def resolve(self, base: str, value: str) -> list[str]:
        """Where ``value`` may point from ``base``: symlinks followed (dangling ones too), and
        ``..`` taken both physically and lexically (a missing directory followed by ``..``);
        the physical one first."""
        key = (base, value)
        found = self._resolved.get(key)
        if found is None:
            joined = os.path.join(base, value)
            # os.path.realpath is what hookcode.fileio.realpath_nearest does, without Path
            first = os.path.realpath(joined)
            second = os.path.realpath(os.path.normpath(joined))
            found = self._resolved[key] = [first] if first == second else [first, second]
        return found

    def exists(self, base: str, value: str) -> tuple[bool, bool]:
        """(whether ``value`` names something from ``base`` (a dangling link counts), and
        whether that is a regular file)."""
        key = (base, value)
        found = self._exists.get(key)
        if found is None:
            path = os.path.join(base, value)
            found = self._exists[key] = (os.path.lexists(path), os.path.isfile(path))
        return found


def _tree(directory: str) -> str:
    """``DIR/**``: a directory taken as the whole tree below it."""
    return directory.rstrip("/") + "/**"


def _glob_pattern(value: str, mask: str) -> str:
    """A pattern for :mod:`glob` from a word's value, its quoted characters escaped."""
    out: list[str] = []
    for ch, m in zip(value, mask, strict=False):
        if m == "\0" and ch in "*?[":
            out.append(f"[{ch}]")
        else:
            out.append(ch)
    return "".join(out)


def _expand_tilde(w: Word) -> str | None:
    value = w.value or ""
    if not w.mask.startswith("~"):
        return value
    head = value.partition("/")[0]
    if head in ("~+", "~-") or (head != "~" and not re.fullmatch(r"~[A-Za-z0-9_.-]+", head)):
        return None
    expanded = os.path.expanduser(value)
    return None if expanded.startswith("~") else expanded


def _within(path: str, directory: str) -> bool:
    if directory == "/":
        return path.startswith("/")
    return path == directory or path.startswith(directory + "/")


def _union(first: list[str], second: list[str]) -> list[str]:
    return list(dict.fromkeys([*first, *second]))


def _unconditional(node: Any) -> bool:
    """Whether the command at ``node`` runs whenever what follows it in its scope runs:
    not on the right of ``&&``/``||``, not in an if/while/for/case body or a function."""
    if node is None:
        return False
    child = node
    parent = node.parent
    while parent is not None:
        kind = parent.type
        if kind == "program" or kind in SCOPES:
            return True
        if kind == "list":
            if parent.named_children[0] != child:
                return False
        elif kind not in _TRANSPARENT and kind != "command":
            return False
        child = parent
        parent = parent.parent
    return True
