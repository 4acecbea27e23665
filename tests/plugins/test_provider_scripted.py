"""The ``scripted`` provider (hookcode-provider-scripted): script files, per-session positions,
streaming like a real provider, the demo and echo models."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
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
)
from hookcode.session import run_session
from hookcode.testing.scripted import EXHAUSTED, ScriptError, parse_script
from hookcode_provider_scripted import ScriptedProvider


def request(model="x", agent="build", state=None, text="hi", tools=()):
    return ModelRequest(
        model=model,
        system=["sys"],
        messages=[Message("user", [{"type": "text", "text": text}])],
        tools=[{"name": t} for t in tools],
        session_id="ses_1",
        agent=agent,
        state=state if state is not None else {},
    )


def collect(provider, req):
    async def go():
        return [event async for event in provider.stream(req)]

    return asyncio.run(go())


def script_file(tmp_path: Path, data) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(data))
    return path


def test_a_turn_streams_like_a_real_provider(tmp_path):
    path = script_file(
        tmp_path,
        [
            {
                "reasoning": "thinking it over",
                "text": "x" * 40,
                "tool_calls": [{"name": "read", "args": {"filePath": "a" * 50}}],
            }
        ],
    )
    provider = ScriptedProvider({"HOOKCODE_SCRIPT": str(path)})
    events = collect(provider, request())
    kinds = [type(e) for e in events]
    assert kinds[0] is ReasoningDelta
    assert kinds.count(TextDelta) == 3  # 40 characters in 16-character deltas
    start = kinds.index(ToolCallStart)
    assert kinds[start + 1 : start + 4] == [ToolInputDelta] * 3  # fragments of the input
    end = events[kinds.index(ToolCallEnd)]
    assert end.input == {"filePath": "a" * 50}
    joined = "".join(e.text for e in events if isinstance(e, ToolInputDelta))
    assert json.loads(joined) == end.input
    finish = events[-1]
    assert isinstance(finish, Finish) and finish.reason == "tool-calls"
    assert finish.usage.input > 0 and finish.usage.output > 0


def test_each_session_keeps_its_position_in_its_state(tmp_path):
    path = script_file(tmp_path, ["one", "two"])
    provider = ScriptedProvider({"HOOKCODE_SCRIPT": str(path)})
    a, b = {}, {}
    texts = []
    for state in (a, b, a, a):
        events = collect(provider, request(state=state))
        texts.append("".join(e.text for e in events if isinstance(e, TextDelta)))
    assert texts == ["one", "one", "two", EXHAUSTED]
    assert a == {"positions": {"*": 3}} and b == {"positions": {"*": 1}}


def test_an_object_maps_agents_to_their_own_turns(tmp_path):
    path = script_file(tmp_path, {"build": ["b"], "general": ["g1", "g2"], "*": ["other"]})
    provider = ScriptedProvider({"HOOKCODE_SCRIPT": str(path)})
    state: dict = {}

    def say(agent):
        events = collect(provider, request(agent=agent, state=state))
        return "".join(e.text for e in events if isinstance(e, TextDelta))

    assert [say("general"), say("build"), say("general"), say("explore")] == [
        "g1",
        "b",
        "g2",
        "other",
    ]
    assert state["positions"] == {"general": 2, "build": 1, "*": 1}


def test_errors_in_a_script(tmp_path):
    path = script_file(tmp_path, [{"text": "partial", "error": "overloaded", "retryable": True}])
    events = collect(ScriptedProvider({"HOOKCODE_SCRIPT": str(path)}), request())
    assert isinstance(events[-1], StreamError) and events[-1].retryable
    assert events[0] == TextDelta("partial")
    path.write_text("[{")
    (error,) = collect(ScriptedProvider({"HOOKCODE_SCRIPT": str(path)}), request())
    assert isinstance(error, StreamError) and "not valid JSON" in error.message
    assert not error.retryable


def test_the_script_is_reread_when_it_changes(tmp_path):
    path = script_file(tmp_path, ["old"])
    provider = ScriptedProvider({"HOOKCODE_SCRIPT": str(path)})
    collect(provider, request())
    path.write_text(json.dumps(["new", "newer"]))
    events = collect(provider, request(state={}))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "new"


def test_parse_script_validates():
    assert len(parse_script(["a", {"text": "b"}])) == 2  # type: ignore[arg-type]
    with pytest.raises(ScriptError, match=r"script\[1\]\.tool_calls\[0\]\.args: must be an object"):
        parse_script(["a", {"tool_calls": [{"name": "x", "args": [1]}]}])
    with pytest.raises(ScriptError, match="usage: must be an object of integers"):
        parse_script([{"usage": {"input": "many"}}])


def test_demo_and_echo_without_a_script():
    provider = ScriptedProvider({})
    echo = collect(provider, request(model="echo", text="ping"))
    assert "".join(e.text for e in echo if isinstance(e, TextDelta)) == "ping"
    demo = collect(provider, request(model="demo", tools=("list",)))
    assert any(isinstance(e, ToolCallEnd) and e.name == "list" for e in demo)
    (error,) = collect(provider, request(model="other"))
    assert isinstance(error, StreamError) and "needs a script" in error.message


def test_the_provider_hook_reads_the_runtime_environment(hookcode_env, tmp_path):
    path = script_file(tmp_path, {"build": ["from the env script"]})
    rt = hookcode_env.runtime(
        HOOKCODE_LOAD_PLUGINS="policy_rules,provider_scripted", HOOKCODE_SCRIPT=str(path)
    )
    result = asyncio.run(run_session(rt, "hi", model="scripted/anything"))
    assert result.text == "from the env script"
    # the position is stored with the session
    state = rt.store.get_state(result.session_id, "provider:scripted")
    assert state == {"positions": {"build": 1}}
    again = asyncio.run(run_session(rt, "more", session=rt.store.get_session(result.session_id)))
    assert again.text == EXHAUSTED
