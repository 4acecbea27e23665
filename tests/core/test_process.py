"""hookcode.process, the one module that starts and kills processes: real processes below a
real guardian. (The guardian's own guarantees are tested through bash: test_bash*.py.)"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hookcode.guardian import TOKEN_VAR
from hookcode.process import Processes, pid_alive, start_time

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the process guardian's trees need Linux"
)

ESCAPES = (
    "setsid sh -c 'echo $$ > {out}/setsid.tmp; mv {out}/setsid.tmp {out}/setsid; exec sleep 305' "
    ">/dev/null 2>&1 & "
    "( (sh -c 'echo $$ > {out}/double.tmp; mv {out}/double.tmp {out}/double; exec sleep 306' >/dev/null 2>&1 &) &)"
)


@pytest.fixture
def processes() -> Iterator[Processes]:
    found = Processes()
    yield found
    found.close()


def escaped(out: Path) -> list[int]:
    deadline = time.monotonic() + 10
    names = [out / "setsid", out / "double"]
    while not all(p.exists() for p in names) and time.monotonic() < deadline:
        time.sleep(0.01)
    return [int(p.read_text()) for p in names]


def gone(pids: list[int], timeout: float = 5) -> bool:
    deadline = time.monotonic() + timeout
    while any(pid_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.01)
    return not any(pid_alive(p) for p in pids)


def test_spawn_async_gives_streams_and_kill_takes_the_whole_tree(
    processes: Processes, tmp_path: Path
) -> None:
    script = ESCAPES.format(out=tmp_path) + "; read line; echo got $line; echo oops >&2; sleep 307"

    async def run() -> tuple[bytes, bytes, list[int], int]:
        proc = await processes.spawn_async(["sh", "-c", script], cwd=str(tmp_path), env=os.environ)
        try:
            assert proc.pid > 0 and proc.returncode is None
            assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
            proc.stdin.write(b"hello\n")
            await proc.stdin.drain()
            out = await asyncio.wait_for(proc.stdout.readline(), 10)
            err = await asyncio.wait_for(proc.stderr.readline(), 10)
            pids = escaped(tmp_path)
            assert all(pid_alive(p) for p in pids)
            await proc.kill()
            return out, err, pids, await proc.wait()
        finally:
            proc.close()

    out, err, pids, code = asyncio.run(run())
    assert (out, err) == (b"got hello\n", b"oops\n")
    assert code < 0  # killed by a signal
    assert gone(pids, timeout=0.5)  # gone when kill() returned (a moment for the reaping)


def test_closing_the_runtime_kills_what_a_command_left_running(
    processes: Processes, tmp_path: Path
) -> None:
    child = processes.spawn(
        ["sh", "-c", ESCAPES.format(out=tmp_path)], cwd=str(tmp_path), env=os.environ
    )
    child.started()
    pids = escaped(tmp_path)
    child.communicate()
    assert child.returncode == 0
    child.detach()  # the command is done; what it left runs on until the runtime ends
    assert all(pid_alive(p) for p in pids)
    processes.close()
    assert gone(pids)


def test_a_command_gets_a_token_unless_given_one(processes: Processes, tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"]}
    child = processes.spawn(["sh", "-c", f"echo ${TOKEN_VAR}"], cwd=str(tmp_path), env=env)
    out, _ = child.communicate(timeout=10)
    child.close()
    assert len(out.strip()) == 32
    child = processes.spawn(
        ["sh", "-c", f"echo ${TOKEN_VAR}"],
        cwd=str(tmp_path),
        env={**env, TOKEN_VAR: "mine"},
        token="mine",
    )
    out, _ = child.communicate(timeout=10)
    child.close()
    assert out == b"mine\n"


def test_stderr_to_a_file(processes: Processes, tmp_path: Path) -> None:
    log = tmp_path / "log"
    with open(log, "ab") as handle:
        child = processes.spawn(
            ["sh", "-c", "echo out; echo err >&2"],
            cwd=str(tmp_path),
            env=os.environ,
            stderr_to=handle.fileno(),
        )
    out, _ = child.communicate(timeout=10)
    child.close()
    assert (out, log.read_bytes()) == (b"out\n", b"err\n")


def test_a_failed_start_names_the_program_or_the_directory(
    processes: Processes, tmp_path: Path
) -> None:
    async def start(argv: list[str], cwd: Path) -> OSError:
        with pytest.raises(OSError) as caught:
            await processes.spawn_async(argv, cwd=str(cwd), env=os.environ)
        return caught.value

    missing = asyncio.run(start([str(tmp_path / "no-such-program")], tmp_path))
    assert isinstance(missing, FileNotFoundError)
    assert missing.filename == str(tmp_path / "no-such-program")
    nowhere = asyncio.run(start(["true"], tmp_path / "no-such-dir"))
    assert isinstance(nowhere, FileNotFoundError)
    assert nowhere.filename == str(tmp_path / "no-such-dir")


def test_pid_alive_tells_a_reused_pid_apart() -> None:
    me = os.getpid()
    assert pid_alive(me) and pid_alive(me, start_time(me))
    assert not pid_alive(me, (start_time(me) or 0) + 1)
    assert not pid_alive(0) and not pid_alive(-1)


def test_a_direct_child_is_killed_from_an_abort_callback_on_another_thread() -> None:
    """DirectKill.on_abort (an abort signal's callback, from any thread) kills the child on
    the loop's thread; exit_code awaits its end without blocking the loop; after the call
    ended, a late callback does nothing."""
    import subprocess
    import threading

    from hookcode.process import DirectKill, exit_code

    async def main() -> tuple[int, int]:
        loop = asyncio.get_running_loop()
        proc = subprocess.Popen(["sleep", "30"])
        killer = DirectKill(proc, loop)
        threading.Timer(0.05, killer.on_abort).start()
        code = await asyncio.wait_for(exit_code(proc, loop), 10)
        killer.running = False
        killer.on_abort()  # late: nothing to do, no error
        done = subprocess.Popen(["true"])
        return code, await exit_code(done, loop)

    killed, ok = asyncio.run(main())
    assert killed == -9
    assert ok == 0
