"""No survivors (issue 16, item 8): whatever a bash call starts dies with hookcode, by any
signal, and after a timeout; a crash that takes the guardian too is cleaned up by the next
``hookcode run -c``. Real hookcode processes, real signals.

Every variant below writes its own pid to a file; a pid counts as alive only while a process
with that pid AND the start time read when it appeared exists (a reused pid never counts).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hookcode.testing import ReplyWith, invoke_tool

pytestmark = pytest.mark.skipif(
    sys.platform != "linux", reason="process trees are tested on Linux (/proc)"
)

#: every way a command can try to outlive its call, each writing its pid to "$P/NAME"
SURVIVORS = r"""
P={pids}
echo $$ > "$P/shell"
sleep 997 & echo $! > "$P/background"
nohup sleep 997 >/dev/null 2>&1 & echo $! > "$P/nohup"
setsid sh -c 'echo $$ > "$0/setsid"; exec sleep 997' "$P" >/dev/null 2>&1 &
( (sh -c 'echo $$ > "$0/double_fork"; exec sleep 997' "$P" &) & )
env -i setsid sh -c 'sleep 997 & echo $! > "$0/env_cleared"' "$P"
sleep 997 & echo $! > "$P/disowned"; disown
sh -c 'trap "" TERM; echo $$ > "$0/ignores_term"; exec sleep 997' "$P" &
{python} -c 'import os, sys
if os.fork(): sys.exit()
os.setsid()
if os.fork(): sys.exit()
open(sys.argv[1] + "/daemon", "w").write(str(os.getpid()))
os.execve("/bin/sleep", ["sleep", "997"], {{}})' "$P" >/dev/null 2>&1 &
echo ready
{end}
"""
CLI = [sys.executable, "-m", "hookcode.cli"]
NAMES = (
    "shell",
    "background",
    "nohup",
    "setsid",
    "double_fork",
    "env_cleared",
    "disowned",
    "ignores_term",
    "daemon",
)


#: the end of a command that exits once the test has created "$P/go" (it recorded them all)
UNTIL_GO = 'until [ -e "$P/go" ]; do sleep 0.01; done'


def survivors(pids: Path, end: str = "sleep 120") -> str:
    """The command starting every variant, then running ``end``."""
    pids.mkdir(parents=True, exist_ok=True)
    return SURVIVORS.format(pids=pids, end=end, python=sys.executable)


def stat(pid: int) -> tuple[int, str, int] | None:
    """(ppid, state, start time) of ``pid``."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), fields[0].decode(), int(fields[19])


def started(pid: int) -> int:
    info = stat(pid)
    assert info is not None, f"process {pid} is gone"
    return info[2]


def alive(pid: int, start: int) -> bool:
    info = stat(pid)
    return info is not None and info[2] == start and info[1] not in ("Z", "X")


def recorded(pids: Path, within: float = 20.0) -> dict[str, tuple[int, int]]:
    """Wait until every variant wrote its pid; name -> (pid, start time)."""
    end = time.monotonic() + within
    found: dict[str, tuple[int, int]] = {}
    while len(found) < len(NAMES):
        for name in NAMES:
            path = pids / name
            if name in found or not path.exists():
                continue
            text = path.read_text().strip()
            info = stat(int(text)) if text.isdigit() else None
            if info is not None:
                found[name] = (int(text), info[2])
        if time.monotonic() > end:
            raise AssertionError(f"the survivors did not all start: {sorted(found)}")
        time.sleep(0.02)
    return found


def left_alive(found: dict[str, tuple[int, int]], within: float = 5.0) -> list[str]:
    """The names of ``found`` still alive (sorted: ``found`` is in the order the variants
    happened to start), waiting up to ``within`` seconds for them to be gone."""
    end = time.monotonic() + within
    while True:
        left = sorted(name for name, (pid, start) in found.items() if alive(pid, start))
        if not left or time.monotonic() > end:
            return left
        time.sleep(0.02)


