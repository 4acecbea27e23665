"""The bash tool (reference/tools.md §12; ARCHITECTURE.md "Shell"), with real processes.

Every test that runs a command registers ``ReplyWith("once")``: without policy_shell the command
is one opaque pattern that only a reply can allow, and with it the default rules still ask.
Tests that depend on which analyser answers block policy_shell and bring their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from hookcode import hookimpl
from hookcode.errors import PermissionDenied, PermissionRefused, ToolAborted
from hookcode.permission import ShellAnalysis
from hookcode.testing import ReplyWith, invoke_tool

pytestmark = pytest.mark.skipif(
    sys.platform != "linux", reason="process-tree handling is tested on Linux (/proc)"
)

NO_ANALYSER = {"HOOKCODE_BLOCK_PLUGINS": "policy_shell"}


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


def carrying(needle: str) -> list[int]:
    """Live processes whose environment holds ``needle`` (``NAME=value``)."""
    data = (needle + "\0").encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                env = f.read()
            with open(f"/proc/{name}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if state != b"Z" and (env.startswith(data) or b"\0" + data in env):
            found.append(int(name))
    return found


def wait_gone(needle: str, within: float = 2.0) -> list[int]:
    end = time.monotonic() + within
    while True:
        left = carrying(needle)
        if not left or time.monotonic() > end:
            return left
        time.sleep(0.02)


def wait_present(needle: str, within: float = 2.0) -> list[int]:
    end = time.monotonic() + within
    while True:
        found = carrying(needle)
        if found or time.monotonic() > end:
            return found
        time.sleep(0.01)


def adopted_zombies() -> list[int]:
    """Zombie children of this process from another session: orphans of a command that
    hookcode adopted as subreaper and did not reap."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        state, ppid, session = fields[0], int(fields[1]), int(fields[3])
        if state == b"Z" and ppid == os.getpid() and session != os.getsid(0):
            found.append(int(name))
    return found


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def ok(outcome):
    assert outcome.error is None, outcome.error_text
    return outcome.result


@pytest.fixture
def rt(hookcode_env):
    hookcode_env.register(ReplyWith("once"), "reply_once")
    return hookcode_env.runtime()


def bash(runtime, command: str, description: str = "Runs a test command", **args):
    return invoke_tool(runtime, "bash", {"command": command, "description": description, **args})


# ---------------------------------------------------------------------------------------------
# output
# ---------------------------------------------------------------------------------------------


def test_echo_output_title_and_metadata(rt):
    result = ok(bash(rt, "echo hello", "Prints hello"))
    assert result.output == "hello\n"
    assert result.title == "Prints hello"
    assert result.metadata["exit"] == 0
    assert result.metadata["output"] == "hello\n"
    assert result.metadata["description"] == "Prints hello"
    assert result.metadata["truncated"] is False
    assert "outputPath" not in result.metadata


def test_stdout_and_stderr_interleave_in_arrival_order(rt):
    command = "; ".join(f"echo out{i}; echo err{i} >&2" for i in range(5))
    result = ok(bash(rt, command))
    expected = "".join(f"out{i}\nerr{i}\n" for i in range(5))
    assert result.output == expected


def test_nonzero_exit_is_in_the_output_and_metadata_not_an_error(rt):
    result = ok(bash(rt, "echo partial; exit 7"))
    assert result.metadata["exit"] == 7
    assert result.output == "partial\nexit code 7"
    result = ok(bash(rt, "printf 'no newline'; exit 2"))
    assert result.output == "no newline\nexit code 2"
    assert ok(bash(rt, "exit 0")).output == ""


def test_stdin_is_closed(rt):
    start = time.monotonic()
    result = ok(bash(rt, 'read x; echo "rc=$? x=[$x]"', timeout=10000))
    assert result.output == "rc=1 x=[]\n"
    assert time.monotonic() - start < 5


def test_workdir_and_the_default_directory(rt, hookcode_env):
    (hookcode_env.project / "sub").mkdir()
    assert ok(bash(rt, "pwd")).output == f"{hookcode_env.project}\n"
    assert ok(bash(rt, "pwd", workdir="sub")).output == f"{hookcode_env.project / 'sub'}\n"


