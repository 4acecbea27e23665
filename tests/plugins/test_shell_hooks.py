"""shell_hooks (plugins/shell_hooks): Claude-Code-style hook scripts, run as real processes.

Every hook here is a script written by the test and run the way Claude Code runs it: the event
as JSON on stdin, exit 2 to block with stderr, JSON on stdout for decisions. A hook that is
missing, hangs or prints garbage is reported and never blocks."""

from __future__ import annotations

import asyncio
import json
import shlex
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.processes import recorded_pid, wait_exit
from hookcode import ToolContext, hookimpl, tool
from hookcode.errors import ConfigError, PermissionDenied, PermissionRejected, ToolBlocked
from hookcode.session import run_session
from hookcode.testing import ReplyWith, ScriptedModel, invoke_tool

PLUGINS = "shell_hooks,policy_rules,tool_bash,tool_write,tool_edit,tool_read"


@pytest.fixture(autouse=True)
def _plugins(hookcode_env: Any) -> None:
    hookcode_env.env["HOOKCODE_LOAD_PLUGINS"] = PLUGINS


@pytest.fixture
def hooks_dir(hookcode_env: Any) -> Path:
    directory = hookcode_env.root / "hooks"
    directory.mkdir()
    return directory


def script(directory: Path, name: str, body: str) -> str:
    """A Python hook script; returns the command line that runs it."""
    path = directory / name
    path.write_text(textwrap.dedent(body))
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(path))}"


def configure(hookcode_env: Any, *entries: tuple[str, dict[str, Any]]) -> None:
    """``[[hooks.EVENT]]`` tables, in order."""
    lines = []
    for event, fields in entries:
        lines.append(f"[[hooks.{event}]]")
        lines += [f"{key} = {json.dumps(value)}" for key, value in fields.items()]
    hookcode_env.write_config("\n".join(lines) + "\n")


def runtime_for(hookcode_env: Any, *, reply: str | None = "once") -> Any:
    if reply is not None:
        hookcode_env.register(ReplyWith(reply), "front_end")
    return hookcode_env.runtime()


def warnings(err: str, event: str) -> list[str]:
    return [line for line in err.splitlines() if f"shell hook {event}[" in line]


# a Claude Code PreToolUse guard, as people write them: no jq, plain python
DENY_RM_RF = """
    import json, sys

    data = json.load(sys.stdin)
    if data["tool_name"] == "Bash" and "rm -rf" in data["tool_input"].get("command", ""):
        print("Refusing rm -rf: use trash instead", file=sys.stderr)
        sys.exit(2)
    sys.exit(0)
"""

RECORD = """
    import json, os, sys

    data = json.load(sys.stdin)
    data["_env_project_dir"] = os.environ.get("CLAUDE_PROJECT_DIR")
    data["_cwd"] = os.getcwd()
    with open({log!r}, "a") as log:
        log.write(json.dumps(data) + "\\n")
"""


def recorder(directory: Path, name: str = "record.py") -> tuple[str, Path]:
    log = directory / f"{name}.jsonl"
    return script(directory, name, RECORD.replace("{log!r}", repr(str(log)))), log