def kill_left(found: dict[str, tuple[int, int]]) -> None:
    for pid, start in found.values():
        if alive(pid, start):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def children(pid: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            info = stat(int(name))
            if info is not None and info[0] == pid and info[1] != "Z":
                found.append(int(name))
    return found


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def guardian_of(pid: int, within: float = 10.0) -> int:
    end = time.monotonic() + within
    while time.monotonic() < end:
        for child in children(pid):
            if "guardian.py" in cmdline(child):
                return child
        time.sleep(0.02)
    raise AssertionError(f"no guardian below {pid}")


def hookcode(env: dict[str, str], *args: str, cwd: Path, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [*CLI, "-C", str(cwd), *args],
        env=env,
        stdin=kwargs.pop("stdin", subprocess.DEVNULL),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **kwargs,
    )


def bash_args(command: str, **extra) -> str:
    return json.dumps({"command": command, "description": "Starts survivors", **extra})


# ---------------------------------------------------------------------------------------------
# hookcode killed while a call runs
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP])
def test_nothing_survives_hookcode_killed_by_any_signal(hookcode_env, tmp_path, sig):
    pids = tmp_path / "pids"
    proc = hookcode(
        hookcode_env.env,
        "tools",
        "call",
        "bash",
        bash_args(survivors(pids)),
        "--yes",
        cwd=hookcode_env.project,
    )
    found: dict[str, tuple[int, int]] = {}
    try:
        found = recorded(pids)
        proc.send_signal(sig)
        _out, err = proc.communicate(timeout=30)
        assert left_alive(found) == []
        if sig != signal.SIGKILL:  # handled: the call is aborted and says so
            assert proc.returncode == 1
            assert err.decode() == "hookcode: bash: Tool execution aborted\n"
    finally:
        proc.kill()
        proc.communicate()
        kill_left(found)


def test_nothing_survives_a_kill_of_hookcodes_whole_process_group(hookcode_env, tmp_path):
    """``kill -9 -PGID`` (a terminal's job killed): the guardian is in a session of its own,
    outlives the group kill and kills everything."""
    pids = tmp_path / "pids"
    proc = hookcode(
        hookcode_env.env,
        "tools",
        "call",
        "bash",
        bash_args(survivors(pids)),
        "--yes",
        cwd=hookcode_env.project,
        start_new_session=True,
    )
    found: dict[str, tuple[int, int]] = {}
    try:
        found = recorded(pids)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
        assert left_alive(found) == []
    finally:
        proc.kill()
        proc.communicate()
        kill_left(found)


def test_background_jobs_end_with_hookcode(hookcode_env, tmp_path):
    """A call returns when its shell exits; what it left in the background dies when
    hookcode exits normally too."""
    pids = tmp_path / "pids"
    proc = hookcode(
        hookcode_env.env,
        "tools",
        "call",
        "bash",
        bash_args(survivors(pids, UNTIL_GO)),
        "--yes",
        cwd=hookcode_env.project,
    )
    found: dict[str, tuple[int, int]] = {}
    try:
        found = recorded(pids)
        (pids / "go").touch()  # the shell may exit now
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert out == b"ready\n"
        assert left_alive(found) == []
    finally:
        proc.kill()
        kill_left(found)


# ---------------------------------------------------------------------------------------------
# timeouts, in a runtime that lives on
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("persistent", [False, True], ids=["one-shot", "persistent"])
def test_a_timeout_kills_every_variant_before_the_call_returns(hookcode_env, tmp_path, persistent):
    from hookcode_tool_bash import close_shells

    hookcode_env.register(ReplyWith("once"), "reply_once")
    if persistent:
        hookcode_env.write_config({"tool": {"bash": {"persistent": True}}})
    runtime = hookcode_env.runtime()
    session = runtime.create_session(title="survivors").id
    pids = tmp_path / "pids"
    command = survivors(pids)
    found: dict[str, tuple[int, int]] = {}
    args = {"command": command, "description": "Starts survivors", "timeout": 3000}
    outcomes = []
    call = threading.Thread(
        target=lambda: outcomes.append(invoke_tool(runtime, "bash", args, session_id=session))
    )
    call.start()
    try:
        found = recorded(pids)
        call.join(30)
        (outcome,) = outcomes
        assert outcome.error is None, outcome.error_text
        assert "exceeding timeout 3000 ms" in outcome.result.output
        if persistent:  # "$$" is the persistent shell itself: it lives on, the command not
            assert alive(*found.pop("shell"))
        # dead when the call returns, not some time later
        assert left_alive(found, within=0) == []
        if persistent:  # the shell itself lives on for the next call
            again = invoke_tool(
                runtime, "bash", {"command": "echo $$", "description": "x"}, session_id=session
            )
            # (bash reports the killed background jobs first)
            assert again.result is not None, again.error_text
            assert again.result.output.splitlines()[-1].isdigit()
    finally:
        kill_left(found)
        close_shells(runtime)


