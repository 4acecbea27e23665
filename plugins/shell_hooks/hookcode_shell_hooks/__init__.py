"""shell_hooks: Claude-Code-compatible shell hooks, built on hookcode's pluggy hooks.

Configured in ``[[hooks.PreToolUse]]``, ``[[hooks.PostToolUse]]``, ``[[hooks.UserPromptSubmit]]``
and ``[[hooks.Stop]]`` entries (``matcher``, ``command``, ``timeout`` in seconds) and, with
``[shell_hooks] claude_settings = true``, in Claude Code's own settings files
(:mod:`hookcode_shell_hooks.claude_settings`; the project's only in a trusted folder). Each hook
reads what Claude Code sends on stdin (``session_id``, ``transcript_path`` (the session as a
Claude-Code-style JSONL transcript, see :mod:`hookcode_shell_hooks.transcript`), ``cwd``,
``permission_mode``, ``hook_event_name``, and per event ``tool_name``, ``tool_input``,
``tool_use_id``, ``tool_response``, ``prompt``, ``stop_hook_active``; tool names and inputs as
Claude Code gives them, see :mod:`hookcode_shell_hooks.claude`) and answers the way Claude Code
reads it, so existing hook scripts work unchanged:

* exit 0: stdout may be a JSON object — ``decision: "block"`` + ``reason``;
  ``hookSpecificOutput`` with ``permissionDecision`` (``allow`` | ``deny`` | ``ask``) and
  ``permissionDecisionReason``, ``updatedInput`` (merged into the arguments, either key
  spelling, validated again by core), ``additionalContext``; ``continue: false`` +
  ``stopReason``. For ``UserPromptSubmit`` plain stdout is context for the model.
* exit 2: blocks, with stderr as the reason (PreToolUse: the call is refused and the model
  reads why; PostToolUse: the model reads it after the output; UserPromptSubmit: the message
  is not sent and the run stops).
* anything else — another exit code, a missing command, a timeout, output that is not JSON —
  is reported on stderr (one line naming the hook) and never blocks.

Where the hooks attach: PreToolUse = ``tool_execute_before`` (+ ``permission_ask`` /
``permission_prompt`` for ``ask`` / ``allow``), PostToolUse = ``tool_execute_after``,
UserPromptSubmit = ``chat_message``, Stop = ``session_stop`` (a blocking Stop hook keeps the
agent going with its reason, as in Claude Code). Hooks run in the
working directory with the runtime's environment plus ``CLAUDE_PROJECT_DIR`` (the worktree);
the hooks of one event run in parallel.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from hookcode import hookimpl
from hookcode.stash import StashKey

if TYPE_CHECKING:
    from hookcode import Host
    from hookcode.permission import PermissionRequest, Reply, Vote
    from hookcode.runtime import Runtime
    from hookcode.tools import ToolCall, ToolContext, ToolResult

    from hookcode_shell_hooks.runner import HookRun
    from hookcode_shell_hooks.settings import Hook

__all__ = [
    "chat_message",
    "config_schema",
    "permission_ask",
    "permission_prompt",
    "session_stop",
    "tool_execute_after",
    "tool_execute_before",
    "tool_execute_error",
]

#: call id -> "allow" | "ask", what PreToolUse hooks decided for a running call of the run
_DECISIONS = StashKey["dict[str, str]"]()
#: call id -> the ``additionalContext`` PreToolUse hooks gave, for the model with the output
_CONTEXTS = StashKey["dict[str, list[str]]"]()
#: the runtime's hooks by event: the config's entries, then Claude Code's files' (if enabled)
_HOOKS = StashKey["dict[str, list[Hook]]"]()


# ----------------------------------------------------------------------------------- config


@hookimpl
def config_schema() -> dict[str, Any]:
    from hookcode_shell_hooks.settings import hooks_model, options_model

    return {"hooks": hooks_model(), "shell_hooks": options_model()}


def _entries(runtime: Host | None, event: str) -> list[Hook]:
    if runtime is None:
        return []
    hooks = runtime.stash.get(_HOOKS, None)
    if hooks is None:
        hooks = runtime.stash.setdefault(_HOOKS, _load_hooks(runtime))
    return hooks.get(event, [])


def _load_hooks(runtime: Host) -> dict[str, list[Hook]]:
    """Every hook of the run, by event (read once per runtime)."""
    from hookcode_shell_hooks.settings import EVENTS, Hook

    section = runtime.config.section("hooks")
    hooks = {
        event: [
            Hook(entry.command, entry.matcher, entry.timeout)
            for entry in getattr(section, event, None) or []
        ]
        for event in EVENTS
    }
    options = runtime.config.section("shell_hooks")
    if not getattr(options, "claude_settings", False):
        return hooks
    from hookcode.trust import describe_path

    from hookcode_shell_hooks.claude_settings import claude_hooks

    home = runtime.env.get("HOME") or ""

    def describe(path: Any) -> str:
        text = describe_path(path, runtime.worktree)
        return "~" + text[len(home) :] if home and text.startswith(home + "/") else text

    found = claude_hooks(runtime.env, runtime.worktree, trusted=runtime.trusted, describe=describe)
    for problem in found.problems:
        runtime.plugins.warn(f"shell_hooks: {problem}")
    if found.untrusted:
        runtime.plugins.warn(
            f"shell_hooks: this folder is not trusted ({runtime.worktree}); the hooks of "
            f"{', '.join(found.untrusted)} do not run; run 'hookcode trust' to trust it"
        )
    if found.disabled_by is not None:
        runtime.plugins.warn(
            f"shell_hooks: {found.disabled_by} sets disableAllHooks: Claude Code's settings "
            "files run no hooks"
        )
    for event, entries in found.hooks.items():
        hooks[event] = hooks.get(event, []) + entries
    return hooks


def _payload(
    runtime: Host, event: str, session_id: str, call: ToolCall | None = None, **extra: Any
) -> dict[str, Any]:
    from hookcode_shell_hooks.transcript import write_transcript

    try:
        transcript = write_transcript(runtime, session_id, call)
    except Exception as exc:  # a transcript we cannot build: the hooks run without one
        runtime.plugins.warn(f"shell_hooks: cannot write the session's transcript: {exc}")
        transcript = None
    return {
        "session_id": session_id,
        "transcript_path": transcript,
        "cwd": str(runtime.cwd),
        "permission_mode": "default",
        "hook_event_name": event,
        **extra,
    }


def _env(runtime: Host) -> dict[str, str]:
    return {**runtime.env, "CLAUDE_PROJECT_DIR": str(runtime.worktree)}


def _selected(runtime: Host, event: str, call: ToolCall, tool: Any) -> list[tuple[int, Hook]]:
    """The (index, hook) pairs of ``event`` whose matcher selects the call's tool (``tool``:
    the tool object, whose declarations give an MCP tool's Claude Code name)."""
    entries = _entries(runtime, event)
    if not entries:
        return []
    from hookcode_shell_hooks.claude import claude_name
    from hookcode_shell_hooks.settings import matches

    names = (call.tool, claude_name(call.tool, tool))
    return _once([(i, entry) for i, entry in enumerate(entries) if matches(entry.matcher, names)])


