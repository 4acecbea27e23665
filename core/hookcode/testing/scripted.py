"""``ScriptedModel``: a provider that replays scripted assistant turns, so the whole agent loop
runs offline (tests, demos). One turn is consumed per model request."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import Any

from hookcode.ids import new_id
from hookcode.providers import (
    Finish,
    ModelInfo,
    ModelRequest,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolInputDelta,
    Usage,
)

__all__ = ["ScriptedModel", "ToolCallSpec", "Turn"]


@dataclass
class ToolCallSpec:
    name: str
    input: dict[str, Any] = field(default_factory=dict)
    id: str | None = None
    cut_off: bool = False  # the input never completes (the max-tokens trap)


@dataclass
class Turn:
    """One scripted assistant reply: some text, some tool calls, a finish reason."""

    text: str = ""
    tool_calls: list[ToolCallSpec] = field(default_factory=list)
    finish: str | None = None  # default: "tool-calls" when there are calls, else "stop"
    error: str | None = None  # a provider error instead of a reply

    @classmethod
    def of(cls, value: Turn | str | dict[str, Any]) -> Turn:
        if isinstance(value, Turn):
            return value
        if isinstance(value, str):
            return cls(text=value)
        calls = [
            c
            if isinstance(c, ToolCallSpec)
            else ToolCallSpec(**c)
            if isinstance(c, dict)
            else ToolCallSpec(c[0], dict(c[1]))
            for c in value.get("tool_calls", [])
        ]
        return cls(
            text=value.get("text", ""),
            tool_calls=calls,
            finish=value.get("finish"),
            error=value.get("error"),
        )


class ScriptedModel:
    """A :class:`~hookcode.providers.Provider` replaying ``turns`` in order.

    ``ScriptedModel(["hello"])`` answers "hello" once; a turn may be a :class:`Turn`, a string
    or ``{"text": ..., "tool_calls": [("read", {"filePath": "a.txt"})]}``. Every request is kept
    in :attr:`requests` so tests can check what the model was sent. With no turns left the model
    says so and stops.
    """

    name = "Scripted model"

    def __init__(self, turns: Iterable[Turn | str | dict[str, Any]] = (), *, id: str = "scripted"):
        self.id = id
        self.turns: list[Turn] = [Turn.of(t) for t in turns]
        self.requests: list[ModelRequest] = []

    def models(self) -> list[ModelInfo]:
        return [ModelInfo(id="demo", name="Offline demo"), ModelInfo(id="test", name="Scripted")]

    def next_turn(self, request: ModelRequest) -> Turn:
        if self.turns:
            return self.turns.pop(0)
        return Turn(text="(the scripted model has no more turns)")

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        turn = self.next_turn(request)
        if turn.error:
            yield StreamError(turn.error)
            return
        if turn.text:
            for piece in _chunks(turn.text):
                yield TextDelta(piece)
        for call in turn.tool_calls:
            call_id = call.id or new_id("call")
            yield ToolCallStart(call_id, call.name)
            raw = json.dumps(call.input)
            if call.cut_off:
                yield ToolInputDelta(call_id, raw[: max(1, len(raw) // 2)])
                continue
            yield ToolInputDelta(call_id, raw)
            yield ToolCallEnd(call_id, call.name, call.input)
        finish = turn.finish or ("tool-calls" if turn.tool_calls else "stop")
        if any(c.cut_off for c in turn.tool_calls):
            finish = turn.finish or "length"
        yield Finish(finish, Usage(input=_tokens(request), output=max(1, len(turn.text) // 4)))


def _chunks(text: str, size: int = 16) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _tokens(request: ModelRequest) -> int:
    size = sum(len(s) for s in request.system)
    for message in request.messages:
        size += len(json.dumps(message.content, default=str))
    return max(1, size // 4)
