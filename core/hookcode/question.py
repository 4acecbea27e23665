"""Structured questions to the user (the ``question`` and ``plan_*`` tools), answered through the
``question_prompt`` hook that a front end implements."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

T = TypeVar("T")

__all__ = ["Option", "Question", "QuestionRequest", "prompt"]


class QuestionHooks(Protocol):
    def call_first(self, hook: str, **kwargs: Any) -> Any: ...


class QuestionRuntime(Protocol):
    @property
    def plugins(self) -> QuestionHooks: ...

    def new_id(self, prefix: str) -> str: ...


class QuestionContext(Protocol):
    """The part of a :class:`hookcode.tools.ToolContext` that asking questions uses."""

    @property
    def runtime(self) -> QuestionRuntime: ...

    @property
    def session_id(self) -> str: ...

    @property
    def message_id(self) -> str | None: ...

    @property
    def call_id(self) -> str | None: ...

    async def run_blocking(self, fn: Callable[[], T]) -> T: ...


@dataclass
class Option:
    label: str
    description: str = ""


@dataclass
class Question:
    question: str
    header: str = ""
    options: list[Option] = field(default_factory=list)
    multiple: bool = False
    custom: bool = True  # the user may type an answer of their own


@dataclass
class QuestionRequest:
    id: str
    session_id: str
    questions: list[Question]
    tool: dict[str, Any] = field(default_factory=dict)  # {"message_id", "call_id"}


async def prompt(ctx: QuestionContext, questions: list[Question]) -> list[list[str]] | None:
    """Ask ``questions`` through the ``question_prompt`` hook (a front end), in a worker thread so
    the event loop keeps running; the answers, or None when the user dismissed them. Raises
    ToolAborted when the call's abort signal fires first (:meth:`hookcode.tools.ToolContext.run_blocking`). Callers check for a front end
    first (``ctx.runtime.plugins.has_impls("question_prompt")``): headless means nobody to ask."""
    runtime = ctx.runtime
    request = QuestionRequest(
        id=runtime.new_id("que"),
        session_id=ctx.session_id,
        questions=list(questions),
        tool={"message_id": ctx.message_id, "call_id": ctx.call_id},
    )
    return await ctx.run_blocking(
        lambda: runtime.plugins.call_first("question_prompt", request=request)
    )
