"""Messages and parts of a session (pydantic).

A session is a list of messages; a message (``user`` or ``assistant``) is a list of parts:

* :class:`TextPart` — text (``synthetic`` when hookcode wrote it, not the user or the model);
* :class:`ReasoningPart` — the model's reasoning (with the provider's ``signature``);
* :class:`FilePart` — an attached file (``url`` is usually a data URL);
* :class:`ToolPart` — one tool call; its :class:`ToolState` moves
  ``pending -> running -> completed | error`` and carries the input, the raw input streamed so
  far, the output, title, metadata, attachments, the error and the times;
* :class:`CompactionPart` — marks the user message that asked for a summary of the history.

An assistant message carries the token usage and cost of its model request; the session
rolls them up. :func:`to_provider_messages` turns a session's messages into what a provider
is sent (:class:`hookcode.providers.Message`), applying compaction and pruning;
:class:`ProviderHistory` does the same for a history growing at its end, step after step, at a
cost that does not grow with it.
"""

from __future__ import annotations

import gc
import json
import time
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hookcode.providers import Message

__all__ = [
    "CUT_OFF",
    "INTERRUPTED",
    "PRUNED",
    "AssistantInfo",
    "CompactionPart",
    "FilePart",
    "Part",
    "ProviderHistory",
    "ReasoningPart",
    "SessionMessage",
    "TextPart",
    "TokenUsage",
    "ToolPart",
    "ToolState",
    "ToolTime",
    "UserMessage",
    "part_to_public",
    "to_provider_messages",
]

#: what the model reads for a call cut off by the output token limit
CUT_OFF = "Tool call was cut off by the output token limit and was not run."
#: what the model reads for a call that a dead process left running
INTERRUPTED = "[Tool execution was interrupted]"
#: what the model reads for a pruned tool output
PRUNED = "[Old tool result content cleared]"
#: the user-side text of a compaction request
COMPACTION_QUESTION = "What did we do so far?"


@dataclass
class UserMessage:
    """A user message as the ``chat_message`` hook sees it (mutable): ``parts`` may gain
    ``{"type": "text", "text"}`` or ``{"type": "file", "mime", "url", "filename"}`` dicts."""

    text: str
    agent: str
    model: str
    parts: list[dict[str, Any]] = field(default_factory=list)


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class TextPart(_Model):
    type: Literal["text"] = "text"
    id: str
    text: str = ""
    synthetic: bool = False


class ReasoningPart(_Model):
    """One block of the model's reasoning: its text and the provider's ``signature`` over it,
    or ``redacted`` (opaque data, no text) for reasoning the provider keeps to itself. Both
    go back to the provider with the history, as they came."""

    type: Literal["reasoning"] = "reasoning"
    id: str
    text: str = ""
    signature: str | None = None
    redacted: str | None = None


class FilePart(_Model):
    type: Literal["file"] = "file"
    id: str
    mime: str
    url: str
    filename: str | None = None


class CompactionPart(_Model):
    type: Literal["compaction"] = "compaction"
    id: str
    auto: bool = True


class ToolTime(_Model):
    start: float | None = None
    end: float | None = None
    compacted: float | None = None


class ToolState(_Model):
    status: Literal["pending", "running", "completed", "error"] = "pending"
    input: Any = Field(default_factory=dict)
    raw: str | None = None
    output: str | None = None
    error: str | None = None
    title: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    attachments: list[dict[str, Any]] = Field(default_factory=list)
    time: ToolTime = Field(default_factory=ToolTime)


class ToolPart(_Model):
    type: Literal["tool"] = "tool"
    id: str
    call_id: str
    tool: str
    state: ToolState = Field(default_factory=ToolState)


Part = Annotated[
    TextPart | ReasoningPart | FilePart | ToolPart | CompactionPart, Field(discriminator="type")
]


class TokenUsage(_Model):
    input: int = 0
    output: int = 0
    reasoning: int = 0
    cache_read: int = 0
    cache_write: int = 0

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write

    def add(self, other: TokenUsage) -> None:
        self.input += other.input
        self.output += other.output
        self.reasoning += other.reasoning
        self.cache_read += other.cache_read
        self.cache_write += other.cache_write