def _once(selected: list[tuple[int, Hook]]) -> list[tuple[int, Hook]]:
    """Each command once per event, as Claude Code runs them (the same hook in hookcode's
    config and in a Claude Code settings file, or in two of those files)."""
    seen: set[str | tuple[str, ...]] = set()
    out = []
    for i, entry in selected:
        key = entry.command if isinstance(entry.command, str) else tuple(entry.command)
        if key not in seen:
            seen.add(key)
            out.append((i, entry))
    return out


async def _run_tool_hooks(
    ctx: ToolContext, event: str, call: ToolCall, selected: list[tuple[int, Hook]], **extra: Any
) -> list[HookRun]:
    import asyncio

    from hookcode_shell_hooks.claude import claude_name, to_claude_input
    from hookcode_shell_hooks.runner import label_of, run_hook

    runtime = ctx.runtime
    payload = _payload(
        runtime,
        event,
        call.session_id,
        call,
        tool_name=claude_name(call.tool, ctx.tool),
        tool_input=to_claude_input(call.args, call.tool, str(ctx.cwd)),
        tool_use_id=call.call_id,
        **extra,
    )
    env = _env(runtime)
    return list(
        await asyncio.gather(
            *(
                run_hook(
                    label_of(event, i, entry.command, entry.source),
                    entry.command,
                    payload,
                    cwd=str(runtime.cwd),
                    env=env,
                    timeout=entry.timeout,
                    processes=runtime.processes,
                )
                for i, entry in selected
            )
        )
    )


def _run_sync_hooks(runtime: Host, event: str, payload: dict[str, Any]) -> list[HookRun]:
    from concurrent.futures import ThreadPoolExecutor

    from hookcode_shell_hooks.runner import label_of, run_hook_sync

    selected = _once(list(enumerate(_entries(runtime, event))))
    if not selected:
        return []
    env = _env(runtime)

    def run(item: tuple[int, Hook]) -> HookRun:
        i, entry = item
        return run_hook_sync(
            label_of(event, i, entry.command, entry.source),
            entry.command,
            payload,
            cwd=str(runtime.cwd),
            env=env,
            timeout=entry.timeout,
            processes=runtime.processes,
        )

    if len(selected) == 1:
        return [run(selected[0])]
    with ThreadPoolExecutor(max_workers=len(selected)) as pool:
        return list(pool.map(run, selected))


