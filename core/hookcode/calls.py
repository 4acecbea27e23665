"""What one tool call is made of: the call, its result (with attachments), its abort signal,
its :class:`Outcome` (result or error), and which call of a task is not recorded yet.

The bottom of the tool side: everything above it (:mod:`hookcode.tooldef`,
:mod:`hookcode.tools`, :mod:`hookcode.pipeline`, :mod:`hookcode.runtime`) names these; they
are re-exported, so ``hookcode.tools.ToolCall`` and ``hookcode.pipeline.Outcome`` keep working.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from hookcode.errors import ToolError

__all__ = ["AbortSignal", "Attachment", "Outcome", "ToolCall", "ToolResult", "unrecorded_running"]

#: the innermost call of this task whose running state is not committed yet (an object with
#: ``commit()``, set by :func:`hookcode.pipeline.invoke`): what
#: :meth:`hookcode.runtime.Runtime.record_part` commits before anything recorded inside it
unrecorded_running: ContextVar[Any] = ContextVar("hookcode_unrecorded_running", default=None)


@dataclass
class Attachment:
    """A file attached to a result (image, PDF): ``url`` is usually a base64 data URL."""

    mime: str
    url: str
    filename: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"mime": self.mime, "url": self.url, "filename": self.filename}


@dataclass
class ToolResult:
    """What a tool call produced: ``output`` is what the model reads."""

    output: str = ""
    title: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    attachments: list[Attachment] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "output": self.output,
            "metadata": self.metadata,
            "attachments": [a.to_dict() for a in self.attachments],
        }


@dataclass
class ToolCall:
    """One call of a tool, as hooks see it.

    ``args`` is the raw input until the pipeline has validated it; from then on (every hook
    sees it after validation) it is a JSON-compatible dict keyed by the model-facing names,
    defaults applied. Hooks may mutate it or assign a new dict; core re-validates it after
    the ``tool_execute_before`` hooks.
    """

    tool: str
    args: Any
    call_id: str
    session_id: str
    agent: str = "build"
    message_id: str | None = None
    model: str | None = None
    parent_call_id: str | None = None


class AbortSignal:
    """A thread-safe abort flag that async code can await and sync code can poll."""

    def __init__(self, parent: AbortSignal | None = None) -> None:
        self._set = False  # written under the lock; read without it (a bool read is atomic)
        self._callbacks: list[Callable[[], None]] = []
        self._lock = threading.Lock()
        self.reason: str | None = None
        if parent is not None:
            parent.add_callback(lambda: self.abort(parent.reason))

    def is_set(self) -> bool:
        return self._set

    @property
    def aborted(self) -> bool:
        return self._set

    def abort(self, reason: str | None = None) -> None:
        with self._lock:
            if self._set:
                return
            self.reason = reason
            self._set = True
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def add_callback(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (from whichever thread aborts) once the signal fires."""
        with self._lock:
            if not self._set:
                self._callbacks.append(callback)
                return
        callback()

    def remove_callback(self, callback: Callable[[], None]) -> None:
        """Forget a callback that is no longer wanted (the signal has not fired; a session's
        signal outlives many calls)."""
        with self._lock, contextlib.suppress(ValueError):
            self._callbacks.remove(callback)

    async def wait(self) -> None:
        """Return once the signal fires."""
        import asyncio

        if self._set:
            return
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            loop.call_soon_threadsafe(lambda: future.done() or future.set_result(None))

        self.add_callback(wake)
        await future


@dataclass
class Outcome:
    """The end of one call: a result, or the error it failed with."""

    call: ToolCall
    result: ToolResult | None = None
    error: BaseException | None = None
    #: the error's message as recorded and shown (known secrets redacted); None: the error's own
    message: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def error_text(self) -> str | None:
        if self.error is None:
            return None
        return self.message if self.message is not None else _message(self.error)

    def to_dict(self) -> dict[str, Any]:
        if self.result is not None and self.error is None:
            data = self.result.to_dict()
            data["error"] = None
            return data
        return {
            "title": "",
            "output": "",
            "metadata": {},
            "attachments": [],
            "error": self.error_text,
        }


def _message(exc: BaseException) -> str:
    text = str(exc)
    if isinstance(exc, ToolError):
        return text
    return text or type(exc).__name__
