"""Starting and killing processes: the one module tools and plugins use for it (bash, shell
hooks, language servers, MCP stdio servers).

Every process that may start others runs below the runtime's process guardian
(:mod:`hookcode.guardian`): one per runtime (``runtime.processes``), started on the first
spawn, stopped with everything below it when the runtime closes (and when hookcode dies, by any
signal). Each command gets a keeper, a child subreaper, so its whole tree (``setsid`` and
double-forked children too) stays findable and dies with it.

* :meth:`Processes.spawn` starts a command below the guardian and returns a :class:`Child`:
  its output pipe(s), its input pipe if asked for, and the keeper's status and command pipes.
  Its process tree is killed by :meth:`Child.kill` (frozen, SIGTERM, 200 ms, SIGKILL), by
  the end of the runtime, or by hookcode's death; what it leaves running in the background
  after the command exits lives until one of those.
* :meth:`Processes.spawn_async` is the same for asyncio code: an :class:`AsyncChild` with
  stream reader/writer pipes, ``await wait()`` and ``await kill()``.
* :meth:`Processes.sweep` kills what runs that died with their guardian left behind (see
  :func:`hookcode.guardian.sweep`); the first spawn of a runtime does it, and so does
  resuming a session (``hookcode run -c``).
* :func:`pid_alive` tells whether a process (a pid, and its start time where known) still runs.

There is no kill of a tree by pid from outside: a ``setsid`` or double-forked descendant is
re-parented to init and no walk from the pid finds it; only the keeper (a subreaper) does.
``rg`` (:mod:`hookcode_ripgrep`) is the one process started otherwise, directly by its caller:
it starts no children, so killing its pid kills its tree, and the guardian's round trip would
double a short search (see docs/processes.md). For such a *direct child* this module gives
the rest: :class:`DirectKill` (kill it from an abort signal's callback, any thread) and
:func:`exit_code` (await its exit on a pidfd, no thread), with :func:`ensure_child_watcher`
for asyncio's own subprocesses. ``psutil`` is not used: the
``/proc`` reading lives in the guardian, which runs as ``python -I -S`` and can import only the
standard library, so psutil would be a second copy, not a replacement.

POSIX only (the guardian forks, and pipes travel over a Unix socket).

The module is longer than the project's modules usually are because it is the one public
face of processes: :class:`Child` and :class:`AsyncChild` are two readings of the same keeper
pipes, and :class:`Processes` makes both; apart they would share private protocol details.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import hookcode.guardian as guardian

if TYPE_CHECKING:
    import asyncio
    import socket
    import subprocess

__all__ = [
    "KILL_WAIT",
    "AsyncChild",
    "Child",
    "DirectKill",
    "GuardianError",
    "Processes",
    "ensure_child_watcher",
    "exit_code",
    "pid_alive",
    "start_time",
    "uptime_ticks",
]

pid_alive = guardian.pid_alive
start_time = guardian.start_time

#: seconds to wait for the guardian to start a command (it starts in tens of milliseconds)
START_WAIT = 15.0
#: seconds to wait for a killed tree to be gone (SIGTERM, 200 ms, SIGKILL: well under this)
KILL_WAIT = 5.0
#: seconds to wait for the guardian to exit when the runtime closes
CLOSE_WAIT = guardian.SHUTDOWN_WAIT + 2.0


def uptime_ticks() -> int:
    """Now, in the clock ticks of process start times (``/proc/uptime``); 0 without /proc."""
    try:
        with open("/proc/uptime", "rb") as f:
            seconds = float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0
    return int(seconds * os.sysconf("SC_CLK_TCK"))


class GuardianError(OSError):
    """The guardian could not be started or did not answer."""


class Child:
    """One command started below the guardian: ``stdout`` (stderr too unless asked apart),
    ``stdin`` (a pipe, or None for /dev/null), ``stderr`` (when apart), and its keeper's
    status. ``returncode`` is the shell's exit code, negative for a signal, None while it
    runs."""

    def __init__(
        self,
        ctl: int,
        status: int,
        stdout: int,
        stdin: int | None,
        stderr: int | None,
        *,
        program: str = "",
        cwd: str = "",
    ) -> None:
        self.ctl: int | None = ctl
        self.status: int | None = status
        self.stdout: int | None = stdout
        self.stdin = stdin
        self.stderr = stderr
        os.set_blocking(status, False)
        self.pid = 0
        self.start = 0
        self.returncode: int | None = None
        #: the keeper answered a kill: the whole tree is gone
        self.gone = False
        #: the keeper exited or died (its status pipe closed)
        self.closed = False
        self.commands_killed = 0
        self._buffer = b""
        self._failure: OSError | None = None
        self._program = program
        self._cwd = cwd

    # -- status -------------------------------------------------------------------------------
    @property
    def status_fd(self) -> int | None:
        """Readable when the keeper has news, or has exited (:attr:`closed`): select on it."""
        return self.status

    def read_status(self) -> None:
        """Take in what the keeper reported (never blocks)."""
        while self.status is not None and not self.closed:
            try:
                data = os.read(self.status, 4096)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self._keeper_gone()
                return
            self._buffer += data
            while b"\n" in self._buffer:
                line, self._buffer = self._buffer.split(b"\n", 1)
                self._line(line.decode("utf-8", "replace"))

    def _line(self, line: str) -> None:
        kind, _, rest = line.partition(" ")
        if kind == "p":
            pid, _, start = rest.partition(" ")
            self.pid, self.start = int(pid), int(start or 0)
        elif kind == "f":
            number, _, text = rest.partition(" ")
            # the keeper fails at its chdir to the working directory or at the exec
            cwd = self._cwd
            where = cwd if cwd and not (os.path.isdir(cwd) and os.access(cwd, os.X_OK)) else None
            self._failure = OSError(
                int(number) if number.isdigit() else 0, text, where or self._program or None
            )
        elif kind == "x":
            self.returncode = int(rest)
        elif kind == "g":
            self.gone = True
        elif kind == "c":
            self.commands_killed += 1

    def _keeper_gone(self) -> None:
        self.closed = True
        if self.returncode is None and self.pid:
            # the keeper died: its command got the parent-death signal
            import signal

            self.returncode = -signal.SIGKILL

    def poll(self) -> int | None:
        """The exit code so far (None while it runs). Raises the OSError of a command that
        could not start (exec or chdir failed)."""
        self.read_status()
        if self._failure is not None:
            raise self._failure
        return self.returncode

    def wait_for(self, ready: Callable[[], bool], timeout: float) -> bool:
        """Read status until ``ready()`` or ``timeout`` seconds; returns ``ready()``."""
        end = time.monotonic() + timeout
        while True:
            self.read_status()
            if ready():
                return True
            left = end - time.monotonic()
            if self.status is None or self.closed or left <= 0:
                return ready()
            poll = select.poll()
            poll.register(self.status, select.POLLIN)
            poll.poll(min(left, 3600) * 1000)

    def started(self, timeout: float = START_WAIT) -> int:
        """Wait until the command runs; its pid. Raises the OSError of a command that could
        not start, or GuardianError when the guardian did not answer within ``timeout``."""
        if not self.wait_for(lambda: bool(self.pid) or self._failure is not None, timeout):
            raise GuardianError("the process guardian did not start the command in time")
        if self._failure is not None:
            raise self._failure
        return self.pid

    # -- commands to the keeper ---------------------------------------------------------------
    def _send(self, line: bytes) -> bool:
        if self.ctl is None:
            return False
        try:
            os.write(self.ctl, line + b"\n")
            return True
        except OSError:  # the keeper is gone
            return False

    def signal(self, sig: int) -> None:
        """Signal the command's shell (ignored once it has exited)."""
        self._send(guardian.SIGNAL + b" %d" % sig)

    def kill(self, timeout: float = KILL_WAIT) -> None:
        """Kill the whole tree and wait (up to ``timeout``) until it is gone."""
        if self._send(guardian.KILL):
            self.wait_for(lambda: self.gone or self.closed, timeout)

    def terminate(self) -> None:
        """Ask for the whole tree to be killed and return at once (any thread may call it;
        whoever reads this child sees its pipes close)."""
        self._send(guardian.KILL)

    def communicate(self, data: bytes = b"", timeout: float | None = None) -> tuple[bytes, bytes]:
        """Like ``Popen.communicate``: write ``data`` to stdin and close it, read stdout (and
        stderr, when apart) to their end, wait for the exit status (:attr:`returncode`).
        Raises TimeoutError after ``timeout`` seconds; the tree still runs then (:meth:`kill`)."""
        import selectors

        end = None if timeout is None else time.monotonic() + timeout
        chunks: dict[int, list[bytes]] = {}
        view = memoryview(data)
        sel = selectors.DefaultSelector()
        try:
            if self.stdin is not None:
                if view:
                    os.set_blocking(self.stdin, False)
                    sel.register(self.stdin, selectors.EVENT_WRITE)
                else:
                    self._close_stdin()
            for fd in (self.stdout, self.stderr):
                if fd is not None:
                    chunks[fd] = []
                    sel.register(fd, selectors.EVENT_READ)
            while sel.get_map():
                left = None if end is None else end - time.monotonic()
                if left is not None and left <= 0:
                    raise TimeoutError
                for key, _mask in sel.select(None if left is None else min(left, 3600)):
                    fd = key.fd
                    if fd == self.stdin:
                        try:
                            view = view[os.write(fd, view[:65536]) :]
                        except BrokenPipeError:  # it does not read its input: fine
                            view = view[:0]
                        except BlockingIOError:
                            continue
                        if not view:
                            sel.unregister(fd)
                            self._close_stdin()
                        continue
                    chunk = os.read(fd, 65536)
                    if chunk:
                        chunks[fd].append(chunk)
                    else:
                        sel.unregister(fd)
        finally:
            sel.close()
        left = float("inf") if end is None else end - time.monotonic()
        if not self.wait_for(lambda: self.returncode is not None, max(left, 0.0)):
            raise TimeoutError
        out = b"".join(chunks.get(self.stdout, [])) if self.stdout is not None else b""
        err = b"".join(chunks.get(self.stderr, [])) if self.stderr is not None else b""
        return out, err

    def _close_stdin(self) -> None:
        if self.stdin is not None:
            with contextlib.suppress(OSError):
                os.close(self.stdin)
            self.stdin = None

    def kill_command(self, token: str, begin: int, grace: float) -> None:
        """Kill what one command of a persistent shell started (see the keeper's
        ``kill_command``); :attr:`commands_killed` counts the ones done."""
        self._send(b"%s %s %d %d" % (guardian.COMMAND_KILL, token.encode(), begin, grace * 1000))

    def detach(self) -> None:
        """Stop listening: what the command left running goes on until the runtime ends."""
        self._send(guardian.DETACH)
        self.close()

    def close(self) -> None:
        """Close every pipe end this side holds (a keeper not detached takes the closed
        command pipe for hookcode's death, and kills the tree)."""
        for name in ("ctl", "stdin", "stdout", "stderr", "status"):
            fd = getattr(self, name)
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
                setattr(self, name, None)