def test_long_output_keeps_head_and_tail_and_spills_everything(rt):
    result = ok(bash(rt, "seq 1 2500"))
    output = result.output
    assert result.metadata["truncated"] is True
    spill = Path(result.metadata["outputPath"])
    assert spill.read_text() == "".join(f"{i}\n" for i in range(1, 2501))
    assert output.startswith("1\n2\n3\n")
    assert output.endswith("\n2499\n2500\n")  # the tail: errors are usually at the end
    assert "...501 lines truncated..." in output
    assert "The tool call succeeded but the output was truncated." in output
    assert str(spill) in output and "Grep" in output
    assert "\n1000\n" in output and "\n1502\n" in output and "\n1001\n" not in output
    assert result.metadata["exit"] == 0
    assert result.metadata["output"].startswith("1\n2\n")


def test_a_cut_output_gives_the_advice_of_the_tools_offered(rt, hookcode_env):
    from hookcode.truncate import DEFAULT_ADVICE

    output = ok(bash(rt, "seq 1 2500")).output
    assert "Use the Task tool" in output and DEFAULT_ADVICE not in output  # task's own line
    hookcode_env.write_config('[permission]\ntask = "deny"\n')
    output = ok(bash(hookcode_env.runtime(), "seq 1 2500")).output
    assert "Task tool" not in output and DEFAULT_ADVICE in output


def test_live_preview_reaches_metadata_events(rt):
    seen = []
    rt.events.subscribe(lambda event: seen.append(event) if event.type == "tool.updated" else None)
    ok(bash(rt, "echo first; sleep 0.4; echo second", "Prints twice"))
    outputs = [e.properties["metadata"].get("output") for e in seen]
    assert "first\n" in outputs
    assert outputs[-1] == "first\nsecond\n"
    assert all(e.properties["metadata"]["description"] == "Prints twice" for e in seen)


def test_live_updates_carry_the_newest_output_past_the_preview(rt):
    """The preview is the output's first 30,000 characters; a live display needs the newest
    lines too, so each update also carries the tail (``metadata["tail"]``), and an update is
    published when only the tail changed."""
    seen = []
    rt.events.subscribe(lambda event: seen.append(event) if event.type == "tool.updated" else None)
    ok(bash(rt, "seq 1 20000; sleep 0.4; echo last-line", "Prints a lot"))
    metadata = [e.properties["metadata"] for e in seen]
    assert metadata[-1]["output"].endswith("\n\n...")  # the head preview is full
    assert metadata[-1]["tail"].endswith("20000\nlast-line\n")
    assert any(m["tail"].endswith("20000\n") for m in metadata[:-1])  # before the last line


def test_shell_env_hook_sets_variables(hookcode_env):
    class Env:
        @hookimpl
        def shell_env(self, env, cwd, ctx):
            env["HOOKCODE_TEST_VAR"] = f"from-hook:{Path(cwd).name}:{ctx.tool}"

    hookcode_env.register(ReplyWith("once"), "reply_once")
    hookcode_env.register(Env(), "env_plugin")
    runtime = hookcode_env.runtime()
    result = ok(bash(runtime, "echo $HOOKCODE_TEST_VAR; echo ${HOOKCODE_PROC_TOKEN:+tagged}"))
    assert result.output == f"from-hook:{hookcode_env.project.name}:bash\ntagged\n"


# ---------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------


def test_negative_timeout_is_refused(rt):
    outcome = bash(rt, "echo never", timeout=-5)
    assert outcome.error_text == "Invalid timeout value: -5. Timeout must be a positive number."


def test_missing_workdir_is_a_clear_error(rt, hookcode_env):
    outcome = bash(rt, "echo never", workdir="nope/deeper")
    assert outcome.error is not None
    assert outcome.error_text == (
        f"The working directory does not exist: {hookcode_env.project / 'nope' / 'deeper'}"
    )


@pytest.mark.parametrize("command", ["", "   ", "\n"])
def test_empty_command_is_a_clear_error(rt, command):
    outcome = bash(rt, command)
    assert outcome.error is not None and "command is empty" in outcome.error_text


def test_description_is_required(rt):
    outcome = invoke_tool(rt, "bash", {"command": "echo x"})
    assert outcome.error is not None and "description" in outcome.error_text


def test_spawn_failure_is_an_error(hookcode_env):
    hookcode_env.register(ReplyWith("once"), "reply_once")
    hookcode_env.write_config({"tool": {"bash": {"shell": "/nonexistent/shell"}}})
    outcome = bash(hookcode_env.runtime(), "echo x")
    assert outcome.error is not None
    assert "Failed to start the shell '/nonexistent/shell'" in outcome.error_text


def test_unknown_config_key_is_rejected(hookcode_env):
    from hookcode.errors import ConfigError

    hookcode_env.write_config({"tool": {"bash": {"persistant": True}}})
    with pytest.raises(ConfigError, match="persistant"):
        hookcode_env.runtime()


