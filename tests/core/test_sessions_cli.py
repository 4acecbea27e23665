"""The CLI on the agent loop: ``hookcode run`` (text and JSON), ``sessions list/show/export/
delete``, the chat, and the faults that need real processes (kill -9 mid-step, two runs of one
session at once, Ctrl-C)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hookcode.store import SQLiteStore

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "scripts" / "demo.json"

#: a hookcode entry point with two extra plugins: a slow tool and a provider (``rec/<name>``)
#: that replays HOOKCODE_SCRIPT like scripted/ and logs every request to REC_LOG
DRIVER = '''
import asyncio, json, os, sys
from hookcode import ToolContext, hookimpl, tool
import hookcode.cli.app as app_mod
from hookcode_provider_scripted import ScriptedProvider

@tool
async def slow(ctx: ToolContext, seconds: float) -> str:
    """Sleep for a while."""
    await asyncio.sleep(seconds)
    return "slept"

class Rec(ScriptedProvider):
    def __init__(self, env):
        super().__init__(env)
        self.id = "rec"

    async def stream(self, request):
        with open(os.environ["REC_LOG"], "a") as f:
            f.write(json.dumps([{"role": m.role, "content": m.content} for m in request.messages],
                               default=str) + "\\n")
        async for event in super().stream(request):
            yield event

class Pack:
    @hookimpl
    def register_tools(self, register):
        register(slow)

    @hookimpl
    def provider(self, credentials):
        return [Rec(credentials.env)]

original = app_mod.create_plugins
def create_plugins(**kwargs):
    kwargs["extra"] = {**(kwargs.get("extra") or {}), "driver_pack": Pack()}
    return original(**kwargs)
app_mod.create_plugins = create_plugins

from hookcode.cli import main
sys.exit(main())
'''


def hookcode(env, *args, cwd, stdin=None, timeout=60, driver=None):
    argv = (
        [sys.executable, str(driver), *args]
        if driver
        else [sys.executable, "-m", "hookcode.cli", *args]
    )
    return subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def cli(env, *args, cwd, stdin=None):
    """``hookcode ARGS`` in this process (much faster than a subprocess): the environment is
    ``env`` for the call, stdin is ``stdin`` (not a terminal); returns (returncode, stdout,
    stderr) like a CompletedProcess."""
    import contextlib
    import io

    from hookcode.cli import main

    saved = dict(os.environ)
    out, err = io.StringIO(), io.StringIO()
    old_stdin = sys.stdin
    sys.stdin = io.StringIO(stdin if stdin is not None else "")
    os.environ.clear()
    os.environ.update(env)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["-C", str(cwd), *args])
    finally:
        os.environ.clear()
        os.environ.update(saved)
        sys.stdin = old_stdin
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def write_script(path: Path, turns) -> Path:
    path.write_text(json.dumps(turns))
    return path


@pytest.fixture
def driver(tmp_path: Path) -> Path:
    path = tmp_path / "driver.py"
    path.write_text(DRIVER)
    return path


@pytest.fixture
def env(hookcode_env, tmp_path):
    env = dict(hookcode_env.env)
    env["REC_LOG"] = str(tmp_path / "requests.jsonl")
    env.pop("HOOKCODE_SCRIPT", None)
    return env


def requests_logged(tmp_path: Path) -> list:
    log = tmp_path / "requests.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


# --------------------------------------------------------------------------- run and sessions


def test_demo_script_runs_real_tools_stores_and_shows(hookcode_env, env):
    project = hookcode_env.project
    done = cli(
        env,
        "run",
        "--model",
        "scripted/demo",
        "--script",
        str(DEMO),
        "--yes",
        "Fix it",
        cwd=project,
    )
    assert done.returncode == 0, done.stderr
    assert 'the script now prints "Hello, hookcode!"' in done.stdout
    for line in ("✓ write", "✓ read", "✓ bash", "✓ edit"):
        assert line in done.stderr
    assert not (project / ".hookcode-demo").exists()  # the demo cleans up after itself

    listed = cli(env, "sessions", "list", "--json", cwd=project)
    (item,) = json.loads(listed.stdout)
    assert set(item) == {
        "id",
        "title",
        "parent_id",
        "agent",
        "model",
        "created",
        "updated",
        "cost",
        "host",
        "user",
    }
    assert item["host"] == socket.gethostname()
    assert item["title"] == "Fix it" and item["model"] == "scripted/demo"

    shown = cli(env, "sessions", "show", item["id"], "--json", cwd=project)
    data = json.loads(shown.stdout)
    assert set(data) == {"session", "messages"} and data["session"]["id"] == item["id"]
    roles = [m["role"] for m in data["messages"]]
    assert roles == ["user"] + ["assistant"] * 5
    assert all({"id", "role", "parts"} <= set(m) for m in data["messages"])
    tools = [p for m in data["messages"] for p in m["parts"] if p["type"] == "tool"]
    assert [t["tool"] for t in tools] == ["write", "read", "bash", "edit", "bash"]
    first = tools[0]
    assert {"type", "tool", "call_id", "state"} <= set(first)
    assert {"status", "input", "output", "error", "title", "metadata"} <= set(first["state"])
    assert all(t["state"]["status"] == "completed" for t in tools)
    assert tools[2]["state"]["output"].strip() == "Hello hookcode"
    texts = [p for m in data["messages"] for p in m["parts"] if p["type"] in ("text", "reasoning")]
    assert all(isinstance(p["text"], str) for p in texts)

    text = cli(env, "sessions", "show", item["id"], cwd=project)
    assert "Fix it" in text.stdout and "✓ edit" in text.stdout

    exported = json.loads(cli(env, "sessions", "export", item["id"], cwd=project).stdout)
    assert exported["session"]["id"] == item["id"] and len(exported["messages"]) == 6

    deleted = cli(env, "sessions", "delete", item["id"], cwd=project)
    assert deleted.returncode == 0
    assert json.loads(cli(env, "sessions", "list", "--json", cwd=project).stdout) == []
    missing = cli(env, "sessions", "show", item["id"], cwd=project)
    assert missing.returncode == 1 and "no session" in missing.stderr


def test_json_format_prints_events_ending_with_the_result(hookcode_env, env, tmp_path):
    script = write_script(
        tmp_path / "s.json",
        [{"text": "listing", "tool_calls": [{"name": "list", "args": {}}]}, {"text": "done"}],
    )
    done = cli(
        env,
        "run",
        "-m",
        "scripted/x",
        "--script",
        str(script),
        "--format",
        "json",
        "go",
        cwd=hookcode_env.project,
    )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "session" and kinds[-1] == "result"
    assert "text" in kinds and "tool" in kinds and "tool_result" in kinds and "step" in kinds
    result = events[-1]
    assert {"session_id", "text", "refused", "usage"} <= set(result)
    assert result["text"] == "done" and result["refused"] == [] and result["error"] is None
    assert result["usage"]["input"] > 0


def test_message_from_stdin_and_empty_message(hookcode_env, env):
    done = cli(
        env, "run", "-m", "scripted/echo", cwd=hookcode_env.project, stdin="hello from stdin\n"
    )
    assert done.returncode == 0 and "hello from stdin" in done.stdout
    empty = cli(env, "run", "-m", "scripted/echo", "  ", cwd=hookcode_env.project)
    assert empty.returncode == 1 and "empty message" in empty.stderr
    piped_empty = cli(env, "run", "-m", "scripted/echo", cwd=hookcode_env.project, stdin="")
    assert piped_empty.returncode == 1 and "empty message" in piped_empty.stderr


def test_unknown_agent_model_and_bad_options(hookcode_env, env):
    project = hookcode_env.project
    agent = cli(env, "run", "-m", "scripted/echo", "--agent", "nope", "hi", cwd=project)
    assert agent.returncode == 1 and "unknown agent 'nope'" in agent.stderr
    model = cli(env, "run", "-m", "nope/x", "hi", cwd=project)
    assert model.returncode == 1 and "unknown model provider 'nope'" in model.stderr
    both = cli(env, "run", "-c", "--session", "x", "hi", cwd=project)
    assert both.returncode == 1 and "no session 'x'" in both.stderr
    fmt = cli(env, "run", "--format", "yaml", "hi", cwd=project)
    assert fmt.returncode == 2
    nothing = cli(env, "run", "-m", "scripted/echo", "-c", "hi", cwd=project)
    assert nothing.returncode == 1 and "no session to continue" in nothing.stderr


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", "not valid JSON"),
        ('{"build": "nope"}', "must map to a list"),
        ('[{"text": 1}]', "[0].text: must be a string"),
        ('[{"tool_calls": [{"args": {}}]}]', 'a "name" string'),
        ('[{"txt": "typo"}]', "unknown key(s) txt"),
        ("42", "expected a list of turns"),
    ],
)
def test_malformed_script_files(hookcode_env, env, tmp_path, content, expected):
    script = tmp_path / "bad.json"
    script.write_text(content)
    done = cli(
        env, "run", "-m", "scripted/x", "--script", str(script), "hi", cwd=hookcode_env.project
    )
    assert done.returncode == 1
    assert expected in done.stderr and str(script) in done.stderr


def test_missing_script_and_no_script(hookcode_env, env, tmp_path):
    done = cli(
        env,
        "run",
        "-m",
        "scripted/x",
        "--script",
        str(tmp_path / "none.json"),
        "hi",
        cwd=hookcode_env.project,
    )
    assert done.returncode == 1 and "no such file" in done.stderr
    done = cli(env, "run", "-m", "scripted/x", "hi", cwd=hookcode_env.project)
    assert done.returncode == 1 and "needs a script" in done.stderr


def test_script_from_the_environment_and_continue_resumes_its_position(hookcode_env, env, tmp_path):
    env["HOOKCODE_SCRIPT"] = str(write_script(tmp_path / "s.json", ["first", "second"]))
    project = hookcode_env.project
    one = cli(env, "run", "-m", "scripted/x", "a", cwd=project)
    other = cli(env, "run", "-m", "scripted/x", "b", cwd=project)
    two = cli(env, "run", "-c", "c", cwd=project)  # the model is the session's
    three = cli(env, "run", "-c", "d", cwd=project)
    assert [r.stdout.strip() for r in (one, other, two, three)] == [
        "first",
        "first",
        "second",
        "(the scripted model has no more turns)",
    ]
    sessions = json.loads(cli(env, "sessions", "list", "--json", cwd=project).stdout)
    assert [s["title"] for s in sessions] == ["b", "a"]
    # -c with --session continues that session, not the latest ("b")
    older = cli(env, "run", "-c", "--session", sessions[1]["id"], "e", cwd=project)
    assert older.returncode == 0, older.stderr
    again = json.loads(cli(env, "sessions", "list", "--json", cwd=project).stdout)
    assert [s["title"] for s in again] == ["a", "b"]


def test_provider_erroring_mid_stream_exits_1(hookcode_env, env, tmp_path):
    script = write_script(tmp_path / "s.json", [{"text": "half a thought", "error": "boom"}])
    done = cli(
        env, "run", "-m", "scripted/x", "--script", str(script), "hi", cwd=hookcode_env.project
    )
    assert done.returncode == 1
    assert "half a thought" in done.stdout and "model error: boom" in done.stderr


def test_headless_refusal_exits_1_listing_the_calls_and_yes_approves(hookcode_env, env, tmp_path):
    hookcode_env.write_config('[permission]\nedit = "ask"\n')
    script = write_script(
        tmp_path / "s.json",
        [
            {"tool_calls": [{"name": "write", "args": {"filePath": "out.txt", "content": "x"}}]},
            {"text": "wrote it"},
        ],
    )
    project = hookcode_env.project
    refused = cli(
        env,
        "run",
        "-m",
        "scripted/x",
        "--script",
        str(script),
        "--non-interactive",
        "write",
        cwd=project,
    )
    assert refused.returncode == 1
    assert "refused tool calls" in refused.stderr and "write" in refused.stderr
    assert not (project / "out.txt").exists()
    as_json = cli(
        env,
        "run",
        "-m",
        "scripted/x",
        "--script",
        str(script),
        "--format",
        "json",
        "write",
        cwd=project,
    )
    assert as_json.returncode == 1
    result = json.loads(as_json.stdout.splitlines()[-1])
    assert [r["tool"] for r in result["refused"]] == ["write"]
    approved = cli(
        env, "run", "-m", "scripted/x", "--script", str(script), "--yes", "write", cwd=project
    )
    assert approved.returncode == 0, approved.stderr
    assert (project / "out.txt").read_text() == "x" and "wrote it" in approved.stdout


def test_a_denied_call_the_model_read_is_not_a_failure(hookcode_env, env, tmp_path):
    hookcode_env.write_config('[permission]\nwrite = "deny"\nlist = "allow"\n')
    script = write_script(
        tmp_path / "s.json",
        [{"tool_calls": [{"name": "nosuchtool", "args": {}}]}, {"text": "ok then"}],
    )
    done = cli(
        env, "run", "-m", "scripted/x", "--script", str(script), "go", cwd=hookcode_env.project
    )
    assert done.returncode == 0 and "ok then" in done.stdout


# --------------------------------------------------------------------------- chat


def test_hookcode_alone_opens_a_chat_fed_by_stdin_lines(hookcode_env, env):
    env["HOOKCODE_CONFIG_CONTENT"] = 'model = "scripted/echo"'
    done = cli(env, cwd=hookcode_env.project, stdin="hello there\n\nsecond line\n/exit\nno\n")
    assert done.returncode == 0, done.stderr
    assert "hello there" in done.stdout and "second line" in done.stdout
    assert "no" not in done.stdout.split()
    (session,) = json.loads(cli(env, "sessions", "list", "--json", cwd=hookcode_env.project).stdout)
    data = json.loads(
        cli(env, "sessions", "show", session["id"], "--json", cwd=hookcode_env.project).stdout
    )
    assert [m["role"] for m in data["messages"]] == ["user", "assistant"] * 2


def test_chat_command_continues_a_session(hookcode_env, env):
    project = hookcode_env.project
    first = cli(env, "run", "-m", "scripted/echo", "one", cwd=project)
    assert first.returncode == 0
    done = cli(env, "chat", "-c", cwd=project, stdin="two\n")
    assert done.returncode == 0 and "two" in done.stdout
    (session,) = json.loads(cli(env, "sessions", "list", "--json", cwd=project).stdout)
    data = json.loads(cli(env, "sessions", "show", session["id"], "--json", cwd=project).stdout)
    assert len(data["messages"]) == 4


def test_sessions_belong_to_their_project(hookcode_env, env, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    assert cli(env, "run", "-m", "scripted/echo", "here", cwd=hookcode_env.project).returncode == 0
    assert cli(env, "run", "-m", "scripted/echo", "there", cwd=other).returncode == 0
    mine = json.loads(cli(env, "sessions", "list", "--json", cwd=hookcode_env.project).stdout)
    every = json.loads(
        cli(env, "sessions", "list", "--all", "--json", cwd=hookcode_env.project).stdout
    )
    assert [s["title"] for s in mine] == ["here"]
    assert sorted(s["title"] for s in every) == ["here", "there"]
    cont = cli(env, "run", "-c", "again", cwd=hookcode_env.project)
    assert cont.returncode == 0
    store = SQLiteStore(Path(env["HOOKCODE_DATA_DIR"]) / "hookcode.db")
    try:
        here = store.get_session(mine[0]["id"])
        assert here is not None and len(store.messages(here.id)) == 4
    finally:
        store.close()


# --------------------------------------------------------------------------- processes


def _wait_for_running(db: Path, proc: subprocess.Popen, timeout: float = 30) -> str:
    """The session id once a tool part of it is running."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"hookcode exited early ({proc.returncode}): {out} {err}")
        if db.exists():
            store = SQLiteStore(db)
            try:
                for session in store.list_sessions():
                    if any(p.state == "running" for p in store.tool_parts(session.id)):
                        return session.id
            finally:
                store.close()
        time.sleep(0.05)
    pytest.fail("no tool part started running")


