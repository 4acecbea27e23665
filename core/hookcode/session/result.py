"""What a run of the agent loop reports: events as they happen (:data:`EventCallback`) and,
at the end, a :class:`RunResult`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hookcode.providers import Usage

if TYPE_CHECKING:
    from hookcode.pipeline import Outcome

__all__ = ["EventCallback", "RunResult"]

EventCallback = Callable[[str, dict[str, Any]], None]


@dataclass
class RunResult:
    """What one run of the loop did."""

    session_id: str
    text: str = ""
    steps: int = 0
    finish: str = ""
    outcomes: list[Outcome] = field(default_factory=list)
    rejected: bool = False
    error: str | None = None
    usage: Usage = field(default_factory=Usage)
    #: permission requests refused in this run: ``{"tool", "call_id", "permission", "patterns"}``
    refused: list[dict[str, Any]] = field(default_factory=list)
    aborted: bool = False
    compactions: int = 0

    def usage_dict(self) -> dict[str, Any]:
        u = self.usage
        return {
            "input": u.input,
            "output": u.output,
            "reasoning": u.reasoning,
            "cache_read": u.cache_read,
            "cache_write": u.cache_write,
            "cost": u.cost,
        }

    def to_dict(self) -> dict[str, Any]:
        """The ``result`` object of ``hookcode run --format json``."""
        return {
            "type": "result",
            "session_id": self.session_id,
            "text": self.text,
            "refused": self.refused,
            "usage": self.usage_dict(),
            "steps": self.steps,
            "finish": self.finish,
            "error": self.error,
            "aborted": self.aborted,
        }
