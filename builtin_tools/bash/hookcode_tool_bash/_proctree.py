"""Process trees: find every descendant of a spawn and kill them all (Linux ``/proc``).

hookcode makes itself a child subreaper once (:func:`become_subreaper`), so processes that
double-fork or ``setsid`` away from the shell are re-parented to hookcode instead of init and
stay findable through the parent links. Each spawn also carries an environment token
(``HOOKCODE_PROC_TOKEN``); a scan of ``/proc/*/environ`` finds tagged processes that escaped
anyway (another subreaper in between, or no subreaper support). :func:`kill_tree` sends
SIGTERM, waits up to the grace period, then SIGKILLs whatever is left (re-scanning, so
processes forked meanwhile die too) and reaps the zombies hookcode adopted.

Elsewhere (no ``/proc``) only the process group is signalled.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterable

__all__ = [
    "TOKEN_VAR",
    "become_subreaper",
    "children",
    "find_tree",
    "kill_tree",
    "own_shells",
    "reap_adopted",
    "spawn_lock",
    "sweep_orphans",
]

TOKEN_VAR = "HOOKCODE_PROC_TOKEN"
PR_SET_CHILD_SUBREAPER = 36
GRACE_SECONDS = 0.2

_PROC = "/proc"
_subreaper_done = False
_subreaper_lock = threading.Lock()
#: held while spawning a shell and registering it in own_shells, and while sweeping
spawn_lock = threading.Lock()


def become_subreaper() -> bool:
    """Make this process a child subreaper (Linux, once); True when it is one."""
    global _subreaper_done
    with _subreaper_lock:
        if _subreaper_done:
            return True
        if not os.path.isdir(_PROC) or not hasattr(os, "fork"):
            return False
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
                return False
        except (OSError, AttributeError):
            return False
        _subreaper_done = True
        return True


def _stat(pid: int) -> tuple[int, str, int] | None:
    """(ppid, state, start time) of ``pid``, or None when it is gone."""
    try:
        with open(f"{_PROC}/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    # the command name may hold spaces and parentheses: split after the last ")"
    fields = data[data.rfind(b")") + 2 :].split()
    try:
        return int(fields[1]), fields[0].decode(), int(fields[19])
    except (IndexError, ValueError):
        return None


def _table() -> dict[int, tuple[int, str, int]]:
    table = {}
    try:
        names = os.listdir(_PROC)
    except OSError:
        return table
    for name in names:
        if name.isdigit():
            info = _stat(int(name))
            if info is not None:
                table[int(name)] = info
    return table


def _has_token(pid: int, needle: bytes) -> bool:
    try:
        with open(f"{_PROC}/{pid}/environ", "rb") as f:
            data = f.read()
    except OSError:
        return False
    return data.startswith(needle) or b"\0" + needle in data


def find_tree(
    root: int | None,
    token: str | None,
    *,
    include_root: bool = True,
    exclude: Iterable[int] = (),
    known: dict[int, int] | None = None,
) -> dict[int, tuple[str, int]]:
    """Every process below ``root`` (by parent links) or carrying ``token`` in its environment,
    with their descendants: pid -> (state, start time). Zombies are included (state ``Z``).
    Subtrees rooted at an ``exclude`` pid are left out (unless they carry the token).
    ``known`` (pid -> start time, from an earlier scan) are roots too while they live: once
    their parent dies they hang below hookcode, no longer below ``root``."""
    table = _table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _state, _start) in table.items():
        children.setdefault(ppid, []).append(pid)
    me = os.getpid()
    seeds: list[int] = []
    if root is not None and root in table:
        seeds.append(root)
    if token:
        needle = f"{TOKEN_VAR}={token}\0".encode()
        seeds += [
            pid
            for pid, (_p, state, _s) in table.items()
            if pid != me and pid != root and state != "Z" and _has_token(pid, needle)
        ]
    for pid, start in (known or {}).items():
        if pid in table and table[pid][2] == start and pid != root:
            seeds.append(pid)
    found: dict[int, tuple[str, int]] = {}
    skip = set(exclude) - set(seeds)
    stack = list(seeds)
    while stack:
        pid = stack.pop()
        if pid in found or pid == me or pid in skip:
            continue
        _ppid, state, start = table[pid]
        found[pid] = (state, start)
        stack.extend(children.get(pid, ()))
    if not include_root and root is not None:
        found.pop(root, None)
    return found


def _signal_all(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _alive(tree: dict[int, tuple[str, int]]) -> list[int]:
    return [pid for pid, (state, _start) in tree.items() if state not in ("Z", "X")]


def _reap(seen: dict[int, int], skip: int | None) -> None:
    """waitpid the processes of ``seen`` (pid -> start time) that are zombies and our children
    (adopted as subreaper); forget the ones that are gone."""
    me = os.getpid()
    for pid, start in list(seen.items()):
        if pid == skip:
            continue
        info = _stat(pid)
        if info is None or info[2] != start:
            del seen[pid]
            continue
        if info[1] == "Z":
            if info[0] == me:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)
            del seen[pid]  # not ours: its parent reaps it


def kill_tree(
    root: int | None,
    token: str | None,
    *,
    include_root: bool = True,
    group: int | None = None,
    exclude: Iterable[int] = (),
    grace: float = GRACE_SECONDS,
) -> None:
    """SIGTERM the whole tree (and process ``group``), wait up to ``grace`` seconds for it to
    go, then SIGKILL what is left until nothing is left; reap adopted zombies.

    ``root`` itself is never reaped here (its Popen does that)."""
    if not os.path.isdir(_PROC):
        _signal_group(group, signal.SIGTERM)
        time.sleep(grace)
        _signal_group(group, signal.SIGKILL)
        return
    exclude = set(exclude)

    seen: dict[int, int] = {}  # every process of the tree ever found: pid -> start time

    def scan() -> dict[int, tuple[str, int]]:
        return find_tree(root, token, include_root=include_root, exclude=exclude, known=seen)

    def alive() -> list[int]:
        tree = scan()
        seen.update((pid, start) for pid, (_state, start) in tree.items())
        return _alive(tree)

    # scan before the first signal: once the shell dies its children hang below hookcode
    first = alive()
    _signal_group(group, signal.SIGTERM)
    _signal_all(first, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        time.sleep(0.01)
        if not alive():
            break
    for _ in range(100):
        left = alive()
        if not left:
            break
        _signal_group(group, signal.SIGKILL)
        _signal_all(left, signal.SIGKILL)
        time.sleep(0.005)
    # the killed ones we adopted are our zombies now (a SIGKILLed process may take a moment)
    end = time.monotonic() + 0.1
    while True:
        _reap(seen, root)
        if not seen or (root in seen and len(seen) == 1) or time.monotonic() > end:
            break
        time.sleep(0.005)
    sweep_orphans()


def _signal_group(group: int | None, sig: int) -> None:
    if group is None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        os.killpg(group, sig)


def reap_adopted() -> None:
    """Reap the zombies hookcode adopted (see :func:`sweep_orphans`)."""
    sweep_orphans()


def children(pid: int) -> set[int]:
    """The live direct children of ``pid``."""
    return {
        child
        for child, (ppid, state, _start) in _table().items()
        if ppid == pid and state not in ("Z", "X")
    }


#: the shells this module spawned and has not waited for yet (their Popen reaps them)
own_shells: set[int] = set()


def sweep_orphans() -> int:
    """waitpid the zombies hookcode adopted as subreaper that nothing else will reap: zombie
    children in another session than hookcode's that are not shells this module spawned
    (e.g. the short-lived middle process of a double fork). Plain children of other code
    (ripgrep, git) share hookcode's session and are left alone. Returns how many."""
    if not os.path.isdir(_PROC):
        return 0
    with spawn_lock:
        return _sweep()


def _sweep() -> int:
    me = os.getpid()
    mine = os.getsid(0)
    reaped = 0
    for pid, (ppid, state, _start) in _table().items():
        if ppid != me or state != "Z" or pid in own_shells:
            continue
        try:
            with open(f"{_PROC}/{pid}/stat", "rb") as f:
                data = f.read()
            session = int(data[data.rfind(b")") + 2 :].split()[3])
        except (OSError, IndexError, ValueError):
            continue
        if session == mine:
            continue
        with contextlib.suppress(ChildProcessError):
            if os.waitpid(pid, os.WNOHANG)[0]:
                reaped += 1
    return reaped
