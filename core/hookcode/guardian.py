"""The process guardian: every command a tool starts lives below it, and nothing it started
outlives hookcode (POSIX; the process-tree parts need Linux: ``/proc`` and ``prctl``).

This module runs in its own process, started by :mod:`hookcode.process` once per runtime
as ``python -I -S guardian.py FD PARENT``; it imports the standard library only (hookcode
also imports it for the ``/proc`` helpers and :func:`sweep`). The guardian is in a session of
its own, so neither a terminal's signals nor a kill of hookcode's process group reach it.
hookcode asks it over a Unix socket to spawn a command, passing the pipes to use
(SCM_RIGHTS); the guardian forks a **keeper** for each spawn: a copy of itself (a
single-threaded process forks safely) that makes itself a child subreaper and forks and
execs the command in a new session. Whatever the command starts (double forks, ``setsid``,
a cleared environment) stays below its keeper, so the keeper always finds the whole tree.
hookcode talks to a keeper through two pipes: commands in (:data:`KILL`, ...), status out
(the shell's pid, its exit status, "gone").

Nothing survives hookcode:

* hookcode dies (any signal, SIGKILL too): each keeper's command pipe and the guardian's
  socket read end-of-file, and the guardian also gets its parent-death signal; the keepers
  kill their trees, the guardian kills whatever is left below it, and exits;
* the guardian dies: each keeper gets its parent-death signal (SIGTERM) and kills its tree;
* a keeper dies: its command's shell gets its parent-death signal (SIGKILL); what the shell
  started is re-parented to the guardian (a subreaper too), which kills every child of its
  own that is not a keeper;
* all of them die at once (``kill -9`` of each, the OOM killer, a crash of the machine's
  session manager): each keeper keeps a journal of its tree in ``<data dir>/processes``
  (pid and start time of every process, the environment token); :func:`sweep`, run by a
  later hookcode, kills what is left, matching start times so a reused pid never counts.

A kill is SIGTERM, up to :data:`GRACE_SECONDS` for the tree to go (re-scanning, so what
forks meanwhile gets it too), then SIGKILL until nothing is left.

The module is one file, longer than the project's modules usually are, because it is also a
program: started as a script with ``-I -S`` it can import nothing of hookcode, so the guardian,
the keeper, the journal and the ``/proc`` helpers they share must stand in this one file.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

__all__ = [
    "GRACE_SECONDS",
    "TOKEN_VAR",
    "boot_id",
    "carries",
    "proc_stat",
    "proc_table",
    "start_time",
    "sweep",
]

#: the environment variable that tags every process a spawn starts
TOKEN_VAR = "HOOKCODE_PROC_TOKEN"
#: seconds between SIGTERM and SIGKILL
GRACE_SECONDS = 0.2
#: a keeper scans its tree for the journal this long after the spawn, then at twice the last
#: interval while nothing changes, at most :data:`JOURNAL_MAX` apart
JOURNAL_FIRST = 0.05
JOURNAL_MAX = 4.0
#: the guardian waits this long for its keepers to finish their kills when it shuts down
SHUTDOWN_WAIT = GRACE_SECONDS + 1.5
JOURNAL_SUFFIX = ".procs"
JOURNAL_HEADER = "hookcode-keeper 1"
#: a journal's temporary file older than this (seconds) is from a keeper that died writing it
STALE_TEMP = 60.0

# commands a keeper reads from hookcode, one per line
KILL = b"k"  # kill the whole tree, answer "g", exit
SIGNAL = b"s"  # "s SIGNUM": signal the shell (while it is not reaped)
COMMAND_KILL = b"c"  # "c TOKEN BEGIN GRACE_MS": kill one command's processes, answer "c"
DETACH = b"d"  # hookcode stops listening: end-of-file is no longer its death

PROC = "/proc"
#: without /proc (not Linux) a kill reaches the command's process group only
HAVE_PROC = os.path.exists(f"{PROC}/self/stat")
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_libc: object = None

# (ppid, state, start time, process group, session) of one process
Stat = tuple[int, str, int, int, int]


# ---------------------------------------------------------------------------------------------
# /proc
# ---------------------------------------------------------------------------------------------


def _read(path: str, limit: int = 1 << 16) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        chunks = []
        while True:
            chunk = os.read(fd, limit)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)


def proc_stat(pid: int) -> Stat | None:
    """(ppid, state, start time, pgid, sid) of ``pid`` from ``/proc/PID/stat``, or None."""
    data = _read(f"{PROC}/{pid}/stat", 4096)
    if not data:
        return None
    # the command name may hold spaces and parentheses: split after the last ")"
    fields = data[data.rfind(b")") + 2 :].split()
    try:
        return (int(fields[1]), fields[0].decode(), int(fields[19]), int(fields[2]), int(fields[3]))
    except (IndexError, ValueError):
        return None


def start_time(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks since boot (``/proc/PID/stat`` field 22)."""
    info = proc_stat(pid)
    return None if info is None else info[2]


