"""Model providers: the protocol a provider plugin implements, and its stream events.

A model id is ``"<provider>/<model>"`` (``anthropic/claude-sonnet-4-5``, ``scripted/demo``).
A provider streams one reply as a sequence of events; the agent loop assembles them. A tool
call runs only when its input is complete (:class:`ToolCallEnd`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

__all__ = [
    "AuthMethod",
    "Finish",
    "Message",
    "ModelInfo",
    "ModelRequest",
    "Provider",
    "ReasoningDelta",
    "StreamError",
    "StreamEvent",
    "TextDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolInputDelta",
    "Usage",
    "split_model_id",
]


def split_model_id(model_id: str) -> tuple[str, str]:
    """``"anthropic/claude-x"`` -> ``("anthropic", "claude-x")``; ValueError without a slash."""
    provider, sep, model = model_id.partition("/")
    if not sep or not provider or not model:
        raise ValueError(f"model id {model_id!r} must look like 'provider/model'")
    return provider, model


@dataclass
class ModelInfo:
    id: str  # without the provider prefix
    name: str = ""
    context: int | None = None
    output: int | None = None
    cost_in: float = 0.0  # USD per million input tokens
    cost_out: float = 0.0


@dataclass
class Usage:
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0
    cost: float = 0.0


@dataclass
class Message:
    """A provider-neutral message.

    ``role`` is ``user``, ``assistant`` or ``tool``. ``content`` is a list of blocks:
    ``{"type": "text", "text"}``, ``{"type": "reasoning", "text", "signature"?, "redacted"?}``
    (``redacted``: the opaque data of reasoning the provider would not show),
    ``{"type": "file", "mime", "url", "filename"}`` (user; ``url`` usually a data URL),
    ``{"type": "tool_use", "id", "name", "input"}`` (assistant), and for role ``tool``
    ``{"type": "tool_result", "id", "output", "is_error", "attachments"}``.

    The loop sends every ``tool_use`` of an assistant turn a ``tool_result`` in the ``tool``
    message right after it, in call order. Two ``user`` messages never follow each other, but
    a ``user`` message may follow a ``tool`` message (providers that carry tool results in a
    user turn merge them, results first).
    """

    role: Literal["user", "assistant", "tool"]
    content: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class ModelRequest:
    model: str  # without the provider prefix
    system: list[str]
    messages: list[Message]
    tools: list[dict[str, Any]]  # {"name", "description", "parameters"}
    params: dict[str, Any] = field(default_factory=dict)
    #: the session making the request (None outside a session)
    session_id: str | None = None
    #: the agent making the request (``build``, ``compaction``, a sub-agent...)
    agent: str | None = None
    #: this provider's small per-session state, JSON-compatible: the loop loads it from the
    #: store before the request and saves it after the stream, so it survives ``--continue``
    state: dict[str, Any] = field(default_factory=dict)


@dataclass
class TextDelta:
    text: str
    type: Literal["text"] = "text"


@dataclass
class ReasoningDelta:
    """Reasoning text as it streams. ``signature`` (sent as the block ends) seals the block's
    text; ``redacted`` is a whole block of reasoning the provider keeps to itself (opaque data
    to send back as it came, no text). A block ends with its signature, or at any other part."""

    text: str
    signature: str | None = None
    redacted: str | None = None
    type: Literal["reasoning"] = "reasoning"


@dataclass
class ToolCallStart:
    id: str
    name: str
    type: Literal["tool_start"] = "tool_start"


@dataclass
class ToolInputDelta:
    id: str
    text: str
    type: Literal["tool_delta"] = "tool_delta"


@dataclass
class ToolCallEnd:
    """The call's input is complete: the loop may run it now."""

    id: str
    name: str
    input: Any
    type: Literal["tool_end"] = "tool_end"


@dataclass
class Finish:
    reason: str  # "tool-calls" | "stop" | "length" | "content-filter" | "error" | other
    usage: Usage = field(default_factory=Usage)
    type: Literal["finish"] = "finish"


@dataclass
class StreamError:
    """The request failed. ``retryable`` errors (rate limit, overload) are retried by the loop
    with back-off (``retry_after`` seconds first, when the server said so) if nothing of the
    reply was run yet; others end the run with ``message``."""

    message: str
    retryable: bool = False
    type: Literal["error"] = "error"
    retry_after: float | None = None


StreamEvent = (
    TextDelta | ReasoningDelta | ToolCallStart | ToolInputDelta | ToolCallEnd | Finish | StreamError
)


@runtime_checkable
class Provider(Protocol):
    """What a provider plugin returns from the ``provider`` hook."""

    id: str
    name: str

    def models(self) -> list[ModelInfo]:
        """The models this provider offers (may be empty when any model id is accepted)."""
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Stream one reply. Import SDKs here, not at module level."""
        ...


@dataclass
class AuthMethod:
    """How a provider gets credentials."""

    provider: str
    type: Literal["api", "env", "oauth"]
    label: str = ""
    env: list[str] = field(default_factory=list)  # environment variables consulted
