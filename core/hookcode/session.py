"""The agent loop: a session that talks to a model and runs its tool calls through ``invoke``.

A step sends the history (compaction and pruning applied), the system prompt and the agent's
tool definitions to the provider and streams the reply. Text and reasoning parts grow as
deltas arrive; a tool part appears ``pending`` on the call's first event and turns ``running``
when its input is complete, at which point the call starts (calls of one step run
concurrently). The step ends when the stream has ended and every started call has finished;
the results go back to the model in call order.

The loop goes on while the model asks for tools (finish ``tool-calls``), up to the agent's
step limit: with ``steps = N`` requests 1..N offer tools and request N+1 offers none (tool
calls in its answer are not run). Three identical consecutive calls since the last user
message (across steps) ask ``doom_loop``. A permission reject (without feedback) or a dismissed
question stops the loop after the step; a deny, a reject with feedback or a blocked call does
not. A call cut off by the output limit is not run. Abort (Ctrl-C, the abort signal) cancels
the stream and the running calls; their parts become ``Tool execution aborted``. Retryable
provider errors (rate limit, overload) are retried with back-off before anything of the reply
ran (the only retries: a provider makes one request per attempt), then surfaced.

Everything is stored as it happens: messages and parts are committed when they change (text at
most every :data:`SAVE_INTERVAL` seconds while it streams), so a process killed at any moment
leaves a session that opens and resumes: parts it left pending/running are marked
``Tool execution aborted`` when the session is next run, and the model reads
``[Tool execution was interrupted]`` for them. A session being run is locked (pid); a second
run of it fails with :class:`~hookcode.store.SessionBusy`; a dead process's lock is taken over.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from hookcode import compaction
from hookcode.agents import AgentSpec
from hookcode.errors import HookcodeError, PermissionRejected, PromptBlocked
from hookcode.ids import new_id
from hookcode.messages import (
    CUT_OFF,
    CompactionPart,
    FilePart,
    ReasoningPart,
    SessionMessage,
    TextPart,
    TokenUsage,
    ToolPart,
    ToolState,
    estimate_tokens,
    to_provider_messages,
)
from hookcode.pipeline import Outcome, invoke
from hookcode.providers import (
    Finish,
    Message,
    ModelRequest,
    ReasoningDelta,
    StreamError,
    TextDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolInputDelta,
    Usage,
    split_model_id,
)
from hookcode.store import ToolPartRecord
from hookcode.tools import AbortSignal, ToolCall, ToolContext

if TYPE_CHECKING:
    from hookcode.providers import ModelInfo, Provider
    from hookcode.runtime import Runtime
    from hookcode.store import SessionRecord

__all__ = [
    "ABORTED",
    "CUT_OFF",
    "DEFAULT_PROMPT",
    "RunResult",
    "SessionLoop",
    "UserMessage",
    "load_messages",
    "resolve_model",
    "run_session",
]

DEFAULT_PROMPT = (
    "You are hookcode, a coding agent. Use the tools you are given to read, search, edit and "
    "run code in the user's project. Be concise; say what you did and what remains."
)
TEXT_ONLY = (
    "You have reached the step limit for this task: tools are no longer available. Reply in "
    "text only, saying what was done and what remains."
)
ABORTED = "Tool execution aborted"
NOT_OFFERED = "Tool call was not run: tools are not available on the last step."
DISMISSED = "The user dismissed this question"
#: instruction files whose content goes into the system prompt (the first found per directory)
INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md", "CONTEXT.md")
#: finish reasons that end the loop even when calls ran
STOP_REASONS = frozenset({"stop", "length", "content-filter", "error"})
#: seconds between two saves of a streaming text part
SAVE_INTERVAL = 0.2
#: retries of a retryable provider error (unless the provider sets ``max_retries``), and the
#: back-off (seconds, doubled each time) where the server did not say how long to wait; the
#: only retries: providers make one request per reply (see :mod:`hookcode.providers`)
RETRY_ATTEMPTS = 4
RETRY_BASE = 1.0
RETRY_MAX_DELAY = 30.0

EventCallback = Callable[[str, dict[str, Any]], None]


@dataclass
class UserMessage:
    """A user message as the ``chat_message`` hook sees it (mutable): ``parts`` may gain
    ``{"type": "text", "text"}`` or ``{"type": "file", "mime", "url", "filename"}`` dicts."""

    text: str
    agent: str
    model: str
    parts: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class RunResult:
    """What one run of the loop did."""

    session_id: str
    text: str = ""
    steps: int = 0
    finish: str = ""
    outcomes: list[Outcome] = field(default_factory=list)
    rejected: bool = False
    error: str | None = None
    usage: Usage = field(default_factory=Usage)
    #: permission requests refused in this run: ``{"tool", "call_id", "permission", "patterns"}``
    refused: list[dict[str, Any]] = field(default_factory=list)
    aborted: bool = False
    compactions: int = 0

    def usage_dict(self) -> dict[str, Any]:
        u = self.usage
        return {
            "input": u.input,
            "output": u.output,
            "reasoning": u.reasoning,
            "cache_read": u.cache_read,
            "cache_write": u.cache_write,
            "cost": u.cost,
        }

    def to_dict(self) -> dict[str, Any]:
        """The ``result`` object of ``hookcode run --format json``."""
        return {
            "type": "result",
            "session_id": self.session_id,
            "text": self.text,
            "refused": self.refused,
            "usage": self.usage_dict(),
            "steps": self.steps,
            "finish": self.finish,
            "error": self.error,
            "aborted": self.aborted,
        }


# ---------------------------------------------------------------------------------------------
# models
# ---------------------------------------------------------------------------------------------

NO_MODEL_HINT = (
    "pass --model scripted/demo for the offline demo model, or install a provider plugin "
    "(hookcode-provider-anthropic) and set ANTHROPIC_API_KEY, or set "
    '`model = "provider/model"` in hookcode.toml'
)


def resolve_model(
    runtime: Runtime,
    model: str | None,
    spec: AgentSpec,
    session: SessionRecord | None = None,
) -> tuple[Provider, str, str]:
    """(provider, model name, full id): ``model`` (``--model``), else the agent's, else the
    session's (when continuing one), else the configured default; a clear error otherwise."""
    model_id = (
        model or spec.model or (session.model if session else None) or runtime.config.core.model
    )
    if not model_id:
        raise HookcodeError(f"no model configured: {NO_MODEL_HINT}")
    try:
        provider_id, name = split_model_id(model_id)
    except ValueError as exc:
        raise HookcodeError(str(exc)) from None
    available = runtime.providers()
    provider = available.get(provider_id)
    if provider is None:
        names = ", ".join(sorted(available)) or "none installed"
        hint = "" if model else f"; {NO_MODEL_HINT}"
        raise HookcodeError(
            f"unknown model provider '{provider_id}' in '{model_id}'; available providers: "
            f"{names}{hint}"
        )
    return provider, name, model_id


