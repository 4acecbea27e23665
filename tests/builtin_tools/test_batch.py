"""The batch tool (reference/tools.md §20): concurrent sub-calls, each a full invoke for the
calling agent (hooks, permissions, own part), partial failure, the limits and messages."""

from __future__ import annotations

import asyncio
import time

from hookcode import Attachment, ToolContext, ToolResult, hookimpl, tool
from hookcode.testing import ainvoke_tool

PLUGINS = "policy_rules,tool_batch,tool_read"


@tool
async def nap(ctx: ToolContext, seconds: float = 0.2, label: str = "") -> str:
    """Sleep asynchronously."""
    await asyncio.sleep(seconds)
    return f"napped {label}"


@tool
def doze(ctx: ToolContext, seconds: float = 0.2) -> str:
    """Sleep in a worker thread."""
    time.sleep(seconds)
    return "dozed"


@tool
def boom(ctx: ToolContext) -> str:
    """Always fails."""
    raise RuntimeError("kaboom")


@tool
def picture(ctx: ToolContext) -> ToolResult:
    """Returns an attachment."""
    return ToolResult(
        output="a picture", attachments=[Attachment("image/png", "data:image/png;base64,AA==")]
    )


# an MCP-style tool (server "github")
@tool(name="github_search")
def github_search(ctx: ToolContext, query: str) -> str:
    """Search GitHub."""
    return f"results for {query}"


class Pack:
    def __init__(self):
        self.before: list[tuple[str, str | None, str]] = []
        self.after: list[str] = []

    @hookimpl
    def register_tools(self, register):
        register(nap, doze, boom, picture, github_search)

    @hookimpl
    def tool_execute_before(self, call, ctx):
        self.before.append((call.tool, call.parent_call_id, call.agent))

    @hookimpl
    def tool_execute_after(self, call, result, ctx):
        self.after.append(call.tool)


def setup(env, config=None):
    if config:
        env.write_config(config)
    pack = Pack()
    env.register(pack, "pack")
    return env.runtime(HOOKCODE_LOAD_PLUGINS=PLUGINS), pack


def batch(rt, calls, **kwargs):
    return asyncio.run(ainvoke_tool(rt, "batch", {"tool_calls": calls}, **kwargs))


def test_all_succeed_concurrently_each_through_hooks(hookcode_env):
    rt, pack = setup(hookcode_env)
    calls = [{"tool": "nap", "parameters": {"label": str(i)}} for i in range(3)]
    calls.append({"tool": "github_search", "parameters": {"query": "hookcode"}})
    calls.append({"tool": "picture", "parameters": {}})
    started = time.monotonic()
    outcome = batch(rt, calls)
    assert time.monotonic() - started < 0.6
    assert outcome.ok, outcome.error_text
    result = outcome.result
    assert result.output.startswith(
        "All 5 tools executed successfully.\n\n"
        "Keep using the batch tool for optimal performance in your next response!"
    )
    assert "napped 1" in result.output and "results for hookcode" in result.output
    assert result.title == "Batch execution (5/5 successful)"
    meta = result.metadata
    assert (meta["totalCalls"], meta["successful"], meta["failed"]) == (5, 5, 0)
    assert meta["tools"] == ["nap", "nap", "nap", "github_search", "picture"]
    assert meta["details"] == [{"tool": t, "success": True} for t in meta["tools"]]
    assert [a.mime for a in result.attachments] == ["image/png"]
    # every sub-call passed the hooks, as the calling agent, with its own call id and part
    subs = [b for b in pack.before if b[0] != "batch"]
    assert len(subs) == 5
    assert {b[1] for b in subs} == {outcome.call.call_id}
    assert {b[2] for b in subs} == {"build"}
    assert sorted(pack.after) == sorted(["batch", "nap", "nap", "nap", "github_search", "picture"])
    parts = rt.store.tool_parts(outcome.call.session_id)
    assert len(parts) == 6 and len({p.id for p in parts}) == 6
    assert all(p.state == "completed" for p in parts)


