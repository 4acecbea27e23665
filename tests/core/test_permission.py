"""Permissions (core/hookcode/permission/, reference/permissions.md): wildcard matching (§2),
evaluation (§4), config shapes (§3), hiding, the rule order (ARCHITECTURE.md "Settled points"),
votes, and the ask/reply flow (§5) through real runtimes."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hookcode import Reply, Rule, Tool, ToolContext, Vote, hookimpl, tool
from hookcode.errors import PermissionDenied, PermissionRejected, ToolAborted
from hookcode.permission import (
    Ruleset,
    combine_votes,
    deny_message,
    expand_home,
    rules_from_config,
    rules_from_legacy_tools,
    wildcard_match,
)
from hookcode.pipeline import invoke
from hookcode.testing import ReplyWith, ainvoke_tool, invoke_tool
from hookcode.tools import AbortSignal, ToolCall


@pytest.fixture(autouse=True)
def _only_policy_rules(hookcode_env: Any) -> None:
    """Only the policy_rules entry point: other installed plugins must not vote or add tools."""
    hookcode_env.env["HOOKCODE_LOAD_PLUGINS"] = "policy_rules"


REJECTED = "The user rejected permission to use this specific tool call."
DENIED_PREFIX = (
    "The user has specified a rule which prevents you from using this specific tool call. "
    "Here are some of the relevant rules "
)

# ---------------------------------------------------------------------------------------------
# §2 wildcard matching
# ---------------------------------------------------------------------------------------------

WILDCARD_TABLE = [
    ("ls *", "ls", True),
    ("ls *", "ls -la", True),
    ("ls *", "ls foo bar", True),
    ("ls *", "lstmeval", False),
    ("ls*", "ls", True),
    ("ls*", "lstmeval", True),
    ("git *", "git", True),
    ("git *", "git commit -m foo", True),
    ("git status *", "git status", True),
    ("git status *", "git statusx", False),
    ("src/*", "src/a/b.ts", True),
    ("file?.txt", "file1.txt", True),
    ("file?.txt", "file12.txt", False),
    ("foo+bar", "foo+bar", True),
    ("*.env", "/repo/.env", True),
    ("*.env", "/repo/.env.local", False),
    ("*.env.*", "/repo/.env.local", True),
    ("C:\\Windows\\*", "C:/Windows/System32/x", True),
    ("mcp_*", "mcp_server_tool", True),
    ("echo *", "echo a\necho b", True),
]


@pytest.mark.parametrize(("pattern", "text", "expected"), WILDCARD_TABLE)
def test_wildcard_table(pattern: str, text: str, expected: bool) -> None:
    assert wildcard_match(pattern, text) is expected


@pytest.mark.skipif(os.name == "nt", reason="case-insensitive on Windows")
def test_wildcard_case_sensitive_on_posix() -> None:
    assert wildcard_match("/Users/test/*", "/users/test/file") is False
    assert wildcard_match("/Users/test/*", "/Users/test/file") is True


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        # every other character is literal: not fnmatch, not a regex
        ("a.c", "abc", False),
        ("a.c", "a.c", True),
        ("a[b]c", "abc", False),
        ("a[b]c", "a[b]c", True),
        ("(x)", "(x)", True),
        ("{a,b}", "a", False),
        ("{a,b}", "{a,b}", True),
        ("x|y", "x", False),
        ("^a$", "^a$", True),
        ("^a$", "a", False),
        ("a+", "aa", False),
        # ** is the same as *
        ("src/**", "src/a/b/c", True),
        ("**", "", True),
        # * crosses newlines and slashes
        ("a*b", "a\n/\nb", True),
        ("*", "anything/at all\n", True),
        # anchored at both ends
        ("src", "src/a", False),
        ("src", "a/src", False),
        ("*.ts", "a.tsx", False),
        # ? is exactly one character
        ("?", "", False),
        ("?", "/", True),
        ("??", "ab", True),
        # backslashes count as / on both sides
        ("src/*", "src\\a\\b", True),
        ("src\\a", "src/a", True),
        # the optional " *" tail needs the space
        ("git status *", "git status --short", True),
        ("git status *", "git", False),
        ("ls *", "ls ", True),
    ],
)
def test_wildcard_more(pattern: str, text: str, expected: bool) -> None:
    assert wildcard_match(pattern, text) is expected


# ---------------------------------------------------------------------------------------------
# §4 evaluation
# ---------------------------------------------------------------------------------------------


def rules(*triples: tuple[str, str, str]) -> Ruleset:
    return Ruleset([Rule(p, pat, a) for p, pat, a in triples])  # type: ignore[arg-type]


BASH_RULES = (("bash", "*", "ask"), ("bash", "git status *", "allow"), ("bash", "rm *", "deny"))
READ_RULES = (
    ("read", "*", "allow"),
    ("read", "*.env", "ask"),
    ("read", "*.env.*", "ask"),
    ("read", "*.env.example", "allow"),
)

EVALUATION_TABLE = [
    (BASH_RULES, "bash", ["git status --short"], "allow"),
    (BASH_RULES, "bash", ["rm -rf build"], "deny"),
    (BASH_RULES, "bash", ["ls"], "ask"),
    ((("bash", "git *", "allow"), ("bash", "*", "ask")), "bash", ["git log"], "ask"),
    (
        (("*", "*", "ask"), ("mcp_*", "*", "allow"), ("mcp_dangerous", "*", "deny")),
        "mcp_dangerous",
        ["*"],
        "deny",
    ),
    ((("bash", "*", "allow"), ("bash", "rm *", "deny")), "bash", ["echo hi", "rm x"], "deny"),
    ((("bash", "echo *", "allow"),), "bash", ["echo hi", "rm x"], "ask"),
    (READ_RULES, "read", ["/r/.env"], "ask"),
    (READ_RULES, "read", ["/r/.env.local"], "ask"),
    (READ_RULES, "read", ["/r/.env.example"], "allow"),
    (READ_RULES, "read", ["/r/.envrc"], "allow"),
    ((), "anything", ["x"], "ask"),
    ((), "bash", ["ls", "rm"], "ask"),
]


@pytest.mark.parametrize(("triples", "permission", "patterns", "expected"), EVALUATION_TABLE)
def test_evaluation_table(
    triples: tuple[tuple[str, str, str], ...], permission: str, patterns: list[str], expected: str
) -> None:
    assert rules(*triples).evaluate(permission, patterns).action == expected


def test_deny_ends_a_request_even_after_an_ask() -> None:
    ruleset = rules(("bash", "*", "ask"), ("bash", "rm *", "deny"))
    decision = ruleset.evaluate("bash", ["ls", "rm x", "pwd"])
    assert decision.action == "deny"
    assert [d.pattern for d in decision.patterns] == ["ls", "rm x"]  # stops at the deny
    assert decision.rules[-1] == Rule("bash", "rm *", "deny")


def test_no_patterns_is_allowed() -> None:
    assert rules(("*", "*", "deny")).evaluate("bash", []).action == "allow"


def test_last_match_wins_specificity_means_nothing() -> None:
    ruleset = rules(("bash", "git status *", "allow"), ("bash", "git *", "deny"))
    assert ruleset.evaluate("bash", ["git status"]).action == "deny"


def test_remembered_approval_turns_ask_into_allow_never_a_deny() -> None:
    ruleset = Ruleset(
        [Rule("bash", "*", "ask"), Rule("bash", "rm *", "deny")],
        approvals=[Rule("bash", "*", "allow", "approval:session:x")],
    )
    decision = ruleset.evaluate("bash", ["ls"])
    assert decision.action == "allow"
    assert decision.patterns[0].rule.source == "approval:session:x"
    assert ruleset.evaluate("bash", ["rm -rf /"]).action == "deny"
    # no rule at all is an ask, which an approval answers
    assert Ruleset([], [Rule("x", "*", "allow")]).evaluate("x", ["y"]).action == "allow"


def test_decider_agrees_with_decide_one() -> None:
    import random

    rnd = random.Random(16)
    pieces = ["*", "?", "a", "b", ".env", "/", "x\\y", "src/", ".", " *"]
    for _ in range(200):
        rules_ = [
            Rule(rnd.choice(["read", "*", "re*", "edit"]), "".join(rnd.choices(pieces, k=3)),
                 rnd.choice(["allow", "ask", "deny"]))
            for _ in range(rnd.randint(0, 6))
        ]  # fmt: skip
        approvals = [Rule("read", "".join(rnd.choices(pieces, k=2)), "allow")]
        ruleset = Ruleset(rules_, approvals)
        decide = ruleset.decider("read")
        for _ in range(20):
            text = "".join(rnd.choices(["a", "b", ".env", "/", "x\\y", "src", " ", "."], k=4))
            assert decide(text) == ruleset.decide_one("read", text).action, (rules_, text)


def test_protected_vote_asks_unless_the_allowing_rule_or_an_approval_names_it() -> None:
    from hookcode.permission import protected_vote

    allow_all = Ruleset([Rule("edit", "*", "allow")])
    vote = protected_vote(allow_all, "edit", {"hookcode.toml": "hookcode.toml"})
    assert vote is not None and vote.action == "ask"
    assert "hookcode.toml is a protected path" in (vote.reason or "")
    naming = Ruleset([Rule("edit", "*", "allow"), Rule("edit", "hookcode.toml", "allow")])
    assert protected_vote(naming, "edit", {"hookcode.toml": "hookcode.toml"}) is None
    # an "always" reply remembered the exact path: it names it, the rules' `*` aside
    remembered = Ruleset(
        [Rule("edit", "*", "allow")], approvals=[Rule("edit", "hookcode.toml", "allow")]
    )
    assert protected_vote(remembered, "edit", {"hookcode.toml": "hookcode.toml"}) is None
    assert protected_vote(remembered, "edit", {".envrc": ".envrc"}) is not None
    # a `*` approval names nothing; a deny is the rules' to give
    star = Ruleset([Rule("edit", "*", "allow")], approvals=[Rule("edit", "*", "allow")])
    assert protected_vote(star, "edit", {".envrc": ".envrc"}) is not None
    denied = Ruleset([Rule("edit", "*", "deny")], approvals=[Rule("edit", ".envrc", "allow")])
    assert protected_vote(denied, "edit", {".envrc": ".envrc"}) is None


def test_read_rules_judge_spelled_and_real_paths(hookcode_env: Any) -> None:
    project = hookcode_env.project
    (project / "vault").mkdir()
    (project / "vault" / "k").write_text("k")
    (project / "door").symlink_to("vault")
    hookcode_env.write_config(
        '[permission.read]\n"*" = "allow"\n"*/vault/*" = "deny"\n"*.env" = "ask"\n',
        where="global",
    )
    rt = hookcode_env.runtime()
    ctx = ToolContext(rt, ToolCall("read", {}, "c", rt.create_session().id))
    rules = ctx.read_rules()
    assert not rules.allows_everything
    assert rules("vault/k") == "deny"
    assert rules("door/k") == "deny"  # resolved where it leads
    assert rules("a.env") == "ask" and rules("a.txt") == "allow"
    under = rules.under("door")  # a walk of a symlinked root: no file-system call per path
    assert under("k") == "deny" and under("x.txt") == "deny"
    assert rules.under(".")("a.env") == "ask"
    visible = rules.visible_under(".")
    assert visible is not None and visible("a.env") and not visible("vault/k")

    hookcode_env.write_config('[permission]\nread = "allow"\n', where="global")
    rt = hookcode_env.runtime()
    ctx = ToolContext(rt, ToolCall("read", {}, "c", rt.create_session().id))
    assert ctx.read_rules().allows_everything
    assert ctx.read_rules().visible_under(".") is None


# ---------------------------------------------------------------------------------------------
# hiding (§4 "Hiding tools")
# ---------------------------------------------------------------------------------------------


def test_hiding_everything_but_bash() -> None:
    ruleset = rules(("*", "*", "deny"), ("bash", "*", "allow"))
    assert ruleset.disabled("read") is True
    assert ruleset.disabled("edit") is True
    assert ruleset.disabled("bash") is False


def test_hiding_later_specific_allow_keeps_tool_visible() -> None:
    ruleset = rules(("bash", "*", "deny"), ("bash", "echo *", "allow"))
    assert ruleset.disabled("bash") is False


def test_hiding_only_specific_denies_never_hide() -> None:
    ruleset = rules(("bash", "rm *", "deny"), ("bash", "sudo *", "deny"))
    assert ruleset.disabled("bash") is False


def test_hiding_no_rule_no_hiding() -> None:
    assert Ruleset().disabled("anything") is False


def test_hiding_wildcard_permission_rule() -> None:
    ruleset = rules(("*", "*", "allow"), ("mcp_*", "*", "deny"))
    assert ruleset.disabled("mcp_github_issue") is True
    assert ruleset.disabled("read") is False


def test_hiding_ignores_approvals() -> None:
    ruleset = Ruleset([Rule("x", "*", "deny")], approvals=[Rule("x", "*", "allow")])
    assert ruleset.disabled("x") is True


def test_approvals_are_loaded_only_when_a_pattern_is_left_at_ask() -> None:
    loads: list[int] = []

    def load() -> list[Rule]:
        loads.append(1)
        return [Rule("edit", "src/*", "allow")]

    ruleset = Ruleset([Rule("read", "*", "allow")], load_approvals=load)
    assert ruleset.evaluate("read", ["a.txt"]).action == "allow"
    assert loads == []  # the rules decided: the store is not read
    decision = ruleset.evaluate("edit", ["src/a.py", "docs/b.md"])
    assert [p.action for p in decision.patterns] == ["allow", "ask"]
    assert ruleset.evaluate("edit", ["src/c.py"]).action == "allow"
    assert loads == [1]  # once, then kept


# ---------------------------------------------------------------------------------------------
# votes
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("actions", "expected"),
    [
        ([], "ask"),
        (["allow"], "allow"),
        (["allow", "allow"], "allow"),
        (["allow", "ask"], "ask"),
        (["ask", "allow"], "ask"),
        (["allow", "ask", "deny"], "deny"),
        (["deny", "allow"], "deny"),
    ],
)
def test_combine_votes(actions: list[str], expected: str) -> None:
    assert combine_votes(Vote(a) for a in actions).action == expected  # type: ignore[arg-type]


def test_combine_votes_keeps_the_deny_reason() -> None:
    vote = combine_votes([Vote("allow"), Vote("deny", "nope"), Vote("deny", "second")])
    assert vote.reason == "nope"


def test_deny_message_lists_rules_as_json() -> None:
    message = deny_message([Rule("bash", "rm *", "deny", "config:x")])
    assert message.startswith(DENIED_PREFIX)
    assert json.loads(message[len(DENIED_PREFIX) :]) == [
        {"permission": "bash", "pattern": "rm *", "action": "deny"}
    ]


# ---------------------------------------------------------------------------------------------
# §3 config shapes, home expansion, legacy [tools]
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("~", "/h"),
        ("$HOME", "/h"),
        ("~/scratch/*", "/h/scratch/*"),
        ("$HOME/scratch/*", "/h/scratch/*"),
        ("a/~/b", "a/~/b"),
        ("~user/x", "~user/x"),
        ("$HOMEfoo", "$HOMEfoo"),
        ("x~", "x~"),
        ("/abs/*", "/abs/*"),
    ],
)
def test_expand_home(pattern: str, expected: str) -> None:
    assert expand_home(pattern, home="/h") == expected


def test_expand_home_defaults_to_the_home_directory(hookcode_env: Any) -> None:
    assert expand_home("~/x") == f"{hookcode_env.home}/x"


def test_rules_from_config_bare_action() -> None:
    assert rules_from_config("ask", "s") == [Rule("*", "*", "ask", "s")]
    assert rules_from_config(None, "s") == []
    assert rules_from_config({}, "s") == []


def test_rules_from_config_shapes_keep_order() -> None:
    value = {
        "*": "allow",
        "edit": "ask",
        "bash": {"*": "ask", "git status *": "allow", "rm *": "deny"},
        "external_directory": {"*": "ask", "~/scratch/*": "allow"},
        "github_*": "ask",
    }
    got = rules_from_config(value, "src")
    home = os.path.expanduser("~")
    assert [(r.permission, r.pattern, r.action) for r in got] == [
        ("*", "*", "allow"),
        ("edit", "*", "ask"),
        ("bash", "*", "ask"),
        ("bash", "git status *", "allow"),
        ("bash", "rm *", "deny"),
        ("external_directory", "*", "ask"),
        ("external_directory", f"{home}/scratch/*", "allow"),
        ("github_*", "*", "ask"),
    ]
    assert {r.source for r in got} == {"src"}


def test_home_expansion_in_patterns_never_in_keys() -> None:
    got = rules_from_config({"~": "allow", "~/x": {"~/y": "deny"}}, "s")
    home = os.path.expanduser("~")
    assert [(r.permission, r.pattern) for r in got] == [("~", "*"), ("~/x", f"{home}/y")]


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("maybe", "permission: 'maybe' is not an action"),
        ({"edit": "yes"}, "permission.edit: 'yes' is not an action"),
        ({"bash": {"rm *": "never"}}, "permission.bash.rm *: 'never' is not an action"),
        ({"bash": 3}, "permission.bash: expected an action or a table"),
        (["allow"], "expected an action or a table"),
    ],
)
def test_rules_from_config_bad_action(value: Any, fragment: str) -> None:
    with pytest.raises(ValueError) as info:
        rules_from_config(value, "s")
    assert fragment in str(info.value)


def test_config_bad_action_is_a_config_error_naming_file_and_key(hookcode_env: Any) -> None:
    from hookcode.errors import ConfigError

    path = hookcode_env.write_config('[permission]\nedit = "maybe"\n')
    with pytest.raises(ConfigError) as info:
        hookcode_env.runtime()
    assert str(path) in str(info.value)
    assert "permission.edit" in str(info.value)


def test_legacy_tools_rules() -> None:
    family = {"write": "edit", "patch": "edit", "multiedit": "edit", "edit": "edit"}
    got = rules_from_legacy_tools(
        {"write": False, "bash": True, "patch": False, "multiedit": True, "edit": False},
        "s",
        lambda name: family.get(name, name),
    )
    assert [(r.permission, r.pattern, r.action) for r in got] == [
        ("edit", "*", "deny"),
        ("bash", "*", "allow"),
        ("edit", "*", "deny"),
        ("edit", "*", "allow"),
        ("edit", "*", "deny"),
    ]


def _edits(name: str, kind: Any) -> Tool:
    def body() -> str:
        return name

    return tool(body, name=name, description="Edits files.", edits_files=kind)


class _Tools:
    def __init__(self, *tools: Tool) -> None:
        self.tools = list(tools)

    @hookimpl
    def register_tools(self, register: Any) -> None:
        register(*self.tools)


def test_legacy_switches_follow_the_tools_declarations(hookcode_env: Any) -> None:
    # a third-party tool that edits files belongs to the edit family: its switch governs edit
    hookcode_env.register(_Tools(_edits("notebook_edit", True), _edits("diff_apply", "patch")), "p")
    hookcode_env.write_config("[tools]\nnotebook_edit = false\n")
    runtime = hookcode_env.runtime()
    assert runtime.registry.permission_of("notebook_edit") == "edit"
    assert runtime.registry.permission_of("patch") == "edit"  # the tools that take patches
    assert runtime.registry.permission_of("webfetch") == "webfetch"  # not registered: itself
    assert runtime.ruleset("build").evaluate("edit", ["a.py"]).action == "deny"
    assert runtime.ruleset("build").disabled("edit")
    hookcode_env.write_config("[tools]\npatch = false\n")
    assert hookcode_env.runtime().ruleset("build").disabled("edit")


def test_legacy_tools_in_config(hookcode_env: Any) -> None:
    hookcode_env.env["HOOKCODE_LOAD_PLUGINS"] = "policy_rules,tool_write"  # write edits files
    hookcode_env.write_config("[tools]\nwrite = false\nwebfetch = false\n")
    runtime = hookcode_env.runtime()
    ruleset = runtime.ruleset("build")
    assert ruleset.evaluate("edit", ["a.py"]).action == "deny"
    assert ruleset.disabled("edit")
    assert ruleset.evaluate("webfetch", ["*"]).action == "deny"


def test_explicit_permission_beats_legacy_tools(hookcode_env: Any) -> None:
    hookcode_env.write_config('[tools]\nbash = false\n\n[permission]\nbash = "ask"\n')
    runtime = hookcode_env.runtime()
    assert runtime.ruleset("build").evaluate("bash", ["ls"]).action == "ask"
    assert not runtime.ruleset("build").disabled("bash")


def own_rules(runtime: Any, agent: str) -> list[Rule]:
    """The agent's rules without core's trailing spill-directory allow."""
    rules = runtime.base_rules(agent)
    assert rules[-1].source == "core:spill-dir"
    return [r for r in rules if r.source != "core:spill-dir"]


def test_spill_dir_allow_comes_last_unless_denied_exactly(hookcode_env: Any) -> None:
    spill = f"{(hookcode_env.data_dir / 'tool-output').as_posix()}/*"
    hookcode_env.write_config('[permission]\nexternal_directory = "ask"\n')
    runtime = hookcode_env.runtime()
    assert runtime.base_rules("build")[-1] == Rule(
        "external_directory", spill, "allow", "core:spill-dir"
    )
    assert runtime.ruleset("build").evaluate("external_directory", [spill]).action == "allow"
    hookcode_env.write_config(f'[permission]\nexternal_directory = {{ "{spill}" = "deny" }}\n')
    runtime = hookcode_env.runtime()
    assert all(r.source != "core:spill-dir" for r in runtime.base_rules("build"))
    assert runtime.ruleset("build").evaluate("external_directory", [spill]).action == "deny"


def test_home_expansion_uses_the_runtime_home(hookcode_env: Any, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    other.mkdir()
    hookcode_env.write_config('[permission]\nexternal_directory = { "~/scratch/*" = "allow" }\n')
    runtime = hookcode_env.runtime(HOME=str(other))
    last = own_rules(runtime, "build")[-1]
    assert last.pattern == f"{other}/scratch/*"


# ---------------------------------------------------------------------------------------------
# the ask flow through real runtimes
# ---------------------------------------------------------------------------------------------


@tool
def plain(value: str = "") -> str:
    """A tool that the pipeline pre-checks (permission = its name)."""
    return f"plain ran {value}"


@tool(asks_permission=True)
async def asker(ctx: ToolContext, patterns: list[str], always: list[str] | None = None) -> str:
    """A tool that asks for ``thing`` itself."""
    await ctx.ask("thing", patterns, always, {"extra": 1})
    return "asker ran"


@tool
def other(value: str = "") -> str:
    """Another pre-checked tool."""
    return "other ran"


class ToolsPlugin:
    @hookimpl
    def register_tools(self, register: Any) -> None:
        register(plain, asker, other)


def make_runtime(hookcode_env: Any, config: str = "", *plugins: tuple[object, str]) -> Any:
    hookcode_env.register(ToolsPlugin(), "test_tools")
    for plugin, name in plugins:
        hookcode_env.register(plugin, name)
    if config:
        hookcode_env.write_config(config)
    return hookcode_env.runtime()


def record_events(runtime: Any) -> list[Any]:
    events: list[Any] = []
    runtime.events.subscribe(events.append)
    return events


def test_allow_passes(hookcode_env: Any) -> None:
    prompt = ReplyWith("reject")
    runtime = make_runtime(hookcode_env, "", (prompt, "prompt"))
    outcome = invoke_tool(runtime, "plain", {"value": "x"})
    assert outcome.error is None
    assert outcome.result.output == "plain ran x"
    assert prompt.requests == []


def test_deny_raises_with_relevant_rules(hookcode_env: Any) -> None:
    prompt = ReplyWith("once")
    runtime = make_runtime(
        hookcode_env, '[permission]\nthing = { "*" = "ask", "rm *" = "deny" }\n', (prompt, "prompt")
    )
    outcome = invoke_tool(runtime, "asker", {"patterns": ["ls", "rm -rf x"]})
    assert isinstance(outcome.error, PermissionDenied)
    assert outcome.error_text.startswith(DENIED_PREFIX)
    listed = json.loads(outcome.error_text[len(DENIED_PREFIX) :])
    assert listed == [
        {"permission": "*", "pattern": "*", "action": "allow"},
        {"permission": "thing", "pattern": "*", "action": "ask"},
        {"permission": "thing", "pattern": "rm *", "action": "deny"},
    ]
    assert [r.pattern for r in outcome.error.rules][-1] == "rm *"
    assert prompt.requests == []  # a deny never prompts
    assert runtime.refusals == []  # ... and is not a refusal by the user


def test_ask_headless_is_a_reject(hookcode_env: Any) -> None:
    runtime = make_runtime(hookcode_env, '[permission]\nplain = "ask"\n')
    assert not runtime.plugins.has_impls("permission_prompt")
    events = record_events(runtime)
    outcome = invoke_tool(runtime, "plain")
    assert isinstance(outcome.error, PermissionRejected)
    assert outcome.error_text == REJECTED
    assert [r.permission for r in runtime.refusals] == ["plain"]
    assert runtime.refusals[0].tool["name"] == "plain"
    types = [e.type for e in events]
    assert "permission.asked" in types
    replied = next(e for e in events if e.type == "permission.replied")
    assert replied.properties["reply"] == "reject"
    assert runtime.permissions.pending == {}


def test_reply_once_asks_again_next_time(hookcode_env: Any) -> None:
    prompt = ReplyWith("once")
    runtime = make_runtime(hookcode_env, '[permission]\nplain = "ask"\n', (prompt, "prompt"))
    session = runtime.create_session(title="s").id
    for _ in range(2):
        outcome = invoke_tool(runtime, "plain", session_id=session)
        assert outcome.error is None
    assert len(prompt.requests) == 2
    request = prompt.requests[0]
    assert (request.permission, request.patterns, request.always) == ("plain", ["*"], ["*"])
    assert request.session_id == session
    assert runtime.store.approvals(project=str(runtime.worktree), session_id=session) == []


def test_reply_always_session_scope(hookcode_env: Any) -> None:
    prompt = ReplyWith("always", scope="session")
    runtime = make_runtime(hookcode_env, '[permission]\nthing = "ask"\n', (prompt, "prompt"))
    session = runtime.create_session(title="s").id
    first = invoke_tool(
        runtime, "asker", {"patterns": ["git log -1"], "always": ["git log *"]}, session_id=session
    )
    assert first.error is None
    assert len(prompt.requests) == 1
    approvals = runtime.store.approvals(project=str(runtime.worktree), session_id=session)
    assert [(a.permission, a.pattern, a.session_id) for a in approvals] == [
        ("thing", "git log *", session)
    ]
    # covered by the approval: no prompt
    again = invoke_tool(runtime, "asker", {"patterns": ["git log --oneline"]}, session_id=session)
    assert again.error is None
    assert len(prompt.requests) == 1
    # not covered: prompts
    invoke_tool(runtime, "asker", {"patterns": ["git push"]}, session_id=session)
    assert len(prompt.requests) == 2
    # another session does not see a session-scoped approval
    invoke_tool(runtime, "asker", {"patterns": ["git log -2"]})
    assert len(prompt.requests) == 3
    # the approval is a rule with its source
    ruleset = runtime.ruleset("build", session)
    assert ruleset.approvals[0].source.startswith("approval:session:")


def test_reply_always_project_scope(hookcode_env: Any) -> None:
    prompt = ReplyWith("always", scope="project")
    runtime = make_runtime(hookcode_env, '[permission]\nplain = "ask"\n', (prompt, "prompt"))
    assert invoke_tool(runtime, "plain").error is None
    assert len(prompt.requests) == 1
    # a new session, even in a new runtime, does not prompt
    assert invoke_tool(runtime, "plain").error is None
    fresh = hookcode_env.runtime()
    assert invoke_tool(fresh, "plain").error is None
    assert len(prompt.requests) == 1
    approvals = fresh.store.approvals(project=str(fresh.worktree))
    assert [(a.permission, a.pattern, a.session_id) for a in approvals] == [("plain", "*", None)]


def test_configured_deny_beats_remembered_always(hookcode_env: Any) -> None:
    prompt = ReplyWith("always", scope="project")
    runtime = make_runtime(
        hookcode_env, '[permission]\nthing = { "*" = "ask", "rm *" = "deny" }\n', (prompt, "prompt")
    )
    ok = invoke_tool(runtime, "asker", {"patterns": ["ls"], "always": ["*"]})
    assert ok.error is None
    assert len(prompt.requests) == 1
    # the approval "*" covers everything that asks...
    assert invoke_tool(runtime, "asker", {"patterns": ["cat x"]}).error is None
    # ... but never a configured deny
    denied = invoke_tool(runtime, "asker", {"patterns": ["rm -rf /"]})
    assert isinstance(denied.error, PermissionDenied)
    assert len(prompt.requests) == 1


def test_remembered_always_against_a_later_config_deny(hookcode_env: Any) -> None:
    prompt = ReplyWith("always", scope="project")
    runtime = make_runtime(hookcode_env, '[permission]\nplain = "ask"\n', (prompt, "prompt"))
    assert invoke_tool(runtime, "plain").error is None
    hookcode_env.write_config('[permission]\nplain = { "*" = "deny", "x" = "ask" }\n')
    later = hookcode_env.runtime()
    outcome = invoke_tool(later, "plain")
    assert isinstance(outcome.error, PermissionDenied)


def test_reject_with_feedback(hookcode_env: Any) -> None:
    prompt = ReplyWith("reject", feedback="use the other tool")
    runtime = make_runtime(hookcode_env, '[permission]\nplain = "ask"\n', (prompt, "prompt"))
    outcome = invoke_tool(runtime, "plain")
    assert isinstance(outcome.error, PermissionRejected)
    assert outcome.error.feedback == "use the other tool"
    assert outcome.error_text == (
        "The user rejected permission to use this specific tool call with the following "
        "feedback: use the other tool"
    )
    assert len(runtime.refusals) == 1


def test_prompt_returning_none_or_a_string(hookcode_env: Any) -> None:
    class Dismiss:
        @hookimpl
        def permission_prompt(self, request: Any) -> None:
            return None

    runtime = make_runtime(hookcode_env, '[permission]\nplain = "ask"\n', (Dismiss(), "dismiss"))
    assert invoke_tool(runtime, "plain").error_text == REJECTED

    class Once:
        @hookimpl
        def permission_prompt(self, request: Any) -> str:
            return "once"

    hookcode_env.register(Once(), "once_str")
    assert invoke_tool(hookcode_env.runtime(), "plain").error is None


def test_request_carries_call_details(hookcode_env: Any) -> None:
    prompt = ReplyWith("once")
    runtime = make_runtime(hookcode_env, '[permission]\nthing = "ask"\n', (prompt, "prompt"))
    outcome = invoke_tool(runtime, "asker", {"patterns": ["a", "b"]}, agent="build")
    (request,) = prompt.requests
    assert request.permission == "thing"
    assert request.patterns == ["a", "b"]
    assert request.always == ["a", "b"]  # default: the patterns
    assert request.metadata == {"extra": 1}
    assert request.agent == "build"
    assert request.tool["name"] == "asker"
    assert request.tool["call_id"] == outcome.call.call_id
    assert request.votes["policy_rules"] == Vote("ask")


# ---------------------------------------------------------------------------------------------
# concurrent asks in one session
# ---------------------------------------------------------------------------------------------


class GatedPrompt:
    """A front end that blocks (in its worker thread) until the test releases it."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests: list[Any] = []
        self.gates: list[threading.Event] = [threading.Event() for _ in replies]

    @hookimpl
    def permission_prompt(self, request: Any) -> Reply:
        index = len(self.requests)
        self.requests.append(request)
        if index >= len(self.replies):
            return Reply("reject", feedback="unexpected prompt")
        self.gates[index].wait(10)
        return self.replies[index]

    def release_all(self) -> None:
        for gate in self.gates:
            gate.set()