def records(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


# ------------------------------------------------------------------------------- PreToolUse


def test_exit_2_blocks_rm_rf_with_stderr_as_the_reason(hookcode_env: Any, hooks_dir: Path) -> None:
    record, log = recorder(hooks_dir)
    configure(
        hookcode_env,
        ("PreToolUse", {"matcher": "Bash", "command": script(hooks_dir, "guard.py", DENY_RM_RF)}),
        ("PreToolUse", {"command": record}),
    )
    victim = hookcode_env.project / "victim"
    victim.mkdir()
    runtime = runtime_for(hookcode_env)

    outcome = invoke_tool(runtime, "bash", {"command": "rm -rf victim", "description": "clean"})
    assert isinstance(outcome.error, ToolBlocked)
    assert "Refusing rm -rf: use trash instead" in outcome.error_text
    assert victim.is_dir()

    outcome = invoke_tool(runtime, "bash", {"command": "echo fine", "description": "echo"})
    assert outcome.ok, outcome.error_text
    assert "fine" in outcome.result.output

    first = records(log)[0]
    assert first["hook_event_name"] == "PreToolUse"
    assert first["tool_name"] == "Bash"
    assert first["tool_input"]["command"] == "rm -rf victim"
    assert records(log)[1]["tool_use_id"] == outcome.call.call_id
    assert first["session_id"]
    assert first["transcript_path"].endswith(f"/transcripts/{first['session_id']}.jsonl")
    assert first["permission_mode"] == "default"
    assert first["cwd"] == str(hookcode_env.project.resolve())
    assert first["_cwd"] == str(hookcode_env.project.resolve())
    assert first["_env_project_dir"] == str(hookcode_env.project.resolve())


def test_permission_decision_deny(hookcode_env: Any, hooks_dir: Path) -> None:
    deny = script(
        hooks_dir,
        "deny.py",
        """
        import json, sys
        data = json.load(sys.stdin)
        print(json.dumps({"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "no writes to " + data["tool_input"]["file_path"],
        }}))
        """,
    )
    configure(hookcode_env, ("PreToolUse", {"matcher": "Write", "command": deny}))
    runtime = runtime_for(hookcode_env)
    target = hookcode_env.project / "new.txt"
    outcome = invoke_tool(runtime, "write", {"filePath": str(target), "content": "x"})
    assert isinstance(outcome.error, ToolBlocked)
    assert f"no writes to {target}" in outcome.error_text
    assert not target.exists()


def test_decision_block_blocks(
    hookcode_env: Any, hooks_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    block = script(
        hooks_dir,
        "block.py",
        "import json\n"
        'print(json.dumps({"decision": "block", "reason": "old style no",'
        ' "systemMessage": "the guard said no"}))\n',
    )
    configure(hookcode_env, ("PreToolUse", {"matcher": "Bash", "command": block}))
    runtime = runtime_for(hookcode_env)
    outcome = invoke_tool(runtime, "bash", {"command": "echo x", "description": "x"})
    assert isinstance(outcome.error, ToolBlocked)
    assert "old style no" in outcome.error_text
    assert "the guard said no" in capsys.readouterr().err  # systemMessage: for the user


def test_updated_input_rewrites_the_call(hookcode_env: Any, hooks_dir: Path) -> None:
    rewrite = script(
        hooks_dir,
        "rewrite.py",
        """
        import json, sys
        data = json.load(sys.stdin)
        if data["tool_name"] == "Bash":
            updated = {"command": "echo rewritten"}
        else:  # echo the whole input back, changing the snake_case spelling only
            updated = dict(data["tool_input"])
            updated["file_path"] = updated["file_path"].replace("asked", "redirected")
        print(json.dumps({"hookSpecificOutput": {
            "hookEventName": "PreToolUse", "updatedInput": updated}}))
        """,
    )
    configure(hookcode_env, ("PreToolUse", {"command": rewrite}))
    runtime = runtime_for(hookcode_env)

    outcome = invoke_tool(runtime, "bash", {"command": "echo original", "description": "x"})
    assert outcome.ok, outcome.error_text
    assert "rewritten" in outcome.result.output and "original" not in outcome.result.output
    assert outcome.call.args["command"] == "echo rewritten"

    asked = hookcode_env.project / "asked.txt"
    outcome = invoke_tool(runtime, "write", {"filePath": str(asked), "content": "hello"})
    assert outcome.ok, outcome.error_text
    assert not asked.exists()
    assert (hookcode_env.project / "redirected.txt").read_text() == "hello"
    assert outcome.call.args["filePath"].endswith("redirected.txt")


def test_pre_tool_use_additional_context_reaches_the_model(
    hookcode_env: Any, hooks_dir: Path
) -> None:
    context = script(
        hooks_dir,
        "context.py",
        'import json\nprint(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",'
        ' "permissionDecision": "allow", "additionalContext": "this repo uses bun, not npm"}}))\n',
    )
    configure(hookcode_env, ("PreToolUse", {"matcher": "Bash", "command": context}))
    outcome = invoke_tool(
        runtime_for(hookcode_env), "bash", {"command": "echo ran", "description": "x"}
    )
    assert outcome.ok, outcome.error_text
    assert outcome.result.output == "ran\n\nPreToolUse hook context: this repo uses bun, not npm"


def test_updated_input_is_validated_again(hookcode_env: Any, hooks_dir: Path) -> None:
    bad = script(
        hooks_dir,
        "bad.py",
        'import json\nprint(json.dumps({"hookSpecificOutput": {"updatedInput": {"timeout": "soon"}}}))\n',
    )
    configure(hookcode_env, ("PreToolUse", {"matcher": "Bash", "command": bad}))
    outcome = invoke_tool(
        runtime_for(hookcode_env), "bash", {"command": "echo x", "description": "x"}
    )
    assert not outcome.ok
    assert "timeout" in outcome.error_text


def test_matcher_write_edit_matches_our_write_and_edit(hookcode_env: Any, hooks_dir: Path) -> None:
    record, log = recorder(hooks_dir)
    configure(hookcode_env, ("PreToolUse", {"matcher": "Write|Edit", "command": record}))
    runtime = runtime_for(hookcode_env)
    target = hookcode_env.project / "f.txt"
    session = runtime.create_session(title="t").id
    assert invoke_tool(
        runtime, "write", {"filePath": str(target), "content": "a b"}, session_id=session
    ).ok
    assert invoke_tool(runtime, "read", {"filePath": str(target)}, session_id=session).ok
    outcome = invoke_tool(
        runtime,
        "edit",
        {"filePath": str(target), "oldString": "a", "newString": "c"},
        session_id=session,
    )
    assert outcome.ok, outcome.error_text
    assert target.read_text() == "c b"

    seen = records(log)
    assert [r["tool_name"] for r in seen] == ["Write", "Edit"]  # read did not match
    write_input, edit_input = seen[0]["tool_input"], seen[1]["tool_input"]
    assert write_input["file_path"] == write_input["filePath"] == str(target)
    assert edit_input["old_string"] == "a" and edit_input["new_string"] == "c"
    assert edit_input["replace_all"] is False and edit_input["oldString"] == "a"


def test_matchers_know_both_names_and_regexes(hookcode_env: Any, hooks_dir: Path) -> None:
    record, log = recorder(hooks_dir)
    configure(
        hookcode_env,
        ("PreToolUse", {"matcher": "bash", "command": record + " ours"}),
        ("PreToolUse", {"matcher": "Ba.*", "command": record + " regex"}),
        ("PreToolUse", {"matcher": "Read", "command": record + " other"}),
        ("PreToolUse", {"matcher": "*", "command": record + " star"}),
    )
    runtime = runtime_for(hookcode_env)
    assert invoke_tool(runtime, "bash", {"command": "true", "description": "x"}).ok
    assert len(records(log)) == 3


def test_permission_decision_ask_and_allow(hookcode_env: Any, hooks_dir: Path) -> None:
    guarded_calls: list[str] = []

    @tool(asks_permission=True)
    async def guarded(ctx: ToolContext, what: str) -> str:
        "Asks the `guarded` permission."
        await ctx.ask("guarded", [what])
        guarded_calls.append(what)
        return "done"

    class Pack:
        @hookimpl
        def register_tools(self, register: Any) -> None:
            register(guarded)

    decide = script(
        hooks_dir,
        "decide.py",
        """
        import json, sys
        data = json.load(sys.stdin)
        what = data["tool_input"]["what"]
        if what in ("allow", "ask"):
            print(json.dumps({"hookSpecificOutput": {"permissionDecision": what,
                                                     "permissionDecisionReason": "hook"}}))
        """,
    )
    hookcode_env.register(Pack(), "pack")
    hookcode_env.write_config(
        f'[permission]\nguarded = {{ "*" = "ask", "open" = "allow", "never" = "deny" }}\n'
        f'[[hooks.PreToolUse]]\nmatcher = "guarded"\ncommand = {json.dumps(decide)}\n'
    )
    front = ReplyWith("reject")
    hookcode_env.register(front, "front_end")
    runtime = hookcode_env.runtime()

    # allow: the ask is approved without a prompt
    assert invoke_tool(runtime, "guarded", {"what": "allow"}).ok
    assert front.requests == []
    # no decision: the front end is asked (and rejects)
    assert isinstance(invoke_tool(runtime, "guarded", {"what": "other"}).error, PermissionRejected)
    assert len(front.requests) == 1
    # ask: asked even though a rule allows it (and the hook is asked per call)
    hookcode_env.write_config(
        f'[permission]\nguarded = {{ "*" = "allow" }}\n'
        f'[[hooks.PreToolUse]]\nmatcher = "guarded"\ncommand = {json.dumps(decide)}\n'
    )
    runtime = hookcode_env.runtime()
    assert isinstance(invoke_tool(runtime, "guarded", {"what": "ask"}).error, PermissionRejected)
    assert len(front.requests) == 2
    assert invoke_tool(runtime, "guarded", {"what": "open"}).ok
    # allow never beats a configured deny
    hookcode_env.write_config(
        f'[permission]\nguarded = "deny"\n'
        f'[[hooks.PreToolUse]]\nmatcher = "guarded"\ncommand = {json.dumps(decide)}\n'
    )
    runtime = hookcode_env.runtime()
    assert "guarded" not in {e.name for e in runtime.registry.available("build")}
    hookcode_env.write_config(
        f'[permission]\nguarded = {{ "*" = "ask", "allow" = "deny" }}\n'
        f'[[hooks.PreToolUse]]\nmatcher = "guarded"\ncommand = {json.dumps(decide)}\n'
    )
    runtime = hookcode_env.runtime()
    assert isinstance(invoke_tool(runtime, "guarded", {"what": "allow"}).error, PermissionDenied)
    assert guarded_calls == ["allow", "open"]


# ------------------------------------------------------------------------------- broken hooks


def test_broken_hooks_are_reported_and_never_block(
    hookcode_env: Any, hooks_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    configure(
        hookcode_env,
        ("PreToolUse", {"command": "/nonexistent/hook.sh"}),
        ("PreToolUse", {"command": ["/nonexistent/hook-binary", "--flag"]}),
        (
            "PreToolUse",
            {
                "command": script(hooks_dir, "slow.py", "import time\ntime.sleep(30)\n"),
                "timeout": 0.5,
            },
        ),
        (
            "PreToolUse",
            {"command": script(hooks_dir, "garbage.py", "print('}{ not json at all')\n")},
        ),
        ("PreToolUse", {"command": script(hooks_dir, "array.py", "print('[1, 2]')\n")}),
        ("PreToolUse", {"command": script(hooks_dir, "crash.py", "raise SystemExit('oh no')\n")}),
        (
            "PreToolUse",
            {
                "command": script(
                    hooks_dir,
                    "odd.py",
                    'print(\'{"hookSpecificOutput": {"permissionDecision": "maybe"}}\')\n',
                )
            },
        ),
        ("PostToolUse", {"command": "sh -c 'sleep 30' && true", "timeout": 0.5}),
    )
    runtime = runtime_for(hookcode_env)
    started = time.monotonic()
    outcome = invoke_tool(runtime, "bash", {"command": "echo still works", "description": "x"})
    elapsed = time.monotonic() - started
    assert outcome.ok, outcome.error_text
    assert "still works" in outcome.result.output
    assert elapsed < 10  # timeouts killed the hooks (the hooks of an event run in parallel)

    err = capsys.readouterr().err
    pre = warnings(err, "PreToolUse")
    assert len(pre) == 7, err
    by_index = {int(line.split("PreToolUse[")[1].split("]")[0]): line for line in pre}
    assert "status 127" in by_index[0] and "/nonexistent/hook.sh" in by_index[0]
    assert "could not start" in by_index[1] and "hook-binary" in by_index[1]
    assert "timed out after 0.5 s" in by_index[2]
    assert "not JSON" in by_index[3]
    assert "not an object" in by_index[4]
    assert "status 1" in by_index[5] and "oh no" in by_index[5]
    assert "'maybe'" in by_index[6]
    assert all("not blocking" in line for line in pre)
    post = warnings(err, "PostToolUse")
    assert len(post) == 1 and "timed out" in post[0]


def test_a_hook_that_hangs_with_children_is_killed_whole(
    hookcode_env: Any, hooks_dir: Path
) -> None:
    marker = hookcode_env.root / "survived"
    pid = hookcode_env.root / "grandchild.pid"
    # the shell starts a grandchild that holds the pipes open: the whole group must die
    command = f"sh -c 'echo $$ > {pid}; sleep 3; touch {marker}' & sleep 30"
    configure(hookcode_env, ("PreToolUse", {"command": command, "timeout": 0.5}))
    runtime = runtime_for(hookcode_env)
    started = time.monotonic()
    assert invoke_tool(runtime, "bash", {"command": "true", "description": "x"}).ok
    assert time.monotonic() - started < 3
    grandchild = recorded_pid(pid)  # None: killed before it wrote its pid
    # it ends at once when it was killed, after touching the marker when it was not
    assert grandchild is None or wait_exit(grandchild, 30)
    assert not marker.exists()


def test_a_hooks_setsid_and_double_forked_children_die_with_its_timeout(
    hookcode_env: Any, hooks_dir: Path
) -> None:
    """Not only the hook's process group: a child that left it (``setsid``, a double fork,
    a cleared environment) dies at the timeout too."""
    marker = hookcode_env.root / "survived"
    pid = hookcode_env.root / "escaped"
    command = (
        f"setsid sh -c 'echo $$ > {pid}.setsid; sleep 2; touch {marker}.setsid' "
        ">/dev/null 2>&1 & "
        f"( (env -i sh -c 'echo $$ > {pid}.double; sleep 2; touch {marker}.double' &) & ) ; "
        "sleep 30"
    )
    configure(hookcode_env, ("PreToolUse", {"command": command, "timeout": 0.5}))
    runtime = runtime_for(hookcode_env)
    assert invoke_tool(runtime, "bash", {"command": "true", "description": "x"}).ok
    # each ends at once when it was killed, after touching its marker when it was not
    for escaped in (recorded_pid(f"{pid}.setsid"), recorded_pid(f"{pid}.double")):
        assert escaped is None or wait_exit(escaped, 30)
    assert (
        sorted(p.name for p in hookcode_env.root.iterdir() if p.name.startswith("survived")) == []
    )


# ------------------------------------------------------------------------------- PostToolUse


def test_post_tool_use_sees_the_response_and_adds_feedback(
    hookcode_env: Any, hooks_dir: Path
) -> None:
    record, log = recorder(hooks_dir)
    feedback = script(
        hooks_dir,
        "feedback.py",
        """
        import json, sys
        data = json.load(sys.stdin)
        if "TODO" in data["tool_response"]["output"]:
            print(json.dumps({"decision": "block", "reason": "the output has a TODO: fix it"}))
        """,
    )
    context = script(
        hooks_dir,
        "context.py",
        'import json\nprint(json.dumps({"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "lint: clean"}}))\n',
    )
    stderr_2 = script(
        hooks_dir, "two.py", "import sys\nprint('formatter failed', file=sys.stderr)\nsys.exit(2)\n"
    )
    configure(
        hookcode_env,
        ("PostToolUse", {"matcher": "Bash", "command": record}),
        ("PostToolUse", {"matcher": "Bash", "command": feedback}),
        ("PostToolUse", {"matcher": "Bash", "command": context}),
        ("PostToolUse", {"matcher": "Write", "command": stderr_2}),
    )
    runtime = runtime_for(hookcode_env)
    outcome = invoke_tool(runtime, "bash", {"command": "echo TODO later", "description": "x"})
    assert outcome.ok, outcome.error_text
    output = outcome.result.output
    assert output.startswith("TODO later")
    assert "the output has a TODO: fix it" in output
    assert "lint: clean" in output
    assert output.index("TODO later") < output.index("fix it")

    seen = records(log)[0]
    assert seen["hook_event_name"] == "PostToolUse"
    assert "TODO later" in seen["tool_response"]["output"]
    assert seen["tool_input"]["command"] == "echo TODO later"

    target = hookcode_env.project / "w.txt"
    outcome = invoke_tool(runtime, "write", {"filePath": str(target), "content": "x"})
    assert outcome.ok and target.exists()  # it already ran: the model reads the complaint
    assert "formatter failed" in outcome.result.output


# ------------------------------------------------------------------------------- the loop


class ModelPack:
    def __init__(self, model: ScriptedModel):
        self.model = model

    @hookimpl
    def provider(self) -> list[Any]:
        return [self.model]


def run_loop(hookcode_env: Any, turns: list[Any], text: str = "please do it") -> tuple[Any, Any]:
    model = ScriptedModel(turns, id="script")
    hookcode_env.register(ModelPack(model), "model_pack")
    runtime = runtime_for(hookcode_env)
    result = asyncio.run(run_session(runtime, text, model="script/test"))
    return model, result


def test_user_prompt_submit_blocks_the_message(hookcode_env: Any, hooks_dir: Path) -> None:
    guard = script(
        hooks_dir,
        "prompt_guard.py",
        """
        import json, sys
        data = json.load(sys.stdin)
        if "password" in data["prompt"]:
            print("prompts must not contain secrets", file=sys.stderr)
            sys.exit(2)
        """,
    )
    configure(hookcode_env, ("UserPromptSubmit", {"command": guard}))
    model, result = run_loop(hookcode_env, ["never sent"], text="my password is hunter2")
    assert model.requests == []
    assert result.error is not None and "prompts must not contain secrets" in result.error


def test_user_prompt_submit_decision_block_and_context(hookcode_env: Any, hooks_dir: Path) -> None:
    record, log = recorder(hooks_dir)
    decide = script(
        hooks_dir,
        "decide.py",
        """
        import json, sys
        data = json.load(sys.stdin)
        if data["prompt"].startswith("deploy"):
            print(json.dumps({"decision": "block", "reason": "no deploys on Fridays"}))
        else:
            print("Current branch: main")  # plain stdout is context, as in Claude Code
        """,
    )
    configure(
        hookcode_env,
        ("UserPromptSubmit", {"command": record}),
        ("UserPromptSubmit", {"command": decide}),
    )
    model, result = run_loop(hookcode_env, ["ok"], text="fix the bug")
    assert result.error is None
    parts = model.requests[0].messages[0].content
    assert parts[0]["text"] == "fix the bug"
    assert {"type": "text", "text": "Current branch: main"} in parts
    seen = records(log)[0]
    assert seen["hook_event_name"] == "UserPromptSubmit"
    assert seen["prompt"] == "fix the bug"
    assert seen["session_id"] == result.session_id

    model, result = run_loop(hookcode_env, ["never"], text="deploy now")
    assert model.requests == []
    assert "no deploys on Fridays" in (result.error or "")


KEEP_GOING_ONCE = """
import json, sys
data = json.load(sys.stdin)
if not data["stop_hook_active"]:
    print(json.dumps({"decision": "block", "reason": "tests still fail: run them again"}))
"""


def test_a_blocking_stop_hook_keeps_the_agent_going(hookcode_env: Any, hooks_dir: Path) -> None:
    """A Stop hook that blocks (Claude Code's ``decision: "block"``) sends its reason to the
    model and the loop goes on; the next Stop says ``stop_hook_active`` and the script, like
    Claude Code's, lets the agent stop then."""
    record, log = recorder(hooks_dir)
    keep_going = script(hooks_dir, "keep_going.py", KEEP_GOING_ONCE)
    configure(hookcode_env, ("Stop", {"command": record}), ("Stop", {"command": keep_going}))
    turns = [
        {"tool_calls": [("bash", {"command": "echo step", "description": "x"})]},
        "all done",
        "ran them again: they pass",
    ]
    model, result = run_loop(hookcode_env, turns)
    assert result.error is None and result.text == "ran them again: they pass"
    assert len(model.requests) == 3
    last_user = [m for m in model.requests[2].messages if m.role == "user"][-1]
    said = " ".join(b.get("text", "") for b in last_user.content)
    assert "Stop hook feedback:\ntests still fail: run them again" in said
    seen = records(log)
    assert [r["hook_event_name"] for r in seen] == ["Stop", "Stop"]  # at each end, not each step
    assert [r["stop_hook_active"] for r in seen] == [False, True]
    assert {r["session_id"] for r in seen} == {result.session_id}


def test_stop_hooks_exit_2_continue_false_and_the_step_limit(
    hookcode_env: Any, hooks_dir: Path
) -> None:
    always = script(
        hooks_dir, "always.py", 'import sys\nprint("not yet", file=sys.stderr)\nsys.exit(2)\n'
    )
    # exit 2 blocks with stderr as the reason, every time: the agent goes on to its step limit
    configure(hookcode_env, ("Stop", {"command": always}))
    config = hookcode_env.project / "hookcode.toml"
    hookcode_env.write_config(config.read_text() + "\n[agent.build]\nsteps = 3\n")
    model, result = run_loop(hookcode_env, ["one", "two", "three", "four", "five"])
    assert result.error is None and result.steps == 4  # 3 steps with tools, then a last one
    assert result.text == "four"
    feedback = [
        b["text"]
        for request in model.requests
        for m in request.messages
        if m.role == "user"
        for b in m.content
        if "Stop hook feedback" in b.get("text", "")
    ]
    assert feedback and feedback[-1] == "Stop hook feedback:\nnot yet"

    # continue: false lets the run end, whatever another Stop hook said
    halt = script(
        hooks_dir,
        "halt.py",
        'import json\nprint(json.dumps({"continue": False, "stopReason": "enough"}))\n',
    )
    configure(hookcode_env, ("Stop", {"command": always}), ("Stop", {"command": halt}))
    model, result = run_loop(hookcode_env, ["only", "never"])
    assert result.error is None and result.text == "only" and len(model.requests) == 1


SNAPSHOT = """
import json, sys
data = json.load(sys.stdin)
with open(data["transcript_path"]) as transcript:
    lines = [json.loads(line) for line in transcript]
with open({log!r}, "a") as log:
    log.write(json.dumps({{"event": data["hook_event_name"], "lines": lines}}) + "\\n")
"""


def test_hooks_read_the_session_as_a_claude_code_transcript(
    hookcode_env: Any, hooks_dir: Path
) -> None:
    """``transcript_path`` is the session in Claude Code's JSONL shape, up to date when each
    hook runs: what a script that reads Claude Code transcripts looks for is there."""
    log = hooks_dir / "snapshots.jsonl"
    snapshot = script(hooks_dir, "snapshot.py", SNAPSHOT.format(log=str(log)))
    configure(
        hookcode_env,
        ("PreToolUse", {"matcher": "Bash", "command": snapshot}),
        ("Stop", {"command": snapshot}),
    )
    turns = [
        {"tool_calls": [("bash", {"command": "echo step", "description": "say step"})]},
        "all done",
    ]
    _, result = run_loop(hookcode_env, turns, text="run the step")
    assert result.error is None
    before, stop = records(log)
    assert (before["event"], stop["event"]) == ("PreToolUse", "Stop")

    # before the call: the prompt, then the call itself, no result yet
    first, call = before["lines"]
    assert first["type"] == "user" and first["message"]["content"] == [
        {"type": "text", "text": "run the step"}
    ]
    assert call["type"] == "assistant" and call["parentUuid"] == first["uuid"]
    [use] = call["message"]["content"]
    assert use["type"] == "tool_use" and use["name"] == "Bash"
    assert use["input"]["command"] == "echo step"

    # at the end: the call's result in a user line, then the last answer
    lines = stop["lines"]
    assert [line["type"] for line in lines] == ["user", "assistant", "user", "assistant"]
    [tool_result] = lines[2]["message"]["content"]
    assert tool_result["type"] == "tool_result" and tool_result["tool_use_id"] == use["id"]
    assert "step" in tool_result["content"]
    assert lines[3]["message"]["content"] == [{"type": "text", "text": "all done"}]
    assert {line["sessionId"] for line in lines} == {result.session_id}
    assert all(line["timestamp"].endswith("Z") for line in lines)
    written = hookcode_env.data_dir / "transcripts" / f"{result.session_id}.jsonl"
    assert written.stat().st_mode & 0o777 == 0o600  # private, like the session it comes from


def test_the_transcript_carries_no_known_secret(hookcode_env: Any, hooks_dir: Path) -> None:
    """A key pasted in the prompt, repeated by the model and printed by a call: the transcript
    a hook reads has the redaction marker, never the key; it is private (0600 in 0700)."""
    key = "sk-ant-api03-Transcript-Key-77Qz"
    hookcode_env.env["ANTHROPIC_API_KEY"] = key
    log = hooks_dir / "snapshots.jsonl"
    snapshot = script(hooks_dir, "snapshot.py", SNAPSHOT.format(log=str(log)))
    configure(
        hookcode_env,
        ("PreToolUse", {"matcher": "Bash", "command": snapshot}),
        ("Stop", {"command": snapshot}),
    )
    call = {"command": "printenv ANTHROPIC_API_KEY", "description": f"print {key}"}
    turns = [{"text": f"using {key}", "tool_calls": [("bash", call)]}, f"done {key}"]
    _, result = run_loop(hookcode_env, turns, text=f"my key is {key}")
    assert result.error is None
    snapshots = records(log)
    assert [s["event"] for s in snapshots] == ["PreToolUse", "Stop"]
    written = hookcode_env.data_dir / "transcripts" / f"{result.session_id}.jsonl"
    text = written.read_text()
    assert key not in text and key not in json.dumps(snapshots)
    assert text.count("[redacted: ANTHROPIC_API_KEY]") >= 4
    assert written.stat().st_mode & 0o777 == 0o600
    assert written.parent.stat().st_mode & 0o777 == 0o700


# ------------------------------------------------------------------------------- config


def test_config_errors_name_the_key(hookcode_env: Any) -> None:
    hookcode_env.write_config('[[hooks.PreToolUse]]\nmatcher = "Bash("\ncommand = "true"\n')
    with pytest.raises(ConfigError) as err:
        hookcode_env.runtime()
    assert "hooks.PreToolUse" in str(err.value) and "regular expression" in str(err.value)
    hookcode_env.write_config('[[hooks.PreToolUse]]\ncommand = "true"\ntimeuot = 3\n')
    with pytest.raises(ConfigError) as err:
        hookcode_env.runtime()
    assert "timeuot" in str(err.value)
    hookcode_env.write_config('[[hooks.PreToolCall]]\ncommand = "true"\n')
    with pytest.raises(ConfigError) as err:
        hookcode_env.runtime()
    assert "PreToolCall" in str(err.value)


def test_cli_tools_call_is_blocked_by_a_hook(hookcode_env: Any, hooks_dir: Path) -> None:
    configure(
        hookcode_env,
        ("PreToolUse", {"matcher": "Bash", "command": script(hooks_dir, "guard.py", DENY_RM_RF)}),
    )
    (hookcode_env.project / "victim").mkdir()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "hookcode.cli",
            "tools",
            "call",
            "bash",
            "--yes",
            "--json",
            json.dumps({"command": "rm -rf victim", "description": "clean"}),
        ],
        cwd=hookcode_env.project,
        env=hookcode_env.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    assert "Refusing rm -rf" in json.loads(proc.stdout)["error"]
    assert (hookcode_env.project / "victim").is_dir()


# ------------------------------------------------------------------ Claude Code's tool inputs


def test_tool_input_has_claude_codes_shapes(hookcode_env: Any, hooks_dir: Path) -> None:
    """``file_path`` is absolute (the model gave a relative one), a bash call without
    ``timeout`` or ``workdir`` has no such keys (Claude Code never sends ``null``), Grep's
    ``include`` is also its ``glob``, and every tool's name is Claude Code's."""
    hookcode_env.env["HOOKCODE_LOAD_PLUGINS"] = PLUGINS + ",tool_grep,tool_glob,tool_list"
    record, log = recorder(hooks_dir)
    configure(hookcode_env, ("PreToolUse", {"command": record}))
    runtime = runtime_for(hookcode_env)
    project = hookcode_env.project.resolve()
    (project / "src").mkdir()
    session = runtime.create_session(title="t").id
    calls = [
        ("write", {"filePath": "src/a.txt", "content": "one two"}),
        ("read", {"filePath": "src/a.txt"}),
        ("edit", {"filePath": "./src/../src/a.txt", "oldString": "one", "newString": "1"}),
        ("bash", {"command": "true", "description": "nothing"}),
        ("bash", {"command": "true", "description": "in src", "workdir": "src", "timeout": 5000}),
        ("grep", {"pattern": "two", "include": "*.txt", "path": "src"}),
        ("glob", {"pattern": "*.txt"}),
        ("list", {"path": "src"}),
    ]
    for name, args in calls:
        outcome = invoke_tool(runtime, name, args, session_id=session)
        assert outcome.ok, (name, outcome.error_text)
    seen = records(log)
    assert [r["tool_name"] for r in seen] == [
        "Write", "Read", "Edit", "Bash", "Bash", "Grep", "Glob", "LS",
    ]  # fmt: skip
    write, read, edit, bash, bash_in, grep, glob, ls = (r["tool_input"] for r in seen)
    absolute = str(project / "src" / "a.txt")
    assert write["file_path"] == read["file_path"] == edit["file_path"] == absolute
    assert write["content"] == "one two"
    assert edit["old_string"] == "one" and edit["new_string"] == "1"
    assert edit["replace_all"] is False
    assert "offset" not in read and "limit" not in read  # not given: not sent as null
    assert bash == {"command": "true", "description": "nothing"}
    assert bash_in["workdir"] == str(project / "src") and bash_in["timeout"] == 5000
    assert grep["glob"] == grep["include"] == "*.txt" and grep["path"] == str(project / "src")
    assert glob == {"pattern": "*.txt"}
    assert ls["path"] == str(project / "src")
    assert not any(value is None for r in seen for value in r["tool_input"].values())


def test_updated_input_in_claude_codes_names_maps_back(hookcode_env: Any, hooks_dir: Path) -> None:
    """A hook that answers with Claude Code's argument names (Grep's ``glob``) rewrites ours."""
    hookcode_env.env["HOOKCODE_LOAD_PLUGINS"] = PLUGINS + ",tool_grep"
    narrow = script(
        hooks_dir,
        "narrow.py",
        'import json\nprint(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",'
        ' "updatedInput": {"glob": "*.md"}}}))\n',
    )
    configure(hookcode_env, ("PreToolUse", {"matcher": "Grep", "command": narrow}))
    (hookcode_env.project / "a.txt").write_text("needle\n")
    (hookcode_env.project / "b.md").write_text("needle\n")
    outcome = invoke_tool(runtime_for(hookcode_env), "grep", {"pattern": "needle", "include": "*"})
    assert outcome.ok, outcome.error_text
    assert outcome.call.args["include"] == "*.md" and "glob" not in outcome.call.args
    assert "b.md" in outcome.result.output and "a.txt" not in outcome.result.output


# ------------------------------------------------------------------ MCP tools: mcp__server__tool


def test_mcp_tools_are_named_as_claude_code_names_them(
    hookcode_env: Any, hooks_dir: Path, mcp_filesystem_server: list[str]
) -> None:
    """The real filesystem server as ``fs``: a ported ``mcp__fs__.*`` matcher fires, the hook
    reads ``tool_name: mcp__fs__read_text_file`` and the server's own arguments; exit 2 blocks
    the call (the server never sees it); the transcript names the call the same way."""
    hookcode_env.env["HOOKCODE_LOAD_PLUGINS"] = PLUGINS + ",mcp"
    project = hookcode_env.project
    (project / "notes.txt").write_text("hello from fs\n")
    (project / "secret.txt").write_text("classified\n")
    record, log = recorder(hooks_dir)
    guard = script(
        hooks_dir,
        "guard_fs.py",
        """
        import json, sys
        data = json.load(sys.stdin)
        with open(data["transcript_path"]) as transcript:
            names = [b["name"] for line in map(json.loads, transcript)
                     for b in line["message"]["content"] if b.get("type") == "tool_use"]
        assert names[-1] == data["tool_name"], names
        if "secret" in data["tool_input"].get("path", ""):
            print("no reading secrets through " + data["tool_name"], file=sys.stderr)
            sys.exit(2)
        """,
    )
    hookcode_env.write_config(
        f"[mcp.fs]\ncommand = {json.dumps([*mcp_filesystem_server, str(project)])}\n"
        '[permission]\n"fs_*" = "allow"\n'
        f'[[hooks.PreToolUse]]\nmatcher = "mcp__fs__.*"\ncommand = {json.dumps(record)}\n'
        f'[[hooks.PreToolUse]]\nmatcher = "mcp__fs__read_text_file"\n'
        f"command = {json.dumps(guard)}\n"
        f'[[hooks.PostToolUse]]\nmatcher = "mcp__.*"\ncommand = {json.dumps(record)}\n'
    )
    turns = [
        {"tool_calls": [("fs_read_text_file", {"path": str(project / "notes.txt")})]},
        {"tool_calls": [("fs_read_text_file", {"path": str(project / "secret.txt")})]},
        "done",
    ]
    model, result = run_loop(hookcode_env, turns, text="read them")
    assert result.error is None
    seen = records(log)
    assert [(r["hook_event_name"], r["tool_name"]) for r in seen] == [
        ("PreToolUse", "mcp__fs__read_text_file"),
        ("PostToolUse", "mcp__fs__read_text_file"),
        ("PreToolUse", "mcp__fs__read_text_file"),
    ]
    assert seen[0]["tool_input"] == {"path": str(project / "notes.txt")}
    assert "hello from fs" in json.dumps(seen[1]["tool_response"])
    said = json.dumps([m.content for m in model.requests[2].messages])
    assert "no reading secrets through mcp__fs__read_text_file" in said
    assert "classified" not in said


# ------------------------------------------------------------------ Claude Code's settings files

GUARD_SH = """#!/bin/sh
# a Claude Code PreToolUse guard as people write them: sh and grep, reading stdin
input=$(cat)
if printf '%s' "$input" | grep -q 'rm -rf'; then
    echo "blocked by $(basename "$0"): no rm -rf" >&2
    exit 2
fi
if printf '%s' "$input" | grep -q 'secret'; then
    echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "secrets stay put"}}'
fi
exit 0
"""

LOG_SH = """#!/bin/sh
# appends the event it got, one JSON line per call
cat >> "{log}"
echo >> "{log}"
"""


def shell_script(directory: Path, name: str, body: str) -> Path:
    path = directory / name
    path.write_text(body)
    path.chmod(0o755)
    return path


def claude_settings(path: Path, hooks: dict[str, Any], **extra: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"hooks": hooks, **extra}, indent=2))


