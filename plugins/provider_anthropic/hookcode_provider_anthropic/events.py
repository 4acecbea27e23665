"""Anthropic stream events -> hookcode stream events.

Standard library only: :class:`ReplyState` reads the raw events the SDK yields from
``messages.create(stream=True)`` (pydantic objects; plain dicts work too, for tests) and turns
them into :mod:`hookcode.providers` events.

* ``text_delta`` -> :class:`TextDelta`; ``thinking_delta`` -> :class:`ReasoningDelta`;
  ``signature_delta`` -> ``ReasoningDelta("", signature=...)``; a ``redacted_thinking`` block
  -> ``ReasoningDelta("", redacted=data)``. The loop stores them all in the history, which
  sends them back.
* A ``tool_use`` block: :class:`ToolCallStart` at ``content_block_start``, one
  :class:`ToolInputDelta` per ``input_json_delta``, and :class:`ToolCallEnd` with the parsed
  input only at its ``content_block_stop``. A block cut by ``max_tokens`` gets no stop, so the
  loop never runs it (the SDK's own accumulator would hand back a half-parsed input).
* ``message_delta`` carries the stop reason and the cumulative usage; ``message_stop`` ->
  :class:`Finish` with the mapped reason (tool_use -> ``tool-calls``, max_tokens and
  model_context_window_exceeded -> ``length``, end_turn/stop_sequence -> ``stop``, refusal ->
  ``refusal`` with a note in the text, pause_turn -> ``pause``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hookcode.providers import (
    Finish,
    ReasoningDelta,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolInputDelta,
    Usage,
)

__all__ = ["REFUSAL_NOTE", "STOP_REASONS", "ReplyState", "field_of"]

STOP_REASONS = {
    "tool_use": "tool-calls",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "refusal",
    "pause_turn": "pause",
}
REFUSAL_NOTE = "[The model declined to continue (stop reason: refusal).]"


def field_of(obj: Any, name: str, default: Any = None) -> Any:
    """``obj.name`` for SDK objects, ``obj[name]`` for dicts."""
    if obj is None:
        return default
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


@dataclass
class _Block:
    type: str
    id: str = ""
    name: str = ""
    text: list[str] = field(default_factory=list)  # text, thinking, or JSON fragments
    signature: str = ""
    data: str = ""  # redacted_thinking
    initial: Any = None  # a tool_use block's input at content_block_start
    closed: bool = False


class ReplyState:
    """Follows one streamed reply. :meth:`feed` returns the hookcode events of one raw event;
    :meth:`end` those due when the stream is over."""

    def __init__(self, cost: Callable[[Usage], float] | None = None) -> None:
        self.blocks: dict[int, _Block] = {}
        self.usage = Usage()
        self.stop_reason: str | None = None
        self.finished = False
        self.error: str | None = None
        self.text_seen = False
        self._cost = cost

    # -- results --------------------------------------------------------------------------------
    def thinking_blocks(self) -> list[dict[str, Any]]:
        """The complete thinking blocks of the reply, as the API wants them sent back."""
        out: list[dict[str, Any]] = []
        for index in sorted(self.blocks):
            block = self.blocks[index]
            if not block.closed:
                continue
            if block.type == "thinking" and block.signature:
                out.append(
                    {
                        "type": "thinking",
                        "thinking": "".join(block.text),
                        "signature": block.signature,
                    }
                )
            elif block.type == "redacted_thinking":
                out.append({"type": "redacted_thinking", "data": block.data})
        return out

    def tool_ids(self) -> list[str]:
        return [b.id for _i, b in sorted(self.blocks.items()) if b.type == "tool_use"]

    # -- events ---------------------------------------------------------------------------------
    def feed(self, event: Any) -> list[StreamEvent]:
        kind = field_of(event, "type")
        handler = getattr(self, f"_on_{kind}", None)
        return handler(event) if handler is not None else []  # ping, unknown: nothing

    def _on_message_start(self, event: Any) -> list[StreamEvent]:
        self._usage(field_of(field_of(event, "message"), "usage"))
        return []

    def _on_content_block_start(self, event: Any) -> list[StreamEvent]:
        index = int(field_of(event, "index", len(self.blocks)))
        raw = field_of(event, "content_block")
        kind = str(field_of(raw, "type", ""))
        block = _Block(kind)
        self.blocks[index] = block
        if kind == "text":
            text = field_of(raw, "text") or ""
            if text:
                block.text.append(text)
                self.text_seen = True
                return [TextDelta(text)]
        elif kind == "thinking":
            text = field_of(raw, "thinking") or ""
            block.signature = field_of(raw, "signature") or ""
            if text:
                block.text.append(text)
                return [ReasoningDelta(text)]
        elif kind == "redacted_thinking":
            block.data = field_of(raw, "data") or ""
            if block.data:
                return [ReasoningDelta("", redacted=block.data)]
        elif kind == "tool_use":
            block.id = str(field_of(raw, "id", ""))
            block.name = str(field_of(raw, "name", ""))
            block.initial = field_of(raw, "input")
            return [ToolCallStart(block.id, block.name)]
        return []

    def _on_content_block_delta(self, event: Any) -> list[StreamEvent]:
        block = self.blocks.get(int(field_of(event, "index", -1)))
        delta = field_of(event, "delta")
        kind = field_of(delta, "type")
        if block is None:
            return []
        if kind == "text_delta":
            text = field_of(delta, "text") or ""
            block.text.append(text)
            if text:
                self.text_seen = True
                return [TextDelta(text)]
        elif kind == "thinking_delta":
            text = field_of(delta, "thinking") or ""
            block.text.append(text)
            if text:
                return [ReasoningDelta(text)]
        elif kind == "signature_delta":
            block.signature += field_of(delta, "signature") or ""
            return [ReasoningDelta("", signature=block.signature)]
        elif kind == "input_json_delta":
            fragment = field_of(delta, "partial_json") or ""
            block.text.append(fragment)
            if fragment:
                return [ToolInputDelta(block.id, fragment)]
        return []

    def _on_content_block_stop(self, event: Any) -> list[StreamEvent]:
        block = self.blocks.get(int(field_of(event, "index", -1)))
        if block is None or block.closed:
            return []
        block.closed = True
        if block.type != "tool_use":
            return []
        raw = "".join(block.text)
        value: Any
        if raw.strip():
            try:
                value = json.loads(raw)
            except ValueError:
                value = raw  # the pipeline's validation tells the model what was wrong
        else:
            value = block.initial if isinstance(block.initial, dict) else {}
        return [ToolCallEnd(block.id, block.name, value)]

    def _on_message_delta(self, event: Any) -> list[StreamEvent]:
        reason = field_of(field_of(event, "delta"), "stop_reason")
        if reason:
            self.stop_reason = str(reason)
        self._usage(field_of(event, "usage"))
        return []

    def _on_message_stop(self, event: Any) -> list[StreamEvent]:
        return self._finish()

    def _on_error(self, event: Any) -> list[StreamEvent]:  # the SDK raises first; just in case
        error = field_of(event, "error")
        self.error = str(field_of(error, "message") or "stream error")
        return [StreamError(self.error, retryable=_retryable_type(field_of(error, "type")))]

    # -- helpers --------------------------------------------------------------------------------
    def _usage(self, usage: Any) -> None:
        if usage is None:
            return
        for name, attr in (
            ("input_tokens", "input"),
            ("output_tokens", "output"),
            ("cache_read_input_tokens", "cache_read"),
            ("cache_creation_input_tokens", "cache_write"),
        ):
            value = field_of(usage, name)
            if value is not None:  # message_delta's figures are cumulative
                setattr(self.usage, attr, int(value))
        details = field_of(usage, "output_tokens_details")
        thinking = field_of(details, "thinking_tokens")
        if thinking is not None:
            self.usage.reasoning = int(thinking)

    def _finish(self) -> list[StreamEvent]:
        if self.finished:
            return []
        self.finished = True
        reason = STOP_REASONS.get(self.stop_reason or "end_turn", self.stop_reason or "stop")
        if self._cost is not None:
            self.usage.cost = self._cost(self.usage)
        out: list[StreamEvent] = []
        if reason == "refusal":
            out.append(TextDelta(("\n\n" if self.text_seen else "") + REFUSAL_NOTE))
        out.append(Finish(reason, self.usage))
        return out

    def end(self) -> list[StreamEvent]:
        """The stream is over: a reply with a stop reason finishes; one without is an error."""
        if self.finished or self.error:
            return []
        if self.stop_reason:
            return self._finish()
        self.error = "the connection closed before the reply was complete"
        return [StreamError(self.error, retryable=True)]


def _retryable_type(kind: Any) -> bool:
    return kind in ("overloaded_error", "rate_limit_error", "api_error", "timeout_error")
