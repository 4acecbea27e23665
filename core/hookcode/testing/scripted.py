"""``ScriptedModel``: a provider that replays scripted assistant turns, so the whole agent loop
runs offline (tests, demos). One turn is consumed per model request.

A turn is a :class:`Turn`, a string (its text) or a dict::

    {"text": "...", "reasoning": "...", "tool_calls": [{"name": "read", "args": {...}}],
     "finish": "stop", "error": "overloaded", "retryable": true, "usage": {"input": 10},
     "delay": 0.5}

``error`` makes the request fail after streaming the turn's text (a provider erroring
mid-stream); ``retryable`` marks it as a rate limit / overload the loop retries. A call with
``"cut_off": true`` never completes (the max-tokens trap).

Turns are a list, or a mapping of agent names to lists (``"*"`` for any other agent), so a
sub-agent's session replays its own turns. With ``per_session=True`` every session keeps its
own position (in the request's per-session ``state``, which the loop persists, so
``--continue`` resumes where the session stopped); otherwise a list is consumed in order by
whoever asks. With no turns left the model answers :data:`EXHAUSTED` and stops.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hookcode.ids import new_id
from hookcode.providers import (
    Finish,
    ModelInfo,
    ModelRequest,
    ReasoningDelta,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolInputDelta,
    Usage,
)

__all__ = ["EXHAUSTED", "ScriptError", "ScriptedModel", "ToolCallSpec", "Turn", "parse_script"]

EXHAUSTED = "(the scripted model has no more turns)"
TURN_KEYS = ("text", "reasoning", "tool_calls", "finish", "error", "retryable", "usage", "delay")
CALL_KEYS = ("name", "args", "input", "id", "cut_off")


class ScriptError(ValueError):
    """A script is malformed; the message says where."""


@dataclass
class ToolCallSpec:
    name: str
    input: dict[str, Any] = field(default_factory=dict)
    id: str | None = None
    cut_off: bool = False  # the input never completes (the max-tokens trap)


@dataclass
class Turn:
    """One scripted assistant reply: text, reasoning, tool calls, a finish reason."""

    text: str = ""
    tool_calls: list[ToolCallSpec] = field(default_factory=list)
    finish: str | None = None  # default: "tool-calls" when there are calls, else "stop"
    error: str | None = None  # the request fails (after the text, if any)
    reasoning: str = ""
    retryable: bool = False
    usage: dict[str, int] | None = None
    delay: float = 0.0  # seconds before the reply starts

    @classmethod
    def of(cls, value: Turn | str | dict[str, Any]) -> Turn:
        if isinstance(value, Turn):
            return value
        if isinstance(value, str):
            return cls(text=value)
        calls = [
            c
            if isinstance(c, ToolCallSpec)
            else _call(c)
            if isinstance(c, dict)
            else ToolCallSpec(c[0], dict(c[1]))
            for c in value.get("tool_calls") or []
        ]
        return cls(
            text=value.get("text") or "",
            tool_calls=calls,
            finish=value.get("finish"),
            error=value.get("error"),
            reasoning=value.get("reasoning") or "",
            retryable=bool(value.get("retryable", False)),
            usage=value.get("usage"),
            delay=float(value.get("delay") or 0.0),
        )


def _call(data: dict[str, Any]) -> ToolCallSpec:
    args = data.get("args", data.get("input")) or {}
    return ToolCallSpec(
        name=data["name"], input=dict(args), id=data.get("id"), cut_off=bool(data.get("cut_off"))
    )


def parse_script(data: Any, where: str = "script") -> list[Turn] | dict[str, list[Turn]]:
    """Validate a script (a JSON list of turns, or an object of agent -> list of turns);
    :class:`ScriptError` names the first problem."""
    if isinstance(data, list):
        return [_turn(t, f"{where}[{i}]") for i, t in enumerate(data)]
    if isinstance(data, dict):
        out: dict[str, list[Turn]] = {}
        for agent, turns in data.items():
            if not isinstance(turns, list):
                raise ScriptError(f"{where}: agent {agent!r} must map to a list of turns")
            out[str(agent)] = [_turn(t, f"{where}.{agent}[{i}]") for i, t in enumerate(turns)]
        return out
    raise ScriptError(
        f"{where}: expected a list of turns or an object mapping agent names to lists, "
        f"not {type(data).__name__}"
    )


def _turn(value: Any, where: str) -> Turn:
    if isinstance(value, str):
        return Turn(text=value)
    if not isinstance(value, dict):
        raise ScriptError(f"{where}: a turn is an object or a string, not {type(value).__name__}")
    unknown = sorted(set(value) - set(TURN_KEYS))
    if unknown:
        raise ScriptError(
            f"{where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(TURN_KEYS)})"
        )
    for key in ("text", "reasoning", "error", "finish"):
        if value.get(key) is not None and not isinstance(value[key], str):
            raise ScriptError(f"{where}.{key}: must be a string")
    calls = value.get("tool_calls") or []
    if not isinstance(calls, list):
        raise ScriptError(f"{where}.tool_calls: must be a list")
    for i, call in enumerate(calls):
        at = f"{where}.tool_calls[{i}]"
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise ScriptError(f'{at}: must be an object with a "name" string')
        unknown = sorted(set(call) - set(CALL_KEYS))
        if unknown:
            raise ScriptError(f"{at}: unknown key(s) {', '.join(unknown)}")
        args = call.get("args", call.get("input"))
        if args is not None and not isinstance(args, dict):
            raise ScriptError(f"{at}.args: must be an object")
    usage = value.get("usage")
    if usage is not None and (
        not isinstance(usage, dict) or not all(isinstance(v, int) for v in usage.values())
    ):
        raise ScriptError(f"{where}.usage: must be an object of integers")
    return Turn.of(value)


class ScriptedModel:
    """A :class:`~hookcode.providers.Provider` replaying scripted turns.

    ``ScriptedModel(["hello"])`` answers "hello" once; see the module docstring for turns.
    Every request is kept in :attr:`requests` so tests can check what the model was sent.
    ``context`` / ``output`` are the window and output limit its models report (compaction
    tests).
    """

    name = "Scripted model"

    def __init__(
        self,
        turns: Iterable[Turn | str | dict[str, Any]] | Mapping[str, Iterable[Any]] = (),
        *,
        id: str = "scripted",
        per_session: bool | None = None,
        context: int | None = None,
        output: int | None = None,
        models: Iterable[str] = ("demo", "test"),
        cost_in: float = 0.0,
        cost_out: float = 0.0,
    ):
        self.id = id
        self.turns: list[Turn] = []
        self.by_agent: dict[str, list[Turn]] | None = None
        self.set_turns(turns)
        self.per_session = self.by_agent is not None if per_session is None else per_session
        self.context = context
        self.output = output
        self.model_ids = list(models)
        self.cost_in, self.cost_out = cost_in, cost_out
        self.requests: list[ModelRequest] = []

    def set_turns(self, turns: Iterable[Any] | Mapping[str, Iterable[Any]]) -> None:
        if isinstance(turns, Mapping):
            self.by_agent = {str(k): [Turn.of(t) for t in v] for k, v in turns.items()}
            self.turns = []
        else:
            self.by_agent = None
            self.turns = [Turn.of(t) for t in turns]

    def models(self) -> list[ModelInfo]:
        return [
            ModelInfo(
                id=m,
                name=f"Scripted ({m})",
                context=self.context,
                output=self.output,
                cost_in=self.cost_in,
                cost_out=self.cost_out,
            )
            for m in self.model_ids
        ]

    def script_for(self, request: ModelRequest) -> tuple[str, list[Turn]] | None:
        """(position key, turns) for the request's agent; None when nothing is scripted."""
        if self.by_agent is None:
            return "*", self.turns
        agent = request.agent or "build"
        if agent in self.by_agent:
            return agent, self.by_agent[agent]
        if "*" in self.by_agent:
            return "*", self.by_agent["*"]
        return None

    def next_turn(self, request: ModelRequest) -> Turn:
        found = self.script_for(request)
        if found is None:
            return Turn(text=EXHAUSTED)
        key, turns = found
        if not self.per_session:
            return turns.pop(0) if turns else Turn(text=EXHAUSTED)
        positions = request.state.setdefault("positions", {})
        index = int(positions.get(key, 0))
        positions[key] = index + 1
        return turns[index] if index < len(turns) else Turn(text=EXHAUSTED)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        import asyncio

        self.requests.append(request)
        try:
            turn = self.next_turn(request)
        except ScriptError as exc:
            yield StreamError(str(exc))
            return
        if turn.delay:
            await asyncio.sleep(turn.delay)
        for piece in _chunks(turn.reasoning):
            yield ReasoningDelta(piece)
        for piece in _chunks(turn.text):
            yield TextDelta(piece)
        if turn.error:
            yield StreamError(turn.error, retryable=turn.retryable)
            return
        cut = False
        for call in turn.tool_calls:
            call_id = call.id or new_id("call")
            yield ToolCallStart(call_id, call.name)
            raw = json.dumps(call.input)
            if call.cut_off:
                yield ToolInputDelta(call_id, raw[: max(1, len(raw) // 2)])
                cut = True
                continue
            for piece in _chunks(raw, 24):
                yield ToolInputDelta(call_id, piece)
            yield ToolCallEnd(call_id, call.name, call.input)
        finish = turn.finish or ("length" if cut else "tool-calls" if turn.tool_calls else "stop")
        usage = Usage(
            input=_tokens(request), output=max(1, (len(turn.text) + len(turn.reasoning)) // 4)
        )
        for key, value in (turn.usage or {}).items():
            if hasattr(usage, key):
                setattr(usage, key, value)
        yield Finish(finish, usage)


def _chunks(text: str, size: int = 16) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _tokens(request: ModelRequest) -> int:
    size = sum(len(s) for s in request.system)
    for message in request.messages:
        size += len(json.dumps(message.content, default=str))
    return max(1, size // 4)