def _model_info(provider: Provider, name: str) -> ModelInfo | None:
    try:
        for info in provider.models():
            if info.id == name:
                return info
    except Exception:
        return None
    return None


def _title(text: str) -> str:
    stripped = text.strip()
    return stripped.splitlines()[0].strip()[:60] if stripped else "New session"


# ---------------------------------------------------------------------------------------------
# loading a session
# ---------------------------------------------------------------------------------------------


def load_messages(runtime_or_store: Any, session_id: str) -> list[SessionMessage]:
    """The session's messages as :class:`~hookcode.messages.SessionMessage` objects; parts of
    unknown types are skipped."""
    store = getattr(runtime_or_store, "store", runtime_or_store)
    out: list[SessionMessage] = []
    for raw in store.messages(session_id):
        parts = raw.pop("parts", [])
        message = SessionMessage.model_validate(raw)
        for part in parts:
            try:
                message.parts.append(_part_adapter().validate_python(part))
            except Exception:
                continue
        out.append(message)
    return out


_adapter: Any = None


def _part_adapter() -> Any:
    global _adapter
    if _adapter is None:
        from pydantic import TypeAdapter

        from hookcode.messages import Part

        _adapter = TypeAdapter(Part)
    return _adapter


# ---------------------------------------------------------------------------------------------
# the loop
# ---------------------------------------------------------------------------------------------