def pid_alive(pid: int, start: int | None = None) -> bool:
    """Whether process ``pid`` runs on this machine: it exists and is not a zombie (exited,
    not yet reaped); with ``start`` (:func:`start_time`), only the process that started then
    counts, never a later one that was given the same pid."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # someone else's: it exists
    except OSError:
        return False
    info = proc_stat(pid)
    if info is None:
        return not HAVE_PROC and start is None  # no /proc: the signal probe is all we have
    return info[1] != "Z" and (start is None or info[2] == start)


def proc_table() -> dict[int, Stat]:
    """Every process: pid -> :func:`proc_stat`."""
    table: dict[int, Stat] = {}
    try:
        names = os.listdir(PROC)
    except OSError:
        return table
    for name in names:
        if name.isdigit():
            info = proc_stat(int(name))
            if info is not None:
                table[int(name)] = info
    return table


def boot_id() -> str:
    """This boot's id (start times count from the boot)."""
    data = _read(f"{PROC}/sys/kernel/random/boot_id")
    return data.decode().strip() if data else ""


def token_of(pid: int) -> str | None:
    """The :data:`TOKEN_VAR` value in the environment ``pid`` was started with, or None."""
    data = _read(f"{PROC}/{pid}/environ")
    if not data:
        return None
    needle = TOKEN_VAR.encode() + b"="
    start = 0 if data.startswith(needle) else data.find(b"\0" + needle) + 1
    if start <= 0 and not data.startswith(needle):
        return None
    start += len(needle)
    end = data.find(b"\0", start)
    return data[start : end if end >= 0 else len(data)].decode("ascii", "replace")


def carries(pid: int, token: str, *, family: bool = False) -> bool:
    """Whether ``pid`` carries ``token``; with ``family`` also ``token.N`` (the commands of a
    persistent shell carry their shell's token plus a number)."""
    value = token_of(pid)
    if value is None:
        return False
    return value == token or (family and value.startswith(token + "."))


def _children(table: dict[int, Stat]) -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for pid, info in table.items():
        children.setdefault(info[0], []).append(pid)
    return children


def _below(
    table: dict[int, Stat],
    roots: Iterable[int],
    *,
    children: dict[int, list[int]] | None = None,
    skip: Callable[[int], bool] | None = None,
) -> set[int]:
    """``roots`` and all their descendants that are alive (zombies left out); a process for
    which ``skip`` is true is left out with its subtree."""
    kids = children if children is not None else _children(table)
    found: set[int] = set()
    stack = [pid for pid in roots if pid in table]
    while stack:
        pid = stack.pop()
        if pid in found or (skip is not None and skip(pid)):
            continue
        found.add(pid)
        stack.extend(kids.get(pid, ()))
    return {pid for pid in found if table[pid][1] not in ("Z", "X")}


def _signal(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):  # gone, or not ours to signal
            os.kill(pid, sig)


def _signal_groups(groups: Iterable[int], sig: int) -> None:
    for group in groups:
        with contextlib.suppress(OSError):
            os.killpg(group, sig)


def _state(pid: int) -> str | None:
    info = proc_stat(pid)
    return None if info is None else info[1]


