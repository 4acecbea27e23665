"""The foundation's agent loop, driven offline by ScriptedModel."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from hookcode import Rule, ToolCall, ToolContext, hookimpl, tool
from hookcode.errors import HookcodeError
from hookcode.session import run_session
from hookcode.testing import ReplyWith, ScriptedModel, ToolCallSpec, Turn

CALLS: list[str] = []


@tool
def note(ctx: ToolContext, text: str) -> str:
    """Record a note."""
    CALLS.append(text)
    return f"noted {text}"


@tool(asks_permission=True)
async def guarded(ctx: ToolContext, what: str) -> str:
    """Asks the `guarded` permission with the pattern `what`."""
    await ctx.ask("guarded", [what])
    CALLS.append(f"guarded {what}")
    return "done"


class Pack:
    def __init__(self, model: ScriptedModel):
        self.model = model

    @hookimpl
    def register_tools(self, register):
        register(note, guarded)

    @hookimpl
    def provider(self):
        return [self.model]


@pytest.fixture(autouse=True)
def _clear():
    CALLS.clear()


def run(env, turns, text="do it", **kwargs):
    model = ScriptedModel(turns, id="script")
    env.register(Pack(model), "pack")
    rt = env.runtime(HOOKCODE_LOAD_PLUGINS="policy_rules")
    result = asyncio.run(run_session(rt, text, model="script/test", **kwargs))
    return rt, model, result


def test_tool_calls_run_and_results_go_back(hookcode_env):
    rt, model, result = run(
        hookcode_env,
        [
            Turn(
                text="working",
                tool_calls=[
                    ToolCallSpec("note", {"text": "a"}, id="c1"),
                    ToolCallSpec("note", {"text": "b"}, id="c2"),
                ],
            ),
            "all done",
        ],
    )
    assert sorted(CALLS) == ["a", "b"]
    assert result.text == "all done" and result.steps == 2 and result.error is None
    second = model.requests[1]
    results = [b for m in second.messages if m.role == "tool" for b in m.content]
    assert [(b["id"], b["output"], b["is_error"]) for b in results] == [
        ("c1", "noted a", False),
        ("c2", "noted b", False),
    ]
    assert {t["name"] for t in model.requests[0].tools} >= {"note", "guarded"}
    parts = rt.store.tool_parts(result.session_id)
    assert [p.state for p in parts] == ["completed", "completed"]
    session = rt.store.get_session(result.session_id)
    assert session.title == "do it"


def test_session_title_is_first_line_capped(hookcode_env):
    text = "x" * 80 + "\nsecond line"
    rt, _, result = run(hookcode_env, ["ok"], text=text)
    assert rt.store.get_session(result.session_id).title == "x" * 60


def test_step_limit_last_request_offers_no_tools(hookcode_env):
    hookcode_env.write_config("[agent.build]\nsteps = 1\n")
    _rt, model, result = run(
        hookcode_env,
        [
            Turn(tool_calls=[ToolCallSpec("note", {"text": "1"})]),
            Turn(text="summary", tool_calls=[ToolCallSpec("note", {"text": "never"})]),
        ],
    )
    assert CALLS == ["1"]
    assert len(model.requests) == 2
    assert model.requests[0].tools and model.requests[1].tools == []
    assert result.text == "summary"


def test_cut_off_call_is_not_run(hookcode_env):
    _, model, result = run(
        hookcode_env,
        [
            Turn(
                tool_calls=[
                    ToolCallSpec("note", {"text": "whole"}),
                    ToolCallSpec("note", {"text": "half"}, cut_off=True),
                ]
            ),
        ],
    )
    assert CALLS == ["whole"]
    assert result.finish == "length"
    assert len(model.requests) == 1


def test_reject_stops_the_loop_and_deny_does_not(hookcode_env):
    hookcode_env.write_config('[permission]\nguarded = { "*" = "ask", "bad" = "deny" }\n')
    rt, model, result = run(
        hookcode_env,
        [
            Turn(tool_calls=[ToolCallSpec("guarded", {"what": "bad"})]),
            Turn(tool_calls=[ToolCallSpec("guarded", {"what": "maybe"})]),
            "never reached",
        ],
    )
    # the deny is read by the model and the loop goes on; the headless ask is a reject: stop
    assert len(model.requests) == 2
    assert result.rejected
    denied = next(b for m in model.requests[1].messages if m.role == "tool" for b in m.content)
    assert denied["is_error"] and "prevents you from using" in denied["output"]
    assert CALLS == []
    assert [r.patterns for r in rt.refusals] == [["maybe"]]


def test_yes_front_end_approves_asks(hookcode_env):
    hookcode_env.register(ReplyWith("once"), "approve")
    _, _, result = run(
        hookcode_env, [Turn(tool_calls=[ToolCallSpec("guarded", {"what": "maybe"})]), "ok"]
    )
    assert CALLS == ["guarded maybe"] and not result.rejected


def test_doom_loop_asks_on_third_identical_call_across_steps(hookcode_env):
    spec = ToolCallSpec("note", {"text": "same"})
    rt, _, result = run(
        hookcode_env,
        [Turn(tool_calls=[spec]), Turn(tool_calls=[spec]), Turn(tool_calls=[spec]), "never"],
    )
    assert CALLS == ["same", "same"]
    assert result.rejected
    assert rt.refusals[-1].permission == "doom_loop"


def test_hooks_shape_the_request(hookcode_env):
    class Shaper:
        @hookimpl
        def system_prompt(self, parts):
            parts.append("EXTRA RULES")

        @hookimpl
        def chat_params(self, params):
            params["temperature"] = 0.25

        @hookimpl
        def chat_message(self, message):
            message.text = message.text.upper()

        @hookimpl
        def tool_definition(self, tool_id, definition):
            if tool_id == "note":
                definition["description"] = "rewritten"

    hookcode_env.register(Shaper(), "shaper")
    _, model, _ = run(hookcode_env, ["ok"], text="hello")
    request = model.requests[0]
    assert request.system[-1] == "EXTRA RULES"
    assert request.params["temperature"] == 0.25
    assert request.messages[0].content[0]["text"] == "HELLO"
    assert {t["name"]: t["description"] for t in request.tools}["note"] == "rewritten"


def test_provider_error_ends_the_run(hookcode_env):
    _, _, result = run(hookcode_env, [Turn(error="overloaded")])
    assert result.error == "model error: overloaded"


def test_tools_hidden_by_rules_are_not_offered(hookcode_env):
    hookcode_env.write_config('[permission]\nguarded = "deny"\n')
    _, model, _ = run(hookcode_env, ["ok"])
    assert "guarded" not in {t["name"] for t in model.requests[0].tools}


def test_session_rules_hide_tools(hookcode_env):
    model = ScriptedModel(["ok"], id="script")
    hookcode_env.register(Pack(model), "pack")
    rt = hookcode_env.runtime(HOOKCODE_LOAD_PLUGINS="policy_rules")
    session = rt.create_session(title="child")
    rt.session_rules[session.id] = [Rule("note", "*", "deny", "session")]
    asyncio.run(run_session(rt, "x", model="script/test", session=session))
    assert "note" not in {t["name"] for t in model.requests[0].tools}


def test_no_model_names_the_ways_to_get_one(hookcode_env):
    rt = hookcode_env.runtime()
    with pytest.raises(HookcodeError) as err:
        asyncio.run(run_session(rt, "x"))
    assert "--model scripted/demo" in str(err.value) and "ANTHROPIC_API_KEY" in str(err.value)


def _hookcode(env: dict, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hookcode.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )


def test_cli_run_with_the_demo_model(hookcode_env):
    done = _hookcode(
        hookcode_env.env,
        "run",
        "--model",
        "scripted/demo",
        "What is here?",
        cwd=hookcode_env.project,
    )
    assert done.returncode == 0, done.stderr
    assert "You asked: What is here?" in done.stdout


def test_cli_run_without_a_model_fails_clearly(hookcode_env):
    done = _hookcode(hookcode_env.env, "run", "hello", cwd=hookcode_env.project)
    assert done.returncode == 1
    assert "--model scripted/" in done.stderr and "ANTHROPIC_API_KEY" in done.stderr


def test_plugins_table_in_config_selects_entry_points(hookcode_env):
    hookcode_env.write_config('[plugins]\nblock = ["provider_scripted"]\n')
    rt = hookcode_env.runtime()
    assert rt.plugins.infos["provider_scripted"].status == "disabled"
    assert rt.plugins.infos["policy_rules"].status == "loaded"
    hookcode_env.write_config('[plugins]\nload = ["provider_scripted"]\n')
    rt = hookcode_env.runtime()
    assert rt.plugins.infos["policy_rules"].status == "disabled"
    # the environment variable replaces the config's `load`
    rt = hookcode_env.runtime(HOOKCODE_LOAD_PLUGINS="policy_rules")
    assert rt.plugins.infos["policy_rules"].status == "loaded"
    assert rt.plugins.infos["provider_scripted"].status == "disabled"


def test_old_spill_files_are_cleaned_up_when_truncation_starts(hookcode_env):
    spill = hookcode_env.data_dir / "tool-output"
    spill.mkdir(parents=True)
    old = spill / "tool_000000000001000011aabb"  # an id from 1970
    old.write_text("old")
    rt = hookcode_env.runtime()
    rt.truncator  # noqa: B018 - first use schedules the clean-up
    rt.executor.shutdown(wait=True)
    assert not old.exists()


def test_external_directory_check_on_the_context(hookcode_env, tmp_path):
    from hookcode.tools import ToolContext

    rt = hookcode_env.runtime()
    ctx = ToolContext(rt, ToolCall("read", {}, "c", "s"))
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "f.txt").write_text("x")
    assert ctx.external_directory(hookcode_env.project / "inside.txt") is None
    assert ctx.external_directory(outside / "f.txt") == f"{outside}/*"
    assert ctx.external_directory(outside) == f"{outside}/*"
    assert ctx.external_directory(outside / "new" / "deep.txt") == f"{outside}/new/*"
    # a symlink inside the project that points outside is outside
    link = hookcode_env.project / "link"
    link.symlink_to(outside)
    assert ctx.external_directory(link / "f.txt") == f"{outside.resolve()}/*"