def test_a_killed_guardian_takes_its_trees_along_and_is_replaced(hookcode_env, tmp_path):
    hookcode_env.register(ReplyWith("once"), "reply_once")
    runtime = hookcode_env.runtime()
    pids = tmp_path / "pids"
    found: dict[str, tuple[int, int]] = {}
    outcome = []
    call = threading.Thread(
        target=lambda: outcome.append(
            invoke_tool(
                runtime, "bash", {"command": survivors(pids, "sleep 60"), "description": "x"}
            )
        )
    )
    call.start()
    try:
        found = recorded(pids)
        guardian = runtime.processes.pid
        assert guardian is not None
        os.kill(guardian, signal.SIGKILL)
        call.join(30)
        assert not call.is_alive()
        assert left_alive(found) == []
        assert "terminated by signal" in outcome[0].result.output
        again = invoke_tool(runtime, "bash", {"command": "echo again", "description": "x"})
        assert again.result is not None, again.error_text
        assert again.result.output == "again\n"
        assert runtime.processes.pid not in (None, guardian)
    finally:
        kill_left(found)


def test_a_killed_keeper_leaves_no_orphans(hookcode_env, tmp_path):
    """A keeper killed with SIGKILL: the shell's children are re-parented to the guardian,
    which kills every child of its own that is not a keeper."""
    hookcode_env.register(ReplyWith("once"), "reply_once")
    runtime = hookcode_env.runtime()
    pids = tmp_path / "pids"
    found: dict[str, tuple[int, int]] = {}
    call = threading.Thread(
        target=lambda: invoke_tool(
            runtime, "bash", {"command": survivors(pids, "sleep 60"), "description": "x"}
        )
    )
    call.start()
    try:
        found = recorded(pids)
        guardian = runtime.processes.pid
        assert guardian is not None
        (keeper,) = children(guardian)
        os.kill(keeper, signal.SIGKILL)
        assert left_alive(found) == []
        call.join(30)
        assert not call.is_alive()
    finally:
        kill_left(found)


# ---------------------------------------------------------------------------------------------
# hookcode run: SIGHUP, and a crash of everything followed by run -c
# ---------------------------------------------------------------------------------------------


def write_script(path: Path, turns: list) -> Path:
    path.write_text(json.dumps(turns))
    return path


def test_sighup_aborts_the_run_kills_the_tree_and_stores_the_session(hookcode_env, tmp_path):
    pids = tmp_path / "pids"
    script = write_script(
        tmp_path / "script.json",
        [
            {"tool_calls": [{"name": "bash", "args": json.loads(bash_args(survivors(pids)))}]},
            "never reached",
        ],
    )
    proc = hookcode(
        hookcode_env.env,
        "run",
        "-m",
        "scripted/x",
        "--script",
        str(script),
        "--yes",
        "start them",
        cwd=hookcode_env.project,
    )
    found: dict[str, tuple[int, int]] = {}
    try:
        found = recorded(pids)
        proc.send_signal(signal.SIGHUP)
        _out, err = proc.communicate(timeout=30)
        assert proc.returncode == 130, err
        assert "aborted" in err.decode()
        assert left_alive(found) == []
    finally:
        proc.kill()
        kill_left(found)
    runtime = hookcode_env.runtime()
    (session,) = runtime.store.list_sessions(str(hookcode_env.project))
    parts = runtime.store.tool_parts(session.id)
    assert [(p.tool, p.state) for p in parts] == [("bash", "error")]
    assert "aborted" in (parts[0].error or "").lower()


