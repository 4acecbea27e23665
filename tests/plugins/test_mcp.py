"""The MCP client plugin (plugins/mcp) against real servers: mcp-server-time and mcp-server-git
from PyPI over stdio (in their own venv, see conftest), a streamable-HTTP server written with
the mcp SDK on loopback, and broken servers (exits at start, hangs, speaks garbage)."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hookcode_mcp
import pytest
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
    proc = subprocess.Popen(
        [sys.executable, str(SERVERS / "http_server.py"), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        line = proc.stdout.readline() if ready else ""
        if not line.startswith("PORT "):
            pytest.fail(f"the test HTTP MCP server did not start: {line!r}")
        path = "/sse" if "--sse" in args else "/mcp"
        yield f"http://127.0.0.1:{int(line.split()[1])}{path}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


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


def test_a_server_that_dies_after_connecting_is_reported_failed(hookcode_env: Any) -> None:
    write_servers(
        hookcode_env,
        {"dying": {"command": [sys.executable, str(SERVERS / "dying_server.py")]}},
        '[permission]\n"dying_*" = "allow"\n',
    )
    runtime = hookcode_env.runtime()
    echoed = invoke_tool(runtime, "dying_echo", {"text": "hello"})
    assert echoed.ok and echoed.result.output == "hello", echoed.error_text
    [status] = hookcode_mcp.status(runtime)
    assert status["status"] == "connected"

    died = invoke_tool(runtime, "dying_die", {})
    assert not died.ok
    assert "MCP server 'dying'" in died.error_text and "connection lost" in died.error_text

    deadline = time.monotonic() + 10
    while hookcode_mcp.status(runtime)[0]["status"] != "failed" and time.monotonic() < deadline:
        time.sleep(0.05)
    [status] = hookcode_mcp.status(runtime)
    assert status["status"] == "failed", status
    assert status["error"].startswith("connection lost: the server exited"), status
    assert "dying server: out of luck" in status["error"]  # its last words on stderr

    # later calls fail at once, naming the server and what happened to it
    started = time.monotonic()
    again = invoke_tool(runtime, "dying_echo", {"text": "still there?"})
    assert not again.ok and time.monotonic() - started < 5
    assert "MCP server 'dying' is not connected (failed: connection lost" in again.error_text


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
    assert picture.result.output == "a tiny picture"
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


# ---------------------------------------------------------------------------------------------
# the command line
# ---------------------------------------------------------------------------------------------


def _hookcode(env: Any, *args: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("HOOKCODE_")}
    full.update(env.env)
    return subprocess.run(
        [sys.executable, "-m", "hookcode", *args],
        cwd=env.project,
        env=full,
        capture_output=True,
        text=True,
        timeout=60,
    )


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
