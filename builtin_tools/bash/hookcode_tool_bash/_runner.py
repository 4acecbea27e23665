"""Running shell commands: one-shot (``shell -c``) and persistent (one shell per session).

Everything here is blocking and runs in a worker thread; the tool's async body waits for it.
A :class:`Waker` interrupts a run from any thread (abort signal, cancellation).

Output: stdout and stderr share one pipe, so they arrive in order; every chunk goes straight
into the truncation layer's streaming writer (memory stays bounded), and a live preview is
published through ``ctx.metadata`` at most every :data:`PREVIEW_INTERVAL` seconds.

Shells are started below the runtime's process guardian (``runtime.processes``,
:mod:`hookcode.process`): every process they start stays below the shell's keeper, which
kills the whole tree on a timeout or abort, and nothing survives hookcode.

A one-shot call ends when the shell exits. Background processes may still hold the pipe
(``sleep 100 &``): after the exit, what is already there (or arrives promptly) is read for at
most :data:`DRAIN_MAX` seconds, then the pipe is closed; they run on until the runtime ends.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import selectors
import shlex
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hookcode.guardian import GRACE_SECONDS, TOKEN_VAR
from hookcode.process import KILL_WAIT, Child, Processes, uptime_ticks

#: seconds between two live previews
PREVIEW_INTERVAL = 0.1
#: after the shell exited: stop reading when nothing came for this long ...
DRAIN_IDLE = 0.05
#: ... or after this long in all
DRAIN_MAX = 0.25
#: after a kill: read what the dead processes left in the pipe for at most this long
KILL_DRAIN = 0.2
#: persistent mode: how long a shell may take to print its end marker after the command's
#: processes were killed before the shell itself is killed and replaced
MARKER_GRACE = 1.0
READ_SIZE = 1 << 20
#: the longest single wait in the read loop (select cannot wait 2**31 ms at once)
MAX_WAIT = 3600.0
#: persistent bash: SIGUSR1 leaves the running command file, skipping everything after the
#: killed process. The handler returns from the current function or sourced file and installs
#: a DEBUG trap that (with extdebug) simulates ``return`` before every further command of any
#: function or sourced file; back at the top level the DEBUG trap removes itself.
BASH_STOP_TRAP = (
    "trap 'shopt -s extdebug; trap '\\''if [[ ${FUNCNAME[0]-}${BASH_SOURCE[0]-} ]]; "
    "then return 2; else trap - DEBUG; shopt -u extdebug; fi'\\'' DEBUG; "
    "return 130 2>/dev/null' USR1"
)
_F_SETPIPE_SZ = 1031


# ---------------------------------------------------------------------------------------------
# shell and environment
# ---------------------------------------------------------------------------------------------


def pick_shell(configured: str | None, env: dict[str, str]) -> str:
    """``[tool.bash] shell``, else bash, else ``$SHELL`` unless fish or nu, else ``/bin/sh``;
    on Windows Git Bash, else ``cmd.exe``. Bash comes before ``$SHELL`` (the reference's
    order is the other way round): the permission policy reads commands with bash's grammar,
    and a command run by another shell (zsh, say) is opaque to it."""
    if configured:
        return configured
    if sys.platform == "win32":  # pragma: no cover - not tested here
        return shutil.which("bash") or env.get("COMSPEC", "cmd.exe")
    bash = shutil.which("bash", path=env.get("PATH"))
    if bash:
        return bash
    shell = env.get("SHELL")
    if shell and os.path.basename(shell) not in ("fish", "nu") and shutil.which(shell):
        return shell
    return "/bin/sh"


def one_shot_argv(shell: str, command: str) -> list[str]:
    if os.path.basename(shell).lower() in ("cmd", "cmd.exe"):  # pragma: no cover
        return [shell, "/c", command]
    return [shell, "-c", command]


def new_token() -> str:
    return secrets.token_hex(16)


# ---------------------------------------------------------------------------------------------
# interruption and live preview
# ---------------------------------------------------------------------------------------------


class Waker:
    """Wakes a blocked run from any thread; ``reason`` says why (``abort`` or ``cancel``)."""

    def __init__(self) -> None:
        self.r, self.w = os.pipe()
        os.set_blocking(self.r, False)
        os.set_blocking(self.w, False)
        self.reason: str | None = None
        self._closed = False
        self._lock = threading.Lock()

    def fire(self, reason: str) -> None:
        with self._lock:
            if self.reason is None:
                self.reason = reason
            if not self._closed:
                with contextlib.suppress(OSError):
                    os.write(self.w, b"x")

    def clear_pipe(self) -> None:
        with contextlib.suppress(OSError):
            while os.read(self.r, 64):
                pass

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                os.close(self.r)
                os.close(self.w)


class Preview:
    """Publishes the writer's preview through ``ctx.metadata``, throttled."""

    def __init__(self, ctx: Any, writer: Any, description: str) -> None:
        self.ctx = ctx
        self.writer = writer
        self.description = description
        self.dirty = False
        self.next_due = 0.0
        self._last: tuple[str, str] | None = None

    def due_in(self, now: float) -> float | None:
        return max(0.0, self.next_due - now) if self.dirty else None

    def tick(self, now: float, force: bool = False) -> None:
        if not self.dirty or (now < self.next_due and not force):
            return
        self.dirty = False
        self.next_due = now + PREVIEW_INTERVAL
        text = self.writer.preview()
        # the head stops changing once the output outgrows the preview; the tail does not
        tail = self.writer.latest()
        if (text, tail) == self._last:
            return
        self._last = (text, tail)
        self.ctx.metadata(metadata={"output": text, "tail": tail, "description": self.description})


