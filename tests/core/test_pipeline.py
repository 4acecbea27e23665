"""The choke point (core/hookcode/pipeline.py, ARCHITECTURE.md "One choke point"): the order
of the steps, validation, the tool-call hooks and how they fail closed, wrappers, timeouts,
aborts, truncation, error hooks, the permission pre-check, sync tools, nested calls, and what
is recorded (store parts, events)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hookcode import Tool, ToolBlocked, ToolContext, ToolResult, Vote, hookimpl, tool
from hookcode.errors import (
    InvalidArguments,
    PermissionDenied,
    PermissionRejected,
    ToolAborted,
    ToolError,
    ToolTimeout,
    UnknownTool,
)
from hookcode.pipeline import HookFailed, invoke
from hookcode.testing import ReplyWith, ainvoke_tool, invoke_tool
from hookcode.tools import AbortSignal, ToolCall

SCHEMA_HINT = "\nPlease rewrite the input so it satisfies the expected schema."


@pytest.fixture(autouse=True)
def _only_policy_rules(hookcode_env: Any) -> None:
    """Only the policy_rules entry point: other installed plugins must not hook our calls."""
    hookcode_env.env["HOOKCODE_LOAD_PLUGINS"] = "policy_rules"


class ToolsPlugin:
    def __init__(self, *tools: Tool) -> None:
        self.tools = list(tools)

    @hookimpl
    def register_tools(self, register: Any) -> None:
        register(*self.tools)


class Body:
    """Counts how often a tool body ran."""

    def __init__(self) -> None:
        self.runs = 0
        self.args: list[dict[str, Any]] = []
        self.threads: list[str] = []


def make_runtime(
    hookcode_env: Any, *tools: Tool, plugins: tuple[Any, ...] = (), config: str = ""
) -> Any:
    hookcode_env.register(ToolsPlugin(*tools), "test_tools")
    for index, plugin in enumerate(plugins):
        hookcode_env.register(plugin, getattr(plugin, "plugin_name", f"plugin{index}"))
    if config:
        hookcode_env.write_config(config)
    return hookcode_env.runtime()


def counting_tool(body: Body, name: str = "count", **options: Any) -> Tool:
    def run(name_: str, count: int = 1, flag: bool = False) -> str:
        body.runs += 1
        body.args.append({"name": name_, "count": count, "flag": flag})
        body.threads.append(threading.current_thread().name)
        return f"{name_} x{count}"

    return tool(run, name=name, aliases={"name_": "name"}, **options)


# ---------------------------------------------------------------------------------------------
# the order of the steps
# ---------------------------------------------------------------------------------------------


class Recorder:
    plugin_name = "recorder"

    def __init__(self, log: list[Any]) -> None:
        self.log = log

    @hookimpl
    def tool_execute_before(self, call: ToolCall, ctx: ToolContext) -> None:
        self.log.append(("before", call.tool, dict(call.args)))

    @hookimpl
    def permission_ask(self, request: Any) -> None:
        self.log.append(("permission", request.permission, request.patterns))

    @hookimpl(wrapper=True)
    def tool_execute(self, call: ToolCall, ctx: ToolContext) -> Any:
        self.log.append("wrapper-in")
        result = yield
        self.log.append(("wrapper-out", "truncated" in result.metadata))
        return result

    @hookimpl
    def tool_execute_after(self, call: ToolCall, result: ToolResult, ctx: ToolContext) -> None:
        self.log.append(("after", result.metadata.get("truncated"), result.output))


def test_order_of_steps(hookcode_env: Any) -> None:
    log: list[Any] = []

    @tool
    def ordered(text: str, repeat: int = 2) -> str:
        """Ordered."""
        log.append("tool")
        return text * repeat

    runtime = make_runtime(hookcode_env, ordered, plugins=(Recorder(log),))
    outcome = invoke_tool(runtime, "ORDERED", {"text": "ab"})  # resolved case-insensitively
    assert outcome.error is None
    assert log == [
        ("before", "ordered", {"text": "ab", "repeat": 2}),  # resolved, validated, defaults
        ("permission", "ordered", ["*"]),
        "wrapper-in",
        "tool",
        ("wrapper-out", False),  # truncation comes after the wrappers
        ("after", False, "abab"),  # ... and before the after hooks
    ]


def test_unknown_tool_fails_before_validation_and_hooks(hookcode_env: Any) -> None:
    log: list[Any] = []
    runtime = make_runtime(hookcode_env, counting_tool(Body()), plugins=(Recorder(log),))
    outcome = invoke_tool(runtime, "nope", {"bad": object.__name__})
    assert isinstance(outcome.error, UnknownTool)
    assert (
        outcome.error_text == "Model tried to call unavailable tool 'nope'. Available tools: count."
    )
    assert log == []


def test_invalid_arguments_fail_before_hooks(hookcode_env: Any) -> None:
    log: list[Any] = []
    body = Body()
    runtime = make_runtime(hookcode_env, counting_tool(body), plugins=(Recorder(log),))
    outcome = invoke_tool(runtime, "count", {"count": 1})
    assert isinstance(outcome.error, InvalidArguments)
    assert log == []
    assert body.runs == 0


# ---------------------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------------------


def test_validation_names_each_bad_field(hookcode_env: Any) -> None:
    body = Body()
    runtime = make_runtime(hookcode_env, counting_tool(body))
    outcome = invoke_tool(runtime, "count", {"count": "many", "flga": True})
    text = outcome.error_text
    assert text.startswith("The count tool was called with invalid arguments: ")
    assert text.endswith("." + SCHEMA_HINT)
    assert "name: required argument is missing" in text
    assert "count: Input should be a valid integer" in text
    assert "flga: unknown argument (not in the tool's schema)" in text
    assert body.runs == 0


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ({"name": 5}, "name: Input should be a valid string"),
        ({"name": "x", "flag": "perhaps"}, "flag: Input should be a valid boolean"),
        ({"name": "x", "Name": "y"}, "Name: unknown argument"),
        ("{not json", "the arguments are not valid JSON"),
        ("[1, 2]", "expected a JSON object, got list"),
        ('"text"', "expected a JSON object, got str"),
    ],
)
def test_validation_errors(hookcode_env: Any, args: Any, fragment: str) -> None:
    runtime = make_runtime(hookcode_env, counting_tool(Body()))
    outcome = invoke_tool(runtime, "count", args)
    assert isinstance(outcome.error, InvalidArguments)
    assert fragment in outcome.error_text
    assert outcome.error_text.endswith(SCHEMA_HINT)


def test_json_string_arguments(hookcode_env: Any) -> None:
    body = Body()
    runtime = make_runtime(hookcode_env, counting_tool(body))
    outcome = invoke_tool(runtime, "count", '{"name": "j", "count": 3}')
    assert outcome.error is None
    assert outcome.result.output == "j x3"
    assert outcome.call.args == {"name": "j", "count": 3, "flag": False}
    (part,) = runtime.store.tool_parts(outcome.call.session_id)
    assert part.input == {"name": "j", "count": 3}  # as given (decoded): no defaults filled in


def test_empty_string_arguments_are_an_empty_object(hookcode_env: Any) -> None:
    @tool
    def noargs(level: int = 4) -> str:
        """No required args."""
        return str(level)

    runtime = make_runtime(hookcode_env, noargs)
    assert invoke_tool(runtime, "noargs", "").result.output == "4"
    assert invoke_tool(runtime, "noargs", None).result.output == "4"


def test_defaults_visible_to_hooks_and_tool(hookcode_env: Any) -> None:
    seen: list[dict[str, Any]] = []

    class Seer:
        plugin_name = "seer"

        @hookimpl
        def tool_execute_before(self, call: ToolCall) -> None:
            seen.append(dict(call.args))

        @hookimpl
        def tool_execute_after(self, call: ToolCall) -> None:
            seen.append(dict(call.args))

    body = Body()
    runtime = make_runtime(hookcode_env, counting_tool(body), plugins=(Seer(),))
    invoke_tool(runtime, "count", {"name": "d"})
    assert seen == [{"name": "d", "count": 1, "flag": False}] * 2
    assert body.args == [{"name": "d", "count": 1, "flag": False}]


def test_tool_receives_validated_values(hookcode_env: Any) -> None:
    received: list[Any] = []

    @tool
    def typed(path: Path, n: int) -> str:
        """Typed."""
        received.append((path, n))
        return ""

    runtime = make_runtime(hookcode_env, typed)
    outcome = invoke_tool(runtime, "typed", {"path": "a/b", "n": "7"})  # lax: "7" -> 7
    assert outcome.error is None
    assert received == [(Path("a/b"), 7)]
    assert outcome.call.args == {"path": "a/b", "n": 7}  # JSON-compatible


# ---------------------------------------------------------------------------------------------
# before hooks
# ---------------------------------------------------------------------------------------------


class Rewriter:
    plugin_name = "rewriter"

    def __init__(self, rewrite: Callable[[ToolCall], None]) -> None:
        self.rewrite = rewrite

    @hookimpl
    def tool_execute_before(self, call: ToolCall, ctx: ToolContext) -> None:
        self.rewrite(call)


def test_before_hook_rewrite_reaches_the_tool(hookcode_env: Any) -> None:
    body = Body()

    def rewrite(call: ToolCall) -> None:
        call.args["count"] = 9

    runtime = make_runtime(hookcode_env, counting_tool(body), plugins=(Rewriter(rewrite),))
    outcome = invoke_tool(runtime, "count", {"name": "r"})
    assert outcome.result.output == "r x9"
    assert outcome.call.args["count"] == 9


def test_before_hook_assigning_a_new_dict_is_revalidated(hookcode_env: Any) -> None:
    body = Body()

    def rewrite(call: ToolCall) -> None:
        call.args = {"name": "new", "count": "5"}

    runtime = make_runtime(hookcode_env, counting_tool(body), plugins=(Rewriter(rewrite),))
    outcome = invoke_tool(runtime, "count", {"name": "old"})
    assert outcome.result.output == "new x5"
    assert outcome.call.args == {"name": "new", "count": 5, "flag": False}
    (part,) = runtime.store.tool_parts(outcome.call.session_id)
    assert part.input == {"name": "old"}  # the history keeps what the model produced


@pytest.mark.parametrize(
    ("rewrite", "fragment"),
    [
        (lambda call: call.args.__setitem__("count", "lots"), "count: Input should be a valid"),
        (lambda call: call.args.pop("name"), "name: required argument is missing"),
        (lambda call: call.args.__setitem__("sneaky", 1), "sneaky: unknown argument"),
    ],
)
def test_before_hook_rewrite_to_invalid_fails_the_call(
    hookcode_env: Any, rewrite: Callable[[ToolCall], None], fragment: str
) -> None:
    body = Body()
    runtime = make_runtime(hookcode_env, counting_tool(body), plugins=(Rewriter(rewrite),))
    outcome = invoke_tool(runtime, "count", {"name": "x"})
    assert isinstance(outcome.error, InvalidArguments)
    assert fragment in outcome.error_text
    assert body.runs == 0


def test_before_hook_replacing_args_with_a_non_dict(hookcode_env: Any) -> None:
    body = Body()

    def rewrite(call: ToolCall) -> None:
        call.args = "nope"

    runtime = make_runtime(hookcode_env, counting_tool(body), plugins=(Rewriter(rewrite),))
    outcome = invoke_tool(runtime, "count", {"name": "x"})
    assert isinstance(outcome.error, HookFailed)
    assert "rewriter" in outcome.error_text
    assert body.runs == 0


def test_tool_blocked_reason_reaches_the_result(hookcode_env: Any) -> None:
    body = Body()
    errors: list[BaseException] = []

    class Blocker:
        plugin_name = "blocker"

        @hookimpl
        def tool_execute_before(self, call: ToolCall) -> None:
            if call.args["name"] == "sudo":
                raise ToolBlocked("no sudo here")

        @hookimpl
        def tool_execute_error(self, error: BaseException) -> None:
            errors.append(error)

    runtime = make_runtime(hookcode_env, counting_tool(body), plugins=(Blocker(),))
    outcome = invoke_tool(runtime, "count", {"name": "sudo"})
    assert isinstance(outcome.error, ToolBlocked)
    assert outcome.error_text == "no sudo here"
    assert body.runs == 0
    assert errors == [outcome.error]
    assert outcome.to_dict()["error"] == "no sudo here"
    assert invoke_tool(runtime, "count", {"name": "fine"}).error is None


def test_raising_before_hook_names_plugin_and_body_never_runs(hookcode_env: Any) -> None:
    body = Body()

    def rewrite(call: ToolCall) -> None:
        raise RuntimeError("kaput")

    runtime = make_runtime(hookcode_env, counting_tool(body), plugins=(Rewriter(rewrite),))
    outcome = invoke_tool(runtime, "count", {"name": "x"})
    assert isinstance(outcome.error, HookFailed)
    assert (
        outcome.error_text == "Plugin 'rewriter' failed in tool_execute_before: RuntimeError: kaput"
    )
    assert body.runs == 0
    (part,) = runtime.store.tool_parts(outcome.call.session_id)
    assert part.state == "error"


# ---------------------------------------------------------------------------------------------
# tool_execute wrappers and plain implementations
# ---------------------------------------------------------------------------------------------


class RaisingWrapper:
    plugin_name = "bad_wrapper"

    def __init__(self, when: str) -> None:
        self.when = when

    @hookimpl(wrapper=True)
    def tool_execute(self, call: ToolCall, ctx: ToolContext) -> Any:
        if self.when == "before":
            raise ValueError("wrapper broke early")
        result = yield
        if self.when == "after":
            raise ValueError("wrapper broke late")
        return result


@pytest.mark.parametrize(("when", "runs"), [("before", 0), ("after", 1)])
def test_raising_wrapper_names_plugin(hookcode_env: Any, when: str, runs: int) -> None:
    body = Body()
    runtime = make_runtime(hookcode_env, counting_tool(body), plugins=(RaisingWrapper(when),))
    outcome = invoke_tool(runtime, "count", {"name": "x"})
    assert isinstance(outcome.error, HookFailed)
    assert outcome.error_text.startswith("Plugin 'bad_wrapper' failed in tool_execute: ValueError")
    assert body.runs == runs


def test_raising_after_hook_names_plugin(hookcode_env: Any) -> None:
    body = Body()

    class After:
        plugin_name = "bad_after"

        @hookimpl
        def tool_execute_after(self, result: ToolResult) -> None:
            raise KeyError("oops")

    runtime = make_runtime(hookcode_env, counting_tool(body), plugins=(After(),))
    outcome = invoke_tool(runtime, "count", {"name": "x"})
    assert isinstance(outcome.error, HookFailed)
    assert outcome.error_text == "Plugin 'bad_after' failed in tool_execute_after: KeyError: 'oops'"
    assert body.runs == 1
    (part,) = runtime.store.tool_parts(outcome.call.session_id)
    assert part.state == "error"


def test_after_hook_rewrites_the_result(hookcode_env: Any) -> None:
    class After:
        plugin_name = "after"

        @hookimpl
        def tool_execute_after(self, result: ToolResult) -> None:
            result.title = "new title"
            result.output += " [checked]"
            result.metadata["checked"] = True

    runtime = make_runtime(hookcode_env, counting_tool(Body()), plugins=(After(),))
    result = invoke_tool(runtime, "count", {"name": "x"}).result
    assert (result.title, result.output, result.metadata["checked"]) == (
        "new title",
        "x x1 [checked]",
        True,
    )


def test_raising_tool_definition_hook_is_skipped(
    hookcode_env: Any, capsys: pytest.CaptureFixture
) -> None:
    class Bad:
        plugin_name = "bad_definition"

        @hookimpl
        def tool_definition(self, tool_id: str, definition: dict[str, Any]) -> None:
            raise RuntimeError("cannot describe")

    class Good:
        plugin_name = "good_definition"

        @hookimpl
        def tool_definition(self, tool_id: str, definition: dict[str, Any]) -> None:
            definition["description"] = "edited"

    runtime = make_runtime(hookcode_env, counting_tool(Body()), plugins=(Bad(), Good()))
    (definition,) = runtime.registry.definitions("build")
    assert definition["description"] == "edited"
    err = [line for line in capsys.readouterr().err.splitlines() if "bad_definition" in line]
    assert len(err) == 1
    assert "tool_definition" in err[0]
    assert "cannot describe" in err[0]


class TimingWrapper:
    plugin_name = "timing"

    def __init__(self) -> None:
        self.elapsed: list[float] = []

    @hookimpl(wrapper=True)
    def tool_execute(self, call: ToolCall, ctx: ToolContext) -> Any:
        started = time.perf_counter()
        result = yield
        self.elapsed.append(time.perf_counter() - started)
        result.metadata["elapsed"] = self.elapsed[-1]
        return result


class ReplacingWrapper:
    plugin_name = "replacer"

    @hookimpl(wrapper=True)
    def tool_execute(self, call: ToolCall, ctx: ToolContext) -> Any:
        result = yield
        return ToolResult(output=f"replaced({result.output})", title="replaced")


class AsyncWrapper:
    plugin_name = "async_wrapper"

    def __init__(self) -> None:
        self.log: list[str] = []

    @hookimpl(wrapper=True)
    async def tool_execute(self, call: ToolCall, ctx: ToolContext) -> Any:
        started = time.perf_counter()
        await asyncio.sleep(0)
        self.log.append("in")
        result = yield
        self.log.append("out")
        result.metadata["async_elapsed"] = time.perf_counter() - started
        result.output = f"async({result.output})"


def slow_tool(seconds: float = 0.05) -> Tool:
    @tool
    async def slow() -> str:
        """Slow."""
        await asyncio.sleep(seconds)
        return "slow done"

    return slow


def test_sync_wrapper_times_the_call(hookcode_env: Any) -> None:
    timing = TimingWrapper()
    runtime = make_runtime(hookcode_env, slow_tool(0.05), plugins=(timing,))
    outcome = invoke_tool(runtime, "slow")
    assert outcome.error is None
    assert timing.elapsed[0] >= 0.04
    assert outcome.result.metadata["elapsed"] == timing.elapsed[0]


def test_sync_wrapper_replaces_the_result(hookcode_env: Any) -> None:
    runtime = make_runtime(hookcode_env, counting_tool(Body()), plugins=(ReplacingWrapper(),))
    result = invoke_tool(runtime, "count", {"name": "x"}).result
    assert (result.output, result.title) == ("replaced(x x1)", "replaced")
    assert result.metadata == {"truncated": False}  # truncation ran on the replacement


def test_async_wrapper(hookcode_env: Any) -> None:
    wrapper = AsyncWrapper()
    runtime = make_runtime(hookcode_env, slow_tool(0.05), plugins=(wrapper,))
    assert runtime.plugins.infos["async_wrapper"].status == "loaded"
    outcome = invoke_tool(runtime, "slow")
    assert outcome.error is None
    assert wrapper.log == ["in", "out"]
    assert outcome.result.output == "async(slow done)"
    assert outcome.result.metadata["async_elapsed"] >= 0.04


def test_async_wrapper_sees_failures_and_may_raise(hookcode_env: Any) -> None:
    seen: list[str] = []

    class AsyncObserver:
        plugin_name = "async_observer"

        @hookimpl(wrapper=True)
        async def tool_execute(self, call: ToolCall, ctx: ToolContext) -> Any:
            try:
                yield
            except RuntimeError as exc:
                seen.append(str(exc))
                raise

    class AsyncBroken:
        plugin_name = "async_broken"

        @hookimpl(wrapper=True)
        async def tool_execute(self, call: ToolCall, ctx: ToolContext) -> Any:
            yield
            raise ValueError("late async failure")

    @tool
    def failing() -> str:
        """Fails."""
        raise RuntimeError("body failed")

    runtime = make_runtime(hookcode_env, failing, plugins=(AsyncObserver(),))
    assert invoke_tool(runtime, "failing").error_text == "body failed"
    assert seen == ["body failed"]

    hookcode_env.register(AsyncBroken(), "async_broken")
    broken = hookcode_env.runtime()
    outcome = invoke_tool(broken, "failing")
    assert outcome.error_text == "body failed"  # the wrapper never got past its yield
    runtime2 = make_runtime(hookcode_env, counting_tool(Body()))
    outcome = invoke_tool(runtime2, "count", {"name": "x"})
    assert outcome.error_text == (
        "Plugin 'async_broken' failed in tool_execute: ValueError: late async failure"
    )


def test_wrappers_nest_and_see_failures(hookcode_env: Any) -> None:
    seen: list[str] = []

    class Outer:
        plugin_name = "outer"

        @hookimpl(wrapper=True)
        def tool_execute(self, call: ToolCall, ctx: ToolContext) -> Any:
            seen.append("outer-in")
            try:
                return (yield)
            except RuntimeError as exc:
                seen.append(f"outer saw {exc}")
                raise

    @tool
    def failing() -> str:
        """Fails."""
        raise RuntimeError("body failed")

    runtime = make_runtime(hookcode_env, failing, plugins=(Outer(), TimingWrapper()))
    outcome = invoke_tool(runtime, "failing")
    assert outcome.error_text == "body failed"
    assert seen == ["outer-in", "outer saw body failed"]


class Cache:
    plugin_name = "cache"

    def __init__(self) -> None:
        self.store: dict[str, ToolResult] = {}
        self.hits = 0

    @hookimpl(tryfirst=True)
    def tool_execute(self, call: ToolCall, ctx: ToolContext) -> ToolResult | None:
        key = f"{call.tool}:{sorted(call.args.items())}"
        if key in self.store:
            self.hits += 1
            return self.store[key]
        return None

    @hookimpl
    def tool_execute_after(self, call: ToolCall, result: ToolResult) -> None:
        self.store.setdefault(f"{call.tool}:{sorted(call.args.items())}", result)


def test_tryfirst_plain_impl_short_circuits(hookcode_env: Any) -> None:
    body = Body()
    cache = Cache()
    runtime = make_runtime(hookcode_env, counting_tool(body), plugins=(cache,))
    first = invoke_tool(runtime, "count", {"name": "c"})
    second = invoke_tool(runtime, "count", {"name": "c"})
    third = invoke_tool(runtime, "count", {"name": "c", "count": 2})
    assert first.result.output == second.result.output == "c x1"
    assert third.result.output == "c x2"
    assert body.runs == 2
    assert cache.hits == 1


def test_cache_cannot_bypass_the_permission_check(hookcode_env: Any) -> None:
    body = Body()
    cache = Cache()
    runtime = make_runtime(hookcode_env, counting_tool(body), plugins=(cache,))
    assert invoke_tool(runtime, "count", {"name": "c"}).error is None
    hookcode_env.write_config('[permission]\ncount = "ask"\n')
    strict = hookcode_env.runtime()
    outcome = invoke_tool(strict, "count", {"name": "c"})
    assert isinstance(outcome.error, PermissionRejected)
    assert cache.hits == 0


def test_plain_impl_returning_a_string_or_junk(hookcode_env: Any) -> None:
    class Stringy:
        plugin_name = "stringy"

        @hookimpl(tryfirst=True)
        async def tool_execute(self, call: ToolCall) -> Any:
            return "from a plain async impl" if call.args["name"] == "s" else 42

    runtime = make_runtime(hookcode_env, counting_tool(Body()), plugins=(Stringy(),))
    assert invoke_tool(runtime, "count", {"name": "s"}).result.output == "from a plain async impl"
    bad = invoke_tool(runtime, "count", {"name": "x"})
    assert bad.error_text.startswith("Plugin 'stringy' failed in tool_execute: TypeError")


# ---------------------------------------------------------------------------------------------
# timeout and abort
# ---------------------------------------------------------------------------------------------


def test_timeout(hookcode_env: Any) -> None:
    finished: list[bool] = []

    @tool(timeout=0.05)
    async def sleepy() -> str:
        """Sleeps too long."""
        await asyncio.sleep(5)
        finished.append(True)
        return "never"

    errors: list[BaseException] = []

    class Observer:
        plugin_name = "observer"

        @hookimpl
        def tool_execute_error(self, error: BaseException) -> None:
            errors.append(error)

    runtime = make_runtime(hookcode_env, sleepy, plugins=(Observer(),))
    started = time.perf_counter()
    outcome = invoke_tool(runtime, "sleepy")
    assert time.perf_counter() - started < 2
    assert isinstance(outcome.error, ToolTimeout)
    assert outcome.error_text == "Tool execution timed out after 0.05 seconds"
    assert finished == []
    assert isinstance(errors[0], ToolTimeout)


def _call(
    runtime: Any, name: str, args: dict[str, Any] | None = None
) -> tuple[ToolCall, AbortSignal]:
    session = runtime.create_session(title="s").id
    call = ToolCall(
        tool=name,
        args=args or {},
        call_id=runtime.new_id("call"),
        session_id=session,
        agent="build",
    )
    return call, AbortSignal()


def test_abort_before_the_call(hookcode_env: Any) -> None:
    body = Body()
    runtime = make_runtime(hookcode_env, counting_tool(body))
    call, abort = _call(runtime, "count", {"name": "x"})
    abort.abort()
    outcome = asyncio.run(invoke(runtime, call, abort=abort))
    assert isinstance(outcome.error, ToolAborted)
    assert outcome.error_text == "Tool execution aborted"
    assert body.runs == 0


def test_abort_while_running(hookcode_env: Any) -> None:
    started = asyncio.Event
    state: dict[str, Any] = {}

    @tool
    async def waits() -> str:
        """Waits to be aborted."""
        state["started"].set()
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            state["cancelled"] = True
            raise
        return "never"

    runtime = make_runtime(hookcode_env, waits)
    call, abort = _call(runtime, "waits")

    async def scenario() -> Any:
        state["started"] = started()
        task = asyncio.ensure_future(invoke(runtime, call, abort=abort))
        await asyncio.wait_for(state["started"].wait(), 5)
        abort.abort("ctrl-c")
        return await asyncio.wait_for(task, 5)

    outcome = asyncio.run(scenario())
    assert outcome.error_text == "Tool execution aborted"
    assert state["cancelled"] is True
    (part,) = runtime.store.tool_parts(call.session_id)
    assert (part.state, part.error) == ("error", "Tool execution aborted")


# ---------------------------------------------------------------------------------------------
# truncation
# ---------------------------------------------------------------------------------------------


def lines_tool(name: str, n: int, own: bool = False) -> Tool:
    def body() -> ToolResult:
        output = "\n".join(f"line {i}" for i in range(n))
        return ToolResult(output=output, metadata={"truncated": False} if own else {})

    return tool(body, name=name, description=name)


def test_truncation_applied(hookcode_env: Any) -> None:
    seen: list[dict[str, Any]] = []

    class After:
        plugin_name = "after"

        @hookimpl
        def tool_execute_after(self, result: ToolResult) -> None:
            seen.append(dict(result.metadata))

    runtime = make_runtime(
        hookcode_env,
        lines_tool("big", 50),
        plugins=(After(),),
        config="[truncation]\nmax_lines = 10\n",
    )
    outcome = invoke_tool(runtime, "big")
    result = outcome.result
    assert result.metadata["truncated"] is True
    spill = Path(result.metadata["outputPath"])
    assert spill.read_text() == "\n".join(f"line {i}" for i in range(50))
    assert spill.parent == hookcode_env.data_dir / "tool-output"
    assert "line 0" in result.output
    assert "line 49" not in result.output
    assert str(spill) in result.output
    assert seen[0]["truncated"] is True  # the after hook sees the cut result
    assert seen[0]["outputPath"] == str(spill)


def test_spill_files_stop_at_the_configured_spill_max(hookcode_env: Any) -> None:
    runtime = make_runtime(
        hookcode_env,
        lines_tool("big", 500),
        config="[truncation]\nmax_lines = 10\nspill_max = 400\n",
    )
    result = invoke_tool(runtime, "big").result
    text = Path(result.metadata["outputPath"]).read_text()
    full = "\n".join(f"line {i}" for i in range(500))
    assert text.startswith(full[:200]) and text.endswith(full[-200:])
    assert f"[... {len(full) - 400} bytes dropped here" in text


def test_old_spill_files_are_cleaned_at_most_once_a_day(hookcode_env: Any) -> None:
    spill = hookcode_env.data_dir / "tool-output"
    spill.mkdir(parents=True)
    old = spill / f"tool_{int((time.time() - 8 * 86400) * 1000):012x}0000abcdef"

    def first_use() -> None:
        old.write_text("x")
        runtime = make_runtime(hookcode_env)
        runtime.truncator  # noqa: B018 - the first use checks whether a cleanup is due
        runtime.executor.shutdown(wait=True)  # the cleanup, if one was started, is over
        runtime.close()

    first_use()
    assert not old.exists()  # no cleanup on record: done
    first_use()
    assert old.exists()  # done by an earlier process less than a day ago: not walked again


def test_small_output_not_truncated(hookcode_env: Any) -> None:
    runtime = make_runtime(
        hookcode_env, lines_tool("small", 5), config="[truncation]\nmax_lines = 10\n"
    )
    result = invoke_tool(runtime, "small").result
    assert result.metadata == {"truncated": False}
    assert result.output.count("\n") == 4


def test_tool_that_truncates_itself_is_left_alone(hookcode_env: Any) -> None:
    runtime = make_runtime(
        hookcode_env, lines_tool("own", 50, own=True), config="[truncation]\nmax_lines = 10\n"
    )
    result = invoke_tool(runtime, "own").result
    assert result.metadata == {"truncated": False}
    assert result.output.count("\n") == 49


def test_truncation_limit_per_tool(hookcode_env: Any) -> None:
    runtime = make_runtime(
        hookcode_env,
        lines_tool("tight", 8),
        lines_tool("loose", 8),
        config="[truncation.tools.tight]\nmax_lines = 3\n",
    )
    assert invoke_tool(runtime, "tight").result.metadata["truncated"] is True
    assert invoke_tool(runtime, "loose").result.metadata["truncated"] is False


# ---------------------------------------------------------------------------------------------
# tool_execute_error
# ---------------------------------------------------------------------------------------------


class Recover:
    plugin_name = "recover"

    def __init__(self) -> None:
        self.errors: list[BaseException] = []

    @hookimpl
    def tool_execute_error(self, call: ToolCall, error: BaseException, ctx: ToolContext) -> Any:
        self.errors.append(error)
        return ToolResult(output=f"recovered from {type(error).__name__}")


@tool
def explodes() -> str:
    """Always fails."""
    raise RuntimeError("tool blew up")


@tool(asks_permission=True)
async def needs_ok(ctx: ToolContext) -> str:
    """Asks for its own permission."""
    await ctx.ask("needs_ok_perm", ["x"])
    return "ok"


def test_error_hook_recovers_a_tool_failure(hookcode_env: Any) -> None:
    recover = Recover()
    runtime = make_runtime(hookcode_env, explodes, plugins=(recover,))
    outcome = invoke_tool(runtime, "explodes")
    assert outcome.error is None
    assert outcome.result.output == "recovered from RuntimeError"
    assert str(recover.errors[0]) == "tool blew up"
    (part,) = runtime.store.tool_parts(outcome.call.session_id)
    assert part.state == "completed"


def test_error_hook_observes_validation_and_unknown_tool(hookcode_env: Any) -> None:
    recover = Recover()
    runtime = make_runtime(hookcode_env, counting_tool(Body()), plugins=(recover,))
    invoke_tool(runtime, "count", {})
    invoke_tool(runtime, "missing_tool", {})
    assert [type(e) for e in recover.errors] == [InvalidArguments, UnknownTool]


def test_error_hook_cannot_recover_a_reject(hookcode_env: Any) -> None:
    recover = Recover()
    runtime = make_runtime(
        hookcode_env, needs_ok, plugins=(recover,), config='[permission]\nneeds_ok_perm = "ask"\n'
    )
    outcome = invoke_tool(runtime, "needs_ok")
    assert isinstance(outcome.error, PermissionRejected)
    assert isinstance(recover.errors[0], PermissionRejected)  # observed


def test_error_hook_cannot_recover_a_deny(hookcode_env: Any) -> None:
    recover = Recover()
    runtime = make_runtime(
        hookcode_env, needs_ok, plugins=(recover,), config='[permission]\nneeds_ok_perm = "deny"\n'
    )
    outcome = invoke_tool(runtime, "needs_ok")
    assert isinstance(outcome.error, PermissionDenied)
    assert len(recover.errors) == 1


def test_error_hook_cannot_recover_an_abort(hookcode_env: Any) -> None:
    recover = Recover()
    runtime = make_runtime(hookcode_env, counting_tool(Body()), plugins=(recover,))
    call, abort = _call(runtime, "count", {"name": "x"})
    abort.abort()
    outcome = asyncio.run(invoke(runtime, call, abort=abort))
    assert isinstance(outcome.error, ToolAborted)
    assert isinstance(recover.errors[0], ToolAborted)


def test_raising_error_hook_is_skipped(hookcode_env: Any, capsys: pytest.CaptureFixture) -> None:
    class Bad:
        plugin_name = "bad_error_hook"

        @hookimpl
        def tool_execute_error(self, error: BaseException) -> None:
            raise RuntimeError("error hook broke")

    recover = Recover()
    runtime = make_runtime(hookcode_env, explodes, plugins=(recover, Bad()))
    outcome = invoke_tool(runtime, "explodes")
    assert outcome.result.output == "recovered from RuntimeError"
    assert "bad_error_hook" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# the permission pre-check
# ---------------------------------------------------------------------------------------------


class AskLog:
    plugin_name = "ask_log"

    def __init__(self) -> None:
        self.requests: list[tuple[str, list[str], list[str]]] = []

    @hookimpl
    def permission_ask(self, request: Any) -> None:
        self.requests.append((request.permission, request.patterns, request.always))


def test_pre_check_for_tools_that_do_not_ask(hookcode_env: Any) -> None:
    log = AskLog()
    body = Body()
    runtime = make_runtime(
        hookcode_env,
        counting_tool(body),
        counting_tool(Body(), name="editor", permission="edit"),
        needs_ok,
        plugins=(log,),
    )
    invoke_tool(runtime, "count", {"name": "x"})
    invoke_tool(runtime, "editor", {"name": "x"})
    invoke_tool(runtime, "needs_ok")
    assert log.requests == [
        ("count", ["*"], ["*"]),
        ("edit", ["*"], ["*"]),
        ("needs_ok_perm", ["x"], ["x"]),  # asks itself: no pre-check
    ]


def test_pre_check_deny_stops_the_body(hookcode_env: Any) -> None:
    body = Body()

    class No:
        plugin_name = "no"

        @hookimpl
        def permission_ask(self, request: Any) -> Vote:
            return Vote("deny", "no counting today")

    runtime = make_runtime(hookcode_env, counting_tool(body), plugins=(No(),))
    outcome = invoke_tool(runtime, "count", {"name": "x"})
    assert outcome.error_text == "no counting today"
    assert body.runs == 0


# ---------------------------------------------------------------------------------------------
# sync tools, nested calls
# ---------------------------------------------------------------------------------------------


def test_sync_tools_run_in_worker_threads(hookcode_env: Any) -> None:
    body = Body()
    runtime = make_runtime(hookcode_env, counting_tool(body))
    invoke_tool(runtime, "count", {"name": "x"})
    assert body.threads[0].startswith("hookcode")
    assert body.threads[0] != threading.main_thread().name


def test_sync_tools_run_concurrently(hookcode_env: Any) -> None:
    barrier = threading.Barrier(3, timeout=5)

    @tool
    def meet() -> str:
        """Waits for two others."""
        barrier.wait()
        return "met"

    runtime = make_runtime(hookcode_env, meet)

    async def three() -> list[Any]:
        return list(await asyncio.gather(*(ainvoke_tool(runtime, "meet") for _ in range(3))))

    assert [o.result.output for o in asyncio.run(three())] == ["met"] * 3


def test_sync_tool_uses_ask_sync_and_invoke_sync(hookcode_env: Any) -> None:
    body = Body()

    @tool(asks_permission=True)
    def syncer(ctx: ToolContext) -> str:
        """Sync tool asking and calling."""
        ctx.ask_sync("sync_perm", ["a"])
        inner = ctx.invoke_sync("count", {"name": "inner", "count": 2})
        return f"got {inner.output}"

    prompt = ReplyWith("once")
    runtime = make_runtime(
        hookcode_env,
        syncer,
        counting_tool(body),
        plugins=(prompt,),
        config='[permission]\nsync_perm = "ask"\n',
    )
    outcome = invoke_tool(runtime, "syncer")
    assert outcome.error is None
    assert outcome.result.output == "got inner x2"
    assert [r.permission for r in prompt.requests] == ["sync_perm"]
    assert body.runs == 1


def test_sync_tool_ask_sync_refusal_fails_the_call(hookcode_env: Any) -> None:
    @tool(asks_permission=True)
    def syncer(ctx: ToolContext) -> str:
        """Sync tool asking."""
        ctx.ask_sync("sync_perm", ["a"])
        return "never"

    runtime = make_runtime(hookcode_env, syncer, config='[permission]\nsync_perm = "ask"\n')
    outcome = invoke_tool(runtime, "syncer")
    assert isinstance(outcome.error, PermissionRejected)


def test_ctx_invoke_goes_through_the_pipeline(hookcode_env: Any) -> None:
    body = Body()
    log: list[Any] = []

    class Seer:
        plugin_name = "seer"

        @hookimpl
        def tool_execute_before(self, call: ToolCall) -> None:
            log.append((call.tool, call.parent_call_id, dict(call.args)))

    @tool
    async def outer(ctx: ToolContext, name: str) -> str:
        """Calls count."""
        result = await ctx.invoke("COUNT", {"name": name})  # any spelling the model may use
        return f"outer({result.output})"

    runtime = make_runtime(hookcode_env, outer, counting_tool(body), plugins=(Seer(),))
    outcome = invoke_tool(runtime, "outer", {"name": "n"})
    assert outcome.result.output == "outer(n x1)"
    assert log[0] == ("outer", None, {"name": "n"})
    assert log[1] == ("count", outcome.call.call_id, {"name": "n", "count": 1, "flag": False})
    parts = runtime.store.tool_parts(outcome.call.session_id)
    assert [(p.tool, p.state) for p in parts] == [("outer", "completed"), ("count", "completed")]


def test_ctx_invoke_failure_raises_in_the_caller(hookcode_env: Any) -> None:
    @tool
    async def outer(ctx: ToolContext) -> str:
        """Calls a tool badly."""
        try:
            await ctx.invoke("count", {"count": "x"})
        except ToolError as exc:
            return f"caught: {type(exc).__name__}"
        return "no error"

    @tool
    async def outer_unknown(ctx: ToolContext) -> str:
        """Calls a hidden tool."""
        await ctx.invoke("secret")
        return "never"

    runtime = make_runtime(
        hookcode_env,
        outer,
        outer_unknown,
        counting_tool(Body()),
        counting_tool(Body(), name="secret"),
        config='[permission]\nsecret = "deny"\n',
    )
    assert invoke_tool(runtime, "outer").result.output == "caught: InvalidArguments"
    failed = invoke_tool(runtime, "outer_unknown")
    assert "unavailable tool 'secret'" in failed.error_text


# ---------------------------------------------------------------------------------------------
# what is recorded
# ---------------------------------------------------------------------------------------------


def test_store_records_parts(hookcode_env: Any) -> None:
    runtime = make_runtime(hookcode_env, counting_tool(Body()), explodes)
    session = runtime.create_session(title="s").id
    ok = invoke_tool(runtime, "count", {"name": "p"}, session_id=session)
    invoke_tool(runtime, "explodes", session_id=session)
    invoke_tool(runtime, "count", {}, session_id=session)
    first, second, third = runtime.store.tool_parts(session)
    assert first.id == ok.call.call_id
    assert (first.tool, first.state, first.output) == ("count", "completed", "p x1")
    assert first.input == {"name": "p"}  # as given: no defaults filled in
    assert first.metadata == {"truncated": False}
    assert first.error is None
    assert first.time_start is not None
    assert first.time_end >= first.time_start
    assert (second.tool, second.state, second.error) == ("explodes", "error", "tool blew up")
    assert third.state == "error"
    assert "name: required argument is missing" in third.error


def test_running_is_committed_the_first_time_the_call_waits(hookcode_env: Any) -> None:
    seen: list[Any] = []

    @tool
    async def waits(ctx: ToolContext) -> str:
        """Looks at its own part before and after waiting."""
        before = ctx.runtime.store.get_tool_part(ctx.call_id)
        await asyncio.sleep(0)
        after = ctx.runtime.store.get_tool_part(ctx.call_id)
        seen.append((before, after.state, after.time_end))
        return "ok"

    runtime = make_runtime(hookcode_env, waits)
    outcome = invoke_tool(runtime, "waits")
    (before, state, time_end) = seen[0]
    assert before is None  # nothing has waited yet: nobody could have looked
    assert (state, time_end) == ("running", None)
    (part,) = runtime.store.tool_parts(outcome.call.session_id)
    assert (part.state, part.output) == ("completed", "ok")


def test_a_call_that_never_waits_commits_its_result_once(hookcode_env: Any) -> None:
    states: list[str] = []

    @tool
    async def fails() -> str:
        """Fails without waiting."""
        raise ToolError("no luck")

    runtime = make_runtime(hookcode_env, counting_tool(Body()), fails)
    save = runtime.store.save_tool_part
    runtime.store.save_tool_part = lambda part: (states.append(part.state), save(part))[1]

    @tool
    async def quick() -> str:
        """Ends without waiting."""
        return "done"

    runtime.registry.register(quick, plugin="test")
    session = runtime.create_session(title="s").id
    invoke_tool(runtime, "quick", session_id=session)
    invoke_tool(runtime, "fails", session_id=session)
    invoke_tool(runtime, "count", {"name": "x"}, session_id=session)  # a sync tool: a thread
    assert states == ["completed", "error", "running", "completed"]
    parts = runtime.store.tool_parts(session)
    assert [(p.tool, p.state) for p in parts] == [
        ("quick", "completed"),
        ("fails", "error"),
        ("count", "completed"),
    ]


def test_a_failing_running_write_fails_the_call_and_stops_the_tool(hookcode_env: Any) -> None:
    from hookcode.store import StoreError

    closed: list[bool] = []

    @tool
    async def waits() -> str:
        """Waits once."""
        try:
            await asyncio.sleep(0)
        except BaseException as exc:  # the store's error, raised where the call waits
            closed.append(type(exc).__name__)
            raise
        return "never"

    runtime = make_runtime(hookcode_env, waits)

    def broken(part: Any) -> None:
        raise StoreError(f"{runtime.store.path}: disk I/O error")

    runtime.store.save_tool_part = broken
    with pytest.raises(StoreError, match="disk I/O error"):
        invoke_tool(runtime, "waits")
    assert closed == ["StoreError"]


def test_events_published(hookcode_env: Any) -> None:
    runtime = make_runtime(hookcode_env, counting_tool(Body()), explodes)
    events: list[Any] = []
    unsubscribe = runtime.events.subscribe(events.append)
    ok = invoke_tool(runtime, "count", {"name": "e"})
    bad = invoke_tool(runtime, "explodes")
    unsubscribe()
    tool_events = [(e.type, e.properties["call_id"]) for e in events if e.type.startswith("tool.")]
    assert tool_events == [
        ("tool.started", ok.call.call_id),
        ("tool.completed", ok.call.call_id),
        ("tool.started", bad.call.call_id),
        ("tool.failed", bad.call.call_id),
    ]
    failed = next(e for e in events if e.type == "tool.failed")
    assert failed.properties["error"] == "tool blew up"
    assert failed.properties["tool"] == "explodes"
    invoke_tool(runtime, "count", {"name": "e"})
    assert len([e for e in events if e.type.startswith("tool.")]) == 4  # unsubscribed


def test_event_hook_sees_tool_events(hookcode_env: Any) -> None:
    seen: list[str] = []

    class Listener:
        plugin_name = "listener"

        @hookimpl
        def event(self, event: Any) -> None:
            seen.append(event.type)

    runtime = make_runtime(hookcode_env, counting_tool(Body()), plugins=(Listener(),))
    invoke_tool(runtime, "count", {"name": "x"})
    tool_events = [kind for kind in seen if kind.startswith("tool.")]
    assert tool_events[-2:] == ["tool.started", "tool.completed"]
    assert "permission.decided" in seen  # the pre-check's allow


# ---------------------------------------------------------------------------------------------
# the context invoke builds: ctx.call, ctx.tool, ctx.args, ctx.parent; Runtime.call_tool
# ---------------------------------------------------------------------------------------------


def test_hooks_and_the_tool_see_the_call_the_tool_and_the_validated_arguments(
    hookcode_env: Any,
) -> None:
    seen: list[tuple[str, Any, Any, Any]] = []

    class Seer:
        plugin_name = "seer"

        @hookimpl
        def tool_execute_before(self, call: ToolCall, ctx: ToolContext) -> None:
            seen.append(("before", ctx.call is call, ctx.tool, ctx.args))

        @hookimpl
        def tool_execute_after(self, call: ToolCall, result: ToolResult, ctx: ToolContext) -> None:
            seen.append(("after", ctx.call is call, ctx.tool, ctx.args))

    @tool
    async def typed(ctx: ToolContext, path: Path, n: int = 2) -> str:
        """Typed."""
        seen.append(("tool", ctx.call.args, ctx.tool, ctx.args))
        return f"{ctx.session_id == ctx.call.session_id} {ctx.call_id == ctx.call.call_id}"

    runtime = make_runtime(hookcode_env, typed, plugins=(Seer(),))
    outcome = invoke_tool(runtime, "TYPED", {"path": "a/b"})
    assert outcome.result.output == "True True"
    assert [(where, same) for where, same, _, _ in seen] == [
        ("before", True),
        ("tool", {"path": "a/b", "n": 2}),
        ("after", True),
    ]
    for _, _, resolved, args in seen:
        assert resolved is typed and str(resolved) == "typed"
        assert isinstance(args, typed.args_model)
        assert (args.path, args.n) == (Path("a/b"), 2)  # Python names and types


def test_a_sub_call_knows_its_parent_and_follows_its_abort(hookcode_env: Any) -> None:
    contexts: dict[str, ToolContext] = {}

    @tool
    async def inner(ctx: ToolContext) -> str:
        """Inner."""
        contexts["inner"] = ctx
        return "inner"

    @tool
    async def outer(ctx: ToolContext) -> str:
        """Outer."""
        contexts["outer"] = ctx
        return (await ctx.invoke("inner")).output

    runtime = make_runtime(hookcode_env, outer, inner)
    outcome = invoke_tool(runtime, "outer")
    assert outcome.result.output == "inner"
    outer_ctx, inner_ctx = contexts["outer"], contexts["inner"]
    assert outer_ctx.parent is None and inner_ctx.parent is outer_ctx
    assert inner_ctx.call.parent_call_id == outer_ctx.call_id == outcome.call.call_id
    assert (inner_ctx.session_id, inner_ctx.agent) == (outer_ctx.session_id, outer_ctx.agent)
    assert inner_ctx.abort is not outer_ctx.abort
    outer_ctx.abort.abort("stop")
    assert inner_ctx.abort.is_set() and inner_ctx.abort.reason == "stop"


def test_runtime_call_tool_runs_one_call_in_a_new_or_given_session(hookcode_env: Any) -> None:
    body = Body()
    runtime = make_runtime(hookcode_env, counting_tool(body))
    outcome = asyncio.run(runtime.call_tool("count", '{"name": "x"}'))
    assert outcome.ok and outcome.result.output == "x x1"
    assert outcome.call.agent == runtime.default_agent
    session = runtime.store.get_session(outcome.call.session_id)
    assert session is not None and session.title == "invoke count"
    again = asyncio.run(
        runtime.call_tool("count", {"name": "y"}, session_id=session.id, agent="plan")
    )
    assert (again.call.session_id, again.call.agent) == (session.id, "plan")
    abort = AbortSignal()
    abort.abort()
    stopped = asyncio.run(runtime.call_tool("count", {"name": "z"}, abort=abort))
    assert isinstance(stopped.error, ToolAborted)
    assert body.runs == 2