async def until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.005)


def test_concurrent_reject_rejects_every_pending_request(hookcode_env: Any) -> None:
    prompt = GatedPrompt(Reply("reject"))
    runtime = make_runtime(
        hookcode_env,
        '[permission]\nplain = "ask"\nother = "ask"\nthing = "ask"\n',
        (prompt, "prompt"),
    )
    session = runtime.create_session(title="s").id
    events = record_events(runtime)

    async def scenario() -> list[Any]:
        first = asyncio.ensure_future(ainvoke_tool(runtime, "plain", session_id=session))
        await until(lambda: len(prompt.requests) == 1)
        rest = [
            asyncio.ensure_future(ainvoke_tool(runtime, "other", session_id=session)),
            asyncio.ensure_future(
                ainvoke_tool(runtime, "asker", {"patterns": ["x"]}, session_id=session)
            ),
        ]
        await until(lambda: len(runtime.permissions.pending) == 3)
        prompt.gates[0].set()
        outcomes = await asyncio.gather(first, *rest)
        # a request made after the reject is asked normally (here: the prompt rejects it too,
        # as an unexpected prompt) - the point is that it reaches the prompt
        later = await ainvoke_tool(runtime, "other", session_id=session)
        return [*outcomes, later]

    try:
        first, second, third, later = asyncio.run(scenario())
    finally:
        prompt.release_all()
    assert first.error_text == REJECTED
    assert isinstance(second.error, PermissionRejected)
    assert isinstance(third.error, PermissionRejected)
    assert second.error_text == REJECTED
    assert len(prompt.requests) == 2  # the first one, and the later one
    assert later.error.feedback == "unexpected prompt"
    assert runtime.permissions.pending == {}
    # every refused call is named
    assert sorted(r.tool["name"] for r in runtime.refusals) == ["asker", "other", "other", "plain"]
    rejects = [
        e for e in events if e.type == "permission.replied" and e.properties["reply"] == "reject"
    ]
    assert len(rejects) == 4


