"""``invoke``: the single choke point every tool call passes.

From the model, ``batch``, a sub-agent, MCP or the CLI's ``tools call``, in this order:

1. resolve the tool for the agent (a case-insensitive match, else an error naming the
   available tools);
2. parse and validate the arguments (defaults applied; errors name each bad field);
3. ``tool_execute_before`` hooks, then validate again;
4. the permission pre-check (tools that do not ask themselves), then ``tool_execute``
   (wrappers, then the tool) under the tool's timeout and the abort signal;
5. truncation, unless the tool set ``metadata["truncated"]`` itself; then every known secret
   is redacted from the output, title and metadata (:mod:`hookcode.secrets`), so the model,
   the hooks and the store all see the same redacted result;
6. ``tool_execute_after`` (success) or ``tool_execute_error`` (failure);
7. the call is recorded (store, events): pending -> running -> completed | error; an error's
   message is redacted too, and the store gets a redacted copy of the arguments as they were
   given (what the model produced, replayed to it in the history; hooks and the tool see the
   validated ones).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from typing import TYPE_CHECKING, Any

from hookcode.calls import AbortSignal, ToolResult, unrecorded_running
from hookcode.calls import Outcome as Outcome
from hookcode.errors import (
    PermissionRefused,
    ToolAborted,
    ToolBlocked,
    ToolError,
    ToolTimeout,
)
from hookcode.store import ToolPartRecord
from hookcode.tools import Host, ToolContext

if TYPE_CHECKING:
    import pluggy

    from hookcode.calls import ToolCall
    from hookcode.registry import ToolEntry

__all__ = ["Outcome", "invoke"]


class HookFailed(ToolError):
    """A tool-call hook raised: the call fails closed, naming the plugin."""

    def __init__(self, plugin: str, hook: str, exc: BaseException):
        super().__init__(f"Plugin '{plugin}' failed in {hook}: {type(exc).__name__}: {exc}")
        self.plugin = plugin
        self.hook = hook
        self.__cause__ = exc


async def invoke(
    runtime: Host,
    call: ToolCall,
    *,
    abort: AbortSignal | None = None,
    parent: ToolContext | None = None,
) -> Outcome:
    """Run one call through the whole pipeline; never raises for a failing call (the
    Outcome carries the error), except for cancellation of the caller's task.

    ``invoke`` builds the call's :class:`~hookcode.tools.ToolContext`. ``abort`` is the
    call's abort signal (default: one that follows ``parent``'s, else a new one); ``parent``
    is the context of the call making this one (a tool calling a tool, ``ctx.invoke``): the
    new call's ``parent_call_id`` names it unless already set."""
    if parent is not None:
        if abort is None:
            abort = AbortSignal(parent.abort)
        if call.parent_call_id is None:
            call.parent_call_id = parent.call.call_id
    ctx = ToolContext(runtime, call, abort=abort, parent=parent)
    return await _invoke(runtime, call, ctx)


async def _invoke(runtime: Host, call: ToolCall, ctx: ToolContext) -> Outcome:
    plugins = runtime.plugins
    part = ToolPartRecord(
        id=call.call_id,
        session_id=call.session_id,
        tool=str(call.tool),
        state="running",
        input=call.args if not isinstance(call.args, str) else {"raw": call.args},
        message_id=call.message_id,
        time_start=time.time(),
    )
    runtime.events.publish(
        "tool.started", session_id=call.session_id, call_id=call.call_id, tool=call.tool
    )
    # the running part is committed the first time the call waits (a permission prompt,
    # the tool's I/O, a worker thread) or records something (a sub-call): a call that runs
    # to its end without either is never seen running by anyone, and commits once
    running = _Running(runtime, part, unrecorded_running.get())
    token = unrecorded_running.set(running)
    try:
        return await _Eager(_body(runtime, plugins, call, ctx, running), running.commit)
    finally:
        unrecorded_running.reset(token)


