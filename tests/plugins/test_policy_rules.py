"""policy_rules (plugins/policy_rules): the built-in agents and their default rulesets
(reference/permissions.md §6), custom agents from config, ``disable = true``, and the vote."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hookcode import ToolContext, hookimpl, tool
from hookcode.errors import HookcodeError, PermissionDenied, PermissionRejected
from hookcode.testing import invoke_tool
from hookcode_policy_rules import BUILTIN, base_rules, builtin_agents


@pytest.fixture(autouse=True)
def _only_policy_rules(hookcode_env: Any) -> None:
    hookcode_env.env["HOOKCODE_LOAD_PLUGINS"] = "policy_rules"


@pytest.fixture
def runtime(hookcode_env: Any) -> Any:
    return hookcode_env.runtime()


def decide(runtime: Any, agent: str, permission: str, *patterns: str) -> str:
    return runtime.ruleset(agent).evaluate(permission, list(patterns or ("*",))).action


# ---------------------------------------------------------------------------------------------
# the agents
# ---------------------------------------------------------------------------------------------


def test_builtin_agents_and_modes(runtime: Any) -> None:
    agents = runtime.agents()
    assert set(agents) == set(BUILTIN)
    modes = {name: spec.mode for name, spec in agents.items()}
    assert modes == {
        "build": "primary",
        "plan": "primary",
        "general": "subagent",
        "explore": "subagent",
        "compaction": "hidden",
        "title": "hidden",
        "summary": "hidden",
    }
    assert all(spec.plugin == "policy_rules" for spec in agents.values())
    assert runtime.default_agent == "build"


def test_base_ruleset_in_order(hookcode_env: Any) -> None:
    got = [(r.permission, r.pattern, r.action) for r in base_rules(hookcode_env.data_dir)]
    assert got == [
        ("*", "*", "allow"),
        ("bash", "*", "ask"),
        ("doom_loop", "*", "ask"),
        ("external_directory", "*", "ask"),
        ("question", "*", "deny"),
        ("plan_enter", "*", "deny"),
        ("plan_exit", "*", "deny"),
        ("read", "*", "allow"),
        ("read", "*.env", "ask"),
        ("read", "*.env.*", "ask"),
        ("read", "*.env.example", "allow"),
    ]


def test_every_non_hidden_agent_starts_with_the_base(hookcode_env: Any) -> None:
    base = base_rules(hookcode_env.data_dir)
    for spec in builtin_agents(hookcode_env.data_dir):
        if spec.mode == "hidden":
            assert [(r.permission, r.pattern, r.action) for r in spec.permission] == [
                ("*", "*", "deny")
            ]
        else:
            assert spec.permission[: len(base)] == base, spec.name
            assert all(r.source == f"agent:{spec.name}" for r in spec.permission[len(base) :])


# ---------------------------------------------------------------------------------------------
# the base, through every non-hidden agent
# ---------------------------------------------------------------------------------------------

READ_CASES = [
    ("/p/src/main.py", "allow"),
    ("/p/.env", "ask"),
    ("/p/.env.local", "ask"),
    ("/p/.env.production", "ask"),
    ("/p/.env.example", "allow"),
    ("/p/.envrc", "allow"),
    ("/p/config/.env", "ask"),
]


@pytest.mark.parametrize("agent", ["build", "plan", "general"])
@pytest.mark.parametrize(("path", "expected"), READ_CASES)
def test_read_env_files(runtime: Any, agent: str, path: str, expected: str) -> None:
    assert decide(runtime, agent, "read", path) == expected


@pytest.mark.parametrize("agent", ["build", "plan", "general", "explore"])
def test_external_directory(runtime: Any, hookcode_env: Any, agent: str) -> None:
    spill = (hookcode_env.data_dir / "tool-output").as_posix()
    assert decide(runtime, agent, "external_directory", f"{spill}/*") == "allow"
    assert decide(runtime, agent, "external_directory", f"{spill}/sub/*") == "allow"
    assert decide(runtime, agent, "external_directory", "/elsewhere/*") == "ask"
    assert decide(runtime, agent, "external_directory", f"{hookcode_env.data_dir}/*") == "ask"


@pytest.mark.parametrize("agent", ["build", "plan", "general"])
def test_doom_loop_asks(runtime: Any, agent: str) -> None:
    assert decide(runtime, agent, "doom_loop", "bash") == "ask"


# ---------------------------------------------------------------------------------------------
# per agent
# ---------------------------------------------------------------------------------------------


def test_build(runtime: Any) -> None:
    assert decide(runtime, "build", "question") == "allow"
    assert decide(runtime, "build", "plan_enter") == "allow"
    assert decide(runtime, "build", "plan_exit") == "deny"
    assert decide(runtime, "build", "edit", "src/a.py") == "allow"
    # shell commands ask (policy_shell, not loaded here, allows the read-only ones)
    assert decide(runtime, "build", "bash", "rm -rf build") == "ask"
    assert decide(runtime, "build", "todowrite") == "allow"
    assert decide(runtime, "build", "some_custom_tool") == "allow"


def test_plan(runtime: Any, hookcode_env: Any) -> None:
    plans = (hookcode_env.data_dir / "plans").as_posix()
    assert decide(runtime, "plan", "question") == "allow"
    assert decide(runtime, "plan", "plan_exit") == "allow"
    assert decide(runtime, "plan", "plan_enter") == "deny"
    assert decide(runtime, "plan", "edit", "src/a.py") == "deny"
    assert decide(runtime, "plan", "edit", ".hookcode/plans/plan.md") == "allow"
    assert decide(runtime, "plan", "edit", ".hookcode/plans/plan.txt") == "deny"
    assert decide(runtime, "plan", "edit", f"{plans}/p.md") == "allow"
    assert decide(runtime, "plan", "edit", ".hookcode/plans/p.md", "src/a.py") == "deny"
    assert decide(runtime, "plan", "external_directory", f"{plans}/*") == "allow"
    assert decide(runtime, "build", "external_directory", f"{plans}/*") == "ask"
    assert decide(runtime, "plan", "read", "/p/x.py") == "allow"
    # plan files keep the edit tools visible
    assert not runtime.ruleset("plan").disabled("edit")


def test_general(runtime: Any) -> None:
    assert decide(runtime, "general", "todoread") == "deny"
    assert decide(runtime, "general", "todowrite") == "deny"
    assert runtime.ruleset("general").disabled("todowrite")
    assert decide(runtime, "general", "question") == "deny"
    assert decide(runtime, "general", "edit", "a.py") == "allow"


EXPLORE_ALLOWED = ["grep", "glob", "list", "webfetch", "websearch", "codesearch", "read"]


def test_explore_asks_for_shell_commands(runtime: Any) -> None:
    # as every built-in agent: read-only commands are policy_shell's to allow
    assert decide(runtime, "explore", "bash", "make") == "ask"
    assert not runtime.ruleset("explore").disabled("bash")


@pytest.mark.parametrize("permission", EXPLORE_ALLOWED)
def test_explore_allows(runtime: Any, permission: str) -> None:
    assert decide(runtime, "explore", permission, "anything") == "allow"
    assert not runtime.ruleset("explore").disabled(permission)


@pytest.mark.parametrize(
    "permission",
    [
        "edit",
        "write",
        "task",
        "todowrite",
        "todoread",
        "question",
        "skill",
        "lsp",
        "mcp_x_y",
        "plan_enter",
        "plan_exit",
        "doom_loop",
        "custom",
    ],
)
def test_explore_denies_everything_else(runtime: Any, permission: str) -> None:
    assert decide(runtime, "explore", permission, "x") == "deny"
    assert runtime.ruleset("explore").disabled(permission)


def test_explore_external_directory_and_env(runtime: Any, hookcode_env: Any) -> None:
    spill = (hookcode_env.data_dir / "tool-output").as_posix()
    assert decide(runtime, "explore", "external_directory", "/outside/*") == "ask"
    assert decide(runtime, "explore", "external_directory", f"{spill}/*") == "allow"
    # explore's read allow comes after the base's .env asks: reads are allowed
    assert decide(runtime, "explore", "read", "/p/.env") == "allow"


@pytest.mark.parametrize("agent", ["compaction", "title", "summary"])
def test_hidden_agents_deny_everything(runtime: Any, agent: str) -> None:
    for permission in ("read", "edit", "bash", "external_directory", "question"):
        assert decide(runtime, agent, permission, "x") == "deny"
    for permission in ("read", "edit", "bash", "question"):
        assert runtime.ruleset(agent).disabled(permission)


# ---------------------------------------------------------------------------------------------
# the vote, end to end
# ---------------------------------------------------------------------------------------------


@tool(asks_permission=True)
async def probe(ctx: ToolContext, permission: str, patterns: list[str]) -> str:
    """Asks whatever it is told to."""
    await ctx.ask(permission, patterns)
    return "allowed"


@tool(asks_permission=True)
async def touch_path(ctx: ToolContext, path: str) -> str:
    """Asks external_directory for a path, as file tools do."""
    await ctx.ask_external_directory(path)
    return "allowed"


class Probe:
    @hookimpl
    def register_tools(self, register: Any) -> None:
        register(probe, touch_path)


@pytest.fixture
def probing(hookcode_env: Any) -> Any:
    hookcode_env.register(Probe(), "probe")
    return hookcode_env.runtime()


def test_vote_allow(probing: Any) -> None:
    outcome = invoke_tool(probing, "probe", {"permission": "read", "patterns": ["/p/a.py"]})
    assert outcome.result.output == "allowed"


def test_vote_ask_is_rejected_headless(probing: Any) -> None:
    outcome = invoke_tool(probing, "probe", {"permission": "read", "patterns": ["/p/.env"]})
    assert isinstance(outcome.error, PermissionRejected)


def test_vote_deny_lists_the_rules(probing: Any) -> None:
    outcome = invoke_tool(
        probing, "probe", {"permission": "edit", "patterns": ["src/a.py"]}, agent="plan"
    )
    assert isinstance(outcome.error, PermissionDenied)
    assert '{"permission": "edit", "pattern": "*", "action": "deny"}' in outcome.error_text
    assert '"pattern": ".hookcode/plans/*.md"' in outcome.error_text


def test_spill_file_reads_are_not_asked(probing: Any, hookcode_env: Any) -> None:
    spill = hookcode_env.data_dir / "tool-output"
    spill.mkdir(parents=True, exist_ok=True)
    (spill / "tool_1").write_text("x")
    ok = invoke_tool(probing, "touch_path", {"path": str(spill / "tool_1")})
    assert ok.error is None
    outside = hookcode_env.root / "outside"
    outside.mkdir()
    refused = invoke_tool(probing, "touch_path", {"path": str(outside / "f.txt")})
    assert isinstance(refused.error, PermissionRejected)
    inside = invoke_tool(probing, "touch_path", {"path": "src/inside.py"})
    assert inside.error is None


def test_spill_file_reads_through_a_symlinked_data_dir(hookcode_env: Any, tmp_path: Path) -> None:
    real = tmp_path / "real-data"
    (real / "tool-output").mkdir(parents=True)
    (real / "tool-output" / "tool_1").write_text("x")
    link = tmp_path / "linked-data"
    os.symlink(real, link)
    hookcode_env.register(Probe(), "probe")
    runtime = hookcode_env.runtime(HOOKCODE_DATA_DIR=str(link))
    outcome = invoke_tool(runtime, "touch_path", {"path": str(link / "tool-output" / "tool_1")})
    assert outcome.error is None
    # the base's spelled path stays allowed as well
    assert decide(runtime, "build", "external_directory", f"{link}/tool-output/*") == "allow"


def test_plan_files_through_a_symlinked_data_dir(hookcode_env: Any, tmp_path: Path) -> None:
    real = tmp_path / "real-data"
    (real / "plans").mkdir(parents=True)
    link = tmp_path / "linked-data"
    os.symlink(real, link)
    runtime = hookcode_env.runtime(HOOKCODE_DATA_DIR=str(link))
    for base in (real, link):
        assert decide(runtime, "plan", "external_directory", f"{base}/plans/*") == "allow"
        assert decide(runtime, "plan", "edit", f"{base}/plans/p.md") == "allow"
    assert decide(runtime, "plan", "edit", f"{real}/other.md") == "deny"


# ---------------------------------------------------------------------------------------------
# config: custom agents, overrides, disable
# ---------------------------------------------------------------------------------------------


def test_custom_agent_starts_from_base_plus_user_rules(hookcode_env: Any) -> None:
    path = hookcode_env.write_config(
        '[permission]\nwebfetch = "ask"\n\n'
        '[agent.review]\ndescription = "Reviews code"\n\n'
        '[agent.review.permission]\nedit = "deny"\nbash = { "*" = "ask", "git diff *" = "allow" }\n'
    )
    runtime = hookcode_env.runtime()
    spec = runtime.agent("review")
    assert spec.mode == "all"
    assert spec.description == "Reviews code"
    rules = [r for r in runtime.base_rules("review") if r.source != "core:spill-dir"]
    base = base_rules(hookcode_env.data_dir)
    assert rules[: len(base)] == base
    assert [(r.permission, r.pattern, r.action) for r in rules[len(base) :]] == [
        ("webfetch", "*", "ask"),
        ("edit", "*", "deny"),
        ("bash", "*", "ask"),
        ("bash", "git diff *", "allow"),
    ]
    assert {r.source for r in rules[len(base) :]} == {f"config:{path}"}
    assert decide(runtime, "review", "edit", "a.py") == "deny"
    assert decide(runtime, "review", "bash", "git diff HEAD") == "allow"
    assert decide(runtime, "review", "bash", "make") == "ask"
    assert decide(runtime, "review", "question") == "deny"  # from the base
    assert decide(runtime, "review", "read", "/p/.env") == "ask"


def test_custom_agent_mode_from_config(hookcode_env: Any) -> None:
    hookcode_env.write_config('[agent.helper]\nmode = "subagent"\nsteps = 3\n')
    runtime = hookcode_env.runtime()
    spec = runtime.agent("helper")
    assert (spec.mode, spec.steps) == ("subagent", 3)
    assert decide(runtime, "helper", "edit", "a.py") == "allow"


def test_builtin_agent_overrides_keep_its_defaults(hookcode_env: Any) -> None:
    hookcode_env.write_config('[agent.plan]\nsteps = 7\n\n[agent.plan.permission]\nbash = "deny"\n')
    runtime = hookcode_env.runtime()
    assert runtime.agent("plan").steps == 7
    assert runtime.agent("plan").mode == "primary"
    assert decide(runtime, "plan", "edit", "src/a.py") == "deny"
    assert decide(runtime, "plan", "bash", "ls") == "deny"
    assert decide(runtime, "build", "bash", "ls") == "ask"


def test_user_rules_override_agent_defaults(hookcode_env: Any) -> None:
    hookcode_env.write_config(
        '[permission]\nread = { "*.env" = "allow" }\n\n[agent.explore.permission]\nedit = "allow"\n'
    )
    runtime = hookcode_env.runtime()
    assert decide(runtime, "build", "read", "/p/.env") == "allow"
    assert decide(runtime, "explore", "edit", "a.py") == "allow"
    assert not runtime.ruleset("explore").disabled("edit")


@pytest.mark.parametrize("name", ["plan", "explore", "general"])
def test_disable_removes_a_builtin_agent(hookcode_env: Any, name: str) -> None:
    hookcode_env.write_config(f"[agent.{name}]\ndisable = true\n")
    runtime = hookcode_env.runtime()
    assert name not in runtime.agents()
    assert "build" in runtime.agents()
    with pytest.raises(HookcodeError, match=f"unknown agent '{name}'"):
        runtime.agent(name)


def test_disable_removes_a_custom_agent(hookcode_env: Any) -> None:
    hookcode_env.write_config('[agent.review]\ndisable = true\ndescription = "x"\n')
    runtime = hookcode_env.runtime()
    assert "review" not in runtime.agents()
    with pytest.raises(HookcodeError) as info:
        runtime.agent("review")
    assert "available agents: build, compaction, explore, general, plan, summary, title" in str(
        info.value
    )