def test_concurrent_always_resolves_covered_pending_requests(hookcode_env: Any) -> None:
    prompt = GatedPrompt(Reply("always"), Reply("once"))
    runtime = make_runtime(hookcode_env, '[permission]\nthing = "ask"\n', (prompt, "prompt"))
    session = runtime.create_session(title="s").id
    events = record_events(runtime)

    def call(patterns: list[str], always: list[str] | None = None) -> Any:
        args: dict[str, Any] = {"patterns": patterns}
        if always is not None:
            args["always"] = always
        return asyncio.ensure_future(ainvoke_tool(runtime, "asker", args, session_id=session))

    async def scenario() -> list[Any]:
        first = call(["git log -1"], ["git log *"])
        await until(lambda: len(prompt.requests) == 1)
        covered = call(["git log --stat"])
        also_covered = call(["git log"])
        not_covered = call(["git push"])
        await until(lambda: len(runtime.permissions.pending) == 4)
        prompt.gates[0].set()
        await until(lambda: len(prompt.requests) == 2)
        assert prompt.requests[1].patterns == ["git push"]
        prompt.gates[1].set()
        return list(await asyncio.gather(first, covered, also_covered, not_covered))

    try:
        outcomes = asyncio.run(scenario())
    finally:
        prompt.release_all()
    assert [o.error for o in outcomes] == [None, None, None, None]
    assert len(prompt.requests) == 2
    replies = [e.properties["reply"] for e in events if e.type == "permission.replied"]
    assert sorted(replies) == ["always", "always", "always", "once"]
    assert runtime.permissions.pending == {}


