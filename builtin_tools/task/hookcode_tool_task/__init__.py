"""The ``task`` tool: runs a sub-agent in a child session (reference/tools.md §16).

The child session records its parent (the caller's session) and runs the agent loop with the
same runtime, so every call the sub-agent makes passes the same ``invoke``, hooks, permissions
and front end (headless, its asks are rejects). The child's rules are the sub-agent's, plus
session rules denying ``todowrite``, ``todoread`` and ``task`` (``task`` only when the
sub-agent's own rules do not mention it). ``task_id`` resumes a child session of this project.
The child's cost and tokens are added to the parent session; aborting the call aborts the
child. The description lists the sub-agents the CALLING agent may start (its ``task`` rules),
computed when the definitions are built for that agent (:meth:`TaskTool.definition_for`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from hookcode import Tool, ToolContext, ToolResult, hookimpl

if TYPE_CHECKING:
    from collections.abc import Callable

    from hookcode.runtime import Runtime

#: the permissions a child session may never use (tools.md §16)
CHILD_DENIES = ("todowrite", "todoread")
NO_DESCRIPTION = "This subagent should only be called manually by the user."

DESCRIPTION = """\
Launch a new agent to handle complex, multistep tasks autonomously.

Available agent types and the tools they have access to:
{agents}

When using the Task tool, you must specify a subagent_type parameter to select which agent type \
to use.

When NOT to use the Task tool:
- If you want to read a specific file path, use the read or glob tool instead, to find the \
match more quickly
- If you are searching for a specific class definition like "class Foo", use the glob tool \
instead
- If you are searching for code within a specific file or set of 2-3 files, use the read tool \
instead
- Other tasks that are not related to the agent descriptions above

Usage notes:
1. Launch multiple agents concurrently whenever possible, to maximize performance; to do that, \
use a single message with multiple tool uses
2. When the agent is done, it will return a single message back to you. The result returned by \
the agent is not visible to the user. To show the user the result, you should send a text \
message back to the user with a concise summary of the result.
3. Each agent invocation starts with a fresh context unless you provide task_id to resume the \
same subagent session (which continues with its previous messages and tool outputs). When \
starting fresh, your prompt should contain a highly detailed task description for the agent to \
perform autonomously and you should specify exactly what information the agent should return \
back to you in its final and only message to you.
4. The agent's outputs should generally be trusted
5. Clearly tell the agent whether you expect it to write code or just to do research (search, \
file reads, web fetches, etc.), since it is not aware of the user's intent"""