def freeze(collect: Callable[[], set[int]], limit: float = 0.5) -> set[int]:
    """SIGSTOP what ``collect()`` returns, and what it forked before it stopped, until every
    process of the set is stopped (or ``limit`` seconds passed); returns the set. A frozen tree
    cannot react to a kill in progress: a shell whose child dies first cannot run its next
    command before its own signal arrives."""
    frozen: set[int] = set()
    end = time.monotonic() + limit
    while True:
        live = collect()
        new = live - frozen
        _signal(new, signal.SIGSTOP)
        frozen |= new
        running = [pid for pid in live if _state(pid) not in ("T", "t", "Z", "X", None)]
        if (not new and not running) or time.monotonic() >= end:
            return frozen | live
        time.sleep(0.001)


def terminate(
    collect: Callable[[], set[int]],
    *,
    grace: float = GRACE_SECONDS,
    groups: Iterable[int] = (),
    reap: Callable[[], object] | None = None,
) -> bool:
    """Kill what ``collect()`` returns (and the process ``groups``): freeze it (:func:`freeze`),
    SIGTERM it, let it go on; wait up to ``grace`` seconds for it to go (collecting again, so
    processes forked meanwhile get it too); then freeze and SIGKILL until nothing is left.
    ``reap`` waits for our own dead children. True when nothing is left."""
    groups = list(groups)
    deadline = time.monotonic() + grace
    if reap is not None:
        reap()
    sent = freeze(collect) if HAVE_PROC else collect()
    _signal_groups(groups, signal.SIGTERM)
    _signal(sent, signal.SIGTERM)
    _signal(sent, signal.SIGCONT)
    while True:
        if reap is not None:
            reap()
        live = collect()
        if not live:
            return True
        if time.monotonic() >= deadline:
            break
        new = live - sent
        _signal(new, signal.SIGTERM)
        sent |= new
        time.sleep(0.01)
    for _ in range(200):
        if HAVE_PROC:
            live = freeze(collect, limit=0.1)
        _signal_groups(groups, signal.SIGKILL)
        _signal(live, signal.SIGKILL)
        time.sleep(0.005)
        if reap is not None:
            reap()
        live = collect()
        if not live:
            return True
    return False


def _prctl(option: int, value: int) -> bool:
    global _libc
    try:
        import ctypes

        if _libc is None:
            _libc = ctypes.CDLL(None, use_errno=True)
        return _libc.prctl(option, value, 0, 0, 0) == 0  # type: ignore[attr-defined]
    except (ImportError, OSError, AttributeError):  # not Linux
        return False


# ---------------------------------------------------------------------------------------------
# the journal: what a keeper keeps, for a later run when everything died at once
# ---------------------------------------------------------------------------------------------