def test_pending_requests_of_other_sessions_are_not_rejected(hookcode_env: Any) -> None:
    prompt = GatedPrompt(Reply("reject"), Reply("once"))
    runtime = make_runtime(hookcode_env, '[permission]\nplain = "ask"\n', (prompt, "prompt"))
    one = runtime.create_session(title="one").id
    two = runtime.create_session(title="two").id

    async def scenario() -> list[Any]:
        first = asyncio.ensure_future(ainvoke_tool(runtime, "plain", session_id=one))
        await until(lambda: len(prompt.requests) == 1)
        second = asyncio.ensure_future(ainvoke_tool(runtime, "plain", session_id=two))
        await until(lambda: len(prompt.requests) == 2)  # sessions prompt independently
        prompt.gates[0].set()
        prompt.gates[1].set()
        return list(await asyncio.gather(first, second))

    try:
        first, second = asyncio.run(scenario())
    finally:
        prompt.release_all()
    assert first.error_text == REJECTED
    assert second.error is None


# ---------------------------------------------------------------------------------------------
# policies voting
# ---------------------------------------------------------------------------------------------


class Voter:
    def __init__(self, vote: Any) -> None:
        self.vote = vote
        self.seen: list[Any] = []

    @hookimpl
    def permission_ask(self, request: Any) -> Any:
        self.seen.append(request.permission)
        if isinstance(self.vote, BaseException):
            raise self.vote
        return self.vote


