"""plan_enter / plan_exit (reference/tools.md §19): a Yes/No question, then the agent switch."""

from __future__ import annotations

import asyncio

from hookcode import hookimpl
from hookcode.session import run_session
from hookcode.testing import ScriptedModel, ToolCallSpec, Turn, invoke_tool
from hookcode_tool_plan import DISMISSED, HEADLESS


class Answer:
    def __init__(self, answers):
        self.answers = answers
        self.requests = []

    @hookimpl
    def question_prompt(self, request):
        self.requests.append(request)
        return self.answers


class Pack:
    def __init__(self, model):
        self.model = model

    @hookimpl
    def provider(self):
        return [self.model]


def runtime(env, front_end=None):
    if front_end is not None:
        env.register(front_end, "front_end")
    return env.runtime(HOOKCODE_LOAD_PLUGINS="policy_rules,tool_plan,tool_todo")


def test_plan_exit_asks_a_fixed_yes_no_question_and_switches_to_build(hookcode_env):
    front = Answer([["Yes"]])
    rt = runtime(hookcode_env, front)
    session = rt.create_session(title="t", agent="plan")

    outcome = invoke_tool(rt, "plan_exit", {}, agent="plan", session_id=session.id)

    assert outcome.error is None, outcome.error_text
    assert outcome.result.output == (
        "User approved switching to build agent. Wait for further instructions."
    )
    assert outcome.result.title == "Switching to build agent"
    assert rt.store.get_session(session.id).agent == "build"
    (question,) = front.requests[0].questions
    plan = f".hookcode/plans/{session.id}.md"
    assert question.header == "Build Agent"
    assert question.custom is False
    assert question.question == (
        f"Plan at {plan} is complete. Would you like to switch to the build agent and start "
        "implementing?"
    )
    assert [o.label for o in question.options] == ["Yes", "No"]


def test_plan_enter_is_the_mirror_image(hookcode_env):
    front = Answer([["Yes"]])
    rt = runtime(hookcode_env, front)
    session = rt.create_session(title="t", agent="build")

    outcome = invoke_tool(rt, "plan_enter", {}, agent="build", session_id=session.id)

    assert outcome.result.output == (
        "User approved switching to plan agent. Wait for further instructions."
    )
    assert outcome.result.title == "Switching to plan agent"
    assert rt.store.get_session(session.id).agent == "plan"
    (question,) = front.requests[0].questions
    assert question.header == "Plan Agent" and question.custom is False
    assert f".hookcode/plans/{session.id}.md" in question.question


def test_no_is_a_dismissal_and_nothing_switches(hookcode_env):
    rt = runtime(hookcode_env, Answer([["No"]]))
    session = rt.create_session(title="t", agent="plan")
    outcome = invoke_tool(rt, "plan_exit", {}, agent="plan", session_id=session.id)
    assert outcome.error_text == DISMISSED
    assert outcome.error.stop_loop is True
    assert rt.store.get_session(session.id).agent == "plan"


def test_headless_is_an_error_that_does_not_stop_the_loop(hookcode_env):
    rt = runtime(hookcode_env)
    outcome = invoke_tool(rt, "plan_exit", {}, agent="plan")
    assert outcome.error_text == HEADLESS
    assert not getattr(outcome.error, "stop_loop", False)


def test_each_agent_sees_only_its_own_switch(hookcode_env):
    rt = runtime(hookcode_env)
    build = {d["name"] for d in rt.registry.definitions("build")}
    plan = {d["name"] for d in rt.registry.definitions("plan")}
    assert "plan_enter" in build and "plan_exit" not in build
    assert "plan_exit" in plan and "plan_enter" not in plan


def test_plan_exit_switches_the_agent_for_the_next_request(hookcode_env):
    model = ScriptedModel(
        [Turn(tool_calls=[ToolCallSpec("plan_exit", {}, id="p1")]), "building now"], id="script"
    )
    hookcode_env.register(Pack(model), "pack")
    seen = []

    class Watch:
        @hookimpl
        def system_prompt(self, parts, agent):
            seen.append(agent.name)

    hookcode_env.register(Watch(), "watch")
    rt = runtime(hookcode_env, Answer([["Yes"]]))

    result = asyncio.run(run_session(rt, "make a plan", model="script/test", agent="plan"))

    assert result.text == "building now"
    assert seen == ["plan", "build"]
    first_tools = {t["name"] for t in model.requests[0].tools}
    second_tools = {t["name"] for t in model.requests[1].tools}
    assert "plan_exit" in first_tools and "plan_enter" not in first_tools
    assert "plan_enter" in second_tools and "plan_exit" not in second_tools
    assert rt.store.get_session(result.session_id).agent == "build"
    messages = rt.store.messages(result.session_id)
    assert [m["agent"] for m in messages if m["role"] == "assistant"] == ["plan", "build"]


def test_plan_exit_declined_stops_the_loop(hookcode_env):
    model = ScriptedModel(
        [Turn(tool_calls=[ToolCallSpec("plan_exit", {}, id="p1")]), "unreached"], id="script"
    )
    hookcode_env.register(Pack(model), "pack")
    rt = runtime(hookcode_env, Answer([["No"]]))

    result = asyncio.run(run_session(rt, "make a plan", model="script/test", agent="plan"))

    assert len(model.requests) == 1
    assert result.outcomes[0].error_text == DISMISSED
    assert rt.store.get_session(result.session_id).agent == "plan"
