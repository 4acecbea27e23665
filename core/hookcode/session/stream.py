"""Streaming one model reply into a message: text and reasoning parts growing as deltas
arrive (stored at most every :data:`SAVE_INTERVAL` seconds), tool parts appearing ``pending``,
parts a cut-off or an abort leaves failed, and the provider's per-session state. A part of
:class:`~hookcode.session.SessionLoop`, which starts the calls (``_on_tool_end``)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hookcode.ids import new_id
from hookcode.messages import CUT_OFF, ReasoningPart, SessionMessage, TextPart, ToolPart, ToolState
from hookcode.providers import (
    Finish,
    ModelRequest,
    ReasoningDelta,
    StreamError,
    TextDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolInputDelta,
    Usage,
)
from hookcode.session.history import ABORTED, SessionHistory, add_usage
from hookcode.store import ToolPartRecord

if TYPE_CHECKING:
    from hookcode.pipeline import Outcome
    from hookcode.providers import Provider
    from hookcode.tools import ToolCall

__all__ = ["SAVE_INTERVAL", "ReplyStream", "Step"]

#: seconds between two saves of a streaming text part
SAVE_INTERVAL = 0.2


@dataclass
class Step:
    """What one model request produced (one attempt)."""

    parts: list[Any] = field(default_factory=list)  # every part this attempt created
    current: Any = None  # the part the last delta went to
    pending: dict[str, ToolPart] = field(default_factory=dict)  # provider id -> not complete
    calls: list[tuple[ToolCall, ToolPart, asyncio.Future[Outcome]]] = field(default_factory=list)
    finish: str = "stop"
    usage: Usage = field(default_factory=Usage)
    error: StreamError | None = None
    aborted: bool = False
    text: list[str] = field(default_factory=list)
    dirty: set[str] = field(default_factory=set)
    saved_at: float = 0.0
    #: persists the provider's per-session state (where a script is); run before a call starts
    save_state: Callable[[], None] | None = None


class ReplyStream(SessionHistory):
    """Streams a reply into a message (see the module's docstring)."""

    _state: dict[str, Any] | None
    _state_saved: str

    if TYPE_CHECKING:
        # SessionLoop's: the call whose input is complete starts
        def _on_tool_end(
            self, msg: SessionMessage, st: Step, event: ToolCallEnd, run_calls: bool
        ) -> None: ...

    async def _stream(
        self,
        provider: Provider,
        request: ModelRequest,
        msg: SessionMessage,
        st: Step,
        run_calls: bool,
    ) -> None:
        consume = asyncio.ensure_future(self._consume(provider, request, msg, st, run_calls))
        if self.abort.is_set():
            consume.cancel()
        waiter = asyncio.ensure_future(self.abort.wait())
        try:
            await asyncio.wait({consume, waiter}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
        if not consume.done():
            consume.cancel()
            st.aborted = True
        with contextlib.suppress(asyncio.CancelledError):
            await consume
        if consume.cancelled():
            st.aborted = True

    async def _consume(
        self,
        provider: Provider,
        request: ModelRequest,
        msg: SessionMessage,
        st: Step,
        run_calls: bool,
    ) -> None:
        try:
            async for event in provider.stream(request):
                if isinstance(event, TextDelta):
                    self._on_text(msg, st, event.text, reasoning=False)
                elif isinstance(event, ReasoningDelta):
                    self._on_text(
                        msg,
                        st,
                        event.text,
                        reasoning=True,
                        signature=event.signature,
                        redacted=event.redacted,
                    )
                elif isinstance(event, ToolCallStart):
                    self._on_tool_start(msg, st, event.id, event.name)
                elif isinstance(event, ToolInputDelta):
                    part = st.pending.get(event.id)
                    if part is not None:
                        part.state.raw = (part.state.raw or "") + event.text
                        self._touch(msg, st, part)
                elif isinstance(event, ToolCallEnd):
                    self._on_tool_end(msg, st, event, run_calls)
                elif isinstance(event, Finish):
                    st.finish = event.reason or "stop"
                    add_usage(st.usage, event.usage)
                elif isinstance(event, StreamError):
                    st.error = event
                    break
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a provider that raises instead of yielding StreamError
            st.error = StreamError(
                f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__,
                retryable=bool(getattr(exc, "retryable", False)),
            )
        finally:
            self._flush(msg, st)

    # -- stream events ------------------------------------------------------------------------
    def _on_text(
        self,
        msg: SessionMessage,
        st: Step,
        text: str,
        *,
        reasoning: bool,
        signature: str | None = None,
        redacted: str | None = None,
    ) -> None:
        if not text and not signature and not redacted:
            return
        kind: type[ReasoningPart] | type[TextPart] = ReasoningPart if reasoning else TextPart
        part: ReasoningPart | TextPart | None = st.current if isinstance(st.current, kind) else None
        if isinstance(part, ReasoningPart) and (part.redacted or (part.signature and text)):
            part = None  # that block is complete (redacted, or sealed by its signature)
        if redacted and isinstance(part, ReasoningPart) and (part.text or part.signature):
            part = None  # a redacted block is a block of its own
        if part is None:
            self._flush(msg, st)
            part = kind(id=new_id("prt"))
            msg.parts.append(part)
            st.parts.append(part)
            st.current = part
            self._save_part(msg, part)
        part.text += text
        if reasoning:
            if signature:
                part.signature = signature  # type: ignore[union-attr]
            if redacted:
                part.redacted = redacted  # type: ignore[union-attr]
            self.emit("reasoning", {"text": text, "message_id": msg.id, "part_id": part.id})
        else:
            st.text.append(text)
            self.emit("text", {"text": text, "message_id": msg.id, "part_id": part.id})
        self._touch(msg, st, part)

    def _touch(self, msg: SessionMessage, st: Step, part: Any) -> None:
        st.dirty.add(part.id)
        now = time.monotonic()
        if now - st.saved_at >= SAVE_INTERVAL:
            self._flush(msg, st, growing=part)

    def _flush(self, msg: SessionMessage, st: Step, growing: Any = None) -> None:
        """Store the parts changed since the last flush. ``growing``: the part still
        streaming, stored (like the input of every call still streaming) without an end that
        could be the start of a secret: the rest comes later, and half a key would not be
        recognised."""
        if not st.dirty:
            return
        for part in st.parts:
            if part.id in st.dirty:
                if isinstance(part, ToolPart):
                    raw = part.state.raw or ""
                    redactor = self.runtime.secrets.redactor()
                    streaming = any(part is p for p in st.pending.values())
                    raw = redactor.settled(raw) if streaming else redactor.redact(raw)
                    self.store.set_tool_raw(part.call_id, raw)
                else:
                    self._save_part(msg, part, growing=part is growing)
        st.dirty.clear()
        st.saved_at = time.monotonic()

    def _unique_call_id(self, provider_id: str) -> str:
        """The provider's call id, unless it is empty or already used (some servers number
        their calls per reply): then a fresh one, used for the model as well."""
        if provider_id and self.store.get_tool_part(provider_id) is None:
            return provider_id
        return new_id("call")

    def _on_tool_start(
        self, msg: SessionMessage, st: Step, provider_id: str, name: str
    ) -> ToolPart:
        self._flush(msg, st)
        call_id = self._unique_call_id(provider_id)
        part = ToolPart(
            id=new_id("prt"),
            call_id=call_id,
            tool=name,
            state=ToolState(status="pending", input={}, raw=""),
        )
        msg.parts.append(part)
        st.parts.append(part)
        st.current = part
        st.pending[provider_id] = part
        with self.store.transaction():
            self.runtime.record_part(
                ToolPartRecord(
                    id=call_id,
                    session_id=msg.session_id,
                    tool=name,
                    state="pending",
                    input={},
                    message_id=msg.id,
                )
            )
            self._save_part(msg, part)
        self.emit(
            "tool",
            {
                "status": "pending",
                "tool": name,
                "call_id": call_id,
                "input": {},
                "message_id": msg.id,
            },
        )
        return part

    def _fail_part(
        self, msg: SessionMessage, part: ToolPart, error: str, *, input: Any = None
    ) -> None:
        state = part.state
        state.status = "error"
        state.error = error
        state.time.end = time.time()
        record = ToolPartRecord(
            id=part.call_id,
            session_id=msg.session_id,
            tool=part.tool,
            state="error",
            input=input if input is not None else state.input,
            message_id=msg.id,
            error=error,
            time_start=state.time.start,
            time_end=state.time.end,
        )
        self.runtime.record_part(record)
        self.emit(
            "tool_result",
            {
                "tool": part.tool,
                "call_id": part.call_id,
                "status": "error",
                "ok": False,
                "title": "",
                "output": None,
                "error": error,
                "metadata": {},
            },
        )

    def _close_parts(self, msg: SessionMessage, st: Step) -> None:
        """After the step: cut-off calls are not run; an abort leaves nothing running."""
        aborted = st.aborted or self.abort.is_set()
        for part in st.pending.values():
            if part.state.raw:
                self.store.set_tool_raw(part.call_id, self.runtime.secrets.redact(part.state.raw))
            self._fail_part(msg, part, ABORTED if aborted else CUT_OFF)
        st.pending.clear()
        if aborted:
            for part in msg.tool_parts():
                if part.state.status in ("pending", "running"):
                    self._fail_part(msg, part, ABORTED)

    # -- provider state -----------------------------------------------------------------------
    def _provider_state(self, provider: Provider) -> dict[str, Any]:
        assert self.session is not None
        if self._state is None:
            loaded = self.store.get_state(self.session.id, f"provider:{provider.id}")
            self._state = loaded if isinstance(loaded, dict) else {}
            self._state_saved = json.dumps(self._state, sort_keys=True, default=str)
        return self._state

    def _save_provider_state(self, provider: Provider, state: dict[str, Any]) -> None:
        assert self.session is not None
        self._state = state
        dumped = json.dumps(state, sort_keys=True, default=str)
        if dumped != self._state_saved:
            self.store.set_state(self.session.id, f"provider:{provider.id}", state)
            self._state_saved = dumped