class SessionMessage(_Model):
    """One message. Assistant messages fill in the fields after ``parent_id``."""

    id: str
    session_id: str
    role: Literal["user", "assistant"]
    created: float = Field(default_factory=time.time)
    agent: str | None = None
    model: str | None = None
    #: assistant: the user message it answers
    parent_id: str | None = None
    completed: float | None = None
    finish: str | None = None
    error: str | None = None
    tokens: TokenUsage = Field(default_factory=TokenUsage)
    cost: float = 0.0
    #: assistant: a compaction summary (history before it is replaced by it)
    summary: bool = False
    parts: list[Part] = Field(default_factory=list)

    def info(self) -> dict[str, Any]:
        """The message without its parts, for the store."""
        return self.model_dump(mode="json", exclude={"parts"})

    def tool_parts(self) -> list[ToolPart]:
        return [p for p in self.parts if isinstance(p, ToolPart)]


AssistantInfo = SessionMessage


def part_to_public(part: dict[str, Any]) -> dict[str, Any]:
    """A stored part as ``sessions show --json`` prints it."""
    if part.get("type") == "tool":
        state = part.get("state") or {}
        return {
            "type": "tool",
            "id": part.get("id"),
            "tool": part.get("tool"),
            "call_id": part.get("call_id"),
            "state": {
                "status": state.get("status"),
                "input": state.get("input"),
                "output": state.get("output"),
                "error": state.get("error"),
                "title": state.get("title"),
                "metadata": state.get("metadata") or {},
                "attachments": state.get("attachments") or [],
                "time": state.get("time") or {},
            },
        }
    return dict(part)


# ---------------------------------------------------------------------------------------------
# history -> provider messages
# ---------------------------------------------------------------------------------------------


def visible_history(messages: list[SessionMessage]) -> list[SessionMessage]:
    """The messages the model is sent: from the last completed compaction on (the user message
    asking for the summary, the summary, what came after), else all of them."""
    start = _visible_start(messages)
    return messages[start:] if start else messages


def _visible_start(messages: list[SessionMessage], low: int = 0) -> int | None:
    """Where the visible history starts when the last completed summary is at ``low`` or
    after (see :func:`visible_history`); None when there is none there."""
    for index in range(len(messages) - 1, low - 1, -1):
        message = messages[index]
        if message.role == "assistant" and message.summary and not message.error:
            if index > 0 and any(isinstance(p, CompactionPart) for p in messages[index - 1].parts):
                return index - 1
            return index
    return None


def tool_result_block(part: ToolPart) -> dict[str, Any]:
    state = part.state
    if state.status == "completed":
        if state.time.compacted:
            return _result(part.call_id, PRUNED, False, [])
        return _result(part.call_id, state.output or "", False, list(state.attachments))
    if state.metadata.get("interrupted"):
        return _result(part.call_id, INTERRUPTED, True, [])
    if state.status == "error":
        return _result(part.call_id, state.error or "Tool execution failed", True, [])
    # still pending/running when the history is built: it never finished
    return _result(part.call_id, INTERRUPTED, True, [])


def _result(call_id: str, output: str, is_error: bool, attachments: list) -> dict[str, Any]:
    return {
        "type": "tool_result",
        "id": call_id,
        "output": output,
        "is_error": is_error,
        "attachments": attachments,
    }


def to_provider_messages(messages: list[SessionMessage]) -> list[Message]:
    """The provider-neutral history: compaction applied, pruned outputs as a placeholder,
    each assistant turn's tool calls followed by one ``tool`` message with a result for every
    call, in call order. Consecutive user messages are merged."""
    return ProviderHistory().build(messages)


