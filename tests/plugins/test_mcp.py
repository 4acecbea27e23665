"""The MCP client plugin (plugins/mcp) against real servers: mcp-server-time and mcp-server-git
from PyPI over stdio (in their own venv, see conftest), a streamable-HTTP server written with
the mcp SDK on loopback, and broken servers (exits at start, hangs, speaks garbage)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hookcode_mcp
import pytest
from helpers.mcp_http import run_hookcode, serve
from hookcode import hookimpl
from hookcode.errors import ConfigError, InvalidArguments, PermissionRejected, ToolError
from hookcode.testing import invoke_tool
from hookcode_mcp._client import close_all

SERVERS = Path(__file__).parent / "mcp_servers"
PLUGINS = "mcp,policy_rules,tool_apply_patch"


# ---------------------------------------------------------------------------------------------
# fixtures
# ---------------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _plugins(hookcode_env: Any) -> Iterator[None]:
    hookcode_env.env["HOOKCODE_LOAD_PLUGINS"] = PLUGINS
    yield
    close_all()  # every server of this test stops (they would stop at exit anyway)


def _toml(value: Any) -> str:
    return json.dumps(value)


def time_server(python: Path, **extra: Any) -> dict[str, Any]:
    return {
        "type": "local",
        "command": [str(python), "-m", "mcp_server_time", "--local-timezone", "UTC"],
        **extra,
    }


def write_servers(env: Any, servers: dict[str, dict[str, Any]], extra: str = "") -> None:
    lines = []
    for name, table in servers.items():
        lines.append(f"[mcp.{name}]")
        lines += [f"{key} = {_toml(value)}" for key, value in table.items()]
        lines.append("")
    env.write_config("\n".join(lines) + "\n" + extra)


def _start_http(*args: str) -> Iterator[str]:
    return serve("http_server.py", *args)


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """A streamable-HTTP MCP server on 127.0.0.1 (the workspace's mcp SDK)."""
    yield from _start_http()


@pytest.fixture
def fresh_http_url() -> Iterator[str]:
    """A server of this test only (its tool list changes)."""
    yield from _start_http()


class Errors:
    """Records what ``tool_execute_error`` sees."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, BaseException]] = []

    @hookimpl
    def tool_execute_error(self, call: Any, error: BaseException) -> None:
        self.seen.append((call.tool, error))


# ---------------------------------------------------------------------------------------------
# config
# ---------------------------------------------------------------------------------------------


def test_importing_the_plugin_imports_no_sdk() -> None:
    code = (
        "import sys, hookcode_mcp\n"
        "heavy = [m for m in ('mcp', 'jsonschema', 'pydantic', 'anyio') if m in sys.modules]\n"
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_config_is_validated(hookcode_env: Any) -> None:
    write_servers(hookcode_env, {"x": {"type": "local", "command": ["x"], "bogus": 1}})
    with pytest.raises(ConfigError, match=r"bogus"):
        hookcode_env.runtime()
    write_servers(hookcode_env, {"x": {"type": "local"}})
    with pytest.raises(ConfigError, match=r"command"):
        hookcode_env.runtime()
    hookcode_env.write_config(
        '[mcp.x]\ntype = "remote"\nurl = "http://h/mcp"\n'
        '[mcp.x.oauth]\nclientId = "a"\nsecret = "b"\n'
    )
    with pytest.raises(ConfigError, match=r"secret"):
        hookcode_env.runtime()
    # a later layer may only switch a server off; the rest of the table stays
    hookcode_env.write_config(
        '[mcp.x]\ncommand = ["x"]\ntimeout = 500\noauth = false\n', where="global"
    )
    hookcode_env.write_config("[mcp.x]\nenabled = false\n[mcp.y]\nenabled = false\n")
    runtime = hookcode_env.runtime()
    section = runtime.config.section("mcp.x")
    assert (section.kind, section.timeout, section.oauth, section.enabled) == (
        "local",
        500,
        False,
        False,
    )
    assert [(s["name"], s["status"], s["error"]) for s in hookcode_mcp.status(runtime)] == [
        ("x", "disabled", None),
        ("y", "disabled", None),
    ]
    assert not [e for e in runtime.registry.entries.values() if e.plugin == "mcp"]


def test_no_servers_no_tools_no_thread(hookcode_env: Any) -> None:
    runtime = hookcode_env.runtime()
    assert not [e for e in runtime.registry.entries.values() if e.plugin == "mcp"]
    assert hookcode_mcp.status(runtime) == []


# ---------------------------------------------------------------------------------------------
# real servers from PyPI over stdio
# ---------------------------------------------------------------------------------------------


def test_time_server_tools_and_call(hookcode_env: Any, mcp_venv: Path) -> None:
    write_servers(
        hookcode_env, {"time": time_server(mcp_venv)}, '[permission]\n"time_*" = "allow"\n'
    )
    runtime = hookcode_env.runtime()
    entry = runtime.registry.get("time_get_current_time")
    assert entry is not None and entry.plugin == "mcp"
    assert runtime.registry.get("time_convert_time") is not None
    schema = entry.tool.parameters
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert schema["required"] == ["timezone"]
    assert runtime.registry.definitions("build")  # the model sees them like any tool

    outcome = invoke_tool(runtime, "time_get_current_time", {"timezone": "UTC"})
    assert outcome.ok, outcome.error_text
    data = json.loads(outcome.result.output)
    assert data["timezone"] == "UTC" and data["datetime"].endswith("+00:00")
    assert outcome.result.metadata["truncated"] is False

    converted = invoke_tool(
        runtime,
        "time_convert_time",
        {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
    )
    assert converted.ok and "21:00" in converted.result.output


def test_arguments_are_checked_against_the_servers_schema(
    hookcode_env: Any, mcp_venv: Path
) -> None:
    write_servers(
        hookcode_env, {"time": time_server(mcp_venv)}, '[permission]\n"time_*" = "allow"\n'
    )
    runtime = hookcode_env.runtime()
    missing_arg = invoke_tool(runtime, "time_get_current_time", {})
    assert isinstance(missing_arg.error, InvalidArguments)
    assert "timezone: required argument is missing" in missing_arg.error_text
    extra = invoke_tool(runtime, "time_get_current_time", {"timezone": "UTC", "when": 1})
    assert "when: unknown argument" in extra.error_text
    wrong = invoke_tool(runtime, "time_get_current_time", '{"timezone": 5}')
    assert "timezone: 5 is not of type 'string'" in wrong.error_text


def test_is_error_result_is_an_error(hookcode_env: Any, mcp_venv: Path) -> None:
    errors = hookcode_env.register(Errors(), "errors")
    write_servers(
        hookcode_env, {"time": time_server(mcp_venv)}, '[permission]\n"time_*" = "allow"\n'
    )
    runtime = hookcode_env.runtime()
    outcome = invoke_tool(runtime, "time_get_current_time", {"timezone": "Nowhere/Atlantis"})
    assert not outcome.ok
    assert type(outcome.error) is ToolError
    assert "Nowhere/Atlantis" in outcome.error_text
    assert [(tool, str(error)) for tool, error in errors.seen] == [
        ("time_get_current_time", outcome.error_text)
    ]


def test_git_status_on_a_throwaway_repository(
    hookcode_env: Any, mcp_venv: Path, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    (repo / "new.txt").write_text("hello\n")
    write_servers(
        hookcode_env,
        {"git": {"command": [str(mcp_venv), "-m", "mcp_server_git"]}},
        '[permission]\n"git_*" = "allow"\n',
    )
    runtime = hookcode_env.runtime()
    outcome = invoke_tool(runtime, "git_git_status", {"repo_path": str(repo)})
    assert outcome.ok, outcome.error_text
    assert outcome.result.output.startswith("Repository status:")
    assert "On branch main" in outcome.result.output and "new.txt" in outcome.result.output


# ---------------------------------------------------------------------------------------------
# permissions
# ---------------------------------------------------------------------------------------------


def test_mcp_tools_ask_by_default_and_rules_override(hookcode_env: Any, mcp_venv: Path) -> None:
    write_servers(hookcode_env, {"time": time_server(mcp_venv)})
    runtime = hookcode_env.runtime()
    decision = runtime.ruleset("build").evaluate("time_get_current_time", ["*"])
    assert decision.action == "ask"
    assert [rule.source for rule in decision.rules] == ["plugin:mcp"]
    # headless: an ask is a reject
    refused = invoke_tool(runtime, "time_get_current_time", {"timezone": "UTC"})
    assert isinstance(refused.error, PermissionRejected)
    assert runtime.refusals and runtime.refusals[-1].permission == "time_get_current_time"

    write_servers(
        hookcode_env, {"time": time_server(mcp_venv)}, '[permission]\n"time_*" = "allow"\n'
    )
    allowed = hookcode_env.runtime()
    assert allowed.ruleset("build").evaluate("time_get_current_time", ["*"]).action == "allow"
    assert invoke_tool(allowed, "time_get_current_time", {"timezone": "UTC"}).ok

    write_servers(
        hookcode_env,
        {"time": time_server(mcp_venv)},
        '[permission]\ntime_get_current_time = "deny"\n',
    )
    denied = hookcode_env.runtime()
    assert denied.registry.get("time_get_current_time") is not None
    assert "time_get_current_time" not in {e.name for e in denied.registry.available("build")}


# ---------------------------------------------------------------------------------------------
# faults: the others keep working
# ---------------------------------------------------------------------------------------------


def test_broken_servers_fail_clearly_and_the_others_work(hookcode_env: Any, mcp_venv: Path) -> None:
    py = sys.executable
    write_servers(
        hookcode_env,
        {
            "time": time_server(mcp_venv),
            "dead": {
                "command": [
                    py,
                    "-c",
                    "import sys; print('boom: no config', file=sys.stderr); sys.exit(3)",
                ]
            },
            "hang": {"command": [py, "-c", "import time; time.sleep(60)"], "timeout": 1500},
            "garbage": {"command": [py, str(SERVERS / "malformed_server.py")]},
            "missing": {"command": ["/nonexistent/mcp-server"]},
            "off": {"command": [py, "-c", "raise SystemExit(1)"], "enabled": False},
        },
        '[permission]\n"time_*" = "allow"\n',
    )
    runtime = hookcode_env.runtime()
    started = time.monotonic()
    names = set(runtime.registry.entries)
    elapsed = time.monotonic() - started
    assert elapsed < 8, f"starting the servers took {elapsed:.1f}s (in parallel, 1.5s timeout)"
    assert "time_get_current_time" in names
    by_name = {s["name"]: s for s in hookcode_mcp.status(runtime)}
    assert by_name["time"]["status"] == "connected"
    assert by_name["off"]["status"] == "disabled" and by_name["off"]["error"] is None
    for name in ("dead", "hang", "garbage", "missing"):
        assert by_name[name]["status"] == "failed", by_name[name]
        assert by_name[name]["tools"] == []
    assert "boom: no config" in by_name["dead"]["error"]
    assert "exited" in by_name["dead"]["error"]
    assert by_name["hang"]["error"].startswith("timed out after 1500 ms")
    assert "malformed JSON-RPC" in by_name["garbage"]["error"]
    assert "/nonexistent/mcp-server" in by_name["missing"]["error"]
    assert invoke_tool(runtime, "time_get_current_time", {"timezone": "UTC"}).ok


def test_a_server_that_dies_after_connecting_is_reported_then_restarted(
    hookcode_env: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    write_servers(
        hookcode_env,
        {"dying": {"command": [sys.executable, str(SERVERS / "dying_server.py")]}},
        '[permission]\n"dying_*" = "allow"\n',
    )
    runtime = hookcode_env.runtime()
    echoed = invoke_tool(runtime, "dying_echo", {"text": "hello"})
    assert echoed.ok and echoed.result.output == "hello", echoed.error_text
    [status] = hookcode_mcp.status(runtime)
    assert (status["status"], status["restarts"]) == ("connected", 0)

    died = invoke_tool(runtime, "dying_die", {})
    assert not died.ok
    assert "MCP server 'dying'" in died.error_text and "connection lost" in died.error_text

    status = wait_for_status(runtime, "dying", "failed")
    assert status["error"].startswith("connection lost: the server exited"), status
    assert "dying server: out of luck" in status["error"]  # its last words on stderr
    assert [t["name"] for t in status["tools"]] == ["dying_echo", "dying_die"]  # still listed

    # the next call starts it again (the same command) and goes to the new session
    again = invoke_tool(runtime, "dying_echo", {"text": "still there?"})
    assert again.ok and again.result.output == "still there?", again.error_text
    [status] = hookcode_mcp.status(runtime)
    assert (status["status"], status["error"], status["restarts"]) == ("connected", None, 1)
    err = capsys.readouterr().err
    assert "MCP server 'dying' was restarted after: connection lost: the server exited" in err


# ---------------------------------------------------------------------------------------------
# restarting a server that lost its connection (mcp_servers/crashing_server.py)
# ---------------------------------------------------------------------------------------------


def crashing(starts: Path, *options: str) -> dict[str, Any]:
    """A server that records each start's pid in ``starts``."""
    return {"command": [sys.executable, str(SERVERS / "crashing_server.py"), str(starts), *options]}


def pids(starts: Path) -> list[int]:
    """The process id of each start of a crashing server, in order."""
    return [int(word) for word in starts.read_text().split()] if starts.exists() else []


def server_status(runtime: Any, name: str) -> dict[str, Any]:
    [status] = [s for s in hookcode_mcp.status(runtime) if s["name"] == name]
    return status


def wait_for_status(runtime: Any, name: str, wanted: str) -> dict[str, Any]:
    """Poll until server ``name`` has status ``wanted`` (generous: the machine may be busy)."""
    deadline = time.monotonic() + 30
    status = server_status(runtime, name)
    while status["status"] != wanted and time.monotonic() < deadline:
        time.sleep(0.05)
        status = server_status(runtime, name)
    assert status["status"] == wanted, status
    return status


def gone(pid: int) -> bool:
    """Whether process ``pid`` has exited and was reaped (a zombie is not gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def wait_gone(pid: int) -> None:
    deadline = time.monotonic() + 30
    while not gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(pid), f"process {pid} of the lost server is still there (or a zombie)"


def test_a_lost_server_restarts_on_next_use_in_a_new_process(
    hookcode_env: Any, tmp_path: Path
) -> None:
    starts = tmp_path / "starts"
    write_servers(hookcode_env, {"crash": crashing(starts)}, '[permission]\n"crash_*" = "allow"\n')
    runtime = hookcode_env.runtime()
    first = invoke_tool(runtime, "crash_pid", {})
    assert first.ok, first.error_text
    [pid] = pids(starts)
    assert first.result.output == str(pid)
    old_tool = runtime.registry.get("crash_echo").tool

    died = invoke_tool(runtime, "crash_die", {})
    assert not died.ok and "MCP server 'crash'" in died.error_text
    assert "connection lost: the server exited" in died.error_text  # not repeated
    assert died.error_text.endswith("; it will be restarted on next use"), died.error_text
    status = wait_for_status(runtime, "crash", "failed")
    assert f"crashing server {pid}: out of luck" in status["error"]
    assert pids(starts) == [pid]  # nothing restarts it but a call

    echoed = invoke_tool(runtime, "crash_echo", {"text": "back"})
    assert echoed.ok and echoed.result.output == "back", echoed.error_text
    first_pid, second_pid = pids(starts)
    assert first_pid == pid and second_pid != pid
    wait_gone(pid)
    again = invoke_tool(runtime, "crash_pid", {})
    assert again.ok and again.result.output == str(second_pid)
    status = server_status(runtime, "crash")
    assert (status["status"], status["error"], status["restarts"]) == ("connected", None, 1)

    # the restart's tool list reached the registry the tools/list_changed way (the calls
    # above took it in): the same names, the new server's tool objects
    assert hookcode_mcp.apply_pending(runtime) == []
    entry = runtime.registry.get("crash_echo")
    assert entry is not None and entry.plugin == "mcp" and entry.tool is not old_tool
    assert entry.tool in hookcode_mcp.manager(runtime).servers["crash"].tools


def test_a_server_that_crashes_on_every_start_is_given_up(
    hookcode_env: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from hookcode_mcp._client import RESTART_LIMIT, RESTART_WINDOW

    starts = tmp_path / "starts"
    write_servers(
        hookcode_env,
        {"crash": crashing(starts, "--die-after-list")},
        '[permission]\n"crash_*" = "allow"\n',
    )
    runtime = hookcode_env.runtime()
    assert runtime.registry.get("crash_echo") is not None  # connected, listed, then gone
    wait_for_status(runtime, "crash", "failed")
    for restart in range(1, RESTART_LIMIT + 1):
        outcome = invoke_tool(runtime, "crash_echo", {"text": "hello?"})
        assert not outcome.ok
        assert "MCP server 'crash'" in outcome.error_text, outcome.error_text
        assert "connection lost: the server exited" in outcome.error_text
        if restart == RESTART_LIMIT:  # the limit is reached: no promise of another
            assert "restarted on next use" not in outcome.error_text
        assert len(pids(starts)) == 1 + restart
        status = wait_for_status(runtime, "crash", "failed")
        assert status["restarts"] == restart

    gave_up = invoke_tool(runtime, "crash_echo", {"text": "hello?"})
    assert not gave_up.ok
    assert gave_up.error_text.startswith(
        "MCP server 'crash' is not connected (failed: connection lost: the server exited"
    ), gave_up.error_text
    assert "crashed right after connecting" in gave_up.error_text  # its last words
    window = f"{RESTART_WINDOW:g}"
    limit_text = f"restarted {RESTART_LIMIT} times within {window} s, gave up"
    assert limit_text in gave_up.error_text
    # given up: later calls fail at once and start nothing
    started = time.monotonic()
    later = invoke_tool(runtime, "crash_echo", {"text": "hello?"})
    assert not later.ok and limit_text in later.error_text
    assert time.monotonic() - started < 10
    assert len(pids(starts)) == 1 + RESTART_LIMIT
    for pid in pids(starts):
        wait_gone(pid)
    status = server_status(runtime, "crash")
    assert (status["status"], status["restarts"]) == ("failed", RESTART_LIMIT)
    assert limit_text in status["error"]
    assert [t["name"] for t in status["tools"]] == ["crash_echo", "crash_pid", "crash_die"]
    err = capsys.readouterr().err
    assert err.count("MCP server 'crash' was restarted after: connection lost") == RESTART_LIMIT
    assert err.count("MCP server 'crash' is not restarted again: connection lost") == 1


def test_a_failed_restart_fails_the_call_naming_both_causes(
    hookcode_env: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    starts = tmp_path / "starts"
    write_servers(
        hookcode_env,
        {"crash": crashing(starts, "--fail-restarts")},
        '[permission]\n"crash_*" = "allow"\n',
    )
    runtime = hookcode_env.runtime()
    assert invoke_tool(runtime, "crash_echo", {"text": "hi"}).ok
    [pid] = pids(starts)
    assert not invoke_tool(runtime, "crash_die", {}).ok
    wait_for_status(runtime, "crash", "failed")

    outcome = invoke_tool(runtime, "crash_echo", {"text": "hi"})
    assert not outcome.ok
    text = outcome.error_text
    assert text.startswith("MCP server 'crash' is not connected (failed: connection lost:"), text
    assert f"crashing server {pid}: out of luck" in text  # why it was lost
    [_, second] = pids(starts)
    assert (
        "restarting it failed: the server exited (or closed its output) before answering "
        f"initialize; stderr: crashing server {second}: cannot start again"
    ) in text  # why it did not come back
    status = server_status(runtime, "crash")
    assert (status["status"], status["restarts"]) == ("failed", 1)
    assert "MCP server 'crash' could not be restarted: connection lost" in capsys.readouterr().err
    wait_gone(second)


def test_concurrent_calls_to_a_lost_server_share_one_restart(
    hookcode_env: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from hookcode.testing import ainvoke_tool

    starts = tmp_path / "starts"
    write_servers(
        hookcode_env,
        # each restart takes a second: the calls below all come in while it runs
        {"crash": crashing(starts, "--restart-delay", "1")},
        '[permission]\n"crash_*" = "allow"\n',
    )
    runtime = hookcode_env.runtime()
    assert invoke_tool(runtime, "crash_pid", {}).ok
    assert not invoke_tool(runtime, "crash_die", {}).ok
    wait_for_status(runtime, "crash", "failed")

    async def together() -> list[Any]:
        calls = [ainvoke_tool(runtime, "crash_echo", {"text": f"call {n}"}) for n in range(3)]
        return await asyncio.gather(*calls)

    outcomes = asyncio.run(together())
    assert [o.result.output if o.ok else o.error_text for o in outcomes] == [
        "call 0",
        "call 1",
        "call 2",
    ]
    assert len(pids(starts)) == 2
    status = server_status(runtime, "crash")
    assert (status["status"], status["restarts"]) == ("connected", 1)
    assert capsys.readouterr().err.count("MCP server 'crash' was restarted") == 1


def test_closing_after_a_restart_stops_the_new_process(hookcode_env: Any, tmp_path: Path) -> None:
    starts = tmp_path / "starts"
    write_servers(hookcode_env, {"crash": crashing(starts)}, '[permission]\n"crash_*" = "allow"\n')
    runtime = hookcode_env.runtime()
    assert not invoke_tool(runtime, "crash_die", {}).ok
    wait_for_status(runtime, "crash", "failed")
    assert invoke_tool(runtime, "crash_echo", {"text": "x"}).ok
    hookcode_mcp.close(runtime)
    for pid in pids(starts):
        wait_gone(pid)
    assert server_status(runtime, "crash")["status"] == "closed"
    # closed: a call neither restarts it nor hangs
    outcome = invoke_tool(runtime, "crash_echo", {"text": "x"})
    assert not outcome.ok and "MCP server 'crash' is not connected (closed" in outcome.error_text
    assert len(pids(starts)) == 2


# ---------------------------------------------------------------------------------------------
# a streamable-HTTP server on loopback
# ---------------------------------------------------------------------------------------------


def test_http_server_results(hookcode_env: Any, http_url: str) -> None:
    write_servers(
        hookcode_env,
        {"web": {"type": "remote", "url": http_url, "max_lines": 5}},
        '[permission]\n"web_*" = "allow"\n',
    )
    runtime = hookcode_env.runtime()
    status = hookcode_mcp.status(runtime)[0]
    assert (status["status"], status["transport"]) == ("connected", "streamable-http")

    added = invoke_tool(runtime, "web_add", {"a": 2, "b": 3})
    assert added.ok and added.result.output == "5"

    picture = invoke_tool(runtime, "web_picture", {})
    # the image is attached; the text says so, without its base64
    assert picture.result.output == "a tiny picture\n\n[image attached: image/png, 67 bytes]"
    [image] = picture.result.attachments
    assert image.mime == "image/png" and image.url.startswith("data:image/png;base64,iVBOR")

    report = invoke_tool(runtime, "web_report", {})
    parts = report.result.output.split("\n\n")
    assert parts[:2] == ["the report", "notes: all good"]
    assert parts[2].startswith("[Binary MCP resource omitted: file:///data.bin")
    [pdf] = report.result.attachments
    assert (pdf.mime, pdf.filename) == ("application/pdf", "file:///report.pdf")

    failed = invoke_tool(runtime, "web_fail", {})
    assert type(failed.error) is ToolError and "Error executing tool fail" in failed.error_text

    # the server's own output budget
    long = invoke_tool(runtime, "web_lines", {"count": 50})
    assert long.result.metadata["truncated"] is True
    assert long.result.output.startswith("line 1\nline 2\nline 3\nline 4\nline 5\n")
    assert "line 6\n" not in long.result.output
    assert Path(long.result.metadata["outputPath"]).read_text().endswith("line 50")


def test_an_mcp_tool_never_replaces_another(
    hookcode_env: Any, http_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    write_servers(
        hookcode_env,
        {"apply": {"type": "remote", "url": http_url}},
        '[permission]\n"apply_*" = "allow"\n',
    )
    runtime = hookcode_env.runtime()
    entry = runtime.registry.get("apply_patch")
    assert entry is not None and entry.plugin == "tool_apply_patch" and not entry.shadows
    assert "apply_add" in runtime.registry.entries
    err = capsys.readouterr().err
    assert "tool 'apply_patch' from plugin 'mcp' skipped" in err
    assert "tool_apply_patch" in err
    [server] = hookcode_mcp.status(runtime)
    [skipped] = [t for t in server["tools"] if t["name"] == "apply_patch"]
    assert skipped["registered"] is False and "tool_apply_patch" in skipped["skipped"]
    # registered at run time (as after tools/list_changed): still never replaces
    [mcp_patch] = [t for t in hookcode_mcp.manager(runtime).tools() if t.name == "apply_patch"]
    assert runtime.registry.register(mcp_patch, "mcp").plugin == "tool_apply_patch"
    assert runtime.registry.get("apply_patch").tool is not mcp_patch
    assert invoke_tool(runtime, "apply_add", {"a": 1, "b": 1}).result.output == "2"


def test_tools_list_changed_refreshes_the_registry(hookcode_env: Any, fresh_http_url: str) -> None:
    write_servers(
        hookcode_env,
        {"web": {"type": "remote", "url": fresh_http_url}},
        '[permission]\n"web_*" = "allow"\n',
    )
    runtime = hookcode_env.runtime()
    assert "web_extra" not in runtime.registry.entries
    assert invoke_tool(runtime, "web_enable_extra", {}).ok
    deadline = time.monotonic() + 10
    changed: list[str] = []
    while time.monotonic() < deadline and not changed:
        changed = hookcode_mcp.apply_pending(runtime)
        time.sleep(0.05)
    assert changed == ["web_extra"]
    assert runtime.registry.get("web_extra").plugin == "mcp"
    outcome = invoke_tool(runtime, "web_extra", {"word": "hi"})
    assert outcome.ok and outcome.result.output == "extra: hi"


def test_sse_fallback(hookcode_env: Any) -> None:
    for url in _start_http("--sse"):
        write_servers(
            hookcode_env,
            {"old": {"type": "remote", "url": url}},
            '[permission]\n"old_*" = "allow"\n',
        )
        runtime = hookcode_env.runtime()
        [status] = hookcode_mcp.status(runtime)
        assert (status["status"], status["transport"]) == ("connected", "sse"), status
        assert invoke_tool(runtime, "old_add", {"a": 20, "b": 22}).result.output == "42"
        close_all()


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
def test_a_remote_server_that_went_away_is_reconnected(hookcode_env: Any, transport: str) -> None:
    args = ("--sse",) if transport == "sse" else ()
    first = _start_http(*args)
    url = next(first)
    write_servers(
        hookcode_env, {"web": {"type": "remote", "url": url}}, '[permission]\n"web_*" = "allow"\n'
    )
    runtime = hookcode_env.runtime()
    assert invoke_tool(runtime, "web_add", {"a": 1, "b": 2}).result.output == "3"
    first.close()  # the server process ends
    if transport == "streamable-http":
        # nothing streams from it between calls: the next call is the one that finds out
        lost = invoke_tool(runtime, "web_add", {"a": 1, "b": 2})
        assert not lost.ok and "MCP server 'web': add: connection lost" in lost.error_text
    status = wait_for_status(runtime, "web", "failed")
    assert status["error"].startswith("connection lost"), status

    second = _start_http(*args, "--port", str(urllib.parse.urlsplit(url).port))
    assert next(second) == url
    try:
        outcome = invoke_tool(runtime, "web_add", {"a": 2, "b": 3})
        assert outcome.ok and outcome.result.output == "5", outcome.error_text
        status = server_status(runtime, "web")
        assert (status["status"], status["transport"], status["restarts"]) == (
            "connected",
            transport,
            1,
        )
    finally:
        second.close()


# ---------------------------------------------------------------------------------------------
# the command line
# ---------------------------------------------------------------------------------------------


def _hookcode(env: Any, *args: str) -> subprocess.CompletedProcess[str]:
    return run_hookcode(env, *args, timeout=60)


def test_cli_mcp_list_and_tools_call(hookcode_env: Any, mcp_venv: Path) -> None:
    write_servers(
        hookcode_env,
        {
            "time": time_server(mcp_venv),
            "dead": {"command": [sys.executable, "-c", "raise SystemExit(2)"]},
            "off": {"command": ["x"], "enabled": False},
        },
    )
    listed = _hookcode(hookcode_env, "mcp", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    servers = {s["name"]: s for s in json.loads(listed.stdout)}
    assert servers["time"]["status"] == "connected"
    assert [t["name"] for t in servers["time"]["tools"]] == [
        "time_get_current_time",
        "time_convert_time",
    ]
    assert servers["dead"]["status"] == "failed" and servers["dead"]["error"]
    assert (servers["time"]["restarts"], servers["dead"]["restarts"]) == (0, 0)
    assert servers["off"]["status"] == "disabled"
    assert "MCP server 'dead' failed" in listed.stderr

    text = _hookcode(hookcode_env, "mcp", "list")
    assert "time: connected [stdio], 2 tools" in text.stdout
    assert "off: disabled" in text.stdout

    called = _hookcode(
        hookcode_env,
        "tools",
        "call",
        "time_get_current_time",
        '{"timezone":"UTC"}',
        "--json",
        "--yes",
    )
    assert called.returncode == 0, called.stderr
    result = json.loads(called.stdout)
    assert result["error"] is None and json.loads(result["output"])["timezone"] == "UTC"

    refused = _hookcode(
        hookcode_env, "tools", "call", "time_get_current_time", '{"timezone":"UTC"}', "--json"
    )
    assert refused.returncode == 1 and "rejected" in json.loads(refused.stdout)["error"]


# ---------------------------------------------------------------------------------------------
# paths in arguments: read rules and protected paths (@modelcontextprotocol/server-filesystem)
# ---------------------------------------------------------------------------------------------


def filesystem(env: Any, command: list[str], rules: str) -> Any:
    """A runtime with the npm filesystem server as `fs`, allowed the project directory."""
    write_servers(env, {"fs": {"command": [*command, str(env.project)]}}, rules)
    return env.runtime()


def test_path_arguments_and_writing_tools_are_recognised() -> None:
    from hookcode_mcp._tool import writes

    assert writes("write_file") and writes("move_file") and writes("createDirectory")
    assert writes("edit_file") and writes("git_checkout_branch") is False
    assert not writes("read_file") and not writes("get_file_info") and not writes("profile")

    class Annotations:
        def __init__(self, read_only: bool) -> None:
            self.read_only_hint = read_only

    assert not writes("write_cache_stats", Annotations(True))  # the server says read-only
    assert writes("frobnicate", Annotations(False))


def test_a_path_the_read_rules_deny_refuses_the_call(
    hookcode_env: Any, mcp_filesystem_server: list[str]
) -> None:
    project = hookcode_env.project
    (project / ".env").write_text("SECRET=1\n")
    (project / "a.txt").write_text("hello\n")
    rt = filesystem(
        hookcode_env,
        mcp_filesystem_server,
        '[permission]\n"fs_*" = "allow"\n[permission.read]\n"*" = "allow"\n"*.env" = "deny"\n',
    )
    outcome = invoke_tool(rt, "fs_read_text_file", {"path": str(project / "a.txt")})
    assert outcome.ok, outcome.error_text
    assert "hello" in outcome.result.output
    for tool, args, name in (
        ("fs_read_text_file", {"path": ".env"}, "path"),
        ("fs_read_multiple_files", {"paths": [str(project / "a.txt"), ".env"]}, "paths"),
        ("fs_get_file_info", {"path": f"file://{project}/.env"}, "path"),
    ):
        outcome = invoke_tool(rt, tool, args)
        assert type(outcome.error).__name__ == "PermissionDenied", (tool, outcome.error_text)
        assert outcome.error_text == (
            f"The read rules deny {project / '.env'} (argument {name!r} of {tool}): "
            "the call was not made."
        )
        assert "SECRET" not in outcome.error_text
    outcome = invoke_tool(rt, "fs_read_text_file", {"path": ".env\0.txt"})
    assert outcome.error_text == "argument 'path' holds a NUL character: not a path"


def test_a_path_whose_reading_asks_is_asked_for(
    hookcode_env: Any, mcp_filesystem_server: list[str]
) -> None:
    project = hookcode_env.project
    (project / ".env").write_text("SECRET=1\n")
    rt = filesystem(hookcode_env, mcp_filesystem_server, '[permission]\n"fs_*" = "allow"\n')
    outcome = invoke_tool(rt, "fs_read_text_file", {"path": ".env"})  # default rules: *.env asks
    assert isinstance(outcome.error, PermissionRejected)
    assert rt.refusals[-1].permission == "read"
    assert rt.refusals[-1].patterns == [str(project / ".env")]


def test_a_writing_tool_on_a_protected_path_asks_even_where_allowed(
    hookcode_env: Any, mcp_filesystem_server: list[str]
) -> None:
    project = hookcode_env.project
    (project / ".gitmodules").write_text("[submodule]\n")
    rt = filesystem(hookcode_env, mcp_filesystem_server, '[permission]\n"fs_*" = "allow"\n')
    outcome = invoke_tool(rt, "fs_write_file", {"path": ".envrc", "content": "touch P\n"})
    assert isinstance(outcome.error, PermissionRejected), outcome.error_text
    assert not (project / ".envrc").exists()
    refused = rt.refusals[-1]
    assert (refused.permission, refused.patterns) == ("fs_write_file", ["*", ".envrc"])
    assert refused.metadata["protected"] == {".envrc": ".envrc"}
    assert refused.always == [".envrc"]

    # a move's source counts: the protected file would be gone
    dest = str(project / "modules.txt")
    outcome = invoke_tool(rt, "fs_move_file", {"source": ".gitmodules", "destination": dest})
    assert isinstance(outcome.error, PermissionRejected), outcome.error_text
    assert rt.refusals[-1].metadata["protected"] == {".gitmodules": ".gitmodules"}
    assert (project / ".gitmodules").exists()

    # an ordinary path: allowed, and a read-only tool never counts as a write
    outcome = invoke_tool(rt, "fs_write_file", {"path": str(project / "ok.txt"), "content": "x"})
    assert outcome.ok, outcome.error_text
    assert (project / "ok.txt").read_text() == "x"
    outcome = invoke_tool(rt, "fs_read_text_file", {"path": str(project / ".gitmodules")})
    assert outcome.ok, outcome.error_text


def test_a_rule_naming_the_protected_path_allows_an_mcp_write(
    hookcode_env: Any, mcp_filesystem_server: list[str]
) -> None:
    project = hookcode_env.project
    rt = filesystem(
        hookcode_env,
        mcp_filesystem_server,
        '[permission]\n"fs_*" = "allow"\nfs_write_file = { "*" = "allow", ".envrc" = "allow" }\n',
    )
    outcome = invoke_tool(rt, "fs_write_file", {"path": str(project / ".envrc"), "content": "A"})
    assert outcome.ok, outcome.error_text
    assert (project / ".envrc").read_text() == "A"


def test_cli_yes_does_not_approve_a_protected_mcp_write(
    hookcode_env: Any, mcp_filesystem_server: list[str]
) -> None:
    project = hookcode_env.project
    write_servers(
        hookcode_env,
        {"fs": {"command": [*mcp_filesystem_server, str(project)]}},
        '[permission]\n"fs_*" = "allow"\n',
    )
    args = json.dumps({"path": str(project / ".git" / "hooks" / "pre-commit"), "content": "x"})
    done = _hookcode(hookcode_env, "tools", "call", "fs_write_file", args, "--yes")
    assert done.returncode == 1, done.stdout
    assert "a protected path needs a person in a terminal or a rule naming it" in done.stderr
    assert not (project / ".git").exists()
