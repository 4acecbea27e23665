"""The agent loop: a session that talks to a model and runs its tool calls through ``invoke``.

One step sends the history, the system prompt and the agent's tool definitions to the
provider, streams the reply, and starts every tool call as soon as its input is complete
(calls of one step run concurrently). The loop goes on while the model asks for tools, up
to the agent's step limit: with ``steps = N`` requests 1..N offer tools and request N+1
offers none. A permission reject stops the loop; a deny does not. A call cut off by the
output limit is not run. Three identical consecutive calls ask ``doom_loop``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hookcode.errors import HookcodeError, PermissionRejected, ToolAborted
from hookcode.pipeline import Outcome, invoke
from hookcode.providers import (
    Finish,
    Message,
    ModelRequest,
    ReasoningDelta,
    StreamError,
    TextDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
    split_model_id,
)
from hookcode.tools import AbortSignal, ToolCall, ToolContext

if TYPE_CHECKING:
    from hookcode.agents import AgentSpec
    from hookcode.providers import Provider
    from hookcode.runtime import Runtime
    from hookcode.store import SessionRecord

__all__ = ["RunResult", "UserMessage", "resolve_model", "run_headless", "run_session"]

CUT_OFF = "Tool call was cut off by the output token limit and was not run."
DEFAULT_PROMPT = (
    "You are hookcode, a coding agent. Use the tools you are given to read, search, edit and "
    "run code in the user's project. Be concise; say what you did and what remains."
)
TEXT_ONLY = (
    "You have reached the step limit for this task: tools are no longer available. Reply in "
    "text only, saying what was done and what remains."
)


@dataclass
class UserMessage:
    """A user message as the ``chat_message`` hook sees it (mutable)."""

    text: str
    agent: str
    model: str
    parts: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class RunResult:
    session_id: str
    text: str = ""
    steps: int = 0
    finish: str = ""
    outcomes: list[Outcome] = field(default_factory=list)
    rejected: bool = False
    error: str | None = None
    usage: Usage = field(default_factory=Usage)


def providers(runtime: Runtime) -> dict[str, Provider]:
    return runtime.providers()


def resolve_model(
    runtime: Runtime, model: str | None, spec: AgentSpec
) -> tuple[Provider, str, str]:
    """(provider, model name, full id) for the model to use; a clear error when there is none."""
    model_id = model or spec.model or runtime.config.core.model
    available = providers(runtime)
    if not model_id:
        raise HookcodeError(
            "no model configured: pass --model scripted/demo for the offline demo model, or "
            "install a provider plugin (hookcode-provider-anthropic) and set ANTHROPIC_API_KEY, "
            'or set `model = "provider/model"` in hookcode.toml'
        )
    try:
        provider_id, name = split_model_id(model_id)
    except ValueError as exc:
        raise HookcodeError(str(exc)) from None
    provider = available.get(provider_id)
    if provider is None:
        names = ", ".join(sorted(available)) or "none installed"
        raise HookcodeError(
            f"unknown model provider '{provider_id}' in '{model_id}'; available providers: {names}"
        )
    return provider, name, model_id


def _title(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "New session"
    return line[:60]


async def run_session(
    runtime: Runtime,
    text: str,
    *,
    model: str | None = None,
    agent: str | None = None,
    session: SessionRecord | None = None,
    abort: AbortSignal | None = None,
    on_event: Callable[[str, dict[str, Any]], None] | None = None,
) -> RunResult:
    """Run the agent on ``text`` until it stops asking for tools (or hits its step limit)."""
    spec = runtime.agent(agent)
    provider, model_name, model_id = resolve_model(runtime, model, spec)
    abort = abort or AbortSignal()
    emit = on_event or (lambda _type, _data: None)
    if session is None:
        session = runtime.create_session(title=_title(text), agent=spec.name, model=model_id)
    result = RunResult(session_id=session.id)

    message = UserMessage(text=text, agent=spec.name, model=model_id)
    runtime.plugins.call_each("chat_message", message=message, session=session)
    history: list[Message] = [
        Message("user", [{"type": "text", "text": message.text}, *message.parts])
    ]
    recent_calls: list[tuple[str, str]] = []  # (tool, canonical args) since the user message

    step = 0
    while True:
        step += 1
        result.steps = step
        last = spec.steps is not None and step > spec.steps
        tools = [] if last else runtime.registry.definitions(spec.name, session.id, model_id)
        system = [spec.prompt or DEFAULT_PROMPT, _environment(runtime)]
        runtime.plugins.call_each(
            "system_prompt", parts=system, session=session, agent=spec, model=model_id
        )
        params: dict[str, Any] = {
            "temperature": spec.temperature,
            "top_p": spec.top_p,
            "max_tokens": None,
            "options": dict(spec.options),
        }
        runtime.plugins.call_each(
            "chat_params", params=params, session=session, agent=spec, model=model_id
        )
        messages = list(history)
        if last:
            messages.append(Message("assistant", [{"type": "text", "text": TEXT_ONLY}]))
        request = ModelRequest(
            model=model_name, system=system, messages=messages, tools=tools, params=params
        )

        text_parts: list[str] = []
        started: dict[str, str] = {}  # call id -> tool name (input not complete yet)
        tasks: list[tuple[ToolCall, asyncio.Task[Outcome]]] = []
        finish = "stop"
        try:
            async for event in provider.stream(request):
                if abort.is_set():
                    raise ToolAborted()
                if isinstance(event, TextDelta):
                    text_parts.append(event.text)
                    emit("text", {"text": event.text})
                elif isinstance(event, ReasoningDelta):
                    emit("reasoning", {"text": event.text})
                elif isinstance(event, ToolCallStart):
                    started[event.id] = event.name
                elif isinstance(event, ToolCallEnd):
                    started.pop(event.id, None)
                    if last:
                        continue  # no tools on the last request: such calls are not run
                    call = ToolCall(
                        tool=event.name,
                        args=event.input,
                        call_id=event.id,
                        session_id=session.id,
                        agent=spec.name,
                        model=model_id,
                    )
                    emit("tool", {"tool": event.name, "args": event.input, "call_id": event.id})
                    tasks.append(
                        (call, asyncio.create_task(_run_call(runtime, call, abort, recent_calls)))
                    )
                elif isinstance(event, Finish):
                    finish = event.reason
                    _add_usage(result.usage, event.usage)
                elif isinstance(event, StreamError):
                    raise HookcodeError(f"model error: {event.message}")
        except (HookcodeError, ToolAborted) as exc:
            abort.abort("error") if isinstance(exc, HookcodeError) else None
            for _call, task in tasks:
                task.cancel()
            await asyncio.gather(*(t for _c, t in tasks), return_exceptions=True)
            result.error = str(exc) if isinstance(exc, HookcodeError) else "aborted"
            result.finish = "error"
            return result

        outcomes = [await task for _call, task in tasks]
        assistant = Message("assistant", [])
        step_text = "".join(text_parts)
        if step_text:
            assistant.content.append({"type": "text", "text": step_text})
            result.text = step_text
        for call, _task in tasks:
            assistant.content.append(
                {"type": "tool_use", "id": call.call_id, "name": call.tool, "input": call.args}
            )
        tool_message = Message("tool", [])
        for outcome in outcomes:
            result.outcomes.append(outcome)
            emit(
                "tool_result",
                {
                    "tool": outcome.call.tool,
                    "call_id": outcome.call.call_id,
                    "ok": outcome.ok,
                    "title": outcome.result.title if outcome.ok and outcome.result else "",
                    "error": outcome.error_text,
                },
            )
            tool_message.content.append(_result_block(outcome))
            if isinstance(outcome.error, PermissionRejected) and not outcome.error.feedback:
                result.rejected = True
        for call_id, name in started.items():  # cut off by the output limit: never run
            assistant.content.append({"type": "tool_use", "id": call_id, "name": name, "input": {}})
            tool_message.content.append(
                {
                    "type": "tool_result",
                    "id": call_id,
                    "output": CUT_OFF,
                    "is_error": True,
                    "attachments": [],
                }
            )
            emit("tool_result", {"tool": name, "call_id": call_id, "ok": False, "error": CUT_OFF})
        history.append(assistant)
        if tool_message.content:
            history.append(tool_message)
        result.finish = finish
        runtime.store.update_session(
            session.id,
            tokens_in=result.usage.input,
            tokens_out=result.usage.output,
            cost=result.usage.cost,
        )
        if result.rejected or last or finish != "tool-calls" or not tasks:
            return result


async def _run_call(
    runtime: Runtime, call: ToolCall, abort: AbortSignal, recent: list[tuple[str, str]]
) -> Outcome:
    ctx = ToolContext(
        runtime,
        session_id=call.session_id,
        call_id=call.call_id,
        agent=call.agent,
        model=call.model,
        abort=AbortSignal(abort),
        tool=call.tool,
    )
    key = (call.tool, json.dumps(call.args, sort_keys=True, default=str))
    recent.append(key)
    if len(recent) >= 3 and recent[-3:] == [key] * 3:
        try:
            await ctx.ask(
                "doom_loop", [call.tool], [call.tool], {"tool": call.tool, "input": call.args}
            )
        except Exception as exc:  # a refusal of doom_loop fails this call only (or stops on reject)
            return Outcome(call, error=exc)
    return await invoke(call, ctx)


def _result_block(outcome: Outcome) -> dict[str, Any]:
    if outcome.ok and outcome.result is not None:
        return {
            "type": "tool_result",
            "id": outcome.call.call_id,
            "output": outcome.result.output,
            "is_error": False,
            "attachments": [a.to_dict() for a in outcome.result.attachments],
        }
    return {
        "type": "tool_result",
        "id": outcome.call.call_id,
        "output": outcome.error_text or "",
        "is_error": True,
        "attachments": [],
    }


def _add_usage(total: Usage, step: Usage) -> None:
    total.input += step.input
    total.output += step.output
    total.cache_read += step.cache_read
    total.cache_write += step.cache_write
    total.reasoning += step.reasoning
    total.cost += step.cost


def _environment(runtime: Runtime) -> str:
    import platform

    return (
        "<env>\n"
        f"  Working directory: {runtime.cwd}\n"
        f"  Project root: {runtime.worktree}\n"
        f"  Is a git repository: {(runtime.worktree / '.git').exists()}\n"
        f"  Platform: {platform.system().lower()}\n"
        "</env>"
    )


def run_headless(
    runtime: Runtime,
    text: str,
    *,
    model: str | None = None,
    agent: str | None = None,
    as_json: bool = False,
) -> int:
    """``hookcode run``: stream the reply to stdout, tool activity to stderr; the exit code is 1
    when the run failed or a call was refused, naming the refused calls."""

    def show(kind: str, data: dict[str, Any]) -> None:
        if as_json:
            print(json.dumps({"type": kind, **data}, default=str), flush=True)
        elif kind == "text":
            sys.stdout.write(data["text"])
            sys.stdout.flush()
        elif kind == "tool":
            args = json.dumps(data["args"], default=str)
            print(f"\n-> {data['tool']} {args[:200]}", file=sys.stderr, flush=True)
        elif kind == "tool_result":
            mark = "ok" if data["ok"] else f"error: {data['error']}"
            print(
                f"   {data['tool']}: {data.get('title') or ''} {mark}".rstrip(),
                file=sys.stderr,
                flush=True,
            )

    abort = AbortSignal()
    try:
        result = asyncio.run(
            run_session(runtime, text, model=model, agent=agent, abort=abort, on_event=show)
        )
    except KeyboardInterrupt:
        abort.abort("interrupted")
        print("\nhookcode: interrupted", file=sys.stderr)
        return 130
    if not as_json and result.text and not result.text.endswith("\n"):
        sys.stdout.write("\n")
    refused = [o for o in result.outcomes if isinstance(o.error, PermissionRejected)]
    if as_json:
        print(
            json.dumps(
                {
                    "type": "done",
                    "session_id": result.session_id,
                    "steps": result.steps,
                    "finish": result.finish,
                    "error": result.error,
                    "refused": [o.call.tool for o in refused],
                }
            ),
            flush=True,
        )
    if result.error:
        print(f"hookcode: error: {result.error}", file=sys.stderr)
        return 1
    if refused:
        names = ", ".join(f"{o.call.tool} ({o.call.call_id})" for o in refused)
        print(
            f"hookcode: refused tool calls (no one to approve them; use --yes or a terminal): "
            f"{names}",
            file=sys.stderr,
        )
        return 1
    return 0