class AsyncChild:
    """A :class:`Child` driven from an asyncio event loop (language servers, MCP stdio
    servers), made by :meth:`Processes.spawn_async`: ``stdin`` a ``StreamWriter`` (None
    without a pipe), ``stdout`` and ``stderr`` ``StreamReader`` objects (``stderr`` None when
    merged or sent to a file). The keeper's status is read by a callback of the loop; use the
    object on that loop only (:meth:`terminate` excepted)."""

    def __init__(self, child: Child, loop: asyncio.AbstractEventLoop) -> None:
        self.child = child
        self.stdin: asyncio.StreamWriter | None = None
        self.stdout: asyncio.StreamReader | None = None
        self.stderr: asyncio.StreamReader | None = None
        self._loop = loop
        self._transports: list[asyncio.BaseTransport] = []
        self._waiters: list[asyncio.Future[None]] = []
        self._watching = child.status is not None
        if child.status is not None:
            loop.add_reader(child.status, self._on_status)

    async def _attach(self, limit: int) -> None:
        import asyncio

        loop, child = self._loop, self.child

        async def reader(fd: int) -> asyncio.StreamReader:
            stream = asyncio.StreamReader(limit=limit, loop=loop)
            transport, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(stream, loop=loop),
                open(fd, "rb", 0),  # noqa: SIM115 (the transport owns and closes it)
            )
            self._transports.append(transport)
            return stream

        if child.stdout is not None:
            fd, child.stdout = child.stdout, None  # the transport owns it now
            self.stdout = await reader(fd)
        if child.stderr is not None:
            fd, child.stderr = child.stderr, None
            self.stderr = await reader(fd)
        if child.stdin is not None:
            fd, child.stdin = child.stdin, None
            transport, protocol = await loop.connect_write_pipe(
                asyncio.streams.FlowControlMixin,
                open(fd, "wb", 0),  # noqa: SIM115 (the transport owns and closes it)
            )
            self._transports.append(transport)
            self.stdin = asyncio.StreamWriter(transport, protocol, None, loop)

    # -- status -------------------------------------------------------------------------------
    def _on_status(self) -> None:
        self.child.read_status()
        if self.child.closed:
            self._unwatch()
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def _unwatch(self) -> None:
        if self._watching and self.child.status is not None:
            self._watching = False
            self._loop.remove_reader(self.child.status)

    async def _until(self, ready: Callable[[], bool], timeout: float | None) -> bool:
        """Wait (reading status as it comes) until ``ready()``, the keeper is gone, or
        ``timeout`` seconds passed; returns ``ready()``."""
        import asyncio

        end = None if timeout is None else self._loop.time() + timeout
        self.child.read_status()
        while not ready() and not self.child.closed and self._watching:
            waiter = self._loop.create_future()
            self._waiters.append(waiter)
            left = None if end is None else end - self._loop.time()
            if left is not None and left <= 0:
                break
            try:
                await asyncio.wait_for(waiter, left)
            except TimeoutError:
                break
        return ready()

    @property
    def pid(self) -> int:
        """The command's pid (0 until it started)."""
        return self.child.pid

    @property
    def returncode(self) -> int | None:
        """The command's exit code (negative for a signal), None while it runs."""
        self.child.read_status()
        return self.child.returncode

    async def started(self, timeout: float = START_WAIT) -> int:
        """Wait until the command runs; its pid. Raises the OSError of a command that could
        not start, or GuardianError when the guardian did not answer within ``timeout``."""
        child = self.child
        await self._until(lambda: bool(child.pid) or child._failure is not None, timeout)
        return child.started(0)

    async def wait(self) -> int:
        """Wait until the command exits; its exit code (what it left running may go on)."""
        await self._until(lambda: self.child.returncode is not None, None)
        code = self.child.poll()
        return -9 if code is None else code  # the keeper vanished before it started

    def terminate(self) -> None:
        """Ask for the whole tree to be killed, and return at once (from any thread)."""
        self.child.terminate()

    async def kill(self, timeout: float = KILL_WAIT) -> None:
        """Kill the whole tree (frozen, SIGTERM, 200 ms, SIGKILL) and wait until it is gone."""
        child = self.child
        if child._send(guardian.KILL):
            await self._until(lambda: child.gone or child.closed, timeout)

    def close(self) -> None:
        """Close the pipes and stop watching; a tree not killed is then killed by its keeper
        (it takes the closed command pipe for hookcode's death)."""
        self._unwatch()
        for transport in self._transports:
            transport.close()
        self._transports = []
        self.child.close()
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)