def test_raising_permission_ask_counts_as_ask(hookcode_env: Any) -> None:
    prompt = ReplyWith("once")
    later = Voter("allow")
    runtime = make_runtime(
        hookcode_env,
        "",
        (Voter(RuntimeError("policy broke")), "raiser"),
        (later, "later"),
        (prompt, "prompt"),
    )
    # build allows everything by its rules, but the raising policy votes ask
    assert invoke_tool(runtime, "plain").error is None
    (request,) = prompt.requests
    assert request.votes["raiser"].action == "ask"
    assert "raiser" in request.votes["raiser"].reason
    assert "policy broke" in request.votes["raiser"].reason
    assert request.votes["later"] == Vote("allow")
    assert request.votes["policy_rules"] == Vote("allow")
    assert later.seen  # the others still voted


def test_raising_permission_ask_headless_rejects(hookcode_env: Any) -> None:
    runtime = make_runtime(hookcode_env, "", (Voter(RuntimeError("x")), "raiser"))
    assert invoke_tool(runtime, "plain").error_text == REJECTED


def test_invalid_vote_counts_as_ask(hookcode_env: Any, capsys: pytest.CaptureFixture) -> None:
    prompt = ReplyWith("once")
    runtime = make_runtime(hookcode_env, "", (Voter("maybe"), "weird"), (prompt, "prompt"))
    assert invoke_tool(runtime, "plain").error is None
    assert prompt.requests[0].votes["weird"].action == "ask"
    assert "weird" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("votes", "expected"),
    [
        (["allow", "allow"], "allow"),
        (["allow", "ask"], "ask"),
        (["ask", "allow"], "ask"),
        (["allow", Vote("deny", "policy says no")], "deny"),
        ([Vote("deny", "policy says no"), "ask", "allow"], "deny"),
        ([None, None], "ask"),  # no vote at all
        ([], "ask"),
        ([None, "allow"], "allow"),
    ],
)
def test_deny_beats_ask_beats_allow_across_policies(
    hookcode_env: Any, votes: list[Any], expected: str
) -> None:
    prompt = ReplyWith("reject", feedback="asked")
    hookcode_env.register(ToolsPlugin(), "test_tools")
    for index, vote in enumerate(votes):
        hookcode_env.register(Voter(vote), f"voter{index}")
    hookcode_env.register(prompt, "prompt")
    runtime = hookcode_env.runtime(entrypoints=False)  # no policy_rules: only our voters
    outcome = invoke_tool(runtime, "plain")
    if expected == "allow":
        assert outcome.error is None
        assert prompt.requests == []
    elif expected == "ask":
        assert outcome.error.feedback == "asked"
        assert len(prompt.requests) == 1
    else:
        assert isinstance(outcome.error, PermissionDenied)
        assert outcome.error_text == "policy says no"
        assert prompt.requests == []