class _Running:
    """A call's running state, committed at most once, after its parent call's."""

    __slots__ = ("due", "parent", "part", "runtime")

    def __init__(self, runtime: Any, part: ToolPartRecord, parent: _Running | None) -> None:
        self.runtime = runtime
        self.part = part
        self.parent = parent
        self.due = True

    def commit(self) -> None:
        if self.due:
            self.due = False
            if self.parent is not None:
                self.parent.commit()
            self.runtime.record_part(self.part)

    def settle(self) -> None:
        """The call ended: its final state is recorded next (the parent's running first)."""
        self.due = False
        if self.parent is not None:
            self.parent.commit()


async def _body(
    runtime: Any, plugins: Any, call: ToolCall, ctx: ToolContext, running: _Running
) -> Outcome:
    part = running.part
    try:
        # 1. resolve
        entry: ToolEntry = runtime.registry.resolve(
            call.tool, call.agent, call.session_id, call.model
        )
        tool = ctx.tool = entry.tool
        call.tool = tool.name
        # 2. validate (defaults applied)
        # (the part keeps the arguments as they were given: the history sent back to the
        # model carries exactly what it produced, not the defaults filled in here)
        given = call.args if type(call.args) is dict else tool.parse_arguments(call.args)
        part.tool, part.input = tool.name, given
        validated = ctx.args = tool.validate(given)
        call.args = tool.dump(validated)
        # 3. before hooks, then validate again
        if plugins.has_impls("tool_execute_before"):
            await _before_hooks(plugins, call, ctx)
            validated = ctx.args = tool.validate(call.args)
            call.args = tool.dump(validated)
        # 4. permission pre-check, then tool_execute under timeout and abort
        if ctx.abort.is_set():
            raise ToolAborted()
        if not tool.asks_permission:
            # the votes settle most calls at once (ctx.ask's synchronous start); a call left
            # at "ask" waits under the abort signal: one queued behind another prompt must
            # stop too
            pending = runtime.permissions.decide(
                ctx, permission=entry.permission, patterns=["*"], always=["*"], metadata={}
            )
            if pending is not None:
                await _guarded(runtime.permissions.wait(ctx, pending), ctx, None)
        result = await _guarded(_execute_chain(plugins, call, ctx), ctx, runtime.timeout_for(tool))
        # 5. truncation, then the result's known secrets (one pass over a bounded output)
        if "truncated" not in result.metadata:
            runtime.truncate(result, tool, ctx)
        _redact_result(runtime, result)
        # 6. after hooks
        for impl in plugins.impls("tool_execute_after"):
            try:
                value = plugins._call(
                    impl, "tool_execute_after", {"call": call, "result": result, "ctx": ctx}
                )
                if value is not None and inspect.isawaitable(value):
                    await value
            except Exception as exc:
                raise HookFailed(impl.plugin_name, "tool_execute_after", exc) from exc
        outcome = Outcome(call, result=result)
    except asyncio.CancelledError:
        outcome = Outcome(call, error=ToolAborted())
        _finish(runtime, running, outcome)
        raise
    except Exception as exc:
        outcome = Outcome(call, error=exc)
        outcome = await _error_hooks(plugins, call, ctx, outcome)
        if outcome.result is not None:  # recovered by an error hook
            _redact_result(runtime, outcome.result)
    _finish(runtime, running, outcome)
    return outcome


def _redact_result(runtime: Any, result: ToolResult) -> None:
    """Replace the known secrets in a result's output, title and metadata, in place."""
    redactor = runtime.secrets.redactor()
    if not redactor:
        return
    result.output = redactor.redact(result.output)
    if result.title:
        result.title = redactor.redact(result.title)
    if result.metadata:
        result.metadata = redactor.redact_value(result.metadata)


async def _before_hooks(plugins: Any, call: ToolCall, ctx: ToolContext) -> None:
    for impl in plugins.impls("tool_execute_before"):
        try:
            value = plugins._call(impl, "tool_execute_before", {"call": call, "ctx": ctx})
            if value is not None and inspect.isawaitable(value):
                await value
        except ToolBlocked:
            raise
        except Exception as exc:
            raise HookFailed(impl.plugin_name, "tool_execute_before", exc) from exc
        if not isinstance(call.args, dict):
            raise HookFailed(
                impl.plugin_name, "tool_execute_before", TypeError("call.args must stay a dict")
            )