def test_run_continue_kills_what_a_crash_of_everything_left(hookcode_env, tmp_path):
    """hookcode, its guardian and the keepers all killed at once (SIGKILL, stopped first so
    none can react): the command's processes live on, re-parented to init. The next
    ``hookcode run -c`` kills them from the keepers' journal: by pid and start time, by the
    environment token, by session."""
    pids = tmp_path / "pids"
    script = write_script(
        tmp_path / "script.json",
        [{"tool_calls": [{"name": "bash", "args": json.loads(bash_args(survivors(pids)))}]}],
    )
    proc = hookcode(
        hookcode_env.env,
        "run",
        "-m",
        "scripted/x",
        "--script",
        str(script),
        "--yes",
        "start them",
        cwd=hookcode_env.project,
    )
    found: dict[str, tuple[int, int]] = {}
    journal = hookcode_env.data_dir / "processes"
    try:
        found = recorded(pids)
        # the keeper journals its tree soon after each change: wait until it lists them all
        # (those that cleared their environment and left the session can be found no other way)
        end = time.monotonic() + 15
        while True:
            text = "".join(p.read_text() for p in journal.glob("*.procs"))
            if all(f"proc {pid} {start}\n" in text for pid, start in found.values()):
                break
            assert time.monotonic() < end, f"the journal does not list them all: {text}"
            time.sleep(0.05)
        guardian = guardian_of(proc.pid)
        keepers = children(guardian)
        assert keepers
        for pid in [guardian, *keepers]:
            os.kill(pid, signal.SIGSTOP)
        for pid in [proc.pid, *keepers, guardian]:
            os.kill(pid, signal.SIGKILL)
        proc.communicate(timeout=30)
        time.sleep(0.3)
        assert left_alive(found, within=0) == sorted(NAMES)  # all of them outlived the crash

        resume = ["run", "-c", "-m", "scripted/x", "--script", str(script), "go on"]
        done = subprocess.run(
            [*CLI, "-C", str(hookcode_env.project), *resume],
            env=hookcode_env.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert left_alive(found) == [], done.stderr
        assert list(journal.glob("*.procs")) == []
        assert done.returncode in (0, 1), done.stderr
    finally:
        proc.kill()
        kill_left(found)


# ---------------------------------------------------------------------------------------------
# the sweep never kills a reused pid
# ---------------------------------------------------------------------------------------------


def write_journal(directory: Path, token: str, shell: tuple[int, int], procs) -> Path:
    from hookcode.guardian import JOURNAL_HEADER, boot_id

    directory.mkdir(parents=True, exist_ok=True)
    lines = [
        JOURNAL_HEADER,
        f"boot {boot_id()}",
        f"host {os.uname().nodename}",
        "session ses_x",
        f"token {token}",
        "keeper 999999999 1",  # no such process: the keeper is gone
        f"shell {shell[0]} {shell[1]}",
        *(f"proc {pid} {start}" for pid, start in procs),
    ]
    path = directory / f"{token}.procs"
    path.write_text("\n".join(lines) + "\n")
    return path


def sleeper(**kwargs) -> subprocess.Popen:
    return subprocess.Popen(["sleep", "997"], **kwargs)


def orphan_in_session(tmp_path: Path, name: str, then: str) -> tuple[subprocess.Popen, int]:
    """A session leader running ``then`` (exec), and the pid of a process it left in its
    session, orphaned (not its descendant)."""
    leader = subprocess.Popen(
        ["setsid", "sh", "-c", f"(sleep 997 & echo $! > {tmp_path}/{name}); exec {then}"]
    )
    path = tmp_path / name
    end = time.monotonic() + 5
    while not path.exists() or not path.read_text().strip():
        assert time.monotonic() < end
        time.sleep(0.01)
    return leader, int(path.read_text())


def test_sweep_matches_start_times_tokens_and_sessions(tmp_path):
    """Killed: a listed process (pid and start time match) and every member of its session;
    a process carrying the token, but not its session. Spared: a listed pid whose start time
    differs (reused), a bystander."""
    from hookcode.guardian import TOKEN_VAR, carries, sweep

    journal = tmp_path / "processes"
    reused = sleeper(start_new_session=True)
    bystander = sleeper(start_new_session=True)
    leader, member = orphan_in_session(tmp_path, "member", "sleep 997")
    tagged, sibling = orphan_in_session(tmp_path, "sibling", f"env {TOKEN_VAR}=tok123.4 sleep 997")
    procs = [reused, bystander, leader, tagged]
    extra = {"member": (member, started(member)), "sibling": (sibling, started(sibling))}
    try:
        end = time.monotonic() + 5
        while not carries(tagged.pid, "tok123.4"):  # once it has exec'd `env ... sleep`
            assert time.monotonic() < end
            time.sleep(0.01)
        start = {p.pid: started(p.pid) for p in procs}
        write_journal(
            journal,
            "tok123",
            (reused.pid, start[reused.pid] - 1),  # the "shell": its pid was reused since
            [(leader.pid, start[leader.pid])],
        )
        assert sweep(journal) == 3
        for proc in (leader, tagged):
            assert proc.wait(5) < 0
        assert left_alive({"member": extra["member"]}) == []
        # sweep returns once what it signalled is gone: a sibling it took would be gone now
        assert left_alive(extra, within=0) == ["sibling"]
        assert reused.poll() is None and bystander.poll() is None
        assert list(journal.iterdir()) == []
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
        kill_left(extra)


def test_sweep_leaves_live_keepers_other_machines_and_stale_boots_alone(tmp_path):
    from hookcode.guardian import JOURNAL_HEADER, start_time, sweep

    journal = tmp_path / "processes"
    target = sleeper()
    try:
        me = (os.getpid(), start_time(os.getpid()))
        live = write_journal(journal, "live", (target.pid, started(target.pid)), [])
        live.write_text(live.read_text().replace("keeper 999999999 1", f"keeper {me[0]} {me[1]}"))
        other = write_journal(journal, "other", (target.pid, started(target.pid)), [])
        other.write_text(other.read_text().replace(f"host {os.uname().nodename}", "host elsewhere"))
        old = write_journal(journal, "old", (target.pid, started(target.pid)), [])
        old.write_text(old.read_text().replace("boot ", "boot 0", 1))
        (journal / "garbage.procs").write_text("not a journal\n")
        assert sweep(journal) == 0
        assert target.poll() is None  # its keeper lives, or it is another machine's
        assert live.exists() and other.exists() and not old.exists()
        assert (journal / "garbage.procs").exists()  # too young to call stale
        assert JOURNAL_HEADER not in (journal / "garbage.procs").read_text()
    finally:
        target.kill()
        target.wait()


# ---------------------------------------------------------------------------------------------
# bad timeouts
# ---------------------------------------------------------------------------------------------


def test_a_huge_timeout_is_one_clear_error(hookcode_env):
    done = subprocess.run(
        [
            *CLI,
            "-C",
            str(hookcode_env.project),
            "tools",
            "call",
            "bash",
            '{"command": "true", "description": "x", "timeout": 100000000000000000000}',
            "--yes",
        ],
        env=hookcode_env.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr == (
        "hookcode: bash: Invalid timeout value: 100000000000000000000. Timeout must be at most "
        "2147483647 ms (about 24.8 days).\n"
    )


def test_the_largest_timeout_works(hookcode_env):
    hookcode_env.register(ReplyWith("once"), "reply_once")
    runtime = hookcode_env.runtime()
    args = {"command": "sleep 0.2; echo ok", "description": "x", "timeout": 2**31 - 1}
    outcome = invoke_tool(runtime, "bash", args)
    assert outcome.result is not None, outcome.error_text
    assert outcome.result.output == "ok\n"


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({"tool": {"bash": {"max_timeout": 10**20}}}, "tool.bash.max_timeout"),
        ({"lsp": {"request_timeout": 1e20}}, "lsp.request_timeout"),
        ({"lsp": {"start_timeout": 1e20}}, "lsp.start_timeout"),
        ({"hooks": {"Stop": [{"command": "true", "timeout": 1e20}]}}, "hooks.Stop[0].timeout"),
        ({"provider": {"anthropic": {"timeout": 1e20}}}, "provider.anthropic.timeout"),
        ({"mcp": {"x": {"command": ["true"], "timeout": 10**20}}}, "mcp.x.timeout"),
    ],
)
def test_a_huge_timeout_setting_is_a_config_error_naming_the_key(hookcode_env, config, key):
    done = subprocess.run(
        [*CLI, "-C", str(hookcode_env.project), "tools", "list"],
        env={**hookcode_env.env, "HOOKCODE_CONFIG_CONTENT": json.dumps(config)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"hookcode: error: HOOKCODE_CONFIG_CONTENT: {key}: ")
    assert "less than or equal to" in line