def test_policy_deny_beats_rules_allow(hookcode_env: Any) -> None:
    runtime = make_runtime(hookcode_env, "", (Voter(Vote("deny", "not on fridays")), "friday"))
    outcome = invoke_tool(runtime, "plain")
    assert isinstance(outcome.error, PermissionDenied)
    assert outcome.error_text == "not on fridays"


def test_policy_allow_does_not_beat_rules_ask(hookcode_env: Any) -> None:
    runtime = make_runtime(hookcode_env, '[permission]\nplain = "ask"\n', (Voter("allow"), "yes"))
    assert invoke_tool(runtime, "plain").error_text == REJECTED


# ---------------------------------------------------------------------------------------------
# abort while waiting
# ---------------------------------------------------------------------------------------------


def _call(runtime: Any, tool_name: str, session: str, args: dict[str, Any] | None = None) -> Any:
    call = ToolCall(
        tool=tool_name,
        args=args or {},
        call_id=runtime.new_id("call"),
        session_id=session,
        agent="build",
    )
    return call, AbortSignal()


@pytest.mark.parametrize("tool_name", ["plain", "asker"])
def test_abort_while_waiting_for_the_prompt(hookcode_env: Any, tool_name: str) -> None:
    prompt = GatedPrompt(Reply("once"))
    runtime = make_runtime(
        hookcode_env, '[permission]\nplain = "ask"\nthing = "ask"\n', (prompt, "prompt")
    )
    session = runtime.create_session(title="s").id
    call, abort = _call(
        runtime, tool_name, session, {"patterns": ["x"]} if tool_name == "asker" else None
    )

    async def scenario() -> Any:
        task = asyncio.ensure_future(invoke(runtime, call, abort=abort))
        await until(lambda: len(prompt.requests) == 1)
        assert len(runtime.permissions.pending) == 1
        abort.abort("user pressed ctrl-c")
        return await asyncio.wait_for(task, 5)

    try:
        outcome = asyncio.run(scenario())
    finally:
        prompt.release_all()
    assert isinstance(outcome.error, ToolAborted)
    assert outcome.error_text == "Tool execution aborted"
    assert runtime.permissions.pending == {}
    (part,) = runtime.store.tool_parts(session)
    assert part.state == "error"
    assert part.error == "Tool execution aborted"


