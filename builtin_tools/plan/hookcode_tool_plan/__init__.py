"""The ``plan_enter`` and ``plan_exit`` tools: switch between the plan and build agents once the
user agrees (reference/tools.md §19).

Each asks one fixed Yes/No question (no custom answer) through the ``question_prompt`` hook,
naming the session's plan file (``.hookcode/plans/<session id>.md``, worktree-relative). Yes:
the session's agent is switched in the store (``plan_exit`` -> ``build``, ``plan_enter`` ->
``plan``) and the agent loop runs its next request with that agent (and keeps it when the
session is continued). No, or the question dismissed: the error ``The user dismissed this
question``, which stops the loop. Headless: an error the model reads; the loop goes on.

The ``plan_enter`` / ``plan_exit`` rules only hide the tools (build may enter, plan may exit).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hookcode import Tool, ToolContext, ToolError, ToolResult, hookimpl

DISMISSED = "The user dismissed this question"
HEADLESS = (
    "No user can be asked: this session has no interactive front end (headless run), so the "
    "agent was not switched. Continue with the current agent."
)

EXIT_DESCRIPTION = """\
Use this tool when you have completed the plan and are ready to implement it: it asks the user
whether to switch to the build agent, which can edit files and run commands.
- Call it only when the plan file is written and the plan is complete
- Do not call it to ask questions about the plan: use the question tool for that
- If the user declines, stay with the plan agent and keep refining the plan"""

ENTER_DESCRIPTION = """\
Use this tool to suggest switching to the plan agent when a request is complex enough that it
deserves research and a written plan before any change (several files, architectural
decisions, unclear requirements). The user decides; the plan agent cannot edit files except
its plan file."""


class QuestionDismissed(ToolError):
    """The user said No or dismissed the question: the loop stops after the step."""

    stop_loop = True

    def __init__(self, message: str = DISMISSED):
        super().__init__(message)


def plan_path(ctx: ToolContext) -> str:
    """The session's plan file, worktree-relative."""
    return f".hookcode/plans/{ctx.session_id}.md"


async def _ask_yes_no(ctx: ToolContext, text: str, header: str, yes: str, no: str) -> bool:
    from hookcode.question import Option, Question, prompt

    if not ctx.runtime.plugins.has_impls("question_prompt"):
        raise ToolError(HEADLESS)
    question = Question(
        question=text,
        header=header,
        options=[Option("Yes", yes), Option("No", no)],
        multiple=False,
        custom=False,
    )
    answers = await prompt(ctx, [question])
    if not answers or not answers[0] or answers[0][0] != "Yes":
        raise QuestionDismissed()
    return True


def _switch(ctx: ToolContext, agent: str) -> ToolResult:
    ctx.runtime.store.update_session(ctx.session_id, agent=agent)
    ctx.publish("session.agent", agent=agent, previous=ctx.agent)
    return ToolResult(
        title=f"Switching to {agent} agent",
        output=f"User approved switching to {agent} agent. Wait for further instructions.",
        metadata={"agent": agent, "plan": plan_path(ctx)},
    )


def _no_args() -> Any:
    from pydantic import BaseModel, ConfigDict

    class NoArgs(BaseModel):
        model_config = ConfigDict(extra="forbid")

    return NoArgs


class PlanExit(Tool):
    name = "plan_exit"
    description = EXIT_DESCRIPTION
    asks_permission = True  # the `plan_exit` rule only hides the tool

    def _build_model(self) -> Any:
        self.Args = _no_args()  # type: ignore[misc]
        return self.Args

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        plan = plan_path(ctx)
        await _ask_yes_no(
            ctx,
            f"Plan at {plan} is complete. Would you like to switch to the build agent and "
            "start implementing?",
            "Build Agent",
            "Switch to build agent and start implementing the plan",
            "Stay with plan agent to continue refining the plan",
        )
        return _switch(ctx, "build")


class PlanEnter(Tool):
    name = "plan_enter"
    description = ENTER_DESCRIPTION
    asks_permission = True  # the `plan_enter` rule only hides the tool

    def _build_model(self) -> Any:
        self.Args = _no_args()  # type: ignore[misc]
        return self.Args

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        plan = plan_path(ctx)
        await _ask_yes_no(
            ctx,
            f"Would you like to switch to the plan agent and create a plan saved to {plan}?",
            "Plan Agent",
            "Switch to plan agent for research and planning",
            "Stay with build agent to continue making changes",
        )
        return _switch(ctx, "plan")


@hookimpl
def register_tools(register: Callable[..., None]) -> None:
    register(PlanEnter(), PlanExit())