@dataclass
class _Step:
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


class SessionLoop:
    """Runs an agent in one session: ``await SessionLoop(runtime, ...).run("message")``.

    Public API (``hookcode.SessionLoop``): the front ends run the user's sessions with it, and
    the task tool runs a sub-agent in a child session. ``model``, ``agent`` and ``session``
    default to the config's model, the default agent and a new session; ``abort`` stops the
    run; ``on_event(kind, data)`` sees what happens as it happens. ``model_id`` is the model
    the run uses, known before it starts; ``result`` (a :class:`RunResult`) fills in while it
    runs, so what an interrupted run cost is there too. :func:`run_session` is the one-call form.
    """

    def __init__(
        self,
        runtime: Runtime,
        *,
        model: str | None = None,
        agent: str | None = None,
        session: SessionRecord | None = None,
        abort: AbortSignal | None = None,
        on_event: EventCallback | None = None,
        lock: bool = True,
    ) -> None:
        self.runtime = runtime
        self.store = runtime.store
        if agent is None and session is not None and session.agent in runtime.agents():
            agent_name = session.agent  # a continued session keeps its agent
            self.spec = runtime.agent(agent_name)
        else:
            self.spec = runtime.agent(agent)
        if agent and self.spec.mode == "hidden":
            raise HookcodeError(f"agent '{agent}' is internal (hidden) and cannot be run")
        self.session = session
        self.provider, self.model_name, self.model_id = resolve_model(
            runtime, model, self.spec, session
        )
        self.abort = abort or AbortSignal()
        self.emit: EventCallback = on_event or (lambda _kind, _data: None)
        self.lock = lock
        self.messages: list[SessionMessage] = []
        self.recent: list[tuple[str, str]] = []  # (tool, canonical input) since the user message
        self.result = RunResult(session_id=session.id if session else "")
        self._info: ModelInfo | bool | None = False
        self._instructions: list[str] | None = None
        self._state: dict[str, Any] | None = None
        self._state_saved = ""
        self._compacted_at = -1
        self._refusals_from = 0
        #: provider messages of finished messages, by message id (to_provider_messages)
        self._converted: dict[str, list[Message]] = {}
        self._went_on = False  # a session_stop answer kept this run going

    # -- entry point --------------------------------------------------------------------------
    async def run(self, text: str, files: list[dict[str, Any]] | None = None) -> RunResult:
        if not text.strip() and not files:
            raise HookcodeError("empty message: say what the agent should do")
        rt = self.runtime
        resumed = self.session is not None
        if self.session is None:
            self.session = rt.create_session(
                title=_title(rt.secrets.redact(text)), agent=self.spec.name, model=self.model_id
            )
        session = self.session
        result = self.result
        result.session_id = session.id
        self._refusals_from = len(rt.refusals)
        locked = False
        if self.lock:
            self.store.lock_session(session.id)
            locked = True
        try:
            if resumed:
                self._open()
            self.emit(
                "session",
                {
                    "session_id": session.id,
                    "title": session.title,
                    "agent": self.spec.name,
                    "model": self.model_id,
                    "resumed": resumed,
                },
            )
            message = UserMessage(
                text=text, agent=self.spec.name, model=self.model_id, parts=list(files or [])
            )
            try:
                rt.plugins.call_each("chat_message", message=message, session=session)
            except PromptBlocked as exc:  # a hook refused the message: it is never sent
                result.error, result.finish = f"the message was blocked: {exc.reason}", "blocked"
                return result
            user = self._add_user(message)
            self.recent.clear()
            await self._loop(user.id)
        finally:
            try:
                self._prune()
            finally:
                if locked:
                    self.store.unlock_session(session.id)
        rt.events.publish("session.idle", session_id=session.id, finish=result.finish)
        return result

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
            title = _title(self.runtime.secrets.redact(message.text))  # cut after: no half key
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

    # -- the steps ----------------------------------------------------------------------------
    async def _loop(self, parent_id: str) -> None:
        result = self.result
        step = 0
        while True:
            if self.abort.is_set():
                result.aborted = True
                result.finish = "aborted"
                return
            compacted = await self._maybe_compact()
            if compacted is False:
                return  # the summary request failed: result.error says why
            if compacted:
                parent_id = self.messages[-1].id
            step += 1
            result.steps = step
            last = self.spec.steps is not None and step > self.spec.steps
            went = await self._step(step, last, parent_id)
            if went == "ended":
                return
            if went == "answered":  # a session_stop hook may keep the agent going
                goon = self._stop_check()
                if goon is None:
                    return
                parent_id = goon.id
                continue
            self._follow_agent_switch()

    def _stop_check(self) -> SessionMessage | None:
        """The ``session_stop`` hook, when the model ended its turn: the user message that
        keeps the agent going (None: the run ends)."""
        rt = self.runtime
        if not rt.plugins.has_impls("session_stop"):
            return None
        answers = rt.plugins.call_each(
            "session_stop", session=self.session, text=self.result.text, active=self._went_on
        )
        said = "\n\n".join(str(a).strip() for a in answers if str(a).strip())
        if not said:
            return None
        self._went_on = True
        message = UserMessage(
            text="",
            agent=self.spec.name,
            model=self.model_id,
            parts=[{"type": "text", "text": said, "synthetic": True}],
        )
        self.emit("stop_refused", {"session_id": self.result.session_id, "text": said})
        return self._add_user(message)

    def _follow_agent_switch(self) -> None:
        """A tool (plan_enter / plan_exit) switched the session's agent in the store: the next
        request runs with that agent (same model)."""
        assert self.session is not None
        record = self.store.get_session(self.session.id)
        name = record.agent if record is not None else None
        if not name or name == self.spec.name or name not in self.runtime.agents():
            return
        self.spec = self.runtime.agent(name)
        self.session.agent = name
        self.emit("agent", {"session_id": self.session.id, "agent": name})

    def _system(self, spec: AgentSpec) -> list[str]:
        parts = [spec.prompt or DEFAULT_PROMPT, self._environment(), *self._instruction_blocks()]
        self.runtime.plugins.call_each(
            "system_prompt", parts=parts, session=self.session, agent=spec, model=self.model_id
        )
        return parts

    def _params(self, spec: AgentSpec, model_id: str) -> dict[str, Any]:
        info = self._model_info()
        params: dict[str, Any] = {
            "temperature": spec.temperature,
            "top_p": spec.top_p,
            "max_tokens": info.output if info is not None and info.output else None,
            "options": dict(spec.options),
        }
        self.runtime.plugins.call_each(
            "chat_params", params=params, session=self.session, agent=spec, model=model_id
        )
        return params

    async def _step(
        self, step: int, last: bool, parent_id: str
    ) -> Literal["more", "answered", "ended"]:
        """One request and its calls: ``more`` when the loop goes on, ``answered`` when the
        model ended its turn asking for no tools, ``ended`` when the run ends otherwise (an
        error, an abort, a refusal, the step limit)."""
        rt, spec, result = self.runtime, self.spec, self.result
        assert self.session is not None
        system = self._system(spec)
        tools = [] if last else rt.registry.definitions(spec.name, self.session.id, self.model_id)
        params = self._params(spec, self.model_id)
        history = to_provider_messages(self.messages, self._converted)
        if last:
            history.append(Message("assistant", [{"type": "text", "text": TEXT_ONLY}]))
        msg = self._new_assistant(spec.name, self.model_id, parent_id)
        self.emit("step_start", {"step": step, "message_id": msg.id, "tools": bool(tools)})
        st = await self._request(
            msg,
            self.provider,
            self.model_name,
            system,
            history,
            tools,
            params,
            spec.name,
            run_calls=not last,
        )
        outcomes = [await task for _call, _part, task in st.calls] if st.calls else []
        self._close_parts(msg, st)
        self._finish_message(msg, st)
        self.emit(
            "step",
            {
                "step": step,
                "message_id": msg.id,
                "finish": msg.finish,
                "usage": msg.tokens.model_dump(),
                "cost": msg.cost,
            },
        )
        text = "".join(st.text)
        if text.strip():
            result.text = text
        result.outcomes.extend(outcomes)
        result.finish = msg.finish or ""
        stop = False
        for outcome in outcomes:
            error = outcome.error
            if isinstance(error, PermissionRejected) and not error.feedback:
                result.rejected = stop = True
            elif error is not None and (
                getattr(error, "stop_loop", False) or str(error) == DISMISSED
            ):
                stop = True
        self._collect_refusals()
        if st.error is not None:
            result.error = f"model error: {st.error.message}"
            result.finish = "error"
            return "ended"
        if st.aborted or self.abort.is_set():
            result.aborted = True
            result.finish = "aborted"
            return "ended"
        if stop or last:
            return "ended"
        if not st.calls:
            return "answered"
        finish = msg.finish or ""
        goes_on = finish in ("tool-calls", "unknown", "") or finish not in STOP_REASONS
        return "more" if goes_on else "ended"

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

    async def _request(
        self,
        msg: SessionMessage,
        provider: Provider,
        model_name: str,
        system: list[str],
        history: list[Message],
        tools: list[dict[str, Any]],
        params: dict[str, Any],
        agent: str,
        *,
        run_calls: bool,
    ) -> _Step:
        """Stream one reply into ``msg``, retrying retryable errors with back-off as long as
        no call of the reply was started."""
        assert self.session is not None
        attempt = 0
        # the provider's own `max_retries` setting, else the loop's default
        retries = getattr(provider, "max_retries", None)
        retries = RETRY_ATTEMPTS if retries is None else retries
        while True:
            st = _Step()
            request = ModelRequest(
                model=model_name,
                system=list(system),
                messages=history,
                tools=tools,
                params=params,
                session_id=self.session.id,
                agent=agent,
                state=self._provider_state(provider),
            )
            # a process killed while this step's calls run must resume after this reply, not
            # replay it: the state is saved before the first call starts (and again at the end)
            st.save_state = lambda p=provider, r=request: self._save_provider_state(p, r.state)
            await self._stream(provider, request, msg, st, run_calls)
            self._save_provider_state(provider, request.state)
            error = st.error
            if (
                error is not None
                and error.retryable
                and not st.calls
                and not st.aborted
                and attempt < retries
            ):
                attempt += 1
                delay = error.retry_after or min(RETRY_BASE * 2 ** (attempt - 1), RETRY_MAX_DELAY)
                self._discard(msg, st)
                self.emit("retry", {"attempt": attempt, "delay": delay, "error": error.message})
                self.runtime.events.publish(
                    "session.retry",
                    session_id=self.session.id,
                    attempt=attempt,
                    delay=delay,
                    error=error.message,
                )
                if await self._sleep(delay):
                    st.aborted = True
                    return st
                continue
            return st

    async def _sleep(self, delay: float) -> bool:
        """Sleep ``delay`` seconds; True when the abort signal fired meanwhile."""
        try:
            await asyncio.wait_for(self.abort.wait(), timeout=delay)
        except TimeoutError:
            return False
        return True

    async def _stream(
        self,
        provider: Provider,
        request: ModelRequest,
        msg: SessionMessage,
        st: _Step,
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
        st: _Step,
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
                    _add_usage(st.usage, event.usage)
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
        st: _Step,
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

    def _touch(self, msg: SessionMessage, st: _Step, part: Any) -> None:
        st.dirty.add(part.id)
        now = time.monotonic()
        if now - st.saved_at >= SAVE_INTERVAL:
            self._flush(msg, st, growing=part)

    def _flush(self, msg: SessionMessage, st: _Step, growing: Any = None) -> None:
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
        self, msg: SessionMessage, st: _Step, provider_id: str, name: str
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

    def _on_tool_end(
        self, msg: SessionMessage, st: _Step, event: ToolCallEnd, run_calls: bool
    ) -> None:
        part = st.pending.pop(event.id, None)
        if part is None:  # no ToolCallStart came first
            part = self._on_tool_start(msg, st, event.id, event.name)
            st.pending.pop(event.id, None)
        st.dirty.discard(part.id)  # complete: the parsed input replaces the raw text
        part.state.input = event.input
        if not run_calls:
            self._fail_part(msg, part, NOT_OFFERED, input=event.input)
            return
        assert self.session is not None
        if st.save_state is not None:
            st.save_state()
        part.state.status = "running"
        part.state.time.start = time.time()
        call = ToolCall(
            tool=event.name,
            args=event.input,
            call_id=part.call_id,
            session_id=self.session.id,
            agent=self.spec.name,
            message_id=msg.id,
            model=self.model_id,
        )
        self.emit(
            "tool",
            {
                "status": "running",
                "tool": event.name,
                "call_id": part.call_id,
                "input": event.input,
                "message_id": msg.id,
            },
        )
        st.calls.append((call, part, asyncio.ensure_future(self._run_call(call, part))))

    async def _run_call(self, call: ToolCall, part: ToolPart) -> Outcome:
        rt = self.runtime
        abort = AbortSignal(self.abort)
        key = (str(call.tool), json.dumps(call.args, sort_keys=True, default=str))
        self.recent.append(key)
        outcome: Outcome | None = None
        if len(self.recent) >= 3 and self.recent[-3:] == [key] * 3:
            record = ToolPartRecord(
                id=call.call_id,
                session_id=call.session_id,
                tool=str(call.tool),
                state="running",
                input=call.args,
                message_id=call.message_id,
                time_start=time.time(),
            )
            rt.record_part(record)
            try:
                await ToolContext(rt, call, abort=abort).ask(
                    "doom_loop",
                    [str(call.tool)],
                    [str(call.tool)],
                    {"tool": call.tool, "input": call.args},
                )
            except Exception as exc:  # a refusal fails this call (a reject also stops the loop)
                outcome = Outcome(call, error=exc)
                record.state, record.error, record.time_end = "error", str(exc), time.time()
                rt.record_part(record)
        if outcome is None:
            outcome = await invoke(rt, call, abort=abort)
        self._apply(part, outcome)
        return outcome

    def _apply(self, part: ToolPart, outcome: Outcome) -> None:
        """Mirror a finished call into the in-memory part (the pipeline stored it)."""
        state = part.state
        state.input = outcome.call.args
        part.tool = str(outcome.call.tool)
        state.time.end = time.time()
        if outcome.ok and outcome.result is not None:
            res = outcome.result
            state.status = "completed"
            state.output, state.title = res.output, res.title
            state.metadata = res.metadata
            state.attachments = [a.to_dict() for a in res.attachments]
        else:
            state.status = "error"
            state.error = outcome.error_text
        self.emit(
            "tool_result",
            {
                "tool": part.tool,
                "call_id": part.call_id,
                "status": state.status,
                "ok": state.status == "completed",
                "title": state.title or "",
                "output": state.output,
                "error": state.error,
                "metadata": _plain(state.metadata),
            },
        )

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

    def _close_parts(self, msg: SessionMessage, st: _Step) -> None:
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

    def _finish_message(self, msg: SessionMessage, st: _Step) -> None:
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
        _add_usage(total, u)
        total.cost += cost - u.cost
        self.runtime.events.publish(
            "message.updated", session_id=self.session.id, message=msg.info()
        )

    def _discard(self, msg: SessionMessage, st: _Step) -> None:
        """Forget the parts of a failed attempt (nothing of it ran)."""
        for part in st.parts:
            if part in msg.parts:
                msg.parts.remove(part)
            self.store.delete_part(part.id)
        st.parts.clear()

    def _collect_refusals(self) -> None:
        seen = {r["request_id"] for r in self.result.refused}
        assert self.session is not None
        for request in self.runtime.refusals[self._refusals_from :]:
            if request.session_id != self.session.id or request.id in seen:
                continue
            self.result.refused.append(
                {
                    "request_id": request.id,
                    "tool": request.tool.get("name"),
                    "call_id": request.tool.get("call_id"),
                    "permission": request.permission,
                    "patterns": list(request.patterns),
                    "metadata": {"protected": request.metadata.get("protected") or {}},
                }
            )

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

    # -- context management -------------------------------------------------------------------
    def _model_info(self) -> ModelInfo | None:
        if self._info is False:
            self._info = _model_info(self.provider, self.model_name)
        return self._info if self._info is not False else None  # type: ignore[return-value]

    async def _maybe_compact(self) -> bool | None:
        """Compact when the history nears the context window: True when it did, False when
        the summary request failed, None when nothing was needed."""
        cfg = compaction.settings(self.runtime.config)
        info = self._model_info()
        if not cfg["auto"] or info is None or not info.context:
            return None
        if self._compacted_at == len(self.messages):
            return None  # nothing new since the last summary
        fixed = estimate_tokens(self._system(self.spec))
        tokens = compaction.context_tokens(self.messages, fixed)
        if not compaction.overflows(tokens, info, cfg["reserved"]):
            return None
        return await self.compact(auto=True)

    async def compact(self, *, auto: bool = False) -> bool:
        """Summarise the history with the ``compaction`` agent; the summary replaces it.
        ``auto`` adds a synthetic "continue" message so the loop goes on."""
        rt = self.runtime
        assert self.session is not None
        try:
            spec = rt.agent("compaction")
        except HookcodeError:
            spec = AgentSpec(name="compaction", mode="hidden")
        provider, model_name, model_id = self.provider, self.model_name, self.model_id
        if spec.model and spec.model != self.model_id:
            provider, model_name, model_id = resolve_model(rt, spec.model, spec)
        history = to_provider_messages(self.messages)
        request_text = {"type": "text", "text": compaction.SUMMARY_REQUEST}
        if history and history[-1].role == "user":
            history[-1].content.append(request_text)
        else:
            history.append(Message("user", [request_text]))
        user = SessionMessage(
            id=new_id("msg"),
            session_id=self.session.id,
            role="user",
            agent=self.spec.name,
            model=model_id,
            parts=[CompactionPart(id=new_id("prt"), auto=auto)],
        )
        self._append(user)
        system = [spec.prompt or compaction.COMPACTION_PROMPT]
        rt.plugins.call_each(
            "system_prompt", parts=system, session=self.session, agent=spec, model=model_id
        )
        params = self._params(spec, model_id)
        msg = self._new_assistant("compaction", model_id, user.id, summary=True)
        self.emit("compaction", {"status": "started", "message_id": msg.id})
        st = await self._request(
            msg, provider, model_name, system, history, [], params, "compaction", run_calls=False
        )
        self._close_parts(msg, st)
        if st.error is None and not st.aborted and not "".join(st.text).strip():
            st.error = StreamError("the compaction request returned no summary")
        self._finish_message(msg, st)
        self.result.compactions += 1
        if st.error is not None or st.aborted:
            self.result.error = f"compaction failed: {st.error.message}" if st.error else None
            self.result.aborted = st.aborted
            self.result.finish = "error" if st.error else "aborted"
            self.emit("compaction", {"status": "failed", "message_id": msg.id})
            return False
        rt.events.publish("session.compacted", session_id=self.session.id, message_id=msg.id)
        self.emit("compaction", {"status": "completed", "message_id": msg.id})
        if auto:
            cont = SessionMessage(
                id=new_id("msg"),
                session_id=self.session.id,
                role="user",
                agent=self.spec.name,
                model=self.model_id,
                parts=[TextPart(id=new_id("prt"), text=compaction.CONTINUE_TEXT, synthetic=True)],
            )
            self._append(cont)
        self._compacted_at = len(self.messages)
        return True

    def _prune(self) -> None:
        if not self.messages or not compaction.settings(self.runtime.config)["prune"]:
            return
        parts = compaction.prunable(self.messages, self.runtime.registry.kept_outputs())
        if not parts:
            return
        now = time.time()
        self.store.set_compacted([p.call_id for p in parts], now)
        for part in parts:
            part.state.time.compacted = now
        self._converted.clear()

    # -- the system prompt --------------------------------------------------------------------
    def _environment(self) -> str:
        rt = self.runtime
        return (
            "<env>\n"
            f"  Working directory: {rt.cwd}\n"
            f"  Project root: {rt.worktree}\n"
            f"  Is a git repository: {(rt.worktree / '.git').exists()}\n"
            f"  Platform: {platform.system().lower()}\n"
            f"  Today's date: {date.today().isoformat()}\n"
            "</env>"
        )

    def _instruction_blocks(self) -> list[str]:
        """AGENTS.md / CLAUDE.md / CONTEXT.md (the first found in each directory from the git
        root down to the working directory, and in the user's config directory)."""
        if self._instructions is None:
            from hookcode.agents import project_dirs, user_config_dir

            rt = self.runtime
            blocks: list[str] = []
            dirs = [user_config_dir(rt.env), *project_dirs(rt.cwd, rt.worktree)]
            for directory in dirs:
                for name in INSTRUCTION_FILES:
                    path = Path(directory) / name
                    if path.is_file():
                        try:
                            content = path.read_text(encoding="utf-8", errors="replace")
                        except OSError:
                            break
                        blocks.append(f"Instructions from: {path}\n{content.rstrip()}")
                        break
            self._instructions = blocks
        return list(self._instructions)


def _add_usage(total: Usage, step: Usage) -> None:
    total.input += step.input
    total.output += step.output
    total.cache_read += step.cache_read
    total.cache_write += step.cache_write
    total.reasoning += step.reasoning
    total.cost += step.cost


def _plain(value: Any) -> Any:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return json.loads(json.dumps(value, default=str))
    return value


# ---------------------------------------------------------------------------------------------
# entry points
# ---------------------------------------------------------------------------------------------


async def run_session(
    runtime: Runtime,
    text: str,
    *,
    model: str | None = None,
    agent: str | None = None,
    session: SessionRecord | None = None,
    abort: AbortSignal | None = None,
    on_event: EventCallback | None = None,
    files: list[dict[str, Any]] | None = None,
    lock: bool = True,
) -> RunResult:
    """Run the agent on ``text`` (in ``session``, else a new one) until it stops asking for
    tools, hits its step limit, is refused, aborted, or the provider fails for good."""
    loop = SessionLoop(
        runtime,
        model=model,
        agent=agent,
        session=session,
        abort=abort,
        on_event=on_event,
        lock=lock,
    )
    return await loop.run(text, files)
