"""Structured questions to the user (the ``question`` and ``plan_*`` tools), answered through the
``question_prompt`` hook that a front end implements."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Option", "Question", "QuestionRequest"]


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