def _report(runtime: Host, run: HookRun, problem: str) -> None:
    runtime.plugins.warn(f"{run.label} {problem}; ignored (not blocking)")


class _Verdict:
    """What the hooks of one event said, read the way Claude Code reads it."""

    def __init__(self) -> None:
        self.blocks: list[str] = []
        self.context: list[str] = []
        self.permission: str | None = None
        self.updated: list[dict[str, Any]] = []
        self.halted = False  # ``continue: false``: the run ends (Stop: whatever else was said)


def _read(
    runtime: Host, event: str, runs: list[HookRun], *, plain_stdout_is_context: bool = False
) -> _Verdict:
    verdict = _Verdict()
    for run in runs:
        if run.problem is not None:
            _report(runtime, run, run.problem)
            continue
        if run.status == 2:
            verdict.blocks.append(run.stderr_text() or f"{run.label} exited with status 2")
            continue
        if run.status != 0:
            detail = run.stderr_text().splitlines()[-1:] or ["no message"]
            _report(runtime, run, f"exited with status {run.status}: {detail[0]}")
            continue
        output, problem = run.json_output()
        if problem is not None:
            if plain_stdout_is_context:
                verdict.context.append(run.stdout.strip())
            else:
                _report(runtime, run, problem)
            continue
        if output is not None:
            _read_json(runtime, event, run, output, verdict)
    return verdict


def _read_json(
    runtime: Host, event: str, run: HookRun, output: dict[str, Any], verdict: _Verdict
) -> None:
    message = output.get("systemMessage")
    if isinstance(message, str) and message.strip():
        runtime.plugins.warn(f"{run.label}: {message.strip()}")  # shown to the user
    if output.get("continue") is False:
        verdict.halted = True
        verdict.blocks.append(str(output.get("stopReason") or f"{run.label} stopped the run"))
        return
    decision = output.get("decision")
    reason = output.get("reason")
    if decision == "block":
        verdict.blocks.append(str(reason or f"{run.label} blocked it"))
    elif decision == "approve" and event == "PreToolUse":
        verdict.permission = verdict.permission or "allow"
    elif decision not in (None, "approve", "undefined"):
        _report(runtime, run, f"returned an unknown decision {decision!r}")
    specific = output.get("hookSpecificOutput")
    if specific is None:
        return
    if not isinstance(specific, dict):
        _report(runtime, run, "returned a hookSpecificOutput that is not an object")
        return
    context = specific.get("additionalContext")
    if isinstance(context, str) and context.strip():
        verdict.context.append(context.strip())
    if event != "PreToolUse":
        return
    permission = specific.get("permissionDecision")
    if permission == "deny":
        why = specific.get("permissionDecisionReason") or reason
        verdict.blocks.append(str(why or f"{run.label} denied it"))
    elif permission in ("allow", "ask"):
        # ask beats allow, as among hookcode's own votes
        if verdict.permission != "ask":
            verdict.permission = permission
    elif permission is not None:
        _report(runtime, run, f"returned an unknown permissionDecision {permission!r}")
    updated = specific.get("updatedInput")
    if isinstance(updated, dict):
        verdict.updated.append(updated)
    elif updated is not None:
        _report(runtime, run, "returned an updatedInput that is not an object")


# ------------------------------------------------------------------------------- tool calls


@hookimpl
def tool_execute_before(call: ToolCall, ctx: ToolContext) -> Awaitable[None] | None:
    """PreToolUse (a coroutine only when a hook matches: no cost for the other calls)."""
    selected = _selected(ctx.runtime, "PreToolUse", call, ctx.tool)
    return _pre_tool_use(call, ctx, selected) if selected else None


async def _pre_tool_use(call: ToolCall, ctx: ToolContext, selected: list[tuple[int, Hook]]) -> None:
    from hookcode.errors import ToolBlocked

    from hookcode_shell_hooks.claude import from_claude_input

    runtime = ctx.runtime
    runs = await _run_tool_hooks(ctx, "PreToolUse", call, selected)
    verdict = _read(runtime, "PreToolUse", runs)
    if verdict.blocks:
        raise ToolBlocked("Blocked by a PreToolUse hook: " + "\n".join(verdict.blocks))
    for updated in verdict.updated:
        call.args = {**call.args, **from_claude_input(updated, call.args, call.tool)}
    if verdict.permission is not None:
        runtime.stash.setdefault(_DECISIONS, {})[call.call_id] = verdict.permission
    if verdict.context:
        runtime.stash.setdefault(_CONTEXTS, {})[call.call_id] = verdict.context


