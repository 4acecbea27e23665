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

The loop is one class, :class:`SessionLoop`, written in parts by what each owns:
:mod:`hookcode.session.history` (the messages, in memory and in the store),
:mod:`hookcode.session.stream` (one reply streamed into a message),
:mod:`hookcode.session.context` (system prompt, parameters, compaction, pruning) and this
module (the run, the steps, the retries and the tool calls); :mod:`hookcode.session.model_choice`
picks the model and :mod:`hookcode.session.result` holds what a run reports. Import the names
from :mod:`hookcode.session`.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import TYPE_CHECKING, Any, Literal

from hookcode.errors import HookcodeError, PermissionRejected, PromptBlocked
from hookcode.messages import (
    CUT_OFF,
    ProviderHistory,
    SessionMessage,
    ToolPart,
)
from hookcode.pipeline import Outcome, invoke
from hookcode.providers import (
    Message,
    ModelRequest,
    ToolCallEnd,
)
from hookcode.session.context import DEFAULT_PROMPT, SessionContext
from hookcode.session.context import INSTRUCTION_FILES as INSTRUCTION_FILES
from hookcode.session.history import ABORTED, UserMessage, load_messages, title_of
from hookcode.session.lease import SessionLease, lease_ttl
from hookcode.session.model_choice import NO_MODEL_HINT as NO_MODEL_HINT
from hookcode.session.model_choice import resolve_model
from hookcode.session.result import EventCallback, RunResult
from hookcode.session.stream import SAVE_INTERVAL as SAVE_INTERVAL
from hookcode.session.stream import Step
from hookcode.store import ToolPartRecord
from hookcode.tools import AbortSignal, ToolCall, ToolContext

if TYPE_CHECKING:
    from hookcode.providers import ModelInfo, Provider
    from hookcode.session.host import SessionHost
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
TEXT_ONLY = (
    "You have reached the step limit for this task: tools are no longer available. Reply in "
    "text only, saying what was done and what remains."
)
NOT_OFFERED = "Tool call was not run: tools are not available on the last step."
DISMISSED = "The user dismissed this question"
#: finish reasons that end the loop even when calls ran
STOP_REASONS = frozenset({"stop", "length", "content-filter", "error"})
#: retries of a retryable provider error (unless the provider sets ``max_retries``), and the
#: back-off (seconds, doubled each time) where the server did not say how long to wait; the
#: only retries: providers make one request per reply (see :mod:`hookcode.providers`)
RETRY_ATTEMPTS = 4
RETRY_BASE = 1.0
RETRY_MAX_DELAY = 30.0


# ---------------------------------------------------------------------------------------------
# the loop
# ---------------------------------------------------------------------------------------------


class SessionLoop(SessionContext):
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
        runtime: SessionHost,
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
        #: the session's lease while :meth:`run` runs (``lock``)
        self.lease: SessionLease | None = None
        self.messages: list[SessionMessage] = []
        self.recent: list[tuple[str, str]] = []  # (tool, canonical input) since the user message
        self.result = RunResult(session_id=session.id if session else "")
        self._info: ModelInfo | bool | None = False
        self._instructions: list[str] | None = None
        self._state: dict[str, Any] | None = None
        self._state_saved = ""
        self._compacted_at = -1
        self._refusals_from = 0
        #: the provider messages of the history, kept as it grows
        self._history = ProviderHistory()
        self._went_on = False  # a session_stop answer kept this run going

    # -- entry point --------------------------------------------------------------------------
    async def run(self, text: str, files: list[dict[str, Any]] | None = None) -> RunResult:
        if not text.strip() and not files:
            raise HookcodeError("empty message: say what the agent should do")
        rt = self.runtime
        resumed = self.session is not None
        if self.session is None:
            self.session = rt.create_session(
                title=title_of(rt.secrets.redact(text)), agent=self.spec.name, model=self.model_id
            )
        session = self.session
        result = self.result
        result.session_id = session.id
        self._refusals_from = len(rt.refusals)
        if self.lock:  # held (and renewed) while the session runs: see _loop
            self.lease = SessionLease(
                self.store, session.id, ttl=lease_ttl(rt.env), stash=rt.stash
            ).acquire()
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
                rt.plugins.call_each("chat_message", message=message, session=session, runtime=rt)
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
                if self.lease is not None:
                    self.lease.release()
                    self.lease = None
        rt.events.publish("session.idle", session_id=session.id, finish=result.finish)
        return result

    # -- the steps ----------------------------------------------------------------------------
    async def _loop(self, parent_id: str) -> None:
        result = self.result
        step = 0
        while True:
            if self.lease is not None and self.lease.lost is not None:
                # another process runs the session now: write nothing more into it
                result.error, result.finish = self.lease.lost, "error"
                return
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
            "session_stop",
            session=self.session,
            text=self.result.text,
            active=self._went_on,
            runtime=rt,
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
        history = self._history.build(self.messages)
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
        text = st.reply_text()
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
    ) -> Step:
        """Stream one reply into ``msg``, retrying retryable errors with back-off as long as
        no call of the reply was started."""
        assert self.session is not None
        attempt = 0
        # the provider's own `max_retries` setting, else the loop's default
        retries = getattr(provider, "max_retries", None)
        retries = RETRY_ATTEMPTS if retries is None else retries
        while True:
            st = Step()
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

    def _on_tool_end(
        self, msg: SessionMessage, st: Step, event: ToolCallEnd, run_calls: bool
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
        state = part.state  # its input stays as the model produced it (replayed as sent)
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
                # nobody approved the call (the user said no without feedback, or nobody
                # could be asked): the loop stops after it
                "refused": isinstance(outcome.error, PermissionRejected)
                and not outcome.error.feedback,
                "metadata": _plain(state.metadata),
            },
        )

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
    runtime: SessionHost,
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
