"""From a shell analysis to the permission requests a command needs before it runs.

The ``shell_analyze`` hook (policy_shell) says what a command runs, which directories outside
the project it names, which files it reads and writes. :func:`shell_asks` turns that into the
requests a tool that runs shell commands asks, in order (:func:`shell_plan` analyses and plans
in one go, for the tool and for ``hookcode permissions explain``, through the
``permission_plan`` hook):

1. ``external_directory`` for each outside directory (and an outside working directory);
2. ``read`` for the files whose contents it shows (read rules apply to every reader; a
   directory read recursively is walked, and each file the rules do not simply allow is
   asked);
3. ``edit`` for the protected files it writes (:mod:`hookcode.protected`: asked even where
   rules allow writing, and never approved by ``--yes``);
4. the shell permission the caller names (the bash tool's: ``bash``) with one pattern per
   simple command (opaque: the rules cannot allow it).

With no analyser the whole command is one opaque pattern of that permission.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from hookcode.protected import ProtectedPaths
    from hookcode.shell_analysis import ShellAnalysis

__all__ = ["ANALYSED_SHELLS", "MAX_WALK", "Ask", "RequestPlan", "shell_asks", "shell_plan"]

#: shells whose grammar the shell analysis reads (bash's; POSIX sh and dash are its subset)
ANALYSED_SHELLS = ("bash", "sh", "dash")
#: entries a recursive read (``grep -r DIR``) may hold before it is too big to check
MAX_WALK = 20_000


class ShellHooks(Protocol):
    def call_first(self, hook: str, **kwargs: Any) -> Any: ...


class ShellRuntime(Protocol):
    """The part of a runtime that planning a shell command uses."""

    @property
    def plugins(self) -> ShellHooks: ...

    @property
    def protected(self) -> ProtectedPaths: ...

    def is_inside_project(self, path: Path) -> bool: ...


class ReadCheck(Protocol):
    """What the read rules say of a path (:class:`hookcode.tools.ReadRules`)."""

    @property
    def allows_everything(self) -> bool: ...

    def __call__(self, path: str | Path) -> str: ...


class ShellContext(Protocol):
    """The part of a :class:`hookcode.tools.ToolContext` that planning a shell command uses."""

    @property
    def runtime(self) -> ShellRuntime: ...

    @property
    def cwd(self) -> Path: ...

    @property
    def worktree(self) -> Path: ...

    def external_directory(self, path: str | Path, kind: str | None = None) -> str | None: ...

    def read_rules(self) -> ReadCheck: ...


@dataclass
class Ask:
    """One permission request of a command."""

    permission: str
    patterns: list[str]
    always: list[str]
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class RequestPlan:
    """The requests a call makes before it runs, in order, and the analysis they came from
    (``permission_plan``; ``hookcode permissions explain`` shows both). ``analysis`` None:
    nothing analysed the pattern, so it is one opaque pattern."""

    asks: list[Ask]
    analysis: ShellAnalysis | None = None


def shell_plan(
    ctx: ShellContext,
    command: str,
    run_dir: str | os.PathLike[str],
    *,
    permission: str,
    shell: str = "bash",
    description: str = "",
) -> RequestPlan:
    """Analyse ``command`` (the ``shell_analyze`` hook, run in ``run_dir``) and plan its
    requests (:func:`shell_asks`). Blocking: call it from a worker thread."""
    analysis = ctx.runtime.plugins.call_first("shell_analyze", command=command, cwd=str(run_dir))
    asks = shell_asks(
        ctx,
        analysis,
        command,
        run_dir,
        permission=permission,
        shell=shell,
        description=description,
    )
    return RequestPlan(asks, analysis)


def shell_asks(
    ctx: ShellContext,
    analysis: ShellAnalysis | None,
    command: str,
    run_dir: str | os.PathLike[str],
    *,
    permission: str,
    shell: str = "bash",
    description: str = "",
) -> list[Ask]:
    """The requests ``command`` needs in ``run_dir`` (see the module docstring); the simple
    commands are asked as ``permission``. Blocking: a recursive read walks the directory;
    call it from a worker thread."""
    base: dict[str, Any] = {"command": command, "description": description}
    asks: list[Ask] = []
    directories: list[str] = []
    reads: list[str] = []
    if analysis is not None:
        walk = read_patterns(ctx, analysis.reads)
        reads = walk.patterns
        directories += walk.outside
        if walk.too_big is not None:
            analysis.opaque = True
            analysis.reasons.append(
                f"it reads {walk.too_big} recursively: too many files to check against the read "
                "rules"
            )
    if analysis is not None:
        if os.path.basename(shell) not in ANALYSED_SHELLS:
            analysis.opaque = True
            analysis.reasons.append(
                f"the command runs in {os.path.basename(shell)}, whose grammar the shell "
                "analysis does not read"
            )
        directories += [d[:-2] if d.endswith("/*") else d for d in map(str, analysis.outside_dirs)]
    directories.append(os.fspath(run_dir))
    seen: set[str] = set()
    for directory in directories:
        pattern = ctx.external_directory(directory, "directory")
        if pattern is None or pattern in seen:
            continue
        seen.add(pattern)
        asks.append(
            Ask(
                "external_directory",
                [pattern],
                [pattern],
                {"filepath": directory, "parentDir": pattern[:-2]},
            )
        )
    if analysis is None:
        asks.append(Ask(permission, [command], [], {**base, "opaque": True}))
        return asks
    if reads:
        asks.append(Ask("read", reads, reads, {**base, "filepath": reads[0]}))
    protected = protected_writes(ctx, analysis.writes)
    if protected:
        patterns = list(protected)
        asks.append(
            Ask(
                "edit",
                patterns,
                patterns,
                {**base, "filepath": patterns[0], "protected": protected},
            )
        )
    patterns = list(dict.fromkeys(str(c) for c in analysis.commands))
    always = list(dict.fromkeys(str(a) for a in analysis.always))
    if patterns or analysis.opaque:  # only `cd`: nothing to ask (reference §12.5)
        asks.append(
            Ask(
                permission,
                patterns or [command],
                [] if analysis.opaque else always,
                {**base, **analysis.request_metadata()},
            )
        )
    return asks


@dataclass
class ReadWalk:
    """What :func:`read_patterns` found."""

    patterns: list[str] = field(default_factory=list)
    #: directories outside the project that a recursive read reaches through a symlink
    outside: list[str] = field(default_factory=list)
    #: the directory that held too many entries to check, if any
    too_big: str | None = None


def read_patterns(ctx: ShellContext, reads: Iterable[str]) -> ReadWalk:
    """The ``read`` patterns to ask for the files a command shows.

    A file is asked as itself (and as its real path). A directory read recursively
    (``DIR/**``) is walked: each file in it that the read rules do not simply allow is asked
    (``grep -r`` would show every one of them; the walk happens only when some read rule is
    not an allow), and a symlink in it that leads outside the project is an outside
    directory (``grep -R`` follows it)."""
    found = ReadWalk()
    patterns: dict[str, None] = {}
    rules = None
    for entry in reads:
        if not entry.endswith("/**"):
            patterns.setdefault(entry, None)
            patterns.setdefault(os.path.realpath(entry), None)
            continue
        if rules is None:
            rules = ctx.read_rules()
        check = None if rules.allows_everything else rules
        directory = entry[:-3] or "/"
        count = 0
        for root, dirs, files in os.walk(directory):
            count += len(dirs) + len(files)
            if count > MAX_WALK:
                found.too_big = directory
                break
            for name in dirs + files:
                path = os.path.join(root, name)
                if os.path.islink(path):
                    target = os.path.realpath(path)
                    if not ctx.runtime.is_inside_project(Path(target)):
                        place = target if os.path.isdir(target) else os.path.dirname(target)
                        found.outside.append(place)
            if check is None:
                continue
            for name in files:
                path = os.path.join(root, name)
                if check(path) != "allow":
                    patterns.setdefault(path, None)
                    patterns.setdefault(os.path.realpath(path), None)
        if found.too_big is not None:
            break
    found.patterns = list(patterns)
    return found


def protected_writes(ctx: ShellContext, writes: Iterable[str]) -> dict[str, str]:
    """``{pattern: entry}`` for the written files that are protected; the pattern is the path
    relative to the worktree, as the edit tools ask it (``DIR/**``: a recursive write)."""
    from hookcode.configfiles import project_dirs

    protected = ctx.runtime.protected
    found: dict[str, str] = {}
    for entry in writes:
        if entry.endswith("/**"):
            path = entry[:-3] or "/"
            name = protected.entry_within(path, project_dirs(ctx.cwd, ctx.worktree))
        else:
            path = entry
            name = protected.entry(path, os.path.realpath(path))
        if name is not None:
            found.setdefault(os.path.relpath(path, ctx.worktree).replace(os.sep, "/"), name)
    return found