@hookimpl
def permission_ask(request: PermissionRequest, runtime: Host) -> Vote | None:
    """A PreToolUse ``ask``: the call asks, even where the rules allow it."""
    if _decision(runtime, request) != "ask":
        return None
    from hookcode.permission import Vote

    return Vote("ask", "a PreToolUse hook asked for confirmation")


@hookimpl(tryfirst=True)
def permission_prompt(request: PermissionRequest, runtime: Host) -> Reply | None:
    """A PreToolUse ``allow``: an ``ask`` of that call is approved once without prompting (a
    deny of the rules still stands: it never reaches a prompt)."""
    if _decision(runtime, request) != "allow":
        return None
    from hookcode.permission import Reply

    return Reply("once")


@hookimpl
def tool_execute_after(
    call: ToolCall, result: ToolResult, ctx: ToolContext
) -> Awaitable[None] | None:
    """PostToolUse: feedback for the model goes after the output (after what PreToolUse
    hooks gave as ``additionalContext``)."""
    context = _forget(ctx.runtime, call)
    if context:
        notes = [f"PreToolUse hook context: {text}" for text in context]
        result.output = "\n\n".join([result.output.rstrip("\n"), *notes]).lstrip("\n")
    selected = _selected(ctx.runtime, "PostToolUse", call, ctx.tool)
    return _post_tool_use(call, result, ctx, selected) if selected else None


async def _post_tool_use(
    call: ToolCall, result: ToolResult, ctx: ToolContext, selected: list[tuple[int, Hook]]
) -> None:
    runtime = ctx.runtime
    response = {"output": result.output, "title": result.title, "metadata": result.metadata}
    runs = await _run_tool_hooks(ctx, "PostToolUse", call, selected, tool_response=response)
    verdict = _read(runtime, "PostToolUse", runs)
    notes = [f"PostToolUse hook feedback: {text}" for text in verdict.blocks]
    notes += [f"PostToolUse hook context: {text}" for text in verdict.context]
    if notes:
        result.output = "\n\n".join([result.output.rstrip("\n"), *notes]).lstrip("\n")


@hookimpl
def tool_execute_error(call: ToolCall, ctx: ToolContext) -> None:
    _forget(ctx.runtime, call)


def _decision(runtime: Host, request: PermissionRequest) -> str | None:
    """What PreToolUse hooks decided for the call a request belongs to, if anything."""
    decisions = runtime.stash.get(_DECISIONS, None)
    return decisions.get(str(request.tool.get("call_id"))) if decisions else None


def _forget(runtime: Host, call: ToolCall) -> list[str] | None:
    """Drop what PreToolUse hooks left for a finished call; return its additionalContext."""
    decisions = runtime.stash.get(_DECISIONS, None)
    if decisions:
        decisions.pop(call.call_id, None)
    contexts = runtime.stash.get(_CONTEXTS, None)
    return contexts.pop(call.call_id, None) if contexts else None


# ------------------------------------------------------------------------ messages and stop


@hookimpl
def chat_message(message: Any, session: Any, runtime: Runtime) -> None:
    """UserPromptSubmit: block the message (the run stops) or add context to it."""
    from hookcode.errors import PromptBlocked

    if not _entries(runtime, "UserPromptSubmit"):
        return
    payload = _payload(runtime, "UserPromptSubmit", str(session.id), prompt=message.text)
    runs = _run_sync_hooks(runtime, "UserPromptSubmit", payload)
    verdict = _read(runtime, "UserPromptSubmit", runs, plain_stdout_is_context=True)
    if verdict.blocks:
        raise PromptBlocked("; ".join(verdict.blocks))
    for text in verdict.context:
        message.parts.append({"type": "text", "text": text})


@hookimpl
def session_stop(session: Any, active: bool, runtime: Runtime) -> str | None:
    """Stop: the model ended its turn. A hook that blocks (exit 2, or ``decision: "block"``)
    keeps the agent going with its reason; ``continue: false`` lets the run end whatever the
    others said."""
    if not _entries(runtime, "Stop"):
        return None
    payload = _payload(runtime, "Stop", str(session.id), stop_hook_active=active)
    runs = _run_sync_hooks(runtime, "Stop", payload)
    verdict = _read(runtime, "Stop", runs)
    if verdict.halted or not verdict.blocks:
        return None
    return "Stop hook feedback:\n" + "\n".join(verdict.blocks)