async def _guarded(coro: Any, ctx: ToolContext, timeout: float | None) -> ToolResult:
    """Await ``coro`` in this task until it ends, the abort signal fires, or the timeout
    passes. Like ``asyncio.timeout``: the abort or the timer cancels this task where it
    waits, and the CancelledError that causes is turned into ToolAborted / ToolTimeout
    (one this task was also sent from elsewhere goes on up). The call never moves to
    another task, so what it enters (an anyio cancel scope, a lock) it leaves in the same."""
    signal = ctx.abort
    if signal.is_set():
        coro.close()
        raise ToolAborted()
    task = asyncio.current_task()
    assert task is not None, "invoke() runs in an asyncio task"
    loop = task.get_loop()
    guard = _Guard(task)
    on_abort = guard.abort_from_any_thread
    signal.add_callback(on_abort)
    timer = loop.call_later(timeout, guard.fire, "timeout") if timeout is not None else None
    try:
        result = await coro
    except asyncio.CancelledError:
        if guard.fired is not None and task.uncancel() <= guard.entry:
            raise guard.error(timeout) from None
        raise
    finally:
        guard.active = False
        if timer is not None:
            timer.cancel()
        signal.remove_callback(on_abort)
    if guard.fired is not None:  # the call caught the cancel and ended anyway: still stopped
        if task.cancelling() > guard.entry:
            task.uncancel()
        raise guard.error(timeout)
    return result  # type: ignore[no-any-return]


class _Guard:
    """What :func:`_guarded` sets off on its task: the first of abort and timeout."""

    __slots__ = ("active", "entry", "fired", "loop", "task")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task = task
        self.loop = task.get_loop()
        self.entry = task.cancelling()
        self.active = True
        self.fired: str | None = None

    def fire(self, why: str) -> None:  # on the loop's thread
        if self.active and self.fired is None:
            self.fired = why
            self.task.cancel()

    def abort_from_any_thread(self) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            self.loop.call_soon_threadsafe(self.fire, "abort")

    def error(self, timeout: float | None) -> ToolError:
        if self.fired == "timeout":
            return ToolTimeout(f"Tool execution timed out after {timeout:g} seconds")
        return ToolAborted()


class _Eager:
    """Await a coroutine in the caller's task, calling ``on_wait`` once, just before it
    first gives way to the event loop (not at all when it finishes without waiting)."""

    __slots__ = ("coro", "on_wait")

    def __init__(self, coro: Any, on_wait: Any) -> None:
        self.coro = coro
        self.on_wait = on_wait

    def __await__(self) -> Any:
        coro = self.coro
        try:
            first = coro.send(None)
        except StopIteration as stop:
            return stop.value
        try:
            self.on_wait()
        except Exception as exc:  # raised where the coroutine waits: it cleans up
            try:
                first = coro.throw(exc)
            except StopIteration as stop:
                return stop.value
        return (yield from _drive(coro, first))


def _drive(coro: Any, value: Any) -> Any:
    """Go on driving a coroutine already started that is waiting on ``value``: what
    ``yield from`` does, from the second step on."""
    while True:
        try:
            sent = yield value
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:
            try:
                value = coro.throw(exc)
            except StopIteration as stop:
                return stop.value
        else:
            try:
                value = coro.send(sent)
            except StopIteration as stop:
                return stop.value


async def _execute_chain(plugins: Any, call: ToolCall, ctx: ToolContext) -> ToolResult:
    """``tool_execute`` as pluggy would call it (firstresult, new-style wrappers), but with
    async support and each failure attributed to its plugin."""
    impls: list[pluggy.HookImpl] = plugins.impls("tool_execute")
    wrappers = [i for i in impls if i.wrapper or i.hookwrapper]
    plain = [i for i in impls if not (i.wrapper or i.hookwrapper)]
    kwargs = {"call": call, "ctx": ctx}

    async def innermost() -> ToolResult:
        for impl in plain:
            value = plugins._call(impl, "tool_execute", kwargs)
            if value is not None and inspect.isawaitable(value):
                value = await value
            if value is not None:
                if isinstance(value, str):
                    value = ToolResult(output=value)
                if not isinstance(value, ToolResult):
                    raise HookFailed(
                        impl.plugin_name,
                        "tool_execute",
                        TypeError(f"returned {type(value).__name__}, not a ToolResult"),
                    )
                return value
        raise ToolError(f"no tool_execute implementation answered for tool '{call.tool}'")

    async def run(index: int) -> ToolResult:
        if index == len(wrappers):
            return await innermost()
        impl = wrappers[index]
        return await _run_wrapper(plugins, impl, kwargs, lambda: run(index + 1))

    return await run(0)


