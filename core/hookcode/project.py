"""A project's identity in the store: the same on every clone of a repository.

:func:`project_id` is ``git:<sha>`` of the repository's first root commit (the smallest sha of
the commits without parents, as OpenCode identifies a project), so that a team's clones, on any
machine and at any path, share their project's sessions and approvals through a shared store.
A folder that is not a git repository, or one without a commit yet, is identified by its path.

The id is cached in hookcode's data directory (``<data dir>/projects/``, one small file per
git directory, named by a hash of its path and inode), so only the first run in a repository
spawns ``git``, and hookcode writes nothing into the repository: a file there could be
planted by whoever made the repository, and running the agent leaves the worktree as it was.
A repository replaced by another at the same path has another inode, so another entry.

A fork shares its root commit, and so its identity: a project approval remembered in another
folder therefore applies only where the user trusts the folder (see
:meth:`hookcode.runtime.Runtime.ruleset`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import subprocess
from pathlib import Path

__all__ = ["CACHE_DIR", "cache_file", "git_dir", "project_id"]

#: the directory in the data directory that caches the ids
CACHE_DIR = "projects"
#: how long ``git rev-list`` may take (a huge repository's first run)
GIT_TIMEOUT = 30.0

_ID = re.compile(r"git:[0-9a-f]{40}(?:[0-9a-f]{24})?")


def git_dir(worktree: Path) -> Path | None:
    """The git directory shared by every worktree of the repository at ``worktree`` (its
    ``.git`` directory, or for a linked worktree the common directory its ``.git`` file leads
    to); None when ``worktree`` holds no ``.git``."""
    dot_git = worktree / ".git"
    if dot_git.is_dir():
        return dot_git
    try:
        text = dot_git.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    match = re.match(r"gitdir:\s*(.+)", text.strip())
    if match is None:
        return None
    directory = (worktree / match.group(1).strip()).resolve()
    try:
        common = (directory / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return directory if directory.is_dir() else None
    return (directory / common).resolve()


def cache_file(directory: Path, data_dir: Path) -> Path | None:
    """Where the id of the git directory ``directory`` is cached in ``data_dir`` (None when
    ``directory`` cannot be examined)."""
    try:
        info = directory.stat()
    except OSError:
        return None
    key = f"{directory}\0{info.st_dev}\0{info.st_ino}".encode("utf-8", "surrogateescape")
    return data_dir / CACHE_DIR / hashlib.sha256(key).hexdigest()[:32]


def project_id(worktree: Path, data_dir: Path | None = None) -> str:
    """``git:<first root commit>`` for the git repository at ``worktree``, else its path;
    cached in ``data_dir`` when given."""
    directory = git_dir(worktree)
    if directory is None:
        return str(worktree)
    cache = None if data_dir is None else cache_file(directory, data_dir)
    cached = None if cache is None else _read_cache(cache)
    if cached is not None:
        return cached
    roots = _root_commits(worktree)
    if not roots:
        return str(worktree)  # no commit yet (or no git): asked again next time
    found = f"git:{min(roots)}"
    if cache is not None:
        _write_cache(cache, found)
    return found


def _read_cache(cache: Path) -> str | None:
    """The id cached in ``cache``; None when there is none (or it is not an id)."""
    try:
        cached = cache.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return cached if _ID.fullmatch(cached) else None


def _root_commits(worktree: Path) -> list[str]:
    """The shas of the repository's commits without parents (none when git fails)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    try:
        done = subprocess.run(
            # the repository's own config may name programs (core.fsmonitor): none may run
            ["git", "-c", "core.fsmonitor=false", "rev-list", "--max-parents=0", "--all"],
            cwd=worktree,
            env=env,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    if done.returncode != 0:
        return []
    return [line for line in done.stdout.split() if re.fullmatch(r"[0-9a-f]{40,64}", line)]


def _write_cache(cache: Path, value: str) -> None:
    """Write the cache atomically (private, like everything in the data directory); a cache
    that cannot be written is left out (git then runs again next time)."""
    from hookcode.datadir import private_dir, private_file

    temporary = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")
    try:
        private_dir(cache.parent)
        private_file(temporary)
        temporary.write_text(value + "\n", encoding="utf-8")
        os.replace(temporary, cache)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink()
