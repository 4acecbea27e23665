"""The plugin's tests, written with hookcode's test kit (fixtures come with hookcode-core)."""

from __future__ import annotations

import json

import hookcode_jsonl_log as jsonl_log
import pytest
from hookcode import ToolBlocked, ToolError, ToolResult, hookimpl, tool
from hookcode.testing import ReplyWith, invoke_tool


@tool
def echo(text: str) -> ToolResult:
    """Say it back."""
    return ToolResult(output=text, title=f"echo {text}")


@tool
def broken() -> str:
    """Always fails."""
    raise ToolError("it broke")


class DemoPlugin:
    """Two tools, and a before hook that blocks one argument."""

    @hookimpl
    def register_tools(self, register):
        register(echo, broken)

    @hookimpl
    def tool_execute_before(self, call):
        if call.args.get("text") == "forbidden":
            raise ToolBlocked("not that word")


@pytest.fixture
def log(hookcode_env):
    return hookcode_env.root / "logs" / "calls.jsonl"


@pytest.fixture
def runtime(hookcode_env, log):
    hookcode_env.register(jsonl_log, "hooks_jsonl_log")
    hookcode_env.register(DemoPlugin(), "tool_demo")
    hookcode_env.register(ReplyWith("once"), "approve")
    # entrypoints=False: core plus the plugins above, whatever else is installed
    return hookcode_env.runtime(entrypoints=False, HOOKCODE_JSONL_LOG=str(log))


def lines(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_successful_call_is_one_line(runtime, log):
    outcome = invoke_tool(runtime, "echo", {"text": "hi"})
    assert outcome.ok
    [record] = lines(log)
    assert record["tool"] == "echo"
    assert record["args"] == {"text": "hi"}
    assert record["ok"] is True
    assert record["title"] == "echo hi"
    assert "error" not in record
    assert record["call_id"] == outcome.call.call_id
    assert record["session_id"] == outcome.call.session_id
    assert record["agent"] == outcome.call.agent
    assert record["parent_call_id"] is None
    assert record["time"].endswith("+00:00")
    assert isinstance(record["duration_ms"], float)
    assert record["duration_ms"] >= 0


@pytest.mark.parametrize(
    ("name", "args", "error_type", "error", "timed"),
    [
        ("broken", {}, "ToolError", "it broke", True),
        ("echo", {"text": "forbidden"}, "ToolBlocked", "not that word", True),
        ("echo", {"text": 3}, "InvalidArguments", "text: Input should be a valid string", False),
        ("nope", {}, "UnknownTool", "nope", False),
    ],
    ids=["tool-error", "blocked", "invalid-arguments", "unknown-tool"],
)
def test_a_failed_call_is_one_line(runtime, log, name, args, error_type, error, timed):
    outcome = invoke_tool(runtime, name, args)
    assert not outcome.ok
    [record] = lines(log)
    assert record["ok"] is False
    assert record["tool"] == name
    assert record["args"] == args
    assert record["error_type"] == error_type
    assert error in record["error"]
    assert record["error"] == outcome.error_text
    assert "title" not in record
    # the duration is measured from tool_execute_before, which invalid calls never reach
    assert (record["duration_ms"] is not None) is timed


def test_calls_append_and_leave_no_state_behind(runtime, log):
    for text in ("a", "b", "forbidden"):
        invoke_tool(runtime, "echo", {"text": text})
    invoke_tool(runtime, "broken", {})
    assert [(r["tool"], r["ok"]) for r in lines(log)] == [
        ("echo", True),
        ("echo", True),
        ("echo", False),
        ("broken", False),
    ]
    assert len({r["call_id"] for r in lines(log)}) == 4
    assert jsonl_log._started == {}


def test_the_default_log_is_in_the_data_dir(hookcode_env):
    hookcode_env.register(jsonl_log, "hooks_jsonl_log")
    hookcode_env.register(DemoPlugin(), "tool_demo")
    runtime = hookcode_env.runtime(entrypoints=False)
    invoke_tool(runtime, "echo", {"text": "x"})
    assert runtime.data_dir == hookcode_env.data_dir
    [record] = lines(hookcode_env.data_dir / "tool-calls.jsonl")
    assert record["tool"] == "echo"
    assert record["ok"] is False  # no front end to approve the permission ask: a reject
    assert record["error_type"] == "PermissionRejected"


def test_an_unwritable_log_fails_the_call(hookcode_env, tmp_path):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    hookcode_env.register(jsonl_log, "hooks_jsonl_log")
    hookcode_env.register(DemoPlugin(), "tool_demo")
    hookcode_env.register(ReplyWith("once"), "approve")
    runtime = hookcode_env.runtime(entrypoints=False, HOOKCODE_JSONL_LOG=str(blocker / "x.jsonl"))
    outcome = invoke_tool(runtime, "echo", {"text": "x"})
    assert not outcome.ok
    assert "Plugin 'hooks_jsonl_log' failed in tool_execute_after" in outcome.error_text