class ProviderHistory:
    """:func:`to_provider_messages` of one session's history as it grows, at a cost per call
    that does not grow with the history: finished messages are converted once and their
    provider messages kept (merged as they come); a call converts only the messages added, or
    not finished, since the last one, and copies the list of the kept ones, not their blocks.

    So the messages and blocks returned are shared between calls: whoever changes one (a
    provider adding cache markers) changes a copy, as both built-in providers do. A new
    completed compaction starts the kept history again from it; :meth:`clear` after a finished
    message changed (pruning) or the history was replaced."""

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self._source: list[SessionMessage] | None = None
        self._start = 0  # where the visible history starts
        self._upto = 0  # messages[_start:_upto] are finished and kept, converted, in _done
        self._last: SessionMessage | None = None  # messages[_upto - 1] when it was kept
        self._done: list[Message] = []

    def build(self, messages: list[SessionMessage]) -> list[Message]:
        """The provider messages of ``messages`` (the same list, grown, as the last call's)."""
        if (
            messages is not self._source
            or len(messages) < self._upto
            or (self._last is not None and messages[self._upto - 1] is not self._last)
        ):
            self.clear()
            self._source = messages
        start = _visible_start(messages, self._upto)
        if start is not None and start != self._start:
            self._start = self._upto = start
            self._last = None
            self._done = []
        index = self._upto
        # a resumed session converts all its messages here: every object made is kept, so the
        # garbage collector's full passes over the growing heap would only cost (as on load)
        paused = gc.isenabled() and len(messages) - index > _MANY
        if paused:
            gc.disable()
        try:
            while index < len(messages) and _finished(messages[index]):
                _fold(self._done, _convert(messages[index]))
                index += 1
        finally:
            if paused:
                gc.enable()
        if index > self._upto:
            self._upto = index
            self._last = messages[index - 1]
        out = self._done.copy()
        for message in messages[index:]:
            _fold(out, _convert(message))
        return out


#: converting more messages than this at once pauses the garbage collector
_MANY = 1000


def _fold(out: list[Message], converted: list[Message]) -> None:
    """Append ``converted`` to ``out``, a user message merged into a user message before it
    (as a new message: the one in ``out`` may be shared)."""
    for message in converted:
        if message.role == "user" and out and out[-1].role == "user":
            out[-1] = Message("user", [*out[-1].content, *message.content])
        else:
            out.append(message)


def _finished(message: SessionMessage) -> bool:
    if message.role == "user":
        return True
    if message.completed is None:
        return False
    return all(p.state.status in ("completed", "error") for p in message.tool_parts())


def _convert(message: SessionMessage) -> list[Message]:
    """One message as provider messages (a user message; or an assistant turn and its
    results)."""
    out: list[Message] = []
    if message.role == "user":
        content: list[dict[str, Any]] = []
        for part in message.parts:
            if isinstance(part, TextPart) and part.text:
                content.append({"type": "text", "text": part.text})
            elif isinstance(part, FilePart):
                content.append(
                    {
                        "type": "file",
                        "mime": part.mime,
                        "url": part.url,
                        "filename": part.filename,
                    }
                )
            elif isinstance(part, CompactionPart):
                content.append({"type": "text", "text": COMPACTION_QUESTION})
        if content:
            out.append(Message("user", content))
        return out
    assistant: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart) and part.text:
            assistant.append({"type": "text", "text": part.text})
        elif isinstance(part, ReasoningPart) and (part.text or part.signature or part.redacted):
            block: dict[str, Any] = {"type": "reasoning", "text": part.text}
            if part.signature:
                block["signature"] = part.signature
            if part.redacted:
                block["redacted"] = part.redacted
            assistant.append(block)
        elif isinstance(part, ToolPart):
            data = part.state.input if isinstance(part.state.input, dict) else {}
            assistant.append(
                {"type": "tool_use", "id": part.call_id, "name": part.tool, "input": data}
            )
            results.append(tool_result_block(part))
    if not assistant:
        return out
    out.append(Message("assistant", assistant))
    if results:
        out.append(Message("tool", results))
    return out


def estimate_tokens(value: Any) -> int:
    """A cheap token estimate: characters / 4."""
    if isinstance(value, str):
        return len(value) // 4
    return len(json.dumps(value, default=str, ensure_ascii=False)) // 4