def command_hook(command: str, **extra: Any) -> dict[str, Any]:
    return {"type": "command", "command": command, **extra}


def test_claude_code_settings_files_guard_bash_and_an_mcp_tool(
    hookcode_env: Any,
    hooks_dir: Path,
    mcp_filesystem_server: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``[shell_hooks] claude_settings = true``: the hooks of ``~/.claude/settings.json`` and
    the project's ``.claude/settings.json`` / ``settings.local.json``, in Claude Code's nested
    format, run as written: shell scripts guarding Bash and an MCP tool, PostToolUse hooks
    logging what ran, ``$CLAUDE_PROJECT_DIR`` in the commands. What hookcode cannot run is
    reported naming the file."""
    hookcode_env.env["HOOKCODE_LOAD_PLUGINS"] = PLUGINS + ",mcp"
    project = hookcode_env.project
    (project / "notes.txt").write_text("hello\n")
    (project / "secret.txt").write_text("classified\n")
    (project / "victim").mkdir()
    scripts = project / ".claude" / "hooks"
    scripts.mkdir(parents=True)
    shell_script(scripts, "guard.sh", GUARD_SH)
    user_log = hooks_dir / "user.jsonl"
    local_log = hooks_dir / "local.jsonl"
    shell_script(hooks_dir, "log_user.sh", LOG_SH.replace("{log}", str(user_log)))
    shell_script(hooks_dir, "log_local.sh", LOG_SH.replace("{log}", str(local_log)))
    guard = '"$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.sh'
    claude_settings(
        hookcode_env.home / ".claude" / "settings.json",
        {
            "PostToolUse": [
                {
                    "matcher": "Bash|mcp__fs__.*",
                    "hooks": [command_hook(str(hooks_dir / "log_user.sh"))],
                }
            ],
            "Notification": [{"hooks": [command_hook("notify-send hi")]}],
        },
    )
    claude_settings(
        project / ".claude" / "settings.json",
        {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [command_hook(guard, timeout=10)]},
                {"matcher": "mcp__fs__read_text_file", "hooks": [command_hook(guard)]},
                {"matcher": "Edit", "hooks": [{"type": "prompt", "prompt": "is it fine?"}]},
            ]
        },
    )
    claude_settings(
        project / ".claude" / "settings.local.json",
        {"PreToolUse": [{"hooks": [command_hook(str(hooks_dir / "log_local.sh"))]}]},
    )
    hookcode_env.write_config(
        f"[mcp.fs]\ncommand = {json.dumps([*mcp_filesystem_server, str(project)])}\n"
        '[permission]\n"fs_*" = "allow"\n'
        "[shell_hooks]\nclaude_settings = true\n",
        where="global",
    )
    runtime = runtime_for(hookcode_env)

    outcome = invoke_tool(runtime, "bash", {"command": "rm -rf victim", "description": "x"})
    assert isinstance(outcome.error, ToolBlocked)
    assert "blocked by guard.sh: no rm -rf" in outcome.error_text
    assert (project / "victim").is_dir()
    outcome = invoke_tool(runtime, "bash", {"command": "echo fine", "description": "x"})
    assert outcome.ok and "fine" in outcome.result.output

    outcome = invoke_tool(runtime, "fs_read_text_file", {"path": str(project / "secret.txt")})
    assert isinstance(outcome.error, ToolBlocked)
    assert "secrets stay put" in outcome.error_text
    outcome = invoke_tool(runtime, "fs_read_text_file", {"path": str(project / "notes.txt")})
    assert outcome.ok and "hello" in outcome.result.output

    after = [json.loads(line) for line in user_log.read_text().splitlines() if line.strip()]
    assert [(r["hook_event_name"], r["tool_name"]) for r in after] == [
        ("PostToolUse", "Bash"),
        ("PostToolUse", "mcp__fs__read_text_file"),
    ]
    before = [json.loads(line) for line in local_log.read_text().splitlines() if line.strip()]
    assert [r["tool_name"] for r in before] == ["Bash"] * 2 + ["mcp__fs__read_text_file"] * 2

    err = capsys.readouterr().err
    assert "~/.claude/settings.json: hookcode does not run Notification hooks" in err
    assert ".claude/settings.json: hooks.PreToolUse[2].hooks[0]: hooks of type 'prompt'" in err


def test_claude_code_settings_need_the_option_and_trust_for_the_project(
    hookcode_env: Any, hooks_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record, log = recorder(hooks_dir)
    user_record, user_log = recorder(hooks_dir, "user.py")
    project = hookcode_env.project
    claude_settings(
        project / ".claude" / "settings.json",
        {"PreToolUse": [{"matcher": "Bash", "hooks": [command_hook(record)]}]},
    )
    claude_settings(
        hookcode_env.home / ".claude" / "settings.json",
        {"PreToolUse": [{"matcher": "", "hooks": [command_hook(user_record)]}]},
    )
    call = {"command": "true", "description": "x"}

    # not opted in: Claude Code's files are not read
    assert invoke_tool(runtime_for(hookcode_env), "bash", call).ok
    assert records(log) == [] and records(user_log) == []

    # opted in, untrusted folder: the user's hooks run, the project's do not (said once)
    hookcode_env.write_config("[shell_hooks]\nclaude_settings = true\n", where="global")
    hookcode_env.trust(False)
    capsys.readouterr()
    runtime = runtime_for(hookcode_env)
    assert invoke_tool(runtime, "bash", call).ok
    assert invoke_tool(runtime, "bash", call).ok
    assert records(log) == [] and len(records(user_log)) == 2
    err = capsys.readouterr().err
    assert err.count("the hooks of .claude/settings.json do not run") == 1, err

    # a project's own config cannot turn the option on in an untrusted folder
    hookcode_env.write_config("", where="global")
    hookcode_env.write_config("[shell_hooks]\nclaude_settings = true\n")
    assert invoke_tool(runtime_for(hookcode_env), "bash", call).ok
    assert len(records(user_log)) == 2

    # trusted: both run; disableAllHooks turns Claude Code's files off
    hookcode_env.trust(True)
    assert invoke_tool(runtime_for(hookcode_env), "bash", call).ok
    assert len(records(log)) == 1 and len(records(user_log)) == 3
    claude_settings(project / ".claude" / "settings.local.json", {}, disableAllHooks=True)
    assert invoke_tool(runtime_for(hookcode_env), "bash", call).ok
    assert len(records(log)) == 1 and len(records(user_log)) == 3
    assert "disableAllHooks" in capsys.readouterr().err


def test_claude_code_settings_that_are_broken_are_reported(
    hookcode_env: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = hookcode_env.project / ".claude" / "settings.json"
    hookcode_env.write_config("[shell_hooks]\nclaude_settings = true\n")
    settings.parent.mkdir()
    settings.write_text("{not json")
    assert invoke_tool(
        runtime_for(hookcode_env), "bash", {"command": "true", "description": "x"}
    ).ok
    assert ".claude/settings.json: not valid JSON" in capsys.readouterr().err
    claude_settings(
        settings,
        {
            "PreToolUse": [
                {"matcher": "Bash(", "hooks": [command_hook("true")]},
                {"matcher": "Bash", "hooks": [command_hook("true", timeout="soon")]},
                {"matcher": "Bash"},
            ]
        },
    )
    assert invoke_tool(
        runtime_for(hookcode_env), "bash", {"command": "true", "description": "x"}
    ).ok
    err = capsys.readouterr().err
    assert "hooks.PreToolUse[0]: invalid regular expression 'Bash('" in err
    assert "hooks.PreToolUse[1].hooks[0]: timeout 'soon' is not a positive number" in err
    assert "hooks.PreToolUse[2]: expected {matcher, hooks: [...]}" in err


def test_each_command_runs_once_per_event(
    hookcode_env: Any, hooks_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same hook in hookcode's config and in Claude Code's settings, and a project that
    is the home directory (its `.claude/settings.json` is the user's): one run each, as
    Claude Code deduplicates identical commands."""
    record, log = recorder(hooks_dir)
    claude_settings(
        hookcode_env.home / ".claude" / "settings.json",
        {
            "PreToolUse": [{"matcher": "Bash", "hooks": [command_hook(record)]}],
            "Stop": [{"hooks": [command_hook(record)]}],
            "SessionStart": [{"hooks": [command_hook(record)]}],
        },
    )
    configure(hookcode_env, ("PreToolUse", {"matcher": "Bash", "command": record}))
    hookcode_env.write_config("[shell_hooks]\nclaude_settings = true\n", where="global")
    assert invoke_tool(
        runtime_for(hookcode_env), "bash", {"command": "true", "description": "x"}
    ).ok
    assert len(records(log)) == 1

    hookcode_env.trust(True, hookcode_env.home)
    capsys.readouterr()
    runtime = hookcode_env.runtime(cwd=hookcode_env.home)
    assert runtime.worktree == hookcode_env.home.resolve()
    assert invoke_tool(runtime, "bash", {"command": "true", "description": "x"}).ok
    assert len(records(log)) == 2
    assert capsys.readouterr().err.count("does not run SessionStart hooks") == 1  # read once