class TaskTool(Tool):
    name = "task"
    asks_permission = True
    # after a cut output (truncation.md §3): while the agent may start sub-agents
    truncation_hint = (
        "Use the Task tool to have the explore agent search this file with Grep and Read "
        "(offset/limit) instead of reading it whole."
    )

    def __init__(self, runtime: Any = None) -> None:
        import weakref

        super().__init__()
        self.description = DESCRIPTION.format(agents="(the sub-agents of the calling agent)")
        #: the runtime this instance serves (``register_tools`` builds one per runtime)
        self._runtime_ref = weakref.ref(runtime) if runtime is not None else None

    # -- the description, per calling agent ---------------------------------------------------
    def definition_for(
        self, agent: str, session_id: str | None = None, model: str | None = None
    ) -> dict[str, Any]:
        """The definition as ``agent`` sees it: the sub-agents its ``task`` rules allow
        (called by :meth:`hookcode.registry.Registry.definitions`)."""
        definition = self.definition()
        runtime = self._runtime_ref() if self._runtime_ref is not None else None
        if runtime is not None:
            definition["description"] = describe(runtime, agent, session_id)
        return definition

    # -- running ------------------------------------------------------------------------------
    async def run(
        self,
        ctx: ToolContext,
        description: Annotated[str, "A short (3-5 words) description of the task"],
        prompt: Annotated[str, "The task for the agent to perform"],
        subagent_type: Annotated[str, "The type of specialized agent to use for this task"],
        task_id: Annotated[
            str | None,
            "This should only be set if you mean to resume a previous task (you can pass a prior "
            "task_id and the task will continue the same subagent session as before instead of "
            "creating a fresh one)",
        ] = None,
        command: Annotated[str | None, "The command that triggered this task"] = None,
    ) -> ToolResult:
        from hookcode import AbortSignal, Runtime, SessionLoop
        from hookcode.errors import ToolAborted, ToolError

        runtime = ctx.runtime
        if not isinstance(runtime, Runtime):
            # ctx.runtime is typed as the Host protocol; a sub-agent's session loop needs the
            # runtime that can make sessions and run them, so a stand-in host cannot run tasks.
            raise ToolError(
                f"the task tool needs hookcode's Runtime to run a sub-agent, "
                f"not {type(runtime).__qualname__}"
            )
        spec = runtime.agents().get(subagent_type)
        if spec is None or spec.mode in ("primary", "hidden"):
            raise ToolError(f"Unknown agent type: {subagent_type} is not a valid agent type")
        await ctx.ask(
            "task",
            [subagent_type],
            ["*"],
            {"description": description, "subagent_type": subagent_type},
        )

        child = _resumable(ctx, task_id) if task_id else None
        model = spec.model or ctx.model
        if child is None:
            child = runtime.create_session(
                title=f"{description} (@{spec.name} subagent)",
                agent=spec.name,
                model=model,
                parent_id=ctx.session_id,
            )
        runtime.session_rules[child.id] = child_rules(runtime, spec.name)

        abort = AbortSignal(ctx.abort)  # aborting the parent's call aborts the child
        loop = SessionLoop(runtime, model=model, agent=spec.name, session=child, abort=abort)
        ctx.metadata(description, {"sessionId": child.id, "model": loop.model_id})
        try:
            result = await loop.run(prompt)
        except BaseException:
            abort.abort("task cancelled")  # a cancelled parent call leaves no child running
            raise
        finally:
            _roll_up(runtime, ctx.session_id, loop)
        if result.aborted or ctx.abort.is_set():
            raise ToolAborted()
        if result.error and not result.text:
            raise ToolError(f"The {spec.name} subagent failed: {result.error}")
        output = "\n".join(
            [
                f"task_id: {child.id} (for resuming to continue this task if needed)",
                "",
                "<task_result>",
                result.text,
                "</task_result>",
            ]
        )
        return ToolResult(
            title=description,
            output=output,
            metadata={
                "sessionId": child.id,
                "model": loop.model_id,
                "agent": spec.name,
                "steps": result.steps,
                "finish": result.finish,
                "rejected": result.rejected,
                "refused": result.refused,
                "usage": result.usage_dict(),
            },
        )


def describe(runtime: Any, agent: str, session_id: str | None = None) -> str:
    """The task description listing the sub-agents ``agent`` may start."""
    ruleset = runtime.ruleset(agent, session_id, approvals=False)
    lines = []
    for name, spec in sorted(runtime.agents().items()):
        if spec.mode in ("primary", "hidden"):
            continue
        if ruleset.evaluate("task", [name]).action == "deny":
            continue
        lines.append(f"- {name}: {spec.description or NO_DESCRIPTION}")
    return DESCRIPTION.format(agents="\n".join(lines) or "(none)")


def child_rules(runtime: Any, agent: str) -> list[Any]:
    """The session rules of a child session running ``agent`` (tools.md §16)."""
    from hookcode.permission import Rule

    source = "session:task"
    rules = [Rule(permission, "*", "deny", source) for permission in CHILD_DENIES]
    if not any(rule.permission == "task" for rule in runtime.base_rules(agent)):
        rules.append(Rule("task", "*", "deny", source))
    return rules


def _resumable(ctx: ToolContext, task_id: str) -> Any:
    """The child session ``task_id`` names, refusing one this call may not continue; None when
    no such session exists (a fresh child is started, as in the reference)."""
    from hookcode.errors import ToolError

    runtime = ctx.runtime
    record = runtime.store.get_session(task_id)
    if record is None:
        return None
    if record.project != runtime.project:
        raise ToolError(
            f"Cannot resume task {task_id}: it belongs to another project ({record.project})"
        )
    if record.parent_id is None or record.id == ctx.session_id:
        raise ToolError(
            f"Cannot resume task {task_id}: it is not a subagent session (only sessions "
            "started by the task tool can be resumed)"
        )
    return record


def _roll_up(runtime: Any, parent_id: str, loop: Any) -> None:
    """Add what the child's run cost (every step, even of an aborted run) to the parent."""
    usage = loop.result.usage
    if not (usage.cost or usage.input or usage.output):
        return
    runtime.store.add_session_usage(
        parent_id,
        cost=usage.cost,
        tokens_in=usage.input,
        tokens_out=usage.output,
        tokens_reasoning=usage.reasoning,
        tokens_cache_read=usage.cache_read,
        tokens_cache_write=usage.cache_write,
    )


@hookimpl
def register_tools(register: Callable[..., None], runtime: Runtime) -> None:
    register(TaskTool(runtime))