async def _run_wrapper(plugins: Any, impl: Any, kwargs: dict[str, Any], inner: Any) -> ToolResult:
    name = impl.plugin_name
    try:
        gen = plugins._call(impl, "tool_execute", kwargs)
        is_async = inspect.isasyncgen(gen)
        if is_async:
            await gen.__anext__()
        else:
            next(gen)
    except (StopIteration, StopAsyncIteration) as exc:
        raise HookFailed(name, "tool_execute", RuntimeError("wrapper did not yield")) from exc
    except Exception as exc:
        raise HookFailed(name, "tool_execute", exc) from exc

    try:
        result = await inner()
    except BaseException as exc:
        # hand the failure to the wrapper; it may re-raise it (normal) or replace it
        try:
            if is_async:
                await gen.athrow(exc)
            else:
                gen.throw(exc)
        except StopIteration as stop:
            if stop.value is None or isinstance(exc, PermissionRefused | ToolAborted):
                # a refusal or an abort stays one, whatever a wrapper answers
                raise exc from None
            return stop.value
        except StopAsyncIteration:
            raise exc from None
        except BaseException as raised:
            if raised is exc:
                raise
            if isinstance(raised, asyncio.CancelledError):
                raise
            raise HookFailed(name, "tool_execute", raised) from raised
        raise HookFailed(name, "tool_execute", RuntimeError("wrapper yielded twice")) from None

    try:
        if is_async:
            await gen.asend(result)
        else:
            gen.send(result)
    except StopIteration as stop:
        value = stop.value
        return value if isinstance(value, ToolResult) else result
    except StopAsyncIteration:
        return result
    except Exception as exc:
        raise HookFailed(name, "tool_execute", exc) from exc
    raise HookFailed(name, "tool_execute", RuntimeError("wrapper yielded twice"))


async def _error_hooks(plugins: Any, call: ToolCall, ctx: ToolContext, outcome: Outcome) -> Outcome:
    error = outcome.error
    assert error is not None
    recoverable = not isinstance(error, PermissionRefused | ToolAborted)
    for impl in plugins.impls("tool_execute_error"):
        try:
            value = plugins._call(
                impl, "tool_execute_error", {"call": call, "error": error, "ctx": ctx}
            )
            if value is not None and inspect.isawaitable(value):
                value = await value
        except Exception as exc:
            plugins.report(impl.plugin_name, "tool_execute_error", exc)
            continue
        if recoverable and isinstance(value, ToolResult):
            return Outcome(call, result=value)
    return outcome


def _finish(runtime: Any, running: _Running, outcome: Outcome) -> None:
    running.settle()
    part = running.part
    part.time_end = time.time()
    if outcome.ok and outcome.result is not None:
        result = outcome.result
        part.state = "completed"
        part.output = result.output
        part.title = result.title
        part.metadata = result.metadata
        part.attachments = [a.to_dict() for a in result.attachments]
        runtime.record_part(part)
        runtime.events.publish(
            "tool.completed",
            session_id=part.session_id,
            call_id=part.id,
            tool=part.tool,
            title=result.title,
        )
    else:
        part.state = "error"
        text = outcome.error_text
        redacted = runtime.secrets.redact(text) if text else text
        if redacted != text:
            outcome.message = redacted  # what the model and the front end are told, too
        part.error = redacted
        runtime.record_part(part)
        runtime.events.publish(
            "tool.failed",
            session_id=part.session_id,
            call_id=part.id,
            tool=part.tool,
            error=part.error,
        )