def test_abort_while_queued_behind_another_prompt(hookcode_env: Any) -> None:
    prompt = GatedPrompt(Reply("once"))
    runtime = make_runtime(hookcode_env, '[permission]\nplain = "ask"\n', (prompt, "prompt"))
    session = runtime.create_session(title="s").id
    first_call, first_abort = _call(runtime, "plain", session)
    second_call, second_abort = _call(runtime, "plain", session)

    async def scenario() -> tuple[Any, Any]:
        first = asyncio.ensure_future(invoke(runtime, first_call, abort=first_abort))
        await until(lambda: len(prompt.requests) == 1)
        second = asyncio.ensure_future(invoke(runtime, second_call, abort=second_abort))
        await until(lambda: len(runtime.permissions.pending) == 2)
        second_abort.abort()
        aborted = await asyncio.wait_for(second, 5)
        assert len(runtime.permissions.pending) == 1
        prompt.gates[0].set()
        return await asyncio.wait_for(first, 5), aborted

    try:
        first, second = asyncio.run(scenario())
    finally:
        prompt.release_all()
    assert first.error is None
    assert isinstance(second.error, ToolAborted)
    assert runtime.permissions.pending == {}


# ---------------------------------------------------------------------------------------------
# the rule order: agent defaults -> plugin defaults -> [permission] -> [agent.NAME.permission]
# ---------------------------------------------------------------------------------------------


