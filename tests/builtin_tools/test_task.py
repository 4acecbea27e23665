"""The task tool (reference/tools.md §16): a sub-agent in a child session, run by the scripted
provider; its calls pass the same invoke, hooks and permissions as the parent's."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from hookcode import ToolContext, hookimpl, tool
from hookcode.session import ABORTED, run_session
from hookcode.testing import ScriptedModel, ToolCallSpec, Turn, ainvoke_tool
from hookcode.tools import AbortSignal

PLUGINS = "policy_rules,tool_task,tool_glob,tool_read,tool_edit"


@tool
async def wait(ctx: ToolContext, seconds: float) -> str:
    """Sleep for a while."""
    await asyncio.sleep(seconds)
    return "waited"


class Pack:
    def __init__(self, model: Any):
        self.model = model
        self.calls: list[tuple[str, str, str]] = []  # (tool, session, agent)

    @hookimpl
    def register_tools(self, register):
        register(wait)

    @hookimpl
    def provider(self):
        return [self.model]

    @hookimpl
    def tool_execute_before(self, call, ctx):
        self.calls.append((call.tool, call.session_id, call.agent))


def setup(env, turns, **kwargs):
    model = ScriptedModel(turns, id="script", **kwargs)
    pack = Pack(model)
    env.register(pack, "pack")
    return env.runtime(HOOKCODE_LOAD_PLUGINS=PLUGINS), pack


def task_call(prompt="list the python files", agent="explore", **extra):
    args = {"description": "find files", "prompt": prompt, "subagent_type": agent, **extra}
    return Turn(tool_calls=[ToolCallSpec("task", args)])


def run(rt, text="go", **kwargs):
    return asyncio.run(run_session(rt, text, model="script/test", **kwargs))


def task_outcome(result):
    [outcome] = [o for o in result.outcomes if o.call.tool == "task"]
    return outcome


@pytest.fixture
def project(hookcode_env):
    (hookcode_env.project / "a.py").write_text("print('a')\n")
    return hookcode_env.project


def test_child_session_runs_the_subagent(hookcode_env, project, rg):
    turns = {
        "build": [task_call(), "parent done"],
        "explore": [Turn(tool_calls=[ToolCallSpec("glob", {"pattern": "*.py"})]), "found a.py"],
    }
    rt, pack = setup(hookcode_env, turns, cost_in=1000.0, cost_out=1000.0)
    result = run(rt)
    assert result.text == "parent done"
    outcome = task_outcome(result)
    assert outcome.ok, outcome.error_text
    [child] = rt.store.children(result.session_id)
    assert child.parent_id == result.session_id
    assert child.agent == "explore"
    assert child.title == "find files (@explore subagent)"
    assert child.model == "script/test"  # explore has no model: the caller's
    assert outcome.result.output == (
        f"task_id: {child.id} (for resuming to continue this task if needed)\n\n"
        "<task_result>\nfound a.py\n</task_result>"
    )
    assert outcome.result.metadata["sessionId"] == child.id
    assert outcome.result.metadata["model"] == "script/test"
    # the child's glob call went through invoke: the hook saw it, in the child session
    assert ("glob", child.id, "explore") in pack.calls
    assert ("task", result.session_id, "build") in pack.calls
    [glob_part] = rt.store.tool_parts(child.id)
    assert glob_part.state == "completed" and "a.py" in glob_part.output
    # child rules: explore cannot edit; todo and task denied as session rules
    denied = {(r.permission, r.action) for r in rt.session_rules[child.id]}
    assert denied == {("todowrite", "deny"), ("todoread", "deny"), ("task", "deny")}
    offered = {e.name for e in rt.registry.available("explore", child.id, "script/test")}
    assert "glob" in offered and "read" in offered
    assert "edit" not in offered and "task" not in offered
    # the child's cost rolls up to the parent
    parent = rt.store.get_session(result.session_id)
    child = rt.store.get_session(child.id)
    assert child.cost > 0
    own = sum(m.get("cost") or 0 for m in rt.store.messages(parent.id))
    assert parent.cost == pytest.approx(own + child.cost)
    assert parent.tokens_in >= child.tokens_in > 0


def test_resume_with_task_id(hookcode_env, project):
    turns = {"build": [task_call(), "first done"], "explore": ["first answer", "second answer"]}
    rt, _ = setup(hookcode_env, turns)
    first = run(rt)
    [child] = rt.store.children(first.session_id)
    before = len(rt.store.messages(child.id))
    # a later parent run resumes the same child (its own turn position continues)
    rt.agents()  # warm
    outcome = asyncio.run(
        ainvoke_tool(
            rt,
            "task",
            {
                "description": "find more",
                "prompt": "and now?",
                "subagent_type": "explore",
                "task_id": child.id,
            },
            session_id=first.session_id,
            model="script/test",
        )
    )
    assert outcome.ok, outcome.error_text
    assert outcome.result.output.startswith(f"task_id: {child.id} ")
    assert "<task_result>\nsecond answer\n</task_result>" in outcome.result.output
    assert [c.id for c in rt.store.children(first.session_id)] == [child.id]
    assert len(rt.store.messages(child.id)) == before + 2


def test_unknown_agent(hookcode_env, project):
    rt, _ = setup(hookcode_env, [])
    for name in ("nope", "build"):  # a primary agent is not a sub-agent
        outcome = asyncio.run(
            ainvoke_tool(
                rt,
                "task",
                {"description": "d", "prompt": "p", "subagent_type": name},
                model="script/test",
            )
        )
        assert outcome.error_text == f"Unknown agent type: {name} is not a valid agent type"
    assert rt.store.list_sessions(parent=True) == []


def test_task_id_of_another_project_is_refused(hookcode_env, project):
    rt, _ = setup(hookcode_env, {"explore": ["never"]})
    parent = rt.create_session(title="p")
    other = rt.store.create_session(
        project="/elsewhere",
        directory="/elsewhere",
        agent="explore",
        parent_id=parent.id,
        id="ses_other",
    )
    outcome = asyncio.run(
        ainvoke_tool(
            rt,
            "task",
            {"description": "d", "prompt": "p", "subagent_type": "explore", "task_id": other.id},
            session_id=parent.id,
            model="script/test",
        )
    )
    assert not outcome.ok
    assert "another project" in outcome.error_text and other.id in outcome.error_text
    assert rt.store.messages(other.id) == []
    # a top-level session (the user's own) is not a task either
    outcome = asyncio.run(
        ainvoke_tool(
            rt,
            "task",
            {"description": "d", "prompt": "p", "subagent_type": "explore", "task_id": parent.id},
            session_id=parent.id,
            model="script/test",
        )
    )
    assert "not a subagent session" in outcome.error_text


def test_aborting_the_parent_aborts_the_child(hookcode_env, project):
    turns = {
        "build": [task_call(agent="general"), "never"],
        "general": [Turn(tool_calls=[ToolCallSpec("wait", {"seconds": 30})]), "never"],
    }
    rt, _ = setup(hookcode_env, turns)
    abort = AbortSignal()

    async def go():
        asyncio.get_running_loop().call_later(0.5, abort.abort, "test")
        return await run_session(rt, "go", model="script/test", abort=abort)

    started = time.monotonic()
    result = asyncio.run(go())
    assert time.monotonic() - started < 5
    assert result.aborted
    [child] = rt.store.children(result.session_id)
    [wait_part] = rt.store.tool_parts(child.id)
    assert wait_part.state == "error" and wait_part.error == ABORTED
    [task_part] = rt.store.tool_parts(result.session_id)
    assert task_part.state == "error" and task_part.error == ABORTED


def test_headless_asks_in_the_child_are_rejects(hookcode_env, project):
    (project / ".env").write_text("SECRET=1\n")
    turns = {
        "build": [task_call(agent="general"), "parent done"],
        "general": [Turn(tool_calls=[ToolCallSpec("read", {"filePath": ".env"})]), "never"],
    }
    rt, _ = setup(hookcode_env, turns)
    result = run(rt)
    [child] = rt.store.children(result.session_id)
    [read_part] = rt.store.tool_parts(child.id)
    assert read_part.state == "error" and "rejected" in read_part.error
    assert any(r.session_id == child.id and r.permission == "read" for r in rt.refusals)
    outcome = task_outcome(result)
    assert outcome.ok and outcome.result.metadata["rejected"] is True


def test_description_lists_subagents_the_caller_may_start(hookcode_env, project):
    hookcode_env.write_config({"agent": {"build": {"permission": {"task": {"explore": "deny"}}}}})
    rt, _ = setup(hookcode_env, [])
    [definition] = [
        d for d in rt.registry.definitions("build", None, "script/test") if d["name"] == "task"
    ]
    text = definition["description"]
    assert "- general: General-purpose agent" in text
    assert "- explore:" not in text
    assert "- build:" not in text and "- compaction:" not in text
    # denied by rule: the call is refused too
    outcome = asyncio.run(
        ainvoke_tool(
            rt,
            "task",
            {"description": "d", "prompt": "p", "subagent_type": "explore"},
            model="script/test",
        )
    )
    assert "prevents you from using this specific tool call" in outcome.error_text
    # plan's definition still lists explore
    [plan_def] = [
        d for d in rt.registry.definitions("plan", None, "script/test") if d["name"] == "task"
    ]
    assert "- explore:" in plan_def["description"]


def test_subagent_whose_rules_mention_task_keeps_it(hookcode_env, project):
    hookcode_env.write_config(
        {"agent": {"orchestrator": {"mode": "subagent", "permission": {"task": "allow"}}}}
    )
    turns = {"build": [task_call(agent="orchestrator"), "done"], "orchestrator": ["ok"]}
    rt, _ = setup(hookcode_env, turns)
    result = run(rt)
    [child] = rt.store.children(result.session_id)
    denied = {r.permission for r in rt.session_rules[child.id]}
    assert denied == {"todowrite", "todoread"}
    assert "task" in {e.name for e in rt.registry.available("orchestrator", child.id)}


@tool
def spill() -> str:
    """A long output, always cut."""
    return "line\n" * 3000


class Spiller:
    @hookimpl
    def register_tools(self, register):
        register(spill)


def test_a_cut_output_suggests_the_task_tool_while_the_agent_may_use_it(hookcode_env):
    """truncation.md §3: the task tool gives the hint its line (``truncation_hint``)."""
    from hookcode.testing import invoke_tool
    from hookcode.truncate import DEFAULT_ADVICE
    from hookcode_tool_task import TaskTool

    hookcode_env.register(Spiller(), "spiller")
    rt = hookcode_env.runtime(HOOKCODE_LOAD_PLUGINS=PLUGINS)
    output = invoke_tool(rt, "spill").result.output
    assert TaskTool.truncation_hint is not None and TaskTool.truncation_hint in output
    assert "Use the Task tool to have the explore agent search this file" in output
    assert DEFAULT_ADVICE not in output
    # an agent that may not start sub-agents gets the default advice
    hookcode_env.write_config('[permission]\ntask = "deny"\n')
    rt = hookcode_env.runtime(HOOKCODE_LOAD_PLUGINS=PLUGINS)
    output = invoke_tool(rt, "spill").result.output
    assert "Task tool" not in output and DEFAULT_ADVICE in output
    # and without the task tool installed
    rt = hookcode_env.runtime(HOOKCODE_LOAD_PLUGINS="policy_rules")
    assert "Task tool" not in invoke_tool(rt, "spill").result.output


def test_a_host_that_is_not_the_runtime_is_told_it_cannot_run_a_sub_agent(hookcode_env):
    """``ctx.runtime`` is typed as the Host protocol; a sub-agent needs the whole runtime (it
    makes a child session and runs a loop), so another host gets a ToolError naming it, also
    under ``python -O`` (no assert)."""
    from hookcode.calls import ToolCall
    from hookcode.errors import ToolError

    rt = hookcode_env.runtime(HOOKCODE_LOAD_PLUGINS=PLUGINS)

    class Forwarding:
        """Every attribute of the real runtime, but not a Runtime."""

        def __getattr__(self, name: str) -> Any:
            return getattr(rt, name)

    entry = rt.registry.get("task")
    assert entry is not None
    call = ToolCall(tool="task", args={}, session_id="s", call_id="c", agent="build")
    ctx = ToolContext(Forwarding(), call)  # type: ignore[arg-type]
    with pytest.raises(
        ToolError, match=r"needs hookcode's Runtime to run a sub-agent, not .*Forwarding$"
    ):
        asyncio.run(
            entry.tool.run(ctx, description="d", prompt="p", subagent_type="explore")  # type: ignore[attr-defined]
        )


def test_tools_show_lists_the_subagents_of_the_given_agent(hookcode_env, project):
    """``tools show task [--agent NAME]`` shows the sub-agents that agent may start."""
    import subprocess
    import sys

    hookcode_env.write_config({"agent": {"build": {"permission": {"task": {"explore": "deny"}}}}})

    def show(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "hookcode", "-C", str(project), "tools", "show", "task", *args],
            capture_output=True,
            text=True,
            env={**hookcode_env.env, "HOOKCODE_LOAD_PLUGINS": PLUGINS},
            timeout=120,
        )

    build = show()
    assert build.returncode == 0, build.stderr
    assert "agent: build" in build.stdout
    assert "- general: General-purpose agent" in build.stdout
    assert "- explore:" not in build.stdout
    plan = show("--agent", "plan")
    assert plan.returncode == 0, plan.stderr
    assert "agent: plan" in plan.stdout
    assert "- explore:" in plan.stdout
    unknown = show("--agent", "nobody")
    assert unknown.returncode == 1
    assert "unknown agent 'nobody'" in unknown.stderr
