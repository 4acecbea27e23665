"""Model providers: the protocol a provider plugin implements, and its stream events.

A model id is ``"<provider>/<model>"`` (``anthropic/claude-sonnet-4-5``, ``scripted/demo``).
A provider streams one reply as a sequence of events; the agent loop assembles them. A tool
call runs only when its input is complete (:class:`ToolCallEnd`).

Retries happen in one place, the agent loop: a provider makes ONE request per
:meth:`Provider.stream` (an SDK's own retries are turned off) and reports a failure as a
:class:`StreamError` saying whether it is ``retryable`` and how long the server asked to wait;
:func:`http_retry` reads both from an HTTP answer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
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
    "http_retry",
    "import_soon",
    "split_model_id",
]

#: statuses worth another try besides every 5xx (as the official SDKs have it)
RETRY_STATUSES = frozenset({408, 409, 429})
#: the longest wait a server may ask for; a longer one is not honoured (the loop's back-off is)
MAX_RETRY_AFTER = 60.0


#: the modules :func:`import_soon` was asked for, in this process
_importing: set[str] = set()


def import_soon(*modules: str) -> None:
    """Start importing ``modules`` (in order) in a background thread and return at once; each
    is asked for once per process. Whoever imports one of them meanwhile waits for this import
    (Python's per-module import lock) instead of starting its own. A module that fails to
    import is left alone: the real ``import`` reports it."""
    wanted = [name for name in modules if name not in _importing]
    if not wanted:
        return
    _importing.update(wanted)
    import threading

    def run() -> None:
        import importlib

        for name in wanted:
            try:
                importlib.import_module(name)
            except Exception:  # reported by the import that needs it
                continue

    threading.Thread(target=run, name="hookcode-import", daemon=True).start()


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
    """The request failed. ``retryable`` errors (rate limit, overload, a lost connection) are
    retried by the loop, if nothing of the reply was run yet, after ``retry_after`` seconds when
    the server said how long to wait, else after its back-off; others end the run with
    ``message``. The message says what went wrong, never how often it was tried (the loop
    reports its own attempts)."""

    message: str
    retryable: bool = False
    type: Literal["error"] = "error"
    retry_after: float | None = None


StreamEvent = (
    TextDelta | ReasoningDelta | ToolCallStart | ToolInputDelta | ToolCallEnd | Finish | StreamError
)


@runtime_checkable
class Provider(Protocol):
    """What a provider plugin returns from the ``provider`` hook.

    Optional: an attribute ``max_retries`` (int, or None for the loop's default) sets how many
    times the loop retries a retryable error of this provider (its ``[provider.NAME]
    max_retries``). And a method ``preload()``, called as soon as a run knows it will use this
    provider (:func:`hookcode.session.resolve_model`): it starts importing what the first
    request needs (its SDK) with :func:`import_soon` and returns at once, so the import goes on
    while the rest of the run starts."""

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


def http_retry(status: int, headers: Mapping[str, str]) -> tuple[bool, float | None]:
    """For an HTTP error answer: (whether another try may succeed, the seconds the server asked
    to wait or None).

    Retryable are 408, 409, 429 and every 5xx, unless an ``x-should-retry: true|false`` header
    says otherwise. The wait comes from ``retry-after-ms``, else ``retry-after`` (seconds or an
    HTTP date), and counts only within (0, :data:`MAX_RETRY_AFTER`] seconds."""
    lowered = {k.lower(): v for k, v in headers.items()}
    should = str(lowered.get("x-should-retry", "")).strip().lower()
    if should in ("true", "false"):
        retryable = should == "true"
    else:
        retryable = status in RETRY_STATUSES or status >= 500
    return retryable, _retry_after(lowered)


def _retry_after(headers: Mapping[str, str]) -> float | None:
    delay: float | None = None
    try:
        if "retry-after-ms" in headers:
            delay = float(headers["retry-after-ms"]) / 1000
    except ValueError:
        delay = None
    if delay is None and "retry-after" in headers:
        value = headers["retry-after"].strip()
        try:
            delay = float(value)
        except ValueError:
            import email.utils
            import time

            try:
                when = email.utils.parsedate_to_datetime(value)
            except (TypeError, ValueError, IndexError):
                when = None
            if when is not None:
                delay = when.timestamp() - time.time()
    return delay if delay is not None and 0 < delay <= MAX_RETRY_AFTER else None