def _start(env, driver, *args, cwd):
    return subprocess.Popen(
        [sys.executable, str(driver), *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_killed_mid_step_the_session_resumes_with_the_call_marked(
    hookcode_env, env, driver, tmp_path
):
    env["HOOKCODE_SCRIPT"] = str(
        write_script(
            tmp_path / "s.json",
            [
                {"text": "sleeping", "tool_calls": [{"name": "slow", "args": {"seconds": 60}}]},
                {"text": "after the crash"},
            ],
        )
    )
    db = Path(env["HOOKCODE_DATA_DIR"]) / "hookcode.db"
    proc = _start(env, driver, "run", "-m", "rec/x", "start", cwd=hookcode_env.project)
    try:
        session_id = _wait_for_running(db, proc)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    done = hookcode(env, "run", "--continue", "go on", cwd=hookcode_env.project, driver=driver)
    assert done.returncode == 0, done.stderr
    assert "after the crash" in done.stdout and "marked aborted" in done.stderr
    store = SQLiteStore(db)
    try:
        (part,) = store.tool_parts(session_id)
        assert part.state == "error" and part.error == "Tool execution aborted"
        assert part.metadata.get("interrupted") is True
        assert store.session_lock(session_id) is None
    finally:
        store.close()
    last = requests_logged(tmp_path)[-1]
    results = [b for m in last if m["role"] == "tool" for b in m["content"]]
    assert results == [
        {
            "type": "tool_result",
            "id": part.id,
            "output": "[Tool execution was interrupted]",
            "is_error": True,
            "attachments": [],
        }
    ]
    assert last[-1] == {"role": "user", "content": [{"type": "text", "text": "go on"}]}


def test_two_runs_of_one_session_at_once_the_second_is_busy(hookcode_env, env, driver, tmp_path):
    env["HOOKCODE_SCRIPT"] = str(
        write_script(
            tmp_path / "s.json",
            [{"tool_calls": [{"name": "slow", "args": {"seconds": 60}}]}, {"text": "done"}],
        )
    )
    db = Path(env["HOOKCODE_DATA_DIR"]) / "hookcode.db"
    first = _start(env, driver, "run", "-m", "rec/x", "start", cwd=hookcode_env.project)
    try:
        _wait_for_running(db, first)
        second = hookcode(
            env, "run", "--continue", "me too", cwd=hookcode_env.project, driver=driver
        )
        assert second.returncode == 1
        assert "busy" in second.stderr and f"pid {first.pid}" in second.stderr
    finally:
        first.send_signal(signal.SIGKILL)
        first.communicate()
    # the holder died: the lock is taken over
    third = hookcode(env, "run", "--continue", "now", cwd=hookcode_env.project, driver=driver)
    assert third.returncode == 0, third.stderr


def test_ctrl_c_aborts_the_running_tools(hookcode_env, env, driver, tmp_path):
    env["HOOKCODE_SCRIPT"] = str(
        write_script(
            tmp_path / "s.json",
            [{"tool_calls": [{"name": "slow", "args": {"seconds": 60}}]}, {"text": "never"}],
        )
    )
    db = Path(env["HOOKCODE_DATA_DIR"]) / "hookcode.db"
    proc = _start(env, driver, "run", "-m", "rec/x", "start", cwd=hookcode_env.project)
    session_id = _wait_for_running(db, proc)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "aborted" in err
    store = SQLiteStore(db)
    try:
        (part,) = store.tool_parts(session_id)
        assert part.state == "error" and part.error == "Tool execution aborted"
        assert store.session_lock(session_id) is None
    finally:
        store.close()
    assert len(requests_logged(tmp_path)) == 1


def test_readme_run_command_still_works(hookcode_env, env):
    readme = (REPO / "README.md").read_text()
    assert 'hookcode run --model scripted/demo "What is in this project?"' in readme
    done = hookcode(
        env, "run", "--model", "scripted/demo", "What is in this project?", cwd=hookcode_env.project
    )
    assert done.returncode == 0 and "You asked: What is in this project?" in done.stdout


def test_sessions_list_json_orders_many_sessions(hookcode_env, env):
    """Most recently updated first (tests/benchmarks/bench_loop.py measures 10,000)."""
    store = SQLiteStore(Path(env["HOOKCODE_DATA_DIR"]) / "hookcode.db")
    try:
        project = str(hookcode_env.project)
        for i in range(50):
            store.create_session(project=project, directory=project, title=f"s{i}")
    finally:
        store.close()
    listed = json.loads(cli(env, "sessions", "list", "--json", cwd=hookcode_env.project).stdout)
    assert len(listed) == 50 and listed[0]["title"] == "s49"


def test_sessions_list_shows_this_hosts_sessions_unless_all_hosts(hookcode_env, env):
    from dataclasses import replace

    from hookcode.store import SessionExport

    assert cli(env, "run", "-m", "scripted/echo", "here", cwd=hookcode_env.project).returncode == 0
    (mine,) = json.loads(cli(env, "sessions", "list", "--json", cwd=hookcode_env.project).stdout)
    store = SQLiteStore(Path(env["HOOKCODE_DATA_DIR"]) / "hookcode.db")
    try:  # a session another machine made in the shared store
        record = store.get_session(mine["id"])
        assert record is not None
        far = replace(record, id="ses_far", title="there", host="far-away", user="ann")
        store.import_session(SessionExport(session=far))
    finally:
        store.close()
    listed = json.loads(cli(env, "sessions", "list", "--json", cwd=hookcode_env.project).stdout)
    assert [s["id"] for s in listed] == [mine["id"]]
    every = json.loads(
        cli(env, "sessions", "list", "--all-hosts", "--json", cwd=hookcode_env.project).stdout
    )
    assert {(s["title"], s["host"]) for s in every} == {
        ("here", socket.gethostname()),
        ("there", "far-away"),
    }
    assert next(s for s in every if s["host"] == "far-away")["user"] == "ann"
    text = cli(env, "sessions", "list", "--all-hosts", cwd=hookcode_env.project).stdout
    header, *rows = text.splitlines()
    assert header.split()[:3] == ["ID", "UPDATED", "HOST"]
    assert any("far-away" in row and "there" in row for row in rows)
    assert "HOST" not in cli(env, "sessions", "list", cwd=hookcode_env.project).stdout
    shown = json.loads(
        cli(env, "sessions", "show", "ses_far", "--json", cwd=hookcode_env.project).stdout
    )
    assert (shown["session"]["host"], shown["session"]["user"]) == ("far-away", "ann")
    exported = json.loads(
        cli(env, "sessions", "export", "ses_far", cwd=hookcode_env.project).stdout
    )
    assert (exported["session"]["host"], exported["session"]["user"]) == ("far-away", "ann")
    assert (
        "on far-away by ann"
        in cli(env, "sessions", "show", "ses_far", cwd=hookcode_env.project).stdout
    )
