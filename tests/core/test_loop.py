"""The agent loop (issue 5): parts and their states, concurrency, limits, refusals, abort,
recovery, retries, hooks, history, usage, agents, the scripted provider's positions."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from hookcode import ToolContext, hookimpl, tool
from hookcode.errors import HookcodeError
from hookcode.messages import CUT_OFF, INTERRUPTED, to_provider_messages
from hookcode.providers import (
    Finish,
    ModelRequest,
    TextDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolInputDelta,
    Usage,
)
from hookcode.session import ABORTED, SAVE_INTERVAL, load_messages, run_session
from hookcode.store import SessionBusy, ToolPartRecord
from hookcode.testing import ReplyWith, ScriptedModel, ToolCallSpec, Turn
from hookcode.tools import AbortSignal


def SM(*args: Any, **kwargs: Any) -> ScriptedModel:
    """A ScriptedModel answering as the ``script`` provider."""
    return ScriptedModel(*args, id="script", **kwargs)


LOG: list[Any] = []


@tool
def note(ctx: ToolContext, text: str) -> str:
    """Record a note."""
    LOG.append(text)
    return f"noted {text}"


@tool
async def wait(ctx: ToolContext, seconds: float, label: str = "") -> str:
    """Sleep for a while."""
    await asyncio.sleep(0)  # the call has waited once: its running state is committed
    part = ctx.runtime.store.get_tool_part(ctx.call_id)
    LOG.append(("state-while-running", part.state if part else None))
    await asyncio.sleep(seconds)
    LOG.append(("done", label))
    return f"waited {label}"


@tool
def boom(ctx: ToolContext) -> str:
    """Always fails."""
    raise RuntimeError("kaboom")


@tool(timeout=0.2)
async def hang(ctx: ToolContext) -> str:
    """Never returns in time."""
    await asyncio.sleep(30)
    return "never"


@tool
def big(ctx: ToolContext, size: int) -> str:
    """A large output."""
    return "x" * size


@tool(name="skill")
def skill_tool(ctx: ToolContext, size: int) -> str:
    """A large skill output."""
    return "s" * size


class Pack:
    def __init__(self, model: Any):
        self.model = model

    @hookimpl
    def register_tools(self, register):
        register(note, wait, boom, hang, big, skill_tool)

    @hookimpl
    def provider(self):
        return [self.model]


@pytest.fixture(autouse=True)
def _clear():
    LOG.clear()


def runtime(env, model, **extra_env):
    env.register(Pack(model), "pack")
    return env.runtime(HOOKCODE_LOAD_PLUGINS="policy_rules", **extra_env)


def run(rt, text="do it", **kwargs):
    kwargs.setdefault("model", "script/test")
    return asyncio.run(run_session(rt, text, **kwargs))


def results_sent(request: ModelRequest) -> list[dict]:
    return [b for m in request.messages if m.role == "tool" for b in m.content]


# --------------------------------------------------------------------------- parts and states


class SlowStream:
    """A provider that streams one call in fragments, with pauses the test observes."""

    id = "slow"
    name = "slow"

    def __init__(self, rt_box: list):
        self.rt_box = rt_box
        self.seen: list[str | None] = []
        self.calls = 0

    def models(self):
        return []

    def _state(self, call_id: str) -> str | None:
        part = self.rt_box[0].store.get_tool_part(call_id)
        return part.state if part else None

    async def stream(self, request):
        self.calls += 1
        if self.calls > 1:
            yield TextDelta("done")
            yield Finish("stop", Usage(input=5, output=1))
            return
        yield ToolCallStart("c1", "note")
        await asyncio.sleep(0)
        self.seen.append(self._state("c1"))
        yield ToolInputDelta("c1", '{"text": ')
        await asyncio.sleep(0)
        yield ToolInputDelta("c1", '"a"}')
        await asyncio.sleep(0)
        self.seen.append(self._state("c1"))
        yield ToolCallEnd("c1", "note", {"text": "a"})
        await asyncio.sleep(0.05)
        self.seen.append(self._state("c1"))
        yield Finish("tool-calls", Usage(input=10, output=2))


def test_tool_part_is_pending_on_first_fragment_then_running_then_completed(hookcode_env):
    box: list = []
    provider = SlowStream(box)
    rt = runtime(hookcode_env, provider)
    box.append(rt)
    result = run(rt, model="slow/x")
    assert provider.seen == ["pending", "pending", "completed"]
    (part,) = rt.store.tool_parts(result.session_id)
    assert part.state == "completed" and part.output == "noted a"
    assert part.time_start and part.time_end and part.time_end >= part.time_start
    messages = rt.store.messages(result.session_id)
    tool_part = messages[1]["parts"][0]
    assert tool_part["type"] == "tool" and tool_part["state"]["input"] == {"text": "a"}


def test_a_cut_off_call_keeps_its_raw_input(hookcode_env):
    model = SM([Turn(tool_calls=[ToolCallSpec("note", {"text": "abcdef"}, cut_off=True)])])
    rt = runtime(hookcode_env, model)
    result = run(rt)
    (message,) = [m for m in rt.store.messages(result.session_id) if m["role"] == "assistant"]
    state = message["parts"][0]["state"]
    assert state["status"] == "error" and state["raw"] == '{"text": '  # half the input


class LongInput:
    """A provider streaming one long input in 24-character pieces, as real models do, that
    reads the stored input back while it streams; the reply is cut off (max tokens)."""

    id = "long"
    name = "long"

    def __init__(self, rt_box: list, raw: str):
        self.rt_box = rt_box
        self.raw = raw
        self.stored: list[int] = []  # the stored input's length after each pause

    def models(self):
        return []

    def _stored(self, session_id: str) -> int:
        messages = self.rt_box[0].store.messages(session_id)
        parts = [p for m in messages for p in m["parts"] if p["type"] == "tool"]
        return len(parts[0]["state"].get("raw") or "") if parts else -1

    async def stream(self, request):
        yield ToolCallStart("c1", "note")
        sent = 0
        # pause (longer than SAVE_INTERVAL) after 100 KB, 150 KB (not yet double: not stored
        # again) and 250 KB (more than double: stored)
        for stop in (100_000, 150_000, 250_000, len(self.raw)):
            while sent < stop:
                yield ToolInputDelta("c1", self.raw[sent : sent + 24])
                sent += 24
            await asyncio.sleep(SAVE_INTERVAL * 1.5)
            yield ToolInputDelta("c1", "")  # a piece with no text stores nothing
            yield ToolInputDelta("c1", self.raw[sent : sent + 24])
            sent += 24
            await asyncio.sleep(0)
            self.stored.append(self._stored(request.session_id))
        yield Finish("length", Usage(input=5, output=1))


def test_a_long_input_streams_into_one_text_stored_when_it_has_doubled(hookcode_env):
    raw = '{"text": "' + "0123456789abcdef" * 20_000 + '"}'  # 320 KB
    box: list = []
    provider = LongInput(box, raw)
    rt = runtime(hookcode_env, provider)
    box.append(rt)
    result = run(rt, model="long/x")
    # stored at the first pause (over 64 KB: once it has doubled since), not at the second
    first = provider.stored[0]
    assert 100_000 < first <= 100_024 + 24
    assert provider.stored[1] == first
    assert provider.stored[2] > 250_000
    (message,) = [m for m in rt.store.messages(result.session_id) if m["role"] == "assistant"]
    state = message["parts"][0]["state"]
    assert state["status"] == "error" and state["raw"] == raw  # cut off: all of it, in order


class LongText:
    """A provider streaming one long text reply in 16-character pieces (the scripted model's)
    that reads the stored text back at pauses while it streams."""

    id = "longtext"
    name = "longtext"

    def __init__(self, rt_box: list, text: str):
        self.rt_box = rt_box
        self.text = text
        self.stored: list[int] = []  # the stored text's length after each pause

    def models(self):
        return []

    def _stored(self, session_id: str) -> int:
        messages = self.rt_box[0].store.messages(session_id)
        parts = [p for m in messages for p in m["parts"] if p["type"] == "text"]
        return len(parts[-1]["text"]) if parts and messages[-1]["role"] == "assistant" else -1

    async def stream(self, request):
        sent = 0
        # pause (longer than SAVE_INTERVAL) after 100 KB, 150 KB (not yet double: not stored
        # again) and 250 KB (more than double: stored)
        for stop in (100_000, 150_000, 250_000, len(self.text)):
            while sent < stop:
                yield TextDelta(self.text[sent : sent + 16])
                sent += 16
            await asyncio.sleep(SAVE_INTERVAL * 1.5)
            yield TextDelta(self.text[sent : sent + 16])  # the piece after a pause stores
            sent += 16
            await asyncio.sleep(0)
            self.stored.append(self._stored(request.session_id))
        yield Finish("stop", Usage(input=5, output=1))


def test_a_long_text_streams_into_one_part_stored_when_it_has_doubled(hookcode_env):
    text = "".join(f"line {i:06d} of the reply\n" for i in range(12_000))  # 300 KB
    box: list = []
    provider = LongText(box, text)
    rt = runtime(hookcode_env, provider)
    box.append(rt)
    events: list[str] = []
    result = run(
        rt,
        model="longtext/x",
        on_event=lambda kind, data: events.append(data["text"]) if kind == "text" else None,
    )
    # every piece arrived live, in order
    assert "".join(events) == text and len(events) == -(-len(text) // 16)
    # stored at the first pause (over 64 KB: once it has doubled since), not at the second
    first = provider.stored[0]
    assert 100_000 < first <= 100_016 + 16
    assert provider.stored[1] == first
    assert provider.stored[2] > 250_000
    # the whole reply, in order, in the stored part, the loaded message and the result
    (message,) = [m for m in rt.store.messages(result.session_id) if m["role"] == "assistant"]
    assert [p["text"] for p in message["parts"] if p["type"] == "text"] == [text]
    (loaded,) = [m for m in load_messages(rt, result.session_id) if m.role == "assistant"]
    assert [p.text for p in loaded.parts] == [text]
    assert result.text == text


def test_running_state_is_stored_once_the_call_waits(hookcode_env):
    model = SM([Turn(tool_calls=[ToolCallSpec("wait", {"seconds": 0})]), "ok"])
    rt = runtime(hookcode_env, model)
    run(rt)
    assert LOG[0] == ("state-while-running", "running")


def test_calls_of_one_step_run_concurrently_and_results_keep_call_order(hookcode_env):
    calls = [
        ToolCallSpec("wait", {"seconds": 0.4, "label": "slow"}, id="a"),
        ToolCallSpec("wait", {"seconds": 0.05, "label": "fast"}, id="b"),
        ToolCallSpec("note", {"text": "n"}, id="c"),
    ]
    model = SM([Turn(tool_calls=calls), "ok"])
    rt = runtime(hookcode_env, model)
    started = time.perf_counter()
    result = run(rt)
    elapsed = time.perf_counter() - started
    assert elapsed < 0.4 + 0.3, elapsed
    assert [x for x in LOG if x[0] == "done"] == [("done", "fast"), ("done", "slow")]
    sent = results_sent(model.requests[1])
    assert [b["id"] for b in sent] == ["a", "b", "c"]
    assert [b["output"] for b in sent] == ["waited slow", "waited fast", "noted n"]
    assert [o.call.call_id for o in result.outcomes] == ["a", "b", "c"]


def test_step_limit_n_offers_tools_to_requests_1_to_n_only(hookcode_env):
    hookcode_env.write_config("[agent.build]\nsteps = 2\n")
    turn = Turn(tool_calls=[ToolCallSpec("note", {"text": "x"})])
    model = SM([turn, Turn(tool_calls=[ToolCallSpec("note", {"text": "y"})]), turn])
    rt = runtime(hookcode_env, model)
    result = run(rt)
    assert [bool(r.tools) for r in model.requests] == [True, True, False]
    assert LOG == ["x", "y"]  # the third answer's call is not run
    assert model.requests[2].messages[-1].role == "assistant"  # the text-only instruction
    parts = rt.store.tool_parts(result.session_id)
    assert parts[-1].state == "error" and "not run" in parts[-1].error


def test_cut_off_call_gets_the_exact_message(hookcode_env):
    model = SM([Turn(tool_calls=[ToolCallSpec("note", {"text": "half"}, cut_off=True)])])
    rt = runtime(hookcode_env, model)
    result = run(rt)
    (part,) = rt.store.tool_parts(result.session_id)
    assert part.state == "error" and part.error == CUT_OFF
    assert CUT_OFF == "Tool call was cut off by the output token limit and was not run."
    assert LOG == []


def test_doom_loop_deny_fails_only_that_call_and_the_loop_goes_on(hookcode_env):
    hookcode_env.write_config('[permission]\ndoom_loop = "deny"\n')
    same = Turn(tool_calls=[ToolCallSpec("note", {"text": "same"})])
    model = SM([same, same, same, "stopped"])
    rt = runtime(hookcode_env, model)
    result = run(rt)
    assert LOG == ["same", "same"]
    assert result.text == "stopped" and not result.rejected
    last = results_sent(model.requests[3])[-1]
    assert last["is_error"] and "prevents you from using" in last["output"]


def test_doom_loop_approved_runs_the_call(hookcode_env):
    hookcode_env.register(ReplyWith("once"), "approve")
    same = Turn(tool_calls=[ToolCallSpec("note", {"text": "same"})])
    model = SM([same, Turn(tool_calls=[ToolCallSpec("note", {"text": "same"})] * 2), "ok"])
    rt = runtime(hookcode_env, model)
    run(rt)
    assert LOG == ["same"] * 3  # the 3rd identical call (in step 2) asked, then ran
    assert hookcode_env.plugins["approve"].requests[0].permission == "doom_loop"


def test_doom_loop_count_restarts_with_a_new_user_message(hookcode_env):
    same = Turn(tool_calls=[ToolCallSpec("note", {"text": "same"})])
    model = SM([same, same, "one", same, "two"])
    rt = runtime(hookcode_env, model)
    first = run(rt)
    session = rt.store.get_session(first.session_id)
    second = run(rt, "again", session=session)
    assert LOG == ["same"] * 3 and not second.rejected and second.text == "two"


def test_reject_with_feedback_continues_the_loop(hookcode_env):
    hookcode_env.write_config('[permission]\nnote = "ask"\n')
    hookcode_env.register(ReplyWith("reject", feedback="use the other tool"), "no")
    model = SM([Turn(tool_calls=[ToolCallSpec("note", {"text": "x"})]), "fine"])
    rt = runtime(hookcode_env, model)
    result = run(rt)
    assert not result.rejected and result.text == "fine"
    (sent,) = results_sent(model.requests[1])
    assert sent["is_error"] and sent["output"].endswith("following feedback: use the other tool")


def test_a_tool_that_raises_is_an_error_result_and_the_loop_goes_on(hookcode_env):
    model = SM([Turn(tool_calls=[ToolCallSpec("boom")]), "recovered"])
    rt = runtime(hookcode_env, model)
    result = run(rt)
    assert result.error is None and result.text == "recovered"
    (sent,) = results_sent(model.requests[1])
    assert sent["is_error"] and "kaboom" in sent["output"]


def test_a_tool_hanging_past_its_timeout_errors_and_the_loop_goes_on(hookcode_env):
    model = SM([Turn(tool_calls=[ToolCallSpec("hang")]), "moved on"])
    rt = runtime(hookcode_env, model)
    started = time.perf_counter()
    result = run(rt)
    assert time.perf_counter() - started < 5
    assert result.text == "moved on"
    (sent,) = results_sent(model.requests[1])
    assert sent["is_error"] and "timed out" in sent["output"]


# --------------------------------------------------------------------------- abort, recovery


def test_abort_cancels_running_tools_and_marks_them(hookcode_env):
    calls = [ToolCallSpec("wait", {"seconds": 30}), ToolCallSpec("wait", {"seconds": 30})]
    model = SM([Turn(tool_calls=calls), "never"])
    rt = runtime(hookcode_env, model)
    abort = AbortSignal()

    async def main():
        asyncio.get_running_loop().call_later(0.3, abort.abort, "test")
        return await run_session(rt, "go", model="script/test", abort=abort)

    started = time.perf_counter()
    result = asyncio.run(main())
    assert time.perf_counter() - started < 5
    assert result.aborted and result.finish == "aborted"
    parts = rt.store.tool_parts(result.session_id)
    assert [(p.state, p.error) for p in parts] == [("error", ABORTED)] * 2
    assert len(model.requests) == 1
    assert rt.store.session_lock(result.session_id) is None  # released


def test_parts_left_running_by_a_dead_process_are_marked_and_the_model_is_told(hookcode_env):
    model = SM(["after"])
    rt = runtime(hookcode_env, model)
    session = rt.create_session(title="crashed", model="script/test")
    store = rt.store
    store.save_message({"id": "msg_u", "session_id": session.id, "role": "user", "created": 1.0})
    store.save_part(
        {
            "id": "prt_u",
            "session_id": session.id,
            "message_id": "msg_u",
            "type": "text",
            "text": "start",
        }
    )
    store.save_message(
        {
            "id": "msg_a",
            "session_id": session.id,
            "role": "assistant",
            "created": 2.0,
            "completed": None,
        }
    )
    store.save_tool_part(
        ToolPartRecord(
            id="call_x",
            session_id=session.id,
            tool="wait",
            state="running",
            input={"seconds": 30},
            message_id="msg_a",
            time_start=2.0,
        )
    )
    store.save_part(
        {
            "id": "prt_t",
            "session_id": session.id,
            "message_id": "msg_a",
            "type": "tool",
            "call_id": "call_x",
        }
    )
    result = run(rt, "continue", session=session)
    assert result.error is None
    part = store.get_tool_part("call_x")
    assert part.state == "error" and part.error == ABORTED and part.metadata["interrupted"]
    (sent,) = results_sent(model.requests[0])
    assert sent == {
        "type": "tool_result",
        "id": "call_x",
        "output": INTERRUPTED,
        "is_error": True,
        "attachments": [],
    }
    assert load_messages(store, session.id)[1].error == "interrupted"


# --------------------------------------------------------------------------- provider errors


def test_retryable_provider_errors_are_retried_with_backoff(hookcode_env, monkeypatch):
    import hookcode.session.loop as session_module

    monkeypatch.setattr(session_module, "RETRY_BASE", 0.01)
    model = SM(
        [
            Turn(text="partial", error="overloaded", retryable=True),
            Turn(error="rate limited", retryable=True),
            "finally",
        ]
    )
    rt = runtime(hookcode_env, model)
    events: list = []
    result = run(rt, on_event=lambda kind, data: events.append((kind, data)))
    assert result.error is None and result.text == "finally"
    retries = [d for k, d in events if k == "retry"]
    assert [r["attempt"] for r in retries] == [1, 2]
    assert retries[1]["delay"] == pytest.approx(0.02)
    (assistant,) = [m for m in rt.store.messages(result.session_id) if m["role"] == "assistant"]
    assert [p["text"] for p in assistant["parts"]] == ["finally"]  # the failed attempt is gone


def test_retries_give_up_and_the_error_is_surfaced(hookcode_env, monkeypatch):
    import hookcode.session.loop as session_module

    monkeypatch.setattr(session_module, "RETRY_BASE", 0.001)
    model = SM([Turn(error="overloaded", retryable=True)] * 10)
    rt = runtime(hookcode_env, model)
    result = run(rt)
    assert result.error == "model error: overloaded"
    assert len(model.requests) == session_module.RETRY_ATTEMPTS + 1


def test_a_provider_erroring_mid_stream_keeps_what_it_said(hookcode_env):
    model = SM([Turn(text="I was saying", error="connection reset")])
    rt = runtime(hookcode_env, model)
    result = run(rt)
    assert result.error == "model error: connection reset" and result.finish == "error"
    assistant = rt.store.messages(result.session_id)[1]
    assert assistant["error"] == "connection reset"
    assert assistant["parts"][0]["text"] == "I was saying"


def test_a_provider_that_raises_is_a_model_error(hookcode_env):
    class Raising:
        id = "bad"
        name = "bad"

        def models(self):
            return []

        async def stream(self, request):
            yield TextDelta("x")
            raise ConnectionError("socket closed")

    rt = runtime(hookcode_env, Raising())
    result = run(rt, model="bad/m")
    assert result.error == "model error: ConnectionError: socket closed"


# --------------------------------------------------------------------------- hooks, history


def test_event_hook_sees_the_session_happen(hookcode_env):
    seen: list[str] = []

    class Watcher:
        @hookimpl
        def event(self, event):
            seen.append(event.type)

    hookcode_env.register(Watcher(), "watcher")
    model = SM([Turn(tool_calls=[ToolCallSpec("note", {"text": "x"})]), "ok"])
    rt = runtime(hookcode_env, model)
    run(rt)
    for kind in (
        "session.created",
        "message.updated",
        "tool.started",
        "tool.completed",
        "session.idle",
    ):
        assert kind in seen, kind


def test_history_is_rebuilt_from_the_store_when_continuing(hookcode_env):
    model = SM(
        [
            Turn(text="calling", tool_calls=[ToolCallSpec("note", {"text": "x"}, id="k1")]),
            "first answer",
            "second answer",
        ]
    )
    rt = runtime(hookcode_env, model)
    first = run(rt, "first question")
    rt2 = hookcode_env.runtime(HOOKCODE_LOAD_PLUGINS="policy_rules")
    session = rt2.store.get_session(first.session_id)
    second = run(rt2, "second question", session=session)
    assert second.session_id == first.session_id and second.text == "second answer"
    sent = model.requests[2].messages
    assert [m.role for m in sent] == ["user", "assistant", "tool", "assistant", "user"]
    assert sent[0].content == [{"type": "text", "text": "first question"}]
    assert sent[1].content[1] == {
        "type": "tool_use",
        "id": "k1",
        "name": "note",
        "input": {"text": "x"},
    }
    assert sent[2].content[0]["output"] == "noted x"
    assert sent[4].content == [{"type": "text", "text": "second question"}]


def test_reused_provider_call_ids_get_fresh_ones(hookcode_env):
    call = ToolCallSpec("note", {"text": "x"}, id="call_0")
    model = SM(
        [
            Turn(tool_calls=[call]),
            Turn(tool_calls=[ToolCallSpec("note", {"text": "y"}, id="call_0")]),
            "ok",
        ]
    )
    rt = runtime(hookcode_env, model)
    result = run(rt)
    parts = rt.store.tool_parts(result.session_id)
    assert len(parts) == 2 and parts[0].id == "call_0" and parts[1].id != "call_0"
    sent = model.requests[2].messages
    uses = [
        b["id"] for m in sent if m.role == "assistant" for b in m.content if b["type"] == "tool_use"
    ]
    assert uses == [parts[0].id, parts[1].id]


def test_usage_and_cost_per_message_roll_up_to_the_session(hookcode_env):
    model = SM(
        [
            Turn(
                tool_calls=[ToolCallSpec("note", {"text": "x"})],
                usage={"input": 1000, "output": 100, "cache_read": 10},
            ),
            Turn(text="done", usage={"input": 2000, "output": 50}),
        ],
        cost_in=3.0,
        cost_out=15.0,
    )
    rt = runtime(hookcode_env, model)
    result = run(rt)
    assistants = [m for m in rt.store.messages(result.session_id) if m["role"] == "assistant"]
    assert [m["tokens"]["input"] for m in assistants] == [1000, 2000]
    assert assistants[0]["cost"] == pytest.approx((1000 * 3 + 100 * 15) / 1e6)
    session = rt.store.get_session(result.session_id)
    assert (session.tokens_in, session.tokens_out, session.tokens_cache_read) == (3000, 150, 10)
    assert session.cost == pytest.approx((3000 * 3 + 150 * 15) / 1e6)
    assert result.usage.cost == pytest.approx(session.cost)


def test_chat_message_hook_may_add_parts(hookcode_env):
    class Attach:
        @hookimpl
        def chat_message(self, message):
            message.parts.append(
                {
                    "type": "file",
                    "mime": "text/plain",
                    "url": "data:text/plain;base64,aGk=",
                    "filename": "hi.txt",
                }
            )

    hookcode_env.register(Attach(), "attach")
    model = SM(["ok"])
    rt = runtime(hookcode_env, model)
    run(rt, "look")
    content = model.requests[0].messages[0].content
    assert content[1] == {
        "type": "file",
        "mime": "text/plain",
        "url": "data:text/plain;base64,aGk=",
        "filename": "hi.txt",
    }


# --------------------------------------------------------------------------- bad input


def test_empty_message_is_refused(hookcode_env):
    rt = runtime(hookcode_env, SM(["x"]))
    with pytest.raises(HookcodeError, match="empty message"):
        run(rt, "   \n")
    assert rt.store.list_sessions() == []


def test_unknown_agent_and_unknown_model(hookcode_env):
    rt = runtime(hookcode_env, SM(["x"]))
    with pytest.raises(HookcodeError, match=r"unknown agent 'nope'; available agents: .*build"):
        run(rt, agent="nope")
    with pytest.raises(HookcodeError, match=r"unknown model provider 'nope'.*script"):
        run(rt, model="nope/model")
    with pytest.raises(HookcodeError, match="provider/model"):
        run(rt, model="noslash")
    with pytest.raises(HookcodeError, match="internal"):
        run(rt, agent="compaction")


# --------------------------------------------------------------------------- locks


def test_a_busy_session_is_refused_and_a_dead_lock_is_taken_over(hookcode_env, tmp_path):
    import subprocess
    import sys

    rt = runtime(hookcode_env, SM(["ok", "ok"]))
    session = rt.create_session(title="s", model="script/test")
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        rt.store.lock_session(session.id, pid=live.pid)
        with pytest.raises(SessionBusy, match=f"busy.*pid {live.pid}"):
            run(rt, "x", session=session)
    finally:
        live.kill()
        live.wait()
    # the holder is dead now: its lock is taken over
    result = run(rt, "x", session=session)
    assert result.error is None and rt.store.session_lock(session.id) is None


# --------------------------------------------------------------------------- agents


def test_markdown_agent_files_and_instruction_files(hookcode_env):
    agents = hookcode_env.project / ".hookcode" / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text(
        "---\ndescription: Reviews code\nmode: primary\nsteps: 1\ntemperature: 0.3\n"
        "permission:\n  note: deny\n---\nYou review code carefully.\n"
    )
    (agents / "broken.md").write_text("---\nbogus_key: 1\n---\nbody\n")
    (hookcode_env.project / "AGENTS.md").write_text("Always answer in haiku.\n")
    model = SM(["ok"])
    rt = runtime(hookcode_env, model)
    spec = rt.agent("reviewer")
    assert spec.description == "Reviews code" and spec.steps == 1 and spec.temperature == 0.3
    assert "broken" not in rt.agents()
    run(rt, agent="reviewer")
    request = model.requests[0]
    assert request.system[0] == "You review code carefully."
    assert any("Always answer in haiku." in part and "AGENTS.md" in part for part in request.system)
    assert request.params["temperature"] == 0.3
    assert "note" not in {t["name"] for t in request.tools}  # the file's deny hides it
    assert request.agent == "reviewer"


def test_toml_agent_table_wins_over_the_markdown_file(hookcode_env):
    agents = hookcode_env.project / ".hookcode" / "agents"
    agents.mkdir(parents=True)
    (agents / "helper.md").write_text("---\ndescription: from file\nsteps: 3\n---\nPrompt.\n")
    hookcode_env.write_config('[agent.helper]\ndescription = "from toml"\n')
    rt = runtime(hookcode_env, SM([]))
    spec = rt.agent("helper")
    assert (spec.description, spec.steps, spec.prompt) == ("from toml", 3, "Prompt.")


def test_frontmatter_parser():
    from hookcode.agents import parse_frontmatter

    meta, body = parse_frontmatter(
        "---\nname: x\nsteps: 4\nflag: true\nlist: [a, 'b c']\nnested:\n  \"git *\": allow\n"
        "  deep:\n    k: v\nprompt: |\n  line one\n  line two\n---\nBody\n"
    )
    assert meta == {
        "name": "x",
        "steps": 4,
        "flag": True,
        "list": ["a", "b c"],
        "nested": {"git *": "allow", "deep": {"k": "v"}},
        "prompt": "line one\nline two\n",
    }
    assert body == "Body"
    with pytest.raises(ValueError, match="not closed"):
        parse_frontmatter("---\na: 1\n")


# --------------------------------------------------------------------------- scripted positions


def test_scripted_sessions_keep_their_own_positions_by_agent(hookcode_env):
    model = SM({"build": ["b1", "b2"], "plan": ["p1"]}, per_session=True)
    rt = runtime(hookcode_env, model)
    first = run(rt)
    other = run(rt)
    plan = run(rt, agent="plan")
    assert (first.text, other.text, plan.text) == ("b1", "b1", "p1")
    again = run(rt, "more", session=rt.store.get_session(first.session_id))
    assert again.text == "b2"
    plan_again = run(rt, "more", session=rt.store.get_session(plan.session_id))
    assert plan_again.text == "(the scripted model has no more turns)"  # still the plan agent
    exhausted = run(rt, "more", session=rt.store.get_session(first.session_id))
    assert exhausted.text == "(the scripted model has no more turns)"


def test_prompt_blocked_by_a_hook_is_never_sent(hookcode_env):
    from hookcode.errors import PromptBlocked

    class Block:
        @hookimpl
        def chat_message(self, message):
            raise PromptBlocked("not today")

    hookcode_env.register(Block(), "block")
    model = SM(["x"])
    rt = runtime(hookcode_env, model)
    result = run(rt)
    assert result.error == "the message was blocked: not today" and model.requests == []


def test_provider_messages_merge_consecutive_user_turns(hookcode_env):
    model = SM([Turn(error="fatal")])
    rt = runtime(hookcode_env, model)
    first = run(rt, "one")
    session = rt.store.get_session(first.session_id)
    messages = load_messages(rt.store, session.id)
    sent = to_provider_messages(messages)
    assert [m.role for m in sent] == ["user"]  # the failed turn said nothing


def test_project_path_is_cwd_worktree(hookcode_env):
    rt = runtime(hookcode_env, SM(["ok"]))
    result = run(rt)
    assert rt.store.get_session(result.session_id).project == str(Path(rt.worktree))
