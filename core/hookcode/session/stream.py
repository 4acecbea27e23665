"""Streaming one model reply into a message: text and reasoning parts growing as deltas
arrive (stored at most every :data:`SAVE_INTERVAL` seconds), tool parts appearing ``pending``,
parts a cut-off or an abort leaves failed, and the provider's per-session state. A part of
:class:`~hookcode.session.SessionLoop`, which starts the calls (``_on_tool_end``).

A text part or a call's input may be megabytes, streamed in pieces of a few characters: the
pieces are gathered by :class:`StreamedText` (joined when needed, never re-built per piece),
and the text streamed so far is stored again only once it has doubled since it was last stored
(or while it is small), so streaming, storing and redacting it cost time linear in its size.
A streaming part's ``text`` (a call's ``state.raw``) is therefore brought up to date when it is
stored and when its stream ends, not at every piece; the live events carry every piece."""

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
from hookcode.startup import resume as resume_collection
from hookcode.store import ToolPartRecord

if TYPE_CHECKING:
    from hookcode.pipeline import Outcome
    from hookcode.providers import Provider
    from hookcode.tools import ToolCall

__all__ = ["SAVE_INTERVAL", "ReplyStream", "Step", "StreamedText"]

#: seconds between two saves of a streaming text part
SAVE_INTERVAL = 0.2
#: a streaming text or input up to this many characters is stored every
#: :data:`SAVE_INTERVAL`; a longer one only once it has doubled since it was last stored
SMALL_TEXT = 64 * 1024
#: pieces gathered before they are joined into one block (bounds the per-piece overhead)
_PIECES = 1024


class StreamedText:
    """The text of one part (or one call's input) as it streams: pieces appended in O(1) each, joined into
    blocks every :data:`_PIECES` pieces (each character is copied a bounded number of times,
    and a few dozen bytes of object overhead per piece are never held for long)."""

    __slots__ = ("_blocks", "_pieces", "saved", "size")

    def __init__(self) -> None:
        self._blocks: list[str] = []
        self._pieces: list[str] = []
        self.size = 0  # characters so far
        self.saved = -1  # ``size`` when last stored; -1: never

    def add(self, text: str) -> None:
        self._pieces.append(text)
        self.size += len(text)
        if len(self._pieces) >= _PIECES:
            self._blocks.append("".join(self._pieces))
            self._pieces.clear()

    def text(self) -> str:
        """The whole text so far (kept joined, so asking again costs nothing more)."""
        if self._pieces or len(self._blocks) > 1:
            self._blocks = ["".join([*self._blocks, *self._pieces])]
            self._pieces.clear()
        return self._blocks[0] if self._blocks else ""

    def save_due(self) -> bool:
        """Whether storing the text now keeps the total stored linear in its final size."""
        return self.size != self.saved and (self.size <= SMALL_TEXT or self.size >= 2 * self.saved)


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
    dirty: set[str] = field(default_factory=set)
    saved_at: float = 0.0
    #: part id -> the input streamed so far of a call not complete
    inputs: dict[str, StreamedText] = field(default_factory=dict)
    #: part id -> the text streamed so far of a text or reasoning part of this attempt
    texts: dict[str, StreamedText] = field(default_factory=dict)
    #: persists the provider's per-session state (where a script is); run before a call starts
    save_state: Callable[[], None] | None = None

    def reply_text(self) -> str:
        """The text this attempt's text parts received so far (reasoning not included)."""
        return "".join(
            self.texts[part.id].text() for part in self.parts if isinstance(part, TextPart)
        )


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
                    if part is not None and event.text:
                        st.inputs[part.id].add(event.text)
                        self._touch(msg, st, part)
                elif isinstance(event, ToolCallEnd):
                    self._end_input(st, st.pending.get(event.id))
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
            resume_collection()  # the first reply ends start-up (hookcode.startup)

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
        if (
            redacted
            and isinstance(part, ReasoningPart)
            and (st.texts[part.id].size or part.signature)
        ):
            part = None  # a redacted block is a block of its own
        if part is None:
            self._flush(msg, st)
            part = kind(id=new_id("prt"))
            msg.parts.append(part)
            st.parts.append(part)
            st.current = part
            st.texts[part.id] = StreamedText()
            self._save_part(msg, part)
        if text:
            st.texts[part.id].add(text)
        if reasoning:
            if signature:
                part.signature = signature  # type: ignore[union-attr]
            if redacted:
                part.redacted = redacted  # type: ignore[union-attr]
            self.emit("reasoning", {"text": text, "message_id": msg.id, "part_id": part.id})
        else:
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
        kept: set[str] = set()
        for part in st.parts:
            if part.id in st.dirty:
                if isinstance(part, ToolPart):
                    streaming = part.id in st.inputs
                    if streaming and not st.inputs[part.id].save_due():
                        kept.add(part.id)  # stored again once it has grown enough
                        continue
                    raw = self._input_so_far(st, part) if streaming else part.state.raw or ""
                    redactor = self.runtime.secrets.redactor()
                    raw = redactor.settled(raw) if streaming else redactor.redact(raw)
                    self.store.set_tool_raw(part.call_id, raw)
                    if streaming:
                        st.inputs[part.id].saved = st.inputs[part.id].size
                else:
                    streamed = st.texts.get(part.id)
                    if streamed is not None:
                        if part is growing and not streamed.save_due():
                            kept.add(part.id)  # stored again once it has grown enough
                            continue
                        part.text = streamed.text()
                        streamed.saved = streamed.size
                    self._save_part(msg, part, growing=part is growing)
        st.dirty = kept
        st.saved_at = time.monotonic()

    @staticmethod
    def _input_so_far(st: Step, part: ToolPart) -> str:
        """The input streamed so far of a call not complete, also put in ``part.state.raw``."""
        part.state.raw = st.inputs[part.id].text()
        return part.state.raw

    @staticmethod
    def _end_input(st: Step, part: ToolPart | None) -> None:
        """The input of ``part`` is complete (or cut off): all of it in ``part.state.raw``."""
        found = st.inputs.pop(part.id, None) if part is not None else None
        if part is not None and found is not None:
            part.state.raw = found.text()

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
        st.inputs[part.id] = StreamedText()
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
                "refused": False,
                "metadata": {},
            },
        )

    def _close_parts(self, msg: SessionMessage, st: Step) -> None:
        """After the step: cut-off calls are not run; an abort leaves nothing running."""
        aborted = st.aborted or self.abort.is_set()
        for part in st.pending.values():
            self._end_input(st, part)
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
