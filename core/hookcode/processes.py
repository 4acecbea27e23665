"""hookcode's side of the process guardian (:mod:`hookcode.guardian`): one per runtime
(``runtime.processes``), started on the first spawn, stopped with everything below it when the
runtime closes (and when hookcode dies, by any signal).

* :meth:`Processes.spawn` starts a command below the guardian and returns a :class:`Child`:
  its output pipe(s), its input pipe if asked for, and the keeper's status and command pipes.
  Its process tree is killed by :meth:`Child.kill` (frozen, SIGTERM, 200 ms, SIGKILL), by
  the end of the runtime, or by hookcode's death; what it leaves running in the background
  after the command exits lives until one of those.
* :meth:`Processes.sweep` kills what runs that died with their guardian left behind (see
  :func:`hookcode.guardian.sweep`); the first spawn of a runtime does it, and so does
  resuming a session (``hookcode run -c``).

POSIX only (the guardian forks, and pipes travel over a Unix socket).
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
from typing import TYPE_CHECKING

from hookcode import guardian

if TYPE_CHECKING:
    import socket
    import subprocess

__all__ = ["KILL_WAIT", "Child", "Processes", "uptime_ticks"]

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
        self, ctl: int, status: int, stdout: int, stdin: int | None, stderr: int | None
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
            self._failure = OSError(int(number) if number.isdigit() else 0, text)
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
        token: str,
        stdin: bool = False,
        separate_stderr: bool = False,
        session: str | None = None,
    ) -> Child:
        """Start ``argv`` in ``cwd`` with ``env`` (which should carry ``token`` as
        ``HOOKCODE_PROC_TOKEN``) in a new session below the guardian. ``stdin``: a pipe
        (``Child.stdin``), else /dev/null; ``separate_stderr``: stderr in its own pipe, else
        merged into stdout. Returns at once: :meth:`Child.started` waits for the command to
        run, and it and :meth:`Child.poll` raise the OSError of exec or chdir when it could
        not start."""
        import marshal
        import socket

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
        return Child(ctl, status, stdout, stdin_fd, stderr_fd)

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
