"""Context management: pruning old tool outputs (agent-loop.md §7) and compaction."""

from __future__ import annotations

import asyncio
from typing import Any

from hookcode import ToolContext, hookimpl, tool
from hookcode.compaction import (
    COMPACTION_PROMPT,
    CONTINUE_TEXT,
    SUMMARY_REQUEST,
    context_tokens,
    overflows,
)
from hookcode.messages import PRUNED
from hookcode.providers import ModelInfo
from hookcode.session import load_messages, run_session
from hookcode.testing import ScriptedModel, ToolCallSpec, Turn


@tool
def big(ctx: ToolContext, size: int, fill: str = "x") -> str:
    """A large output."""
    return fill * size


@tool(name="skill", prunable=False)
def skill_tool(ctx: ToolContext, size: int) -> str:
    """A large skill output."""
    return "s" * size


class Pack:
    def __init__(self, model: Any):
        self.model = model

    @hookimpl
    def register_tools(self, register):
        register(big, skill_tool)

    @hookimpl
    def provider(self):
        return [self.model]


def setup(env, model, **extra):
    env.register(Pack(model), "pack")
    return env.runtime(HOOKCODE_LOAD_PLUGINS="policy_rules", **extra)


def run(rt, text, **kwargs):
    return asyncio.run(run_session(rt, text, model="script/test", **kwargs))


def compacted(rt, session_id) -> dict[str, float | None]:
    """call id -> when its output was pruned (None: never)."""
    return {
        part["call_id"]: part["state"]["time"]["compacted"]
        for message in rt.store.messages(session_id)
        for part in message["parts"]
        if part["type"] == "tool"
    }


def outputs_sent(request) -> list[str]:
    return [b["output"] for m in request.messages if m.role == "tool" for b in m.content]


def test_old_tool_outputs_are_pruned_but_not_skill_outputs_or_recent_turns(hookcode_env):
    size = 40_000  # 10,000 estimated tokens each
    calls = [ToolCallSpec("big", {"size": size, "fill": str(i)}, id=f"old{i}") for i in range(7)]
    calls.insert(0, ToolCallSpec("skill", {"size": size}, id="skill1"))
    model = ScriptedModel(
        [
            Turn(tool_calls=calls),
            "first done",
            Turn(tool_calls=[ToolCallSpec("big", {"size": size}, id="recent")]),
            "second done",
            "third done",
            "fourth done",
        ],
        id="script",
    )
    rt = setup(hookcode_env, model)
    first = run(rt, "one")
    session = rt.store.get_session(first.session_id)
    run(rt, "two", session=session)
    # nothing is pruned while the first turn is among the two most recent user turns
    assert all(p.state == "completed" for p in rt.store.tool_parts(session.id))
    run(rt, "three", session=session)
    parts = compacted(rt, session.id)
    # newest first: old6..old3 are the protected 40k tokens, old2..old0 (30k > 20k) pruned
    assert sorted(i for i, when in parts.items() if when) == ["old0", "old1", "old2"]
    assert parts["skill1"] is None and parts["recent"] is None
    run(rt, "four", session=session)
    sent = outputs_sent(model.requests[-1])
    assert sent[1:4] == [PRUNED] * 3  # in call order: skill1, old0, old1, old2, ...
    assert sent[0] == "s" * size and sent[4] == "3" * size


@tool(name="notes", prunable=False)
def notes_tool(ctx: ToolContext, size: int) -> str:
    """A third-party tool whose outputs stay in the history."""
    return "n" * size


@tool(name="skill")
def undeclared_skill(ctx: ToolContext, size: int) -> str:
    """Called skill, but not declared unprunable: its name alone keeps nothing."""
    return "u" * size


class Keepers(Pack):
    @hookimpl
    def register_tools(self, register):
        register(big, notes_tool, undeclared_skill)


def test_the_declaration_not_the_name_keeps_an_output(hookcode_env):
    size = 40_000  # 10,000 estimated tokens each
    calls = [ToolCallSpec("big", {"size": size, "fill": str(i)}, id=f"old{i}") for i in range(6)]
    calls[:0] = [
        ToolCallSpec("notes", {"size": size}, id="notes1"),
        ToolCallSpec("skill", {"size": size}, id="skill1"),
    ]
    model = ScriptedModel(
        [Turn(tool_calls=calls), "first done", "second done", "third done"], id="script"
    )
    hookcode_env.register(Keepers(model), "keepers")
    rt = hookcode_env.runtime(HOOKCODE_LOAD_PLUGINS="policy_rules")
    first = run(rt, "one")
    session = rt.store.get_session(first.session_id)
    run(rt, "two", session=session)
    run(rt, "three", session=session)
    parts = compacted(rt, session.id)
    # newest first: old5..old2 are the protected 40k tokens; old1, old0, skill1 (30k) pruned
    assert sorted(i for i, when in parts.items() if when) == ["old0", "old1", "skill1"]
    assert parts["notes1"] is None