class Processes:
    """One runtime's guardian. ``journal_dir`` (``<data dir>/processes``) is where keepers
    record their trees for :meth:`sweep`; ``warn`` reports problems that do not stop a spawn."""

    def __init__(
        self, journal_dir: Path | None = None, *, warn: Callable[[str], object] | None = None
    ) -> None:
        self.journal_dir = journal_dir
        self._warn = warn
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None
        self._swept = False
        self._journal_ready = False
        self._closed = False

    @property
    def pid(self) -> int | None:
        """The guardian's pid while it runs."""
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def start(self) -> None:
        """Start the guardian now (it takes a few tens of milliseconds) if it does not run."""
        with self._lock:
            self._ensure()

    def _ensure(self) -> socket.socket:
        if self._closed:
            raise GuardianError("this runtime is closed: no more processes")
        if self._proc is not None and self._sock is not None and self._proc.poll() is None:
            return self._sock
        self._stop_guardian()
        if not self._swept:
            self._swept = True
            self.sweep()
        import socket
        import subprocess

        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._proc = subprocess.Popen(
                [
                    sys.executable,
                    "-I",
                    "-S",
                    guardian.__file__,
                    str(theirs.fileno()),
                    str(os.getpid()),
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                pass_fds=[theirs.fileno()],
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            ours.close()
            raise GuardianError(exc.errno, f"cannot start the process guardian: {exc}") from exc
        finally:
            theirs.close()
        self._sock = ours
        return ours

    def _journal(self) -> str:
        if self.journal_dir is None:
            return ""
        if not self._journal_ready:
            try:
                self.journal_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
                self._journal_ready = True
            except OSError as exc:
                if self._warn is not None:
                    self._warn(
                        f"cannot keep the process journal in {self.journal_dir}: {exc}; what a "
                        "crash leaves running will not be cleaned up by a later run"
                    )
                self.journal_dir = None
                return ""
        return str(self.journal_dir)

    def spawn(
        self,
        argv: Sequence[str],
        *,
        cwd: str,
        env: Mapping[str, str],
        token: str | None = None,
        stdin: bool = False,
        separate_stderr: bool = False,
        stderr_to: int | None = None,
        session: str | None = None,
    ) -> Child:
        """Start ``argv`` in ``cwd`` with ``env`` in a new session below the guardian.
        ``token`` marks the command's processes (``HOOKCODE_PROC_TOKEN``; ``env`` should
        carry it): without one a random token is made and added to the environment.
        ``stdin``: a pipe (``Child.stdin``), else /dev/null; ``separate_stderr``: stderr in
        its own pipe, else merged into stdout; ``stderr_to``: stderr written to this open file
        descriptor (a log file) instead. Returns at once: :meth:`Child.started` waits for the
        command to run, and it and :meth:`Child.poll` raise the OSError of exec or chdir when
        it could not start."""
        import marshal
        import socket

        if token is None:
            import secrets

            token = secrets.token_hex(16)
            env = {**env, guardian.TOKEN_VAR: token}

        mine: list[int] = []
        theirs: list[int] = []
        names: list[str] = []

        def pipe(name: str, *, ours_reads: bool) -> int:
            r, w = os.pipe()
            mine.append(r if ours_reads else w)
            theirs.append(w if ours_reads else r)
            names.append(name)
            return mine[-1]

        try:
            ctl = pipe("ctl", ours_reads=False)
            status = pipe("status", ours_reads=True)
            stdout = pipe("stdout", ours_reads=True)
            stdin_fd = pipe("stdin", ours_reads=False) if stdin else None
            stderr_fd = pipe("stderr", ours_reads=True) if separate_stderr else None
            if stderr_to is not None and stderr_fd is None:
                theirs.append(os.dup(stderr_to))
                names.append("stderr")
            with self._lock:
                request = {
                    "argv": [str(a) for a in argv],
                    "cwd": str(cwd),
                    "env": {str(k): str(v) for k, v in env.items()},
                    "token": token,
                    "session": session or "",
                    "journal": self._journal(),
                    "fds": names,
                }
                payload = marshal.dumps(request)
                message = guardian.SPAWN + len(payload).to_bytes(8, "big") + payload
                for attempt in (1, 2):
                    sock = self._ensure()
                    try:
                        sent = socket.send_fds(sock, [message], theirs)
                        if sent < len(message):
                            sock.sendall(message[sent:])
                        break
                    except OSError:
                        # the guardian died (killed from outside): start a new one, once
                        self._stop_guardian()
                        if attempt == 2:
                            raise
        except BaseException:
            for fd in mine:
                with contextlib.suppress(OSError):
                    os.close(fd)
            raise
        finally:
            for fd in theirs:
                with contextlib.suppress(OSError):
                    os.close(fd)
        # not waiting for the command to start: its output, exit status or failure come
        # through the pipes (Child.poll, Child.started)
        return Child(
            ctl,
            status,
            stdout,
            stdin_fd,
            stderr_fd,
            program=str(argv[0]) if argv else "",
            cwd=str(cwd),
        )

    async def spawn_async(
        self,
        argv: Sequence[str],
        *,
        cwd: str,
        env: Mapping[str, str],
        stdin: bool = True,
        separate_stderr: bool = True,
        stderr_to: int | None = None,
        limit: int = 1 << 16,
    ) -> AsyncChild:
        """:meth:`spawn` for asyncio code: the command's pipes as asyncio streams (``limit``:
        the line length ``readline`` takes). Returns once the command runs; raises the OSError
        of a command that could not start (its pipes closed)."""
        import asyncio

        child = self.spawn(
            argv,
            cwd=cwd,
            env=env,
            stdin=stdin,
            separate_stderr=separate_stderr and stderr_to is None,
            stderr_to=stderr_to,
        )
        proc = AsyncChild(child, asyncio.get_running_loop())
        try:
            await proc.started()
            await proc._attach(limit)
        except BaseException:
            proc.close()
            raise
        return proc

    def sweep(self) -> int:
        """Kill what runs that died with their guardian left behind; see
        :func:`hookcode.guardian.sweep`. Returns how many processes were signalled."""
        if self.journal_dir is None:
            return 0
        return guardian.sweep(self.journal_dir)

    def _stop_guardian(self, wait: float = 0.0) -> None:
        sock, self._sock = self._sock, None
        proc, self._proc = self._proc, None
        if sock is not None:
            sock.close()  # end-of-file: the guardian kills everything below it and exits
        if proc is not None:
            import subprocess

            try:
                proc.wait(wait)
            except subprocess.TimeoutExpired:
                proc.kill()  # its keepers get their death signal and kill their trees
                proc.wait()

    def close(self) -> None:
        """Kill every process this runtime started and stop the guardian."""
        with self._lock:
            self._closed = True
            self._stop_guardian(CLOSE_WAIT)


# -- direct children: started by the caller itself, for programs that start no processes ------


class DirectKill:
    """Kills a direct child (a :class:`subprocess.Popen` or an asyncio process): :meth:`kill`
    on the loop's thread, :meth:`on_abort` (an abort signal's callback) from any thread,
    possibly after the call ended (set ``running`` False then: it does nothing)."""

    __slots__ = ("loop", "proc", "running")

    def __init__(self, proc: Any, loop: asyncio.AbstractEventLoop) -> None:
        self.proc = proc
        self.loop = loop
        self.running = True

    def kill(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()

    def on_abort(self) -> None:
        if self.running:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nothing to kill
                self.loop.call_soon_threadsafe(self.kill)


async def exit_code(proc: subprocess.Popen[bytes], loop: asyncio.AbstractEventLoop) -> int:
    """The exit code of the direct child ``proc`` (its output already ended), awaited without
    blocking the loop: on its pidfd where there is one, else on a worker thread."""
    from hookcode.childwatch import watch_exit

    if proc.poll() is not None:
        return int(proc.returncode)
    exited: asyncio.Future[None] = loop.create_future()
    stop = watch_exit(loop, proc.pid, lambda: exited.done() or exited.set_result(None))
    if stop is None:
        return int(await loop.run_in_executor(None, proc.wait))
    try:
        await exited
    finally:
        stop()
    return int(proc.wait())


def ensure_child_watcher() -> None:
    """Let asyncio learn of its subprocesses' exits without a thread each (Python 3.11; see
    :mod:`hookcode.childwatch`). Call before ``asyncio.create_subprocess_exec``."""
    from hookcode.childwatch import ensure_child_watcher as ensure

    ensure()