# ---------------------------------------------------------------------------------------------
# the read loop
# ---------------------------------------------------------------------------------------------


def _grow_pipe(fd: int) -> None:
    """A bigger pipe means fewer, larger reads for chatty commands (Linux)."""
    if sys.platform.startswith("linux"):
        import fcntl

        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, _F_SETPIPE_SZ, READ_SIZE)


def pump(
    fd: int,
    child: Child,
    sink: Callable[[bytes], bool],
    deadline: float,
    waker: Waker | None,
    preview: Preview,
    *,
    until_exit: bool,
) -> str:
    """Read ``fd`` into ``sink`` until something ends the wait; returns why:

    * ``exit``: the shell exited (and the pipe was drained: EOF, idle or DRAIN_MAX);
    * ``eof``: the pipe closed (``until_exit=False`` only);
    * ``marker``: ``sink`` returned True (it found what it waited for);
    * ``timeout``: ``deadline`` (monotonic) passed;
    * ``stop``: the waker fired.
    """
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ, "out")
    if waker is not None:
        sel.register(waker.r, selectors.EVENT_READ, "wake")
    status = child.status_fd
    if status is not None and not child.closed:
        sel.register(status, selectors.EVENT_READ, "status")
    else:
        status = None
    exited_at: float | None = None
    last_data = time.monotonic()
    eof = False
    try:
        while True:
            now = time.monotonic()
            preview.tick(now)
            if waker is not None and waker.reason is not None:
                return "stop"
            if exited_at is None and child.poll() is not None:
                exited_at = now
            if status is not None and child.closed:
                sel.unregister(status)
                status = None
            if exited_at is not None:
                if eof or not until_exit:
                    return "exit"
                if now - exited_at >= DRAIN_MAX or now - max(last_data, exited_at) >= DRAIN_IDLE:
                    return "exit"
            if eof and not until_exit:
                return "eof"
            if now >= deadline and exited_at is None:
                return "timeout"
            wait = min(deadline - now, MAX_WAIT) if exited_at is None else DRAIN_IDLE
            due = preview.due_in(now)
            if due is not None:
                wait = min(wait, due)
            if exited_at is not None:
                wait = min(wait, DRAIN_IDLE)
            for key, _mask in sel.select(max(wait, 0.0)):
                if key.data == "out":
                    try:
                        data = os.read(fd, READ_SIZE)
                    except BlockingIOError:
                        continue
                    if not data:
                        eof = True
                        sel.unregister(fd)
                        continue
                    last_data = time.monotonic()
                    preview.dirty = True
                    if sink(data):
                        return "marker"
                elif key.data == "wake" and waker is not None:
                    waker.clear_pipe()
                # "status": read by child.poll() at the top of the loop
    finally:
        sel.close()


def drain(fd: int, sink: Callable[[bytes], bool], limit: float) -> bool:
    """Read what is in the pipe until EOF or ``limit`` seconds; True when ``sink`` said stop."""
    end = time.monotonic() + limit
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    try:
        while True:
            left = end - time.monotonic()
            if left <= 0 or not sel.select(left):
                return False
            try:
                data = os.read(fd, READ_SIZE)
            except BlockingIOError:
                continue
            if not data:
                return False
            if sink(data):
                return True
    finally:
        sel.close()


# ---------------------------------------------------------------------------------------------
# results
# ---------------------------------------------------------------------------------------------


@dataclass
class RunResult:
    exit: int | None = None
    timed_out: bool = False
    aborted: bool = False
    signal: int | None = None  # the shell died of this signal (not one we sent)
    notes: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# one-shot
# ---------------------------------------------------------------------------------------------