def test_nothing_is_pruned_below_the_minimum(hookcode_env):
    calls = [ToolCallSpec("big", {"size": 40_000}) for _ in range(5)]  # 50k: 10k prunable
    model = ScriptedModel([Turn(tool_calls=calls), "a", "b", "c"], id="script")
    rt = setup(hookcode_env, model)
    first = run(rt, "one")
    session = rt.store.get_session(first.session_id)
    run(rt, "two", session=session)
    run(rt, "three", session=session)
    assert not any(compacted(rt, session.id).values())


def test_compaction_summarises_when_the_context_fills_and_the_loop_goes_on(hookcode_env):
    seen: list[str] = []

    class Shaper:
        @hookimpl
        def system_prompt(self, parts, agent):
            seen.append(agent.name)
            if agent.name == "compaction":
                parts.append("KEEP FILE NAMES")

    hookcode_env.register(Shaper(), "shaper")
    model = ScriptedModel(
        [
            Turn(tool_calls=[ToolCallSpec("big", {"size": 40_000})], usage={"input": 500}),
            Turn(text="SUMMARY: read a big file", usage={"input": 9000, "output": 50}),
            "final answer",
        ],
        id="script",
        context=12_000,
        output=2_000,
    )
    rt = setup(hookcode_env, model)
    result = run(rt, "summarise the project")
    assert result.error is None and result.text == "final answer" and result.compactions == 1
    compact = model.requests[1]
    assert compact.agent == "compaction" and compact.tools == []
    assert compact.system[0] == COMPACTION_PROMPT and compact.system[-1] == "KEEP FILE NAMES"
    assert compact.messages[-1].content[-1] == {"type": "text", "text": SUMMARY_REQUEST}
    after = model.requests[2]
    assert [m.role for m in after.messages] == ["user", "assistant", "user"]
    assert after.messages[0].content == [{"type": "text", "text": "What did we do so far?"}]
    assert after.messages[1].content == [{"type": "text", "text": "SUMMARY: read a big file"}]
    assert after.messages[2].content == [{"type": "text", "text": CONTINUE_TEXT}]
    assert after.agent == "build" and after.tools
    stored = load_messages(rt.store, result.session_id)
    summaries = [m for m in stored if m.summary]
    assert len(summaries) == 1 and summaries[0].agent == "compaction"
    assert "compaction" in seen
    # the next run starts from the summary too
    rt.store.get_session(result.session_id)
    model.set_turns(["later"])
    run(rt, "and now?", session=rt.store.get_session(result.session_id))
    assert model.requests[-1].messages[0].content[0]["text"] == "What did we do so far?"


def test_compaction_can_be_switched_off(hookcode_env):
    hookcode_env.write_config("[experimental.compaction]\nauto = false\n")
    model = ScriptedModel(
        [Turn(tool_calls=[ToolCallSpec("big", {"size": 40_000})], usage={"input": 500}), "done"],
        id="script",
        context=12_000,
        output=2_000,
    )
    rt = setup(hookcode_env, model)
    result = run(rt, "go")
    assert result.compactions == 0 and [r.agent for r in model.requests] == ["build", "build"]


def test_a_failed_summary_ends_the_run_with_an_error(hookcode_env):
    model = ScriptedModel(
        [
            Turn(tool_calls=[ToolCallSpec("big", {"size": 40_000})], usage={"input": 500}),
            Turn(error="context too long"),
        ],
        id="script",
        context=12_000,
        output=2_000,
    )
    rt = setup(hookcode_env, model)
    result = run(rt, "go")
    assert result.error == "compaction failed: context too long"


def test_estimates_and_overflow():
    info = ModelInfo(id="m", context=10_000, output=50_000)
    assert overflows(8_001, info)  # reserve capped at 32k -> usable = 0.8 * context
    assert not overflows(7_999, info)
    assert not overflows(10**9, ModelInfo(id="m"))  # unknown window: never
    assert overflows(9_001, ModelInfo(id="m", context=10_000), reserved=1_000)
    assert context_tokens([], fixed=123) == 123