# ---------------------------------------------------------------------------------------------
# timeouts, abort and the process tree
# ---------------------------------------------------------------------------------------------

TREE = """\
echo "token=$HOOKCODE_PROC_TOKEN"
sleep 300 &
nohup sleep 301 >/dev/null 2>&1 &
( sh -c 'sleep 302; :' ) &
setsid sh -c 'sleep 303 & sleep 304' >/dev/null 2>&1 &
env -u HOOKCODE_PROC_TOKEN setsid sleep 305 >/dev/null 2>&1 &
{python} -c 'import os, sys, time
if os.fork(): sys.exit()
os.setsid()
if os.fork(): sys.exit()
time.sleep(306)' >/dev/null 2>&1 &
sh -c 'sh -c "sleep 307"'
"""


def tree_command(mark: str) -> str:
    return f"export TREE_MARK={mark}\n" + TREE.format(python=sys.executable)


def test_timeout_kills_the_whole_tree(rt):
    mark = uuid.uuid4().hex
    start = time.monotonic()
    try:
        result = ok(bash(rt, tree_command(mark), timeout=800))
        elapsed = time.monotonic() - start
        token = result.output.split("token=", 1)[1].split("\n", 1)[0]
        assert len(token) == 32
        assert result.output.endswith(
            "\n\n<bash_metadata>\nbash tool terminated command after exceeding timeout 800 ms"
            "\n</bash_metadata>"
        )
        assert result.metadata["exit"] is None
        assert "exit code" not in result.output
        # everything is dead when the call returns: no sleeper, no daemon
        assert carrying(f"TREE_MARK={mark}") == []
        assert carrying(f"HOOKCODE_PROC_TOKEN={token}") == []
        assert adopted_zombies() == []
        assert elapsed < 0.8 + 1.5
    finally:
        kill_all(carrying(f"TREE_MARK={mark}"))


def test_max_timeout_caps_the_timeout(hookcode_env):
    hookcode_env.register(ReplyWith("once"), "reply_once")
    hookcode_env.write_config({"tool": {"bash": {"max_timeout": 300}}})
    runtime = hookcode_env.runtime()
    start = time.monotonic()
    result = ok(bash(runtime, "sleep 20", timeout=60000))
    assert time.monotonic() - start < 3
    assert "exceeding timeout 300 ms" in result.output
    assert ok(bash(runtime, "echo quick", timeout=60000)).output == "quick\n"


def _abortable(runtime, command, *, abort_after: float, through_pipeline: bool) -> Any:
    from hookcode.pipeline import invoke
    from hookcode.tools import AbortSignal, ToolCall, ToolContext

    async def go():
        session = runtime.create_session(title="abort").id
        signal_ = AbortSignal()
        args = {"command": command, "description": "Runs until aborted"}
        call = ToolCall(tool="bash", args=args, call_id=runtime.new_id("call"), session_id=session)
        if through_pipeline:
            task = asyncio.ensure_future(invoke(runtime, call, abort=signal_))
        else:
            ctx = ToolContext(runtime, call, abort=signal_)
            tool = runtime.registry.entries["bash"].tool
            task = asyncio.ensure_future(tool.execute(tool.validate(args), ctx))
        await asyncio.sleep(abort_after)
        signal_.abort("user")
        return await task

    return asyncio.run(go())


def test_abort_through_the_pipeline_kills_the_tree(rt):
    mark = uuid.uuid4().hex
    try:
        outcome = _abortable(rt, tree_command(mark), abort_after=0.8, through_pipeline=True)
        assert isinstance(outcome.error, ToolAborted)
        assert wait_gone(f"TREE_MARK={mark}", within=0.5) == []
    finally:
        kill_all(carrying(f"TREE_MARK={mark}"))


def test_abort_mid_run_reports_it(rt):
    mark = uuid.uuid4().hex
    try:
        result = _abortable(
            rt, f"export M={mark}; echo begun; sleep 30", abort_after=0.5, through_pipeline=False
        )
        assert result.output.startswith("begun\n")
        assert result.output.endswith(
            "\n<bash_metadata>\nUser aborted the command\n</bash_metadata>"
        )
        assert result.metadata["exit"] is None
        assert carrying(f"M={mark}") == []
    finally:
        kill_all(carrying(f"M={mark}"))


def test_background_job_does_not_keep_the_call_open(rt):
    mark = uuid.uuid4().hex
    try:
        start = time.monotonic()
        result = ok(bash(rt, f"export M={mark}; sleep 100 & echo started", timeout=20000))
        assert time.monotonic() - start < 2
        assert result.output == "started\n"
        assert result.metadata["exit"] == 0
        assert len(wait_present(f"M={mark}")) == 1  # still running: only kills end it
    finally:
        kill_all(carrying(f"M={mark}"))