class Defaults:
    def __init__(self, *triples: tuple[str, str, str], source: str = "") -> None:
        self.rules = [Rule(p, pat, a, source) for p, pat, a in triples]  # type: ignore[arg-type]
        self.agents: list[str] = []

    @hookimpl
    def permission_defaults(self, agent: Any) -> list[Rule]:
        self.agents.append(agent.name)
        return self.rules


def test_plugin_defaults_sit_after_agent_defaults(hookcode_env: Any) -> None:
    defaults = Defaults(("plain", "*", "ask"))
    runtime = make_runtime(hookcode_env, "", (defaults, "defaults_plugin"))
    base = own_rules(runtime, "build")
    assert base[-1] == Rule("plain", "*", "ask", "plugin:defaults_plugin")
    assert all(r.source.startswith("agent:") for r in base[:-1])
    # the agent's "*" allow comes first, so the plugin's ask decides
    assert invoke_tool(runtime, "plain").error_text == REJECTED
    assert "build" in defaults.agents


def test_plugin_defaults_sit_before_config(hookcode_env: Any) -> None:
    defaults = Defaults(("plain", "*", "deny"), source="plugin:custom-source")
    runtime = make_runtime(hookcode_env, '[permission]\nplain = "allow"\n', (defaults, "d"))
    rules = runtime.base_rules("build")
    sources = [r.source for r in rules if r.permission == "plain"]
    assert sources[0] == "plugin:custom-source"
    assert sources[1].startswith("config:")
    assert invoke_tool(runtime, "plain").error is None


def test_plugin_allow_dropped_where_agent_denies_outright(hookcode_env: Any) -> None:
    defaults = Defaults(
        ("edit", "*", "allow"),  # explore denies edit via "*" deny: dropped
        ("plain", "*", "ask"),  # explore denies plain too: dropped
        ("grep", "*", "deny"),  # deny rules always apply
        ("read", "*.secret", "ask"),  # explore allows read: kept
        ("mcp_*", "*", "ask"),  # dropped: "*" deny covers it
    )
    runtime = make_runtime(hookcode_env, "", (defaults, "d"))
    explore = runtime.base_rules("explore")
    from_plugin = [(r.permission, r.pattern, r.action) for r in explore if r.source == "plugin:d"]
    assert from_plugin == [("grep", "*", "deny"), ("read", "*.secret", "ask")]
    ruleset = runtime.ruleset("explore")
    assert ruleset.disabled("edit")
    assert ruleset.disabled("grep")
    assert ruleset.evaluate("read", ["/p/a.secret"]).action == "ask"
    # build denies nothing outright: everything kept
    build = [r for r in runtime.base_rules("build") if r.source == "plugin:d"]
    assert len(build) == 5


def test_plugin_defaults_for_hidden_agent_only_denies(hookcode_env: Any) -> None:
    defaults = Defaults(("read", "*", "allow"), ("bash", "*", "deny"))
    runtime = make_runtime(hookcode_env, "", (defaults, "d"))
    title = [
        (r.permission, r.action) for r in runtime.base_rules("title") if r.source == "plugin:d"
    ]
    assert title == [("bash", "deny")]


def test_config_reopens_what_plugin_denied(hookcode_env: Any) -> None:
    defaults = Defaults(("plain", "*", "deny"))
    runtime = make_runtime(hookcode_env, '[permission]\nplain = "allow"\n', (defaults, "d"))
    assert invoke_tool(runtime, "plain").error is None


def test_agent_permission_after_global_permission(hookcode_env: Any) -> None:
    runtime = make_runtime(
        hookcode_env,
        '[permission]\nplain = "deny"\nother = "deny"\n\n'
        '[agent.build.permission]\nplain = "allow"\n',
    )
    build = runtime.ruleset("build")
    assert build.evaluate("plain", ["*"]).action == "allow"
    assert build.evaluate("other", ["*"]).action == "deny"
    assert runtime.ruleset("plan").evaluate("plain", ["*"]).action == "deny"
    assert invoke_tool(runtime, "plain").error is None
    assert "unavailable tool 'plain'" in invoke_tool(runtime, "plain", agent="plan").error_text
    sources = [r.source for r in runtime.base_rules("build") if r.permission == "plain"]
    assert len(sources) == 2


def test_session_rules_after_config(hookcode_env: Any) -> None:
    runtime = make_runtime(hookcode_env, '[permission]\nplain = "allow"\n')
    session = runtime.create_session(title="child").id
    runtime.session_rules[session] = [Rule("plain", "*", "deny", "session")]
    outcome = invoke_tool(runtime, "plain", session_id=session)
    assert "unavailable tool 'plain'" in outcome.error_text
    assert invoke_tool(runtime, "plain").error is None


def test_rule_sources(hookcode_env: Any) -> None:
    path = hookcode_env.write_config(
        '[permission]\nplain = "ask"\nbash = { "*" = "ask", "ls *" = "allow" }\n\n'
        '[agent.build.permission]\nedit = "deny"\n'
    )
    runtime = make_runtime(hookcode_env)
    rules = own_rules(runtime, "build")
    config_rules = [r for r in rules if r.source.startswith("config")]
    assert [(r.permission, r.pattern) for r in config_rules] == [
        ("plain", "*"),
        ("bash", "*"),
        ("bash", "ls *"),
        ("edit", "*"),
    ]
    assert {r.source for r in config_rules} == {f"config:{path}"}
    assert {r.source for r in rules[: -len(config_rules)]} == {"agent:base", "agent:build"}


def test_rule_source_from_global_config_and_env(hookcode_env: Any) -> None:
    path = hookcode_env.write_config('[permission]\nplain = "ask"\n', where="global")
    runtime = make_runtime(hookcode_env)
    assert own_rules(runtime, "build")[-1].source == f"config:{path}"
    env_runtime = hookcode_env.runtime(HOOKCODE_PERMISSION='{"other": "deny"}')
    last = own_rules(env_runtime, "build")[-1]
    assert (last.permission, last.action) == ("other", "deny")
    assert last.source == "config:HOOKCODE_PERMISSION"
