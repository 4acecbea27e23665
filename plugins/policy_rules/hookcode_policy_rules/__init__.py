"""policy_rules: the built-in agents with their default rules, and the rules as votes.

The agents (reference/permissions.md §6): ``build`` and ``plan`` (primary), ``general`` and
``explore`` (sub-agents), and the hidden ``compaction``, ``title`` and ``summary``. Every agent
starts from the base ruleset; custom agents from ``[agent.NAME]`` config start from it too.

The spill directory's ``external_directory`` allow is core's (it comes after every rule).

The vote: the effective rules of the request (agent defaults, plugin defaults, ``[permission]``,
``[agent.NAME.permission]``, session rules, remembered approvals) evaluated last-match-wins.

The model rule (``model_tools``, reference tools.md): the tools that edit files come in two
kinds, those that take patches (``edits_files = "patch"``: apply_patch) and the others (edit,
write, multiedit); a model is offered one kind, chosen by :func:`wants_patches`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from hookcode import hookimpl

if TYPE_CHECKING:  # imported where used: start-up does not load these modules
    from hookcode.agents import AgentSpec
    from hookcode.config import Config
    from hookcode.permission import Action, PermissionRequest, Rule, Vote
    from hookcode.tools import Tool

BUILTIN = ("build", "plan", "general", "explore", "compaction", "title", "summary")


def base_rules(data_dir: Path) -> list[Rule]:
    from hookcode.permission import Rule

    src = "agent:base"
    return [
        Rule("*", "*", "allow", src),
        # shell commands ask; policy_shell's default rules allow the read-only ones
        Rule("bash", "*", "ask", src),
        Rule("doom_loop", "*", "ask", src),
        Rule("external_directory", "*", "ask", src),
        Rule("question", "*", "deny", src),
        Rule("plan_enter", "*", "deny", src),
        Rule("plan_exit", "*", "deny", src),
        Rule("read", "*", "allow", src),
        Rule("read", "*.env", "ask", src),
        Rule("read", "*.env.*", "ask", src),
        Rule("read", "*.env.example", "allow", src),
    ]


def builtin_agents(data_dir: Path) -> list[AgentSpec]:
    from hookcode.agents import AgentSpec
    from hookcode.permission import Rule

    base = base_rules(data_dir)
    # spelled and resolved, like the spill directory (core compares resolved paths)
    plans = (Path(data_dir) / "plans").as_posix()
    plans_dirs = list(dict.fromkeys([plans, Path(os.path.realpath(plans)).as_posix()]))

    def rules(name: str, *extra: tuple[str, str, str]) -> list[Rule]:
        return [*base, *(Rule(p, pat, cast("Action", a), f"agent:{name}") for p, pat, a in extra)]

    explore_allow = ("grep", "glob", "list", "webfetch", "websearch", "codesearch", "read")
    return [
        AgentSpec(
            name="build",
            description="The default agent: reads, edits and runs code with the tools allowed.",
            mode="primary",
            permission=rules("build", ("question", "*", "allow"), ("plan_enter", "*", "allow")),
        ),
        AgentSpec(
            name="plan",
            description="Plans without editing: edits are denied except plan files.",
            mode="primary",
            permission=rules(
                "plan",
                ("question", "*", "allow"),
                ("plan_exit", "*", "allow"),
                *(("external_directory", f"{d}/*", "allow") for d in plans_dirs),
                ("edit", "*", "deny"),
                ("edit", ".hookcode/plans/*.md", "allow"),
                *(("edit", f"{d}/*.md", "allow") for d in plans_dirs),
            ),
        ),
        AgentSpec(
            name="general",
            description=(
                "General-purpose agent for researching complex questions and executing "
                "multi-step tasks."
            ),
            mode="subagent",
            permission=rules("general", ("todoread", "*", "deny"), ("todowrite", "*", "deny")),
        ),
        AgentSpec(
            name="explore",
            description=(
                "Fast agent for exploring codebases: finds files by pattern, searches code, "
                "reads files. Cannot edit."
            ),
            mode="subagent",
            permission=rules(
                "explore",
                ("*", "*", "deny"),
                *((name, "*", "allow") for name in explore_allow),
                ("bash", "*", "ask"),
                ("external_directory", "*", "ask"),
            ),
        ),
        *(
            AgentSpec(
                name=name,
                description=f"Internal {name} agent.",
                mode="hidden",
                permission=[Rule("*", "*", "deny", f"agent:{name}")],
            )
            for name in ("compaction", "title", "summary")
        ),
    ]


@hookimpl
def agent(config: Any, data_dir: Path) -> list[AgentSpec]:
    from hookcode.agents import AgentSpec

    agents = builtin_agents(data_dir)
    # a custom agent from config starts from the base ruleset (its own rules are appended by
    # core from [agent.NAME.permission])
    for name in getattr(config, "agent", {}) or {}:
        if name not in BUILTIN:
            agents.append(AgentSpec(name=name, mode="all", permission=base_rules(data_dir)))
    return agents


@hookimpl
def permission_ask(request: PermissionRequest) -> Vote | Action:
    """Last match wins per pattern; deny if any pattern is denied, allow only if every one is
    allowed. A request marked ``opaque`` (a shell command the analysis could not fully see
    through) is never allowed by the rules: the rule that matches the bare ``*`` pattern of
    its permission decides between deny and ask."""
    ruleset = request.ruleset
    decision = ruleset.evaluate(request.permission, request.patterns)
    if decision.action == "deny":
        from hookcode.permission import Vote, deny_message

        return Vote("deny", deny_message(ruleset.matching(request.permission)))
    if request.metadata.get("opaque"):
        from hookcode.permission import Vote

        reasons = "; ".join(request.metadata.get("reasons") or []) or "it could not be analysed"
        catch_all = ruleset.decide_one(request.permission, "*").rule
        if catch_all is not None and catch_all.action == "deny":
            return Vote(
                "deny",
                f"The command could not be analysed completely ({reasons}), and the rule "
                f"{request.permission} {catch_all.pattern!r} = deny ({catch_all.source}) "
                "denies what cannot be analysed.",
            )
        return Vote("ask", f"the command could not be analysed completely: {reasons}")
    return decision.action  # a plain vote, without a reason


def wants_patches(model: str, edit_tools: str = "auto") -> bool | None:
    """Whether ``model`` edits files with the tools that take patches (True) or with the others
    (False); None offers both. ``edit_tools`` is the config key: ``"auto"`` follows the
    reference (a model id with ``gpt-`` but neither ``oss`` nor ``gpt-4`` takes patches),
    ``"apply_patch"`` or ``"edit"`` force one kind, ``"both"`` offers both."""
    if edit_tools == "both":
        return None
    if edit_tools == "auto":
        return "gpt-" in model and "oss" not in model and "gpt-4" not in model
    return edit_tools == "apply_patch"


@hookimpl
def model_tools(model: str, tools: list[Tool], config: Config) -> None:
    """The model rule: withhold the kind of file-editing tool ``model`` does not use."""
    patches = wants_patches(model, config.core.edit_tools)
    if patches is None:
        return
    tools[:] = [t for t in tools if not t.edits_files or (t.edits_files == "patch") == patches]