# ---------------------------------------------------------------------------------------------
# permission
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("env", [{}, NO_ANALYSER], ids=["analysed", "no-analyser"])
def test_headless_refusal_runs_nothing(hookcode_env, env):
    hookcode_env.write_config({"permission": {"bash": "ask"}})
    runtime = hookcode_env.runtime(**env)  # no front end: an ask is a reject
    outcome = bash(runtime, "touch marker.txt")
    assert isinstance(outcome.error, PermissionRefused)
    assert not (hookcode_env.project / "marker.txt").exists()


def test_without_an_analyser_the_command_is_one_opaque_pattern(hookcode_env):
    reply = hookcode_env.register(ReplyWith("once"), "reply_once")
    hookcode_env.write_config({"permission": {"bash": "allow"}})
    runtime = hookcode_env.runtime(**NO_ANALYSER)
    command = "echo a && echo b"
    assert ok(bash(runtime, command)).output == "a\nb\n"
    (request,) = reply.requests
    assert request.permission == "bash"
    assert request.patterns == [command]
    assert request.metadata["opaque"] is True
    assert request.metadata["command"] == command


def test_without_an_analyser_rules_cannot_allow_but_can_deny(hookcode_env):
    hookcode_env.write_config({"permission": {"bash": "allow"}})
    outcome = bash(hookcode_env.runtime(**NO_ANALYSER), "touch allowed.txt")
    assert isinstance(outcome.error, PermissionRefused)  # headless: the ask is rejected
    assert not (hookcode_env.project / "allowed.txt").exists()
    hookcode_env.register(ReplyWith("once"), "reply_once")
    hookcode_env.write_config({"permission": {"bash": {"*": "allow", "touch *": "deny"}}})
    outcome = bash(hookcode_env.runtime(**NO_ANALYSER), "touch denied.txt")
    assert isinstance(outcome.error, PermissionDenied)
    assert not (hookcode_env.project / "denied.txt").exists()


class Analyser:
    def __init__(self, analysis: ShellAnalysis):
        self.analysis = analysis
        self.seen: list[tuple[str, str]] = []

    @hookimpl
    def shell_analyze(self, command, cwd):
        self.seen.append((command, cwd))
        return self.analysis


