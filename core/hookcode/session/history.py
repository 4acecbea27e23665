"""A session's history, in memory and in the store: loading it, adding the user's and the
model's messages, storing parts (known secrets redacted) and closing a message with its usage
and cost. A part of :class:`~hookcode.session.SessionLoop`."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Protocol

from hookcode.ids import new_id
from hookcode.messages import FilePart, SessionMessage, TextPart, TokenUsage, ToolPart
from hookcode.messages import UserMessage as UserMessage
from hookcode.providers import Usage
from hookcode.session.model_choice import model_info

if TYPE_CHECKING:
    from hookcode.agents import AgentSpec
    from hookcode.messages import ProviderHistory
    from hookcode.providers import ModelInfo, Provider, StreamError
    from hookcode.session.host import SessionHost
    from hookcode.session.result import EventCallback, RunResult
    from hookcode.store import SessionRecord, Store
    from hookcode.tools import AbortSignal

__all__ = ["ABORTED", "SessionHistory", "UserMessage", "add_usage", "load_messages", "title_of"]

ABORTED = "Tool execution aborted"


class Attempt(Protocol):
    """What closing or discarding a message reads of one model request's attempt (the
    :class:`~hookcode.session.stream.Step` of the stream built on this class)."""

    @property
    def parts(self) -> list[Any]: ...

    @property
    def finish(self) -> str: ...

    @property
    def usage(self) -> Usage: ...

    @property
    def error(self) -> StreamError | None: ...

    @property
    def aborted(self) -> bool: ...


def title_of(text: str) -> str:
    """A new session's title: the first line of its first message, cut at 60 characters."""
    stripped = text.strip()
    return stripped.splitlines()[0].strip()[:60] if stripped else "New session"


def load_messages(runtime_or_store: Any, session_id: str) -> list[SessionMessage]:
    """The session's messages as :class:`~hookcode.messages.SessionMessage` objects; parts of
    unknown types are skipped.

    Tens of thousands of messages load in one validation of the whole list, with the garbage
    collector paused: every object made is kept, and its full passes over the growing heap
    would cost more than the load itself. Only when a stored message is not valid as it is,
    are the messages validated one by one, a part that is not valid left out."""
    import gc

    store = getattr(runtime_or_store, "store", runtime_or_store)
    paused = gc.isenabled()
    gc.disable()
    try:
        raw = store.messages(session_id)
        adapter, known = _messages_adapter()
        for message in raw:
            message["parts"] = [p for p in message.get("parts", ()) if p.get("type") in known]
        try:
            return adapter.validate_python(raw)
        except ValueError:  # pydantic's ValidationError: one message or part is not valid
            return [_one_by_one(message) for message in raw]
    finally:
        if paused:
            gc.enable()


def _one_by_one(raw: dict[str, Any]) -> SessionMessage:
    parts = raw.pop("parts", [])
    message = SessionMessage.model_validate(raw)
    for part in parts:
        try:
            message.parts.append(_part_adapter().validate_python(part))
        except Exception:
            continue
    return message


_adapter: Any = None
_list_adapter: tuple[Any, frozenset[str]] | None = None


def _part_adapter() -> Any:
    global _adapter
    if _adapter is None:
        from pydantic import TypeAdapter

        from hookcode.messages import Part

        _adapter = TypeAdapter(Part)
    return _adapter


def _messages_adapter() -> tuple[Any, frozenset[str]]:
    """A validator of a list of messages, and the part types they may hold."""
    global _list_adapter
    if _list_adapter is None:
        from typing import get_args

        from pydantic import TypeAdapter

        from hookcode.messages import Part

        kinds = get_args(get_args(Part)[0])  # Annotated[A | B | ..., Field] -> (A, B, ...)
        known = frozenset(kind.model_fields["type"].default for kind in kinds)
        _list_adapter = (TypeAdapter(list[SessionMessage]), known)
    return _list_adapter