def run_one_shot(
    argv: list[str],
    *,
    processes: Processes,
    cwd: str,
    env: dict[str, str],
    token: str,
    session: str | None,
    deadline: float,
    waker: Waker,
    writer: Any,
    preview: Preview,
) -> RunResult:
    child = processes.spawn(argv, cwd=cwd, env=env, token=token, session=session)
    fd = child.stdout
    assert fd is not None
    _grow_pipe(fd)

    def sink(data: bytes) -> bool:
        writer.write(data)
        return False

    result = RunResult()
    try:
        why = pump(fd, child, sink, deadline, waker, preview, until_exit=True)
        if why in ("timeout", "stop"):
            result.timed_out = why == "timeout"
            result.aborted = why == "stop"
            child.kill()
            drain(fd, sink, KILL_DRAIN)
        else:
            code = child.returncode
            if code is not None and code < 0:
                result.signal = -code
            else:
                result.exit = code
    except BaseException:
        child.kill()
        raise
    finally:
        if not child.gone:
            child.detach()  # what runs on in the background (`cmd &`) lives until the runtime ends
        child.close()
        preview.tick(time.monotonic(), force=True)
    return result


# ---------------------------------------------------------------------------------------------
# persistent
# ---------------------------------------------------------------------------------------------


class MarkerSink:
    """Writes output to the writer until the end-of-command marker; parses status and cwd."""

    def __init__(self, prefix: bytes, writer: Any) -> None:
        self.prefix = prefix
        self.writer = writer
        self.pending = b""
        self.status: int | None = None
        self.cwd: str | None = None

    def __call__(self, data: bytes) -> bool:
        buf = self.pending + data
        index = buf.find(self.prefix)
        if index < 0:
            keep = len(self.prefix) - 1  # a marker may start in this chunk's last bytes
            if len(buf) > keep:
                self.writer.write(buf[: len(buf) - keep])
                buf = buf[len(buf) - keep :]
            self.pending = buf
            return False
        if index:
            self.writer.write(buf[:index])
        rest = buf[index + len(self.prefix) :]
        newline = rest.find(b"\n")
        if newline < 0:
            self.pending = buf[index:]  # the marker's end is still to come
            return False
        status, _, cwd = rest[:newline].decode("utf-8", "replace").partition(":")
        self.status = int(status) if status.isdigit() else None
        self.cwd = cwd or None
        self.pending = b""
        return True

    def flush(self) -> None:
        if self.pending:
            self.writer.write(self.pending)
            self.pending = b""


def _quote(text: str) -> str:
    return shlex.quote(text)