def test_mixed_success_and_failure(hookcode_env):
    rt, _ = setup(hookcode_env)
    outcome = batch(
        rt,
        [
            {"tool": "nap", "parameters": {"seconds": 0}},
            {"tool": "boom", "parameters": {}},
            {"tool": "nap", "parameters": {"seconds": "soon"}},  # invalid arguments
            {"tool": "nope", "parameters": {}},
            {"tool": "batch", "parameters": {"tool_calls": []}},
        ],
    )
    assert outcome.ok
    result = outcome.result
    assert result.output.startswith("Executed 1/5 tools successfully. 4 failed.")
    assert result.title == "Batch execution (1/5 successful)"
    assert [d["success"] for d in result.metadata["details"]] == [True, False, False, False, False]
    assert "kaboom" in result.output
    assert "The nap tool was called with invalid arguments" in result.output
    assert "Tool 'nope' not in registry. Available tools: " in result.output
    available = result.output.split("Available tools: ")[1].split("\n")[0]
    assert "nap" in available and "batch" not in available
    assert "Tool 'batch' is not allowed in batch. Disallowed tools: batch" in result.output
    errors = {p.error for p in rt.store.tool_parts(outcome.call.session_id) if p.state == "error"}
    assert "Tool 'batch' is not allowed in batch. Disallowed tools: batch" in errors
    assert "kaboom" in errors


def test_more_than_25_calls(hookcode_env):
    rt, pack = setup(hookcode_env)
    calls = [{"tool": "nap", "parameters": {"seconds": 0, "label": str(i)}} for i in range(27)]
    outcome = batch(rt, calls)
    result = outcome.result
    assert result.output.startswith("Executed 25/27 tools successfully. 2 failed.")
    assert result.output.count("Maximum of 25 tools allowed in batch") == 2
    assert [d["success"] for d in result.metadata["details"]] == [True] * 25 + [False] * 2
    assert len([b for b in pack.before if b[0] == "nap"]) == 25


def test_permission_deny_in_one_sub_call_does_not_stop_the_others(hookcode_env):
    rt, _ = setup(hookcode_env, {"permission": {"boom": "deny", "github_search": "ask"}})
    outcome = batch(
        rt,
        [
            {"tool": "nap", "parameters": {"seconds": 0}},
            {"tool": "read", "parameters": {"filePath": ".env"}},  # ask: headless reject
            {"tool": "github_search", "parameters": {"query": "x"}},  # ask: headless reject
            {"tool": "nap", "parameters": {"seconds": 0.05}},
        ],
    )
    result = outcome.result
    assert [d["success"] for d in result.metadata["details"]] == [True, False, False, True]
    assert "rejected permission" in result.output
    # a configured deny hides the tool: not offered to the agent, so not in the registry
    outcome = batch(rt, [{"tool": "boom", "parameters": {}}, {"tool": "nap", "parameters": {}}])
    assert outcome.result.metadata["successful"] == 1
    assert "Tool 'boom' not in registry" in outcome.result.output


def test_invalid_payload(hookcode_env):
    rt, _ = setup(hookcode_env)
    outcome = batch(rt, [])
    assert outcome.error_text == (
        "Invalid parameters for tool 'batch':\n"
        "  - tool_calls: Provide at least one tool call\n\n"
        "Expected payload format:\n"
        '  [{"tool": "tool_name", "parameters": {...}}, {...}]'
    )
    outcome = batch(rt, [{"parameters": {}}])
    assert "  - tool_calls.0.tool: Required" in outcome.error_text


def test_abort_stops_every_sub_call(hookcode_env):
    from hookcode.pipeline import invoke
    from hookcode.tools import AbortSignal, ToolCall

    rt, _ = setup(hookcode_env)
    session = rt.create_session(title="t")
    call = ToolCall(
        tool="batch",
        args={"tool_calls": [{"tool": "nap", "parameters": {"seconds": 30}}] * 3},
        call_id="call_batch",
        session_id=session.id,
    )
    abort = AbortSignal()

    async def go():
        asyncio.get_running_loop().call_later(0.2, abort.abort, "test")
        return await invoke(rt, call, abort=abort)

    started = time.monotonic()
    outcome = asyncio.run(go())
    assert time.monotonic() - started < 3
    assert outcome.error_text == "Tool execution aborted"
    assert all(p.state == "error" for p in rt.store.tool_parts(session.id))