class SessionHistory:
    """The session's messages and how they are stored. :class:`~hookcode.session.SessionLoop`
    sets the attributes below in its ``__init__``."""

    runtime: SessionHost
    store: Store
    spec: AgentSpec
    session: SessionRecord | None
    provider: Provider
    model_name: str
    model_id: str
    abort: AbortSignal
    emit: EventCallback
    messages: list[SessionMessage]
    result: RunResult
    _info: ModelInfo | bool | None
    #: the provider messages of the history, kept as it grows
    _history: ProviderHistory

    def _open(self) -> None:
        """A session run before: mark what a dead process left running, load the history."""
        assert self.session is not None
        marked = self.store.recover_session(self.session.id, ABORTED)
        if marked:
            self.runtime.events.publish(
                "session.recovered", session_id=self.session.id, parts=marked
            )
            self.emit("recovered", {"session_id": self.session.id, "parts": marked})
        self.messages = load_messages(self.store, self.session.id)
        updates: dict[str, Any] = {}
        if self.session.model != self.model_id:
            updates["model"] = self.model_id
        if self.session.agent != self.spec.name:
            updates["agent"] = self.spec.name
        if updates:
            self.store.update_session(self.session.id, **updates)

    def _add_user(self, message: UserMessage) -> SessionMessage:
        assert self.session is not None
        user = SessionMessage(
            id=new_id("msg"),
            session_id=self.session.id,
            role="user",
            agent=self.spec.name,
            model=self.model_id,
        )
        if message.text:
            user.parts.append(TextPart(id=new_id("prt"), text=message.text))
        for extra in message.parts:
            kind = extra.get("type")
            if kind == "text" and extra.get("text"):
                user.parts.append(
                    TextPart(
                        id=new_id("prt"),
                        text=str(extra["text"]),
                        synthetic=bool(extra.get("synthetic")),
                    )
                )
            elif kind == "file" and extra.get("url"):
                user.parts.append(
                    FilePart(
                        id=new_id("prt"),
                        mime=str(extra.get("mime") or "application/octet-stream"),
                        url=str(extra["url"]),
                        filename=extra.get("filename"),
                    )
                )
        self._append(user)
        if not self.session.title or self.session.title == "New session":
            title = title_of(self.runtime.secrets.redact(message.text))  # cut after: no half key
            self.store.update_session(self.session.id, title=title)
            self.session.title = title
        return user

    def _append(self, message: SessionMessage) -> None:
        self.messages.append(message)
        self._save_message(message)
        for part in message.parts:
            self._save_part(message, part)
        self.runtime.events.publish(
            "message.updated", session_id=message.session_id, message=message.info()
        )

    def _new_assistant(
        self, agent: str, model_id: str, parent_id: str, **extra: Any
    ) -> SessionMessage:
        assert self.session is not None
        msg = SessionMessage(
            id=new_id("msg"),
            session_id=self.session.id,
            role="assistant",
            agent=agent,
            model=model_id,
            parent_id=parent_id,
            **extra,
        )
        self.messages.append(msg)
        self._save_message(msg)
        return msg

    def _finish_message(self, msg: SessionMessage, st: Attempt) -> None:
        assert self.session is not None
        msg.finish = "error" if st.error else ("aborted" if st.aborted else st.finish)
        if st.error is not None:
            msg.error = st.error.message
        elif st.aborted:
            msg.error = "aborted"
        u = st.usage
        msg.tokens = TokenUsage(
            input=u.input,
            output=u.output,
            reasoning=u.reasoning,
            cache_read=u.cache_read,
            cache_write=u.cache_write,
        )
        cost = u.cost
        info = self._model_info() if msg.model == self.model_id else None
        if not cost and info is not None and (info.cost_in or info.cost_out):
            cost = (u.input * info.cost_in + u.output * info.cost_out) / 1_000_000
        msg.cost = cost
        msg.completed = time.time()
        with self.store.transaction():
            self._save_message(msg)
            self.store.add_session_usage(
                self.session.id,
                cost=cost,
                tokens_in=u.input,
                tokens_out=u.output,
                tokens_reasoning=u.reasoning,
                tokens_cache_read=u.cache_read,
                tokens_cache_write=u.cache_write,
            )
        total = self.result.usage
        add_usage(total, u)
        total.cost += cost - u.cost
        self.runtime.events.publish(
            "message.updated", session_id=self.session.id, message=msg.info()
        )

    def _discard(self, msg: SessionMessage, st: Attempt) -> None:
        """Forget the parts of a failed attempt (nothing of it ran)."""
        for part in st.parts:
            if part in msg.parts:
                msg.parts.remove(part)
            self.store.delete_part(part.id)
        st.parts.clear()

    def _save_part(self, msg: SessionMessage, part: Any, *, growing: bool = False) -> None:
        """Store a part; known secrets (a key pasted in a message, or repeated by the model)
        are redacted from the stored copy (see :meth:`_flush` for ``growing``)."""
        if isinstance(part, ToolPart):
            data = {"id": part.id, "type": "tool", "call_id": part.call_id}
        else:
            redactor = self.runtime.secrets.redactor()
            data = redactor.redact_value(part.model_dump(mode="json"))
            if growing and isinstance(data.get("text"), str):
                data["text"] = redactor.settled(data["text"])
        data["session_id"] = msg.session_id
        data["message_id"] = msg.id
        self.store.save_part(data)

    def _save_message(self, msg: SessionMessage) -> None:
        """Store a message's own fields (its error text redacted, like its parts)."""
        self.store.save_message(self.runtime.secrets.redact_value(msg.info()))

    def _model_info(self) -> ModelInfo | None:
        if self._info is False:
            self._info = model_info(self.provider, self.model_name)
        return self._info if self._info is not False else None  # type: ignore[return-value]


def add_usage(total: Usage, step: Usage) -> None:
    total.input += step.input
    total.output += step.output
    total.cache_read += step.cache_read
    total.cache_write += step.cache_write
    total.reasoning += step.reasoning
    total.cost += step.cost