class Journal:
    """A keeper's record of its tree: ``<dir>/<token>.procs``, rewritten when the tree
    changes, removed when the keeper is done. Plain lines (no json: a keeper is a fork of the
    guardian, and every import there costs each spawn)."""

    def __init__(
        self,
        directory: str,
        token: str,
        session: str,
        keeper: int,
        machine: tuple[str, str],
    ) -> None:
        self.path = os.path.join(directory, token + JOURNAL_SUFFIX)
        self.temp = os.path.join(directory, token + ".tmp")
        self.head = [
            JOURNAL_HEADER,
            f"boot {machine[0]}",
            f"host {machine[1]}",
            f"session {session}",
            f"token {token}",
        ]
        self.keeper = keeper
        self.written: frozenset[tuple[int, int]] | None = None
        self.touched = False

    def write(self, shell: tuple[int, int], procs: Iterable[tuple[int, int]]) -> None:
        procs = frozenset(procs)
        if procs == self.written:
            return
        if not self.touched:
            self.touched = True
            self.head.append(f"keeper {self.keeper} {start_time(self.keeper) or 0}")
        lines = [*self.head, f"shell {shell[0]} {shell[1]}"]
        lines += [f"proc {pid} {start}" for pid, start in sorted(procs)]
        try:
            fd = os.open(self.temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
            try:
                os.write(fd, ("\n".join(lines) + "\n").encode())
            finally:
                os.close(fd)
            os.replace(self.temp, self.path)
            self.written = procs
        except OSError:  # a journal is a backstop: a full disk must not stop the command
            pass

    def remove(self) -> None:
        if self.touched:
            for path in (self.path, self.temp):
                _unlink(path)


def _parse_journal(text: str) -> dict[str, list[str]] | None:
    lines = text.splitlines()
    if not lines or lines[0] != JOURNAL_HEADER:
        return None
    record: dict[str, list[str]] = {"proc": []}
    for line in lines[1:]:
        key, _, value = line.partition(" ")
        if key == "proc":
            record["proc"].append(value)
        else:
            record[key] = value.split()
    for key in ("boot", "host", "token", "keeper", "shell"):
        if not record.get(key):
            return None
    return record


def _pair(value: list[str] | str) -> tuple[int, int] | None:
    parts = value.split() if isinstance(value, str) else value
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return None


def sweep(directory: str | os.PathLike[str]) -> int:
    """Kill what the keepers of runs that died left behind (their journals in ``directory``)
    and remove those journals; returns how many processes were signalled.

    A journal counts when its keeper is gone (no process with its pid and start time) and it
    was written on this machine since this boot. Killed are: its processes whose pid AND start
    time match the journal (a reused pid never does), processes carrying its token, every
    process in the session of one of those (a session id cannot be reused while a member
    lives, so the session is still the command's), and all their descendants."""
    try:
        names = os.listdir(directory)
    except OSError:
        return 0
    if not names:
        return 0
    boot, host = boot_id(), os.uname().nodename
    dead: list[tuple[str, dict[str, list[str]]]] = []
    for name in names:
        path = os.path.join(directory, name)
        if name.endswith(".tmp"):
            _remove_if_stale(path)
            continue
        if not name.endswith(JOURNAL_SUFFIX):
            continue
        data = _read(path)
        record = _parse_journal(data.decode("utf-8", "replace")) if data else None
        if record is None:
            _remove_if_stale(path)
            continue
        if record["host"] != [host]:
            continue  # another machine's (a shared data directory): not ours to judge
        keeper = _pair(record["keeper"])
        if record["boot"] != [boot] or keeper is None:
            _unlink(path)  # from before a reboot: nothing of it can be alive
            continue
        info = proc_stat(keeper[0])
        if info is not None and info[2] == keeper[1] and info[1] not in ("Z", "X"):
            continue  # its keeper lives (a zombie does not): a running hookcode owns it
        dead.append((path, record))
    if not dead:
        return 0
    table = proc_table()
    spared = _ancestry(table, os.getpid())  # never ourselves, nor what runs us
    targets: dict[int, int] = {}
    for _path, record in dead:
        for pid, start in _leftovers(table, record).items():
            if pid not in spared:
                targets[pid] = start

    def collect() -> set[int]:
        now = proc_table()
        alive = [pid for pid, start in targets.items() if pid in now and now[pid][2] == start]
        return _below(now, alive) - spared

    terminate(collect)
    for path, _record in dead:
        _unlink(path)
    return len(targets)


def _leftovers(table: dict[int, Stat], record: dict[str, list[str]]) -> dict[int, int]:
    """pid -> start time of the live processes a dead keeper's journal accounts for:

    * its processes whose pid and start time match (a reused pid never does);
    * every member of the session of one of those: a session id is not reused while a member
      lives, and every session of the command's processes was created by one of them;
    * processes carrying its token, started since its shell (a token is never reused; their
      sessions are not taken, though: a server asked to start one keeps its own session);
    * all their descendants."""
    shell = _pair(record["shell"])
    token = record["token"][0]
    since = shell[1] if shell is not None else 0
    verified: set[int] = set()
    for value in [*record["proc"], " ".join(record["shell"])]:
        pair = _pair(value)
        if pair is not None and pair[0] in table and table[pair[0]][2] == pair[1]:
            verified.add(pair[0])
    sessions = {table[pid][4] for pid in verified} - {0}
    seeds = verified | {pid for pid, info in table.items() if info[4] in sessions}
    for pid, info in table.items():
        if info[2] >= since and info[1] not in ("Z", "X") and carries(pid, token, family=True):
            seeds.add(pid)
    return {pid: table[pid][2] for pid in _below(table, seeds)}


def _ancestry(table: dict[int, Stat], pid: int) -> set[int]:
    """``pid``, its ancestors, and pids 0 and 1."""
    found = {0, 1}
    while pid not in found:
        found.add(pid)
        pid = table[pid][0] if pid in table else 0
    return found


def _unlink(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def _remove_if_stale(path: str) -> None:
    try:
        if time.time() - os.stat(path).st_mtime > STALE_TEMP:
            os.unlink(path)
    except OSError:
        pass


# ---------------------------------------------------------------------------------------------
# signals as events: a handler records the signal, the wake-up fd ends the poll
# ---------------------------------------------------------------------------------------------


class _Signals:
    """The guardian's signals, and (renewed) a keeper's: the handlers stay, the pipe does not."""

    WATCHED = (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGUSR2)

    def __init__(self) -> None:
        self.pending: set[int] = set()
        self._pipe()
        for sig in self.WATCHED:
            signal.signal(sig, self._handle)

    def _pipe(self) -> None:
        self.r, self.w = os.pipe()
        os.set_blocking(self.r, False)
        os.set_blocking(self.w, False)
        signal.set_wakeup_fd(self.w, warn_on_full_buffer=False)

    def renew(self) -> None:
        """In a fresh fork: a wake-up pipe of its own (the handlers are inherited)."""
        os.close(self.r)
        os.close(self.w)
        self.pending.clear()
        self._pipe()

    def _handle(self, signum: int, _frame: object) -> None:
        self.pending.add(signum)

    def take(self) -> set[int]:
        try:
            while os.read(self.r, 512):
                pass
        except OSError:
            pass
        taken, self.pending = self.pending, set()
        return taken


#: what a spawned command gets back to default (Python ignores SIGPIPE and SIGXFSZ; the
#: guardian handles a few)
_DEFAULT_SIGNALS = tuple(
    sig for sig in signal.valid_signals() if sig not in (signal.SIGKILL, signal.SIGSTOP)
)


def _which(program: str, env: dict[str, str]) -> str:
    """``program`` looked up in the command's own PATH (posix_spawnp would use ours)."""
    if os.sep in program:
        return program
    for directory in os.get_exec_path(env):
        candidate = os.path.join(directory, program)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise FileNotFoundError(2, f"No such file or directory: {program!r}")


# ---------------------------------------------------------------------------------------------
# the keeper: one spawned command and everything below it
# ---------------------------------------------------------------------------------------------


class _Keeper:
    """Runs in a fork of the guardian: spawns the command, reports on it, kills its tree."""

    def __init__(
        self,
        request: dict[str, object],
        fds: dict[str, int],
        guardian: int,
        signals: _Signals,
        machine: tuple[str, str],
    ) -> None:
        self.request = request
        self.fds = fds
        self.signals = signals
        self.machine = machine  # (boot id, host name)
        self.ctl = fds["ctl"]
        self.status: int | None = fds["status"]
        self.guardian = guardian
        self.me = os.getpid()
        self.shell = 0
        self.shell_start = 0
        self.shell_done = False
        self.empty = False
        self.detached = False
        self.journal: Journal | None = None
        self.buffer = b""

    # -- status to hookcode -------------------------------------------------------------------
    def say(self, line: str) -> None:
        if self.status is None:
            return
        with contextlib.suppress(OSError):  # hookcode stopped listening
            os.write(self.status, line.encode() + b"\n")

    # -- spawning -----------------------------------------------------------------------------
    def spawn(self) -> None:
        """Start the command: ``posix_spawn`` (a vfork: a fork of this Python process would
        copy its pages as the child touched them) in a new session, with the request's pipes
        as its standard fds, default signal dispositions, nothing blocked; the keeper's own
        working directory is the command's."""
        request = self.request
        argv = [str(a) for a in request["argv"]]  # type: ignore[attr-defined]
        env = {str(k): str(v) for k, v in request["env"].items()}  # type: ignore[attr-defined]
        os.chdir(str(request["cwd"]))
        stdin = self.fds.get("stdin")
        stdout = self.fds["stdout"]
        stderr = self.fds.get("stderr", stdout)
        actions: list[tuple[Any, ...]] = []
        if stdin is None:
            actions.append((os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0))
        else:
            actions.append((os.POSIX_SPAWN_DUP2, stdin, 0))
        actions += [(os.POSIX_SPAWN_DUP2, stdout, 1), (os.POSIX_SPAWN_DUP2, stderr, 2)]
        try:
            pid = os.posix_spawn(
                _which(argv[0], env),
                argv,
                env,
                file_actions=actions,
                setsid=True,
                setsigmask=(),
                setsigdef=_DEFAULT_SIGNALS,
            )
        finally:
            for name in ("stdin", "stdout", "stderr"):
                if name in self.fds:
                    os.close(self.fds.pop(name))
        self.shell = pid
        self.shell_start = start_time(pid) or 0

    # -- the tree -----------------------------------------------------------------------------
    def reap(self) -> None:
        """Wait for every dead child (the command, and orphans adopted as subreaper)."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                self.empty = True
                return
            if pid == 0:
                return
            if pid == self.shell:
                self.shell_done = True
                self.say(f"x {os.waitstatus_to_exitcode(status)}")

    def tree(self) -> set[int]:
        table = proc_table()
        kids = _children(table)
        return _below(table, kids.get(self.me, ()), children=kids)

    def kill_all(self) -> None:
        if HAVE_PROC:
            terminate(self.tree, reap=self.reap)
        elif self.shell:
            # no /proc: the process group is all we can find (a group id is not reused while
            # the group has members, so it is still the command's)
            terminate(
                lambda: set() if self.shell_done else {self.shell},
                groups=[self.shell],
                reap=self.reap,
            )
        deadline = time.monotonic() + 1.0
        while not self.empty and time.monotonic() < deadline:
            self.reap()
            time.sleep(0.005)
        self.say("g")
        self.finish()

    def kill_command(self, token: str, begin: int, grace: float) -> None:
        """A persistent shell's command ran past its time: kill the processes it started,
        not the shell and not what earlier commands left running. Its processes carry its
        token, or are children of the shell (or orphans adopted by this keeper) started since
        the command began (``begin``, clock ticks) and carrying no other command's token."""
        family = token.rpartition(".")[0]

        def ours(pid: int, table: dict[int, Stat]) -> bool:
            if table[pid][2] < begin:
                return False
            value = token_of(pid)
            return value is None or value == token or not value.startswith(family + ".")

        def collect() -> set[int]:
            table = proc_table()
            kids = _children(table)
            below = _below(table, kids.get(self.me, ()), children=kids) - {self.shell}
            seeds = {pid for pid in below if carries(pid, token)}
            seeds |= {pid for pid in kids.get(self.shell, ()) if pid in below and ours(pid, table)}
            seeds |= {
                pid
                for pid in kids.get(self.me, ())
                if pid != self.shell and pid in below and ours(pid, table)
            }
            return _below(table, seeds, children=kids, skip=lambda pid: pid == self.shell)

        terminate(collect, grace=grace, reap=self.reap)
        self.say("c")

    def update_journal(self) -> None:
        if self.journal is None:
            return
        table = proc_table()
        kids = _children(table)
        procs = _below(table, kids.get(self.me, ()), children=kids)
        self.journal.write((self.shell, self.shell_start), ((pid, table[pid][2]) for pid in procs))

    def finish(self) -> None:
        if self.journal is not None:
            self.journal.remove()
        os._exit(0)

    # -- commands from hookcode ---------------------------------------------------------------
    def commands(self) -> bool:
        """Read and run what hookcode sent; False at end-of-file."""
        try:
            data = os.read(self.ctl, 4096)
        except BlockingIOError:
            return True
        except OSError:
            data = b""
        if not data:
            return False
        self.buffer += data
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            parts = line.split()
            if not parts:
                continue
            verb = parts[0]
            if verb == KILL:
                self.kill_all()
            elif verb == SIGNAL and len(parts) == 2 and not self.shell_done:
                _signal([self.shell], int(parts[1]))
            elif verb == COMMAND_KILL and len(parts) == 4:
                self.kill_command(parts[1].decode(), int(parts[2]), int(parts[3]) / 1000)
            elif verb == DETACH:
                self.detached = True
                if self.status is not None:
                    os.close(self.status)
                    self.status = None
        return True

    # -- the loop -----------------------------------------------------------------------------
    def run(self) -> None:
        import select

        signals = self.signals
        signals.renew()
        _prctl(_PR_SET_CHILD_SUBREAPER, 1)
        _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != self.guardian:
            self.finish()  # the guardian died before the death signal was set
        for fd in self.fds.values():
            os.set_inheritable(fd, False)  # the command gets only its standard fds
        try:
            self.spawn()
        except OSError as exc:
            self.say(f"f {exc.errno or 0} {exc.strerror or exc}")
            self.finish()
        self.say(f"p {self.shell} {self.shell_start}")
        journal_dir = str(self.request.get("journal") or "")
        if journal_dir:
            # written first at JOURNAL_FIRST: a command done by then never touches the disk
            self.journal = Journal(
                journal_dir,
                str(self.request["token"]),
                str(self.request.get("session") or ""),
                self.me,
                self.machine,
            )
        os.set_blocking(self.ctl, False)
        poll = select.poll()
        poll.register(self.ctl, select.POLLIN)
        poll.register(signals.r, select.POLLIN)
        interval = JOURNAL_FIRST
        next_journal = time.monotonic() + interval
        listening = True
        while True:
            wait = max(0.0, next_journal - time.monotonic())
            events = poll.poll(wait * 1000)
            for fd, _mask in events:
                if fd == self.ctl and listening and not self.commands():
                    listening = False
                    poll.unregister(self.ctl)
                    if not self.detached:
                        self.kill_all()  # hookcode is gone
            taken = signals.take()
            if taken & {signal.SIGTERM, signal.SIGHUP, signal.SIGINT}:
                self.kill_all()
            self.reap()
            if self.empty:
                self.finish()
            if time.monotonic() >= next_journal:
                written = self.journal.written if self.journal is not None else None
                self.update_journal()
                changed = self.journal is not None and self.journal.written != written
                interval = JOURNAL_FIRST if changed else min(interval * 2, JOURNAL_MAX)
                next_journal = time.monotonic() + interval


# ---------------------------------------------------------------------------------------------
# the guardian
# ---------------------------------------------------------------------------------------------

#: the order of the pipes that come with a spawn request (names in the request's "fds")
FD_NAMES = ("ctl", "status", "stdout", "stdin", "stderr")
#: a spawn request: this byte, the payload's length (8 bytes, big-endian), the payload
#: (``marshal`` of a dict: argv, cwd, env, token, session, journal, fds)
SPAWN = b"S"


class _Guardian:
    def __init__(self, sock_fd: int, parent: int) -> None:
        import _socket  # the socket module's start-up (enum, selectors) doubles ours

        self.sock = _socket.socket(fileno=sock_fd)
        self.parent = parent
        self.keepers: set[int] = set()
        self.signals = _Signals()
        self.machine = (boot_id(), os.uname().nodename)

    def receive(self) -> tuple[bytes, list[int]] | None:
        """One spawn request and its pipes; None at end-of-file (hookcode is gone)."""
        import _socket
        import array

        fds = array.array("i")
        try:
            head, ancillary, _flags, _addr = self.sock.recvmsg(
                9, _socket.CMSG_LEN(len(FD_NAMES) * fds.itemsize)
            )
            for level, kind, data in ancillary:
                if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
                    fds.frombytes(data[: len(data) - (len(data) % fds.itemsize)])
            if not head:
                return None
            head += self._exactly(9 - len(head))
            if head[:1] != SPAWN:
                raise OSError("not a spawn request")
            return self._exactly(int.from_bytes(head[1:9], "big")), list(fds)
        except OSError:
            for fd in fds:
                os.close(fd)
            return None

    def _exactly(self, size: int) -> bytes:
        chunks = []
        while size > 0:
            chunk = self.sock.recv(min(size, 1 << 20))
            if not chunk:
                raise OSError("end of file inside a request")
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    def spawn(self, payload: bytes, fds: list[int]) -> None:
        import marshal

        request = marshal.loads(payload)
        if len(request["fds"]) != len(fds):  # cut short: cannot happen between our two ends
            for fd in fds:
                os.close(fd)
            return
        named = dict(zip(request["fds"], fds, strict=True))
        pid = os.fork()
        if pid == 0:  # the keeper
            try:
                self.sock.close()
                keeper = _Keeper(request, named, os.getppid(), self.signals, self.machine)
                keeper.run()
            finally:
                os._exit(1)
        self.keepers.add(pid)
        for fd in fds:
            os.close(fd)

    def reap(self) -> None:
        orphans = False
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if pid in self.keepers:
                self.keepers.discard(pid)
                if os.WIFSIGNALED(status):
                    orphans = True
        if orphans:
            self.kill_orphans()

    def kill_orphans(self) -> None:
        """A keeper was killed: its command's processes are re-parented here. Every child of
        the guardian that is not a keeper is such an orphan."""

        def collect() -> set[int]:
            table = proc_table()
            kids = _children(table)
            roots = [pid for pid in kids.get(os.getpid(), ()) if pid not in self.keepers]
            return _below(table, roots, children=kids)

        terminate(collect, reap=self.reap_quietly)

    def reap_quietly(self) -> None:
        while True:
            try:
                pid, _status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.keepers.discard(pid)

    def shutdown(self) -> None:
        """hookcode is gone or asked us to stop: every keeper kills its tree; then whatever
        is left below the guardian is killed too."""
        _signal(self.keepers, signal.SIGTERM)
        deadline = time.monotonic() + SHUTDOWN_WAIT
        while self.keepers and time.monotonic() < deadline:
            self.reap_quietly()
            time.sleep(0.005)
        me = os.getpid()

        def collect() -> set[int]:
            table = proc_table()
            kids = _children(table)
            return _below(table, kids.get(me, ()), children=kids)

        terminate(collect, reap=self.reap_quietly)
        os._exit(0)

    def run(self) -> None:
        import select

        _prctl(_PR_SET_CHILD_SUBREAPER, 1)
        # Linux sends the death signal when the *thread* that started us ends, which need not
        # be hookcode's end: the handler checks that the parent really changed
        _prctl(_PR_SET_PDEATHSIG, signal.SIGUSR2)
        if os.getppid() != self.parent:
            self.shutdown()
        poll = select.poll()
        poll.register(self.sock.fileno(), select.POLLIN)
        poll.register(self.signals.r, select.POLLIN)
        while True:
            events = poll.poll()
            for fd, _mask in events:
                if fd == self.sock.fileno():
                    received = self.receive()
                    if received is None:
                        self.shutdown()
                    else:
                        self.spawn(*received)
            taken = self.signals.take()
            if taken & {signal.SIGTERM, signal.SIGHUP, signal.SIGINT}:
                self.shutdown()
            if signal.SIGUSR2 in taken and os.getppid() != self.parent:
                self.shutdown()
            if signal.SIGCHLD in taken:
                self.reap()


def main(argv: list[str]) -> None:
    """``python -I -S guardian.py SOCKET_FD PARENT_PID``."""
    for fd in (0, 1, 2):  # a closed standard fd would be reused by a pipe, then clobbered
        try:
            os.fstat(fd)
        except OSError:
            os.open(os.devnull, os.O_RDWR)
    import gc

    # every spawn forks this process: a collection in a fork would touch (and copy) every
    # page of the heap. The guardian and its keepers make no reference cycles worth collecting.
    gc.disable()
    gc.freeze()
    _Guardian(int(argv[0]), int(argv[1])).run()


if __name__ == "__main__":
    main(sys.argv[1:])