class PersistentShell:
    """One long-lived shell reading commands from its stdin.

    Each command is written to a file and sourced (``{ . FILE; } </dev/null``), so quoting
    never matters and a syntax error cannot swallow the end marker; its stdin is closed; it
    runs with its own ``HOOKCODE_PROC_TOKEN`` (the shell's token plus a number) so a kill
    finds what it started. Then the shell prints ``__HOOKCODE_END_<key>__<status>:<cwd>``.
    """

    def __init__(
        self,
        shell: str,
        cwd: str,
        env: dict[str, str],
        token: str,
        processes: Processes,
        session: str | None = None,
    ) -> None:
        self.token = token
        self.key = secrets.token_hex(12)
        self.cwd = cwd
        self.counter = 0
        self.child = processes.spawn(
            [shell], cwd=cwd, env=env, token=token, stdin=True, session=session
        )
        try:
            self.child.started()
        except OSError:
            self.child.close()
            raise
        self.tmpdir = tempfile.mkdtemp(prefix="hookcode-bash-")
        assert self.child.stdout is not None
        self.fd = self.child.stdout
        _grow_pipe(self.fd)
        # bash can leave a command early on SIGUSR1 (see _interrupt); others get replaced
        self.interruptible = os.path.basename(shell) == "bash"
        if self.interruptible:
            with contextlib.suppress(OSError):
                self._write(BASH_STOP_TRAP.encode() + b"\n")

    @property
    def pid(self) -> int:
        return self.child.pid

    def alive(self) -> bool:
        return self.child.poll() is None and not self.child.closed

    def _write(self, data: bytes) -> None:
        fd = self.child.stdin
        if fd is None:
            raise BrokenPipeError("the shell's input is closed")
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]

    def _discard_leftovers(self) -> None:
        """Output that arrived between commands (background jobs) is not this call's."""
        os.set_blocking(self.fd, False)
        try:
            with contextlib.suppress(BlockingIOError, OSError):
                while os.read(self.fd, READ_SIZE):
                    pass
        finally:
            os.set_blocking(self.fd, True)

    def run(
        self,
        command: str,
        *,
        workdir: str | None,
        deadline: float,
        waker: Waker,
        writer: Any,
        preview: Preview,
    ) -> RunResult:
        result = RunResult()
        self._discard_leftovers()
        self.counter += 1
        path = os.path.join(self.tmpdir, f"cmd{self.counter}.sh")
        with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(command if command.endswith("\n") else command + "\n")
        cmd_token = f"{self.token}.{self.counter}"
        prefix = f"__HOOKCODE_END_{self.key}__"
        lines = [f"export {TOKEN_VAR}={cmd_token}"]
        if workdir is not None:
            wd = _quote(workdir)
            lines.append(
                f"__hookcode_prev=$PWD; cd -- {wd} && {{ . {_quote(path)}; }} </dev/null; "
                f'__hookcode_status=$?; if [ "$PWD" = {wd} ]; then cd -- "$__hookcode_prev"; fi'
            )
        else:
            lines.append(f"{{ . {_quote(path)}; }} </dev/null; __hookcode_status=$?")
        lines.append(f"printf '%s%s:%s\\n' '{prefix}' \"$__hookcode_status\" \"$PWD\"")
        # the command's processes start from now on (clock ticks, like their start times)
        begin = uptime_ticks()
        sink = MarkerSink(prefix.encode(), writer)
        try:
            self._write(("\n".join(lines) + "\n").encode("utf-8", "surrogateescape"))
        except OSError:
            self.child.wait_for(lambda: self.child.returncode is not None, KILL_DRAIN)
            result.notes.append(self._died_note())
            return result
        try:
            why = pump(self.fd, self.child, sink, deadline, waker, preview, until_exit=False)
            if why in ("timeout", "stop"):
                result.timed_out = why == "timeout"
                result.aborted = why == "stop"
                if not self._interrupt(cmd_token, begin, sink, preview):
                    # not bash, stuck, or its output redirected away: replace the shell
                    sink.flush()
                    self.close()
                    result.notes.append(
                        "The persistent shell was restarted to stop the command: the working "
                        "directory and variables set by earlier commands are lost."
                    )
            elif why == "marker":
                result.exit = sink.status
                if sink.cwd and os.path.isdir(sink.cwd):
                    self.cwd = sink.cwd
            else:  # the shell exited (or closed its output) before the marker
                sink.flush()
                drain(self.fd, sink, KILL_DRAIN)
                sink.flush()
                self.close()
                code = self.child.returncode
                if code is not None and code >= 0:
                    result.exit = code
                elif code is not None:
                    result.signal = -code
                result.notes.append(self._died_note())
        except BaseException:
            self.child.kill_command(cmd_token, begin, GRACE_SECONDS)
            raise
        finally:
            with contextlib.suppress(OSError):
                os.unlink(path)
            preview.tick(time.monotonic(), force=True)
        return result

    def _interrupt(self, cmd_token: str, begin: int, sink: MarkerSink, preview: Preview) -> bool:
        """Stop the running command but keep the shell: True when the shell is back at its
        prompt (the end marker came) and the command's processes are gone.

        bash only: the shell traps SIGUSR1 (:data:`BASH_STOP_TRAP`) and unwinds the sourced
        command file, so nothing after the killed process runs. The signal goes first: bash
        runs the trap as soon as its foreground child is gone. The keeper kills the
        command's processes: those carrying its token, and the shell's children started
        since ``begin`` (see :meth:`hookcode.process.Child.kill_command`); earlier
        background jobs stay.
        """
        if not self.interruptible:
            return False
        child = self.child
        end = time.monotonic() + MARKER_GRACE
        kills = child.commands_killed
        child.signal(signal.SIGUSR1)
        child.kill_command(cmd_token, begin, GRACE_SECONDS)
        sent = 1
        while time.monotonic() < end:
            why = pump(
                self.fd, child, sink, time.monotonic() + 0.05, None, preview, until_exit=False
            )
            if why == "marker":
                # the command's processes are gone before the call returns
                child.wait_for(lambda done=kills + sent: child.commands_killed >= done, KILL_WAIT)
                return True
            if why != "timeout":
                return False  # the shell itself is gone
            child.signal(signal.SIGUSR1)
            if child.commands_killed >= kills + sent:  # the last kill is done: anything new?
                child.kill_command(cmd_token, begin, 0)
                sent += 1
        return False

    def _died_note(self) -> str:
        return (
            "The persistent shell exited during this command; the next command runs in a new "
            "shell, without the working directory and variables set by earlier commands."
        )

    def close(self) -> None:
        """Kill the shell and everything it started."""
        if not self.child.gone and not self.child.closed:
            self.child.kill()
        self.child.close()
        shutil.rmtree(self.tmpdir, ignore_errors=True)
