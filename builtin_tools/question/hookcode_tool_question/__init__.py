"""The ``question`` tool: structured questions to the user (reference/tools.md §18).

The questions reach the user through the firstresult hook ``question_prompt(request)`` that a
front end implements (the CLI's terminal prompt). It runs in a worker thread; the call waits for
it or for the session's abort signal.

- Answered: ``User has answered your questions: "<q1>"="<a1, a2>", "<q2>"="Unanswered". You can
  now continue with the user's answers in mind.``; title ``Asked <n> question(s)``; metadata
  ``answers`` (one list per question).
- Dismissed (every front end answered None): the error ``The user dismissed this question``,
  which stops the loop like a permission reject.
- Headless (no front end implements ``question_prompt``): an error the model reads and the loop
  moves past (ARCHITECTURE.md, Settled points).

The ``question`` permission only hides the tool (default: allowed for build and plan only); the
tool asks for no permission itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hookcode import Tool, ToolContext, ToolError, ToolResult, hookimpl

DISMISSED = "The user dismissed this question"
HEADLESS = (
    "No user can be asked: this session has no interactive front end (headless run), so the "
    "question could not be shown to anyone. Do not ask again; continue with your best "
    "judgement and state the assumptions you make."
)

DESCRIPTION = """\
Use this tool when you need to ask the user questions during execution. This allows you to:
1. Gather user preferences or requirements
2. Clarify ambiguous instructions
3. Get decisions on implementation choices as you work
4. Offer choices to the user about what direction to take.

Usage notes:
- Users can always type a custom answer of their own, so do not add an "Other" option
- Answers are returned as arrays of labels; set `multiple: true` to allow selecting more than one
- If you recommend a specific option, make that the first option in the list and add
  "(Recommended)" at the end of the label"""


class QuestionDismissed(ToolError):
    """The user dismissed the question: the loop stops after the step."""

    stop_loop = True

    def __init__(self, message: str = DISMISSED):
        super().__init__(message)


class NoFrontEnd(ToolError):
    """Nobody can be asked (headless): the model reads it and the loop goes on."""

    def __init__(self, message: str = HEADLESS):
        super().__init__(message)


async def ask_user(ctx: ToolContext, questions: list[Any]) -> list[list[str]]:
    """Ask through ``question_prompt``; the answers, one list per question (padded with empty
    lists). Raises NoFrontEnd (headless), QuestionDismissed (None) or ToolAborted (abort)."""
    from hookcode.question import prompt

    if not ctx.runtime.plugins.has_impls("question_prompt"):
        raise NoFrontEnd()
    answers = await prompt(ctx, list(questions))
    if answers is None:
        raise QuestionDismissed()
    out = [[str(a) for a in (answer or [])] for answer in list(answers)[: len(questions)]]
    out += [[] for _ in range(len(questions) - len(out))]
    return out


def _args_model() -> Any:
    from pydantic import BaseModel, ConfigDict, Field

    class QuestionOption(BaseModel):
        label: str = Field(description="Display text (1-5 words, concise)")
        description: str = Field(description="Explanation of choice")

    class QuestionInfo(BaseModel):
        question: str = Field(description="Complete question")
        header: str = Field(description="Very short label (max 30 chars)", max_length=30)
        options: list[QuestionOption] = Field(description="Available choices")
        multiple: bool = Field(default=False, description="Allow selecting multiple choices")

    class QuestionArgs(BaseModel):
        model_config = ConfigDict(extra="forbid")
        questions: list[QuestionInfo] = Field(description="Questions to ask", min_length=1)

    return QuestionArgs


class QuestionTool(Tool):
    name = "question"
    description = DESCRIPTION
    asks_permission = True  # the `question` rule only hides the tool

    def _build_model(self) -> Any:
        self.Args = _args_model()  # type: ignore[misc]
        return self.Args

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        from hookcode.question import Option, Question

        questions = [
            Question(
                question=q.question,
                header=q.header,
                options=[Option(o.label, o.description) for o in q.options],
                multiple=q.multiple,
                custom=True,
            )
            for q in args.questions
        ]
        answers = await ask_user(ctx, questions)
        formatted = ", ".join(
            f'"{q.question}"="{", ".join(a) if a else "Unanswered"}"'
            for q, a in zip(questions, answers, strict=True)
        )
        n = len(questions)
        return ToolResult(
            title=f"Asked {n} question{'s' if n != 1 else ''}",
            output=(
                f"User has answered your questions: {formatted}. "
                "You can now continue with the user's answers in mind."
            ),
            metadata={"answers": answers},
        )


@hookimpl
def register_tools(register: Callable[..., None]) -> None:
    register(QuestionTool())