def test_analysis_drives_the_asks(hookcode_env, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    analyser = hookcode_env.register(
        Analyser(
            ShellAnalysis(
                commands=["ls", "git log --oneline"],
                always=["ls *", "git log *"],
                outside_dirs=[str(outside)],
            )
        ),
        "fake_analyser",
    )
    reply = hookcode_env.register(ReplyWith("once"), "reply_once")
    hookcode_env.write_config({"permission": {"bash": "ask"}})
    runtime = hookcode_env.runtime(**NO_ANALYSER)
    ok(bash(runtime, "true", workdir=str(outside)))
    assert analyser.seen == [("true", str(outside))]
    asks = [(r.permission, r.patterns, r.always) for r in reply.requests]
    assert asks == [
        ("external_directory", [f"{outside}/*"], [f"{outside}/*"]),
        ("bash", ["ls", "git log --oneline"], ["ls *", "git log *"]),
    ]
    assert reply.requests[1].metadata["opaque"] is False


def test_only_cd_asks_nothing_but_opaque_still_asks(hookcode_env):
    analyser = hookcode_env.register(Analyser(ShellAnalysis(commands=[])), "fake_analyser")
    reply = hookcode_env.register(ReplyWith("once"), "reply_once")
    runtime = hookcode_env.runtime(**NO_ANALYSER)
    assert ok(bash(runtime, "cd .")).output == ""
    assert reply.requests == []
    analyser.analysis = ShellAnalysis(commands=[], opaque=True)
    ok(bash(runtime, "$(echo cd) ."))
    (request,) = reply.requests
    assert request.patterns == ["$(echo cd) ."] and request.metadata["opaque"] is True


# ---------------------------------------------------------------------------------------------
# persistent mode
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def persistent(hookcode_env):
    from hookcode_tool_bash import close_shells

    hookcode_env.register(ReplyWith("once"), "reply_once")
    hookcode_env.write_config({"tool": {"bash": {"persistent": True}}})
    runtime = hookcode_env.runtime()
    session = runtime.create_session(title="persistent").id

    def run(command: str, **args):
        return invoke_tool(
            runtime,
            "bash",
            {"command": command, "description": "Runs in the shell", **args},
            session_id=session,
        )

    run.runtime = runtime  # type: ignore[attr-defined]
    run.session = session  # type: ignore[attr-defined]
    yield run
    close_shells(runtime)


def test_persistent_cd_and_export_carry_over(persistent, hookcode_env):
    (hookcode_env.project / "src").mkdir()
    assert ok(persistent("cd src && export X=1 && Y=local")).output == ""
    assert ok(persistent("pwd; echo $X $Y")).output == f"{hookcode_env.project / 'src'}\n1 local\n"
    # a workdir applies to its command only
    assert ok(persistent("pwd", workdir=str(hookcode_env.project))).output == (
        f"{hookcode_env.project}\n"
    )
    assert ok(persistent("pwd")).output == f"{hookcode_env.project / 'src'}\n"
    result = ok(persistent("echo oops >&2; false"))
    assert result.output == "oops\nexit code 1"
    assert result.metadata["exit"] == 1
    assert ok(persistent("read x; echo rc=$?")).output == "rc=1\n"  # stdin closed
    assert ok(persistent("printf 'no newline'")).output == "no newline"
    # quoting and syntax errors cannot confuse the shell
    assert ok(persistent('echo "it\'s" \'a "test"\'')).output == 'it\'s a "test"\n'
    broken = ok(persistent("echo 'unterminated"))
    assert broken.metadata["exit"] != 0
    assert ok(persistent("echo $X")).output == "1\n"


def test_persistent_killed_shell_is_restarted_and_the_model_told(persistent, hookcode_env):
    assert ok(persistent("export X=1; cd /")).output == ""
    pid = int(ok(persistent("echo $$")).output)
    os.kill(pid, signal.SIGKILL)
    time.sleep(0.05)
    result = ok(persistent("echo [$X]; pwd"))
    assert result.output.startswith(f"[]\n{hookcode_env.project}\n")
    assert "restarted" in result.output and "lost" in result.output
    assert int(ok(persistent("echo $$")).output) != pid
    assert "restarted" not in ok(persistent("echo again")).output


def test_persistent_exit_is_reported_once(persistent):
    result = ok(persistent("echo bye; exit 3"))
    assert result.output.startswith("bye\n")
    assert "persistent shell exited" in result.output
    assert result.metadata["exit"] == 3
    assert result.output.endswith("exit code 3")
    following = ok(persistent("echo fresh"))
    assert following.output == "fresh\n"


def test_persistent_timeout_kills_the_command_tree_and_the_shell_goes_on(persistent):
    mark, earlier = uuid.uuid4().hex, uuid.uuid4().hex
    try:
        assert ok(persistent(f"export Y={earlier}; sleep 200 &")).output == ""  # an earlier job
        before = wait_present(f"Y={earlier}")
        assert len(before) == 1
        result = ok(persistent(f"export M={mark}; sleep 100 & sleep 101; echo never", timeout=500))
        assert "bash tool terminated command after exceeding timeout 500 ms" in result.output
        assert "never" not in result.output
        assert result.metadata["exit"] is None
        assert wait_gone(f"M={mark}", within=0.5) == []
        assert carrying(f"Y={earlier}") == before  # an earlier job is not this command's
        assert ok(persistent("echo $Y")).output == f"{earlier}\n"
        # a builtin loop is left too, and so is a function: nothing after them runs
        result = ok(persistent("f() { while :; do :; done; }; f; echo never", timeout=300))
        assert "exceeding timeout 300 ms" in result.output
        assert "never" not in result.output and "restarted" not in result.output
        assert ok(persistent("echo $Y")).output == f"{earlier}\n"
    finally:
        kill_all(carrying(f"M={mark}"))


def test_persistent_timeout_in_a_shell_without_the_trap_restarts_it(hookcode_env):
    from hookcode_tool_bash import close_shells

    hookcode_env.register(ReplyWith("once"), "reply_once")
    hookcode_env.write_config({"tool": {"bash": {"persistent": True, "shell": "/bin/sh"}}})
    runtime = hookcode_env.runtime()
    session = runtime.create_session(title="sh").id

    def run(command, **args):
        args = {"command": command, "description": "Runs in sh", **args}
        return ok(invoke_tool(runtime, "bash", args, session_id=session))

    try:
        assert run("export Z=3; echo $Z").output == "3\n"
        result = run("sleep 30; echo never", timeout=300)
        assert "exceeding timeout 300 ms" in result.output
        assert "never" not in result.output
        assert "restarted" in result.output
        assert run("echo [$Z]").output == "[]\n"
    finally:
        close_shells(runtime)
