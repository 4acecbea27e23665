"""``hookcode permissions explain``: the decision for one permission and pattern, and which
rule made it; for a permission whose pattern a plugin takes apart (``permission_plan``: a shell
command becomes the requests it needs, :func:`hookcode.shell.shell_asks`), every request the
call would make and why the analysis found it opaque when it did."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from hookcode.cli.state import print_json

if TYPE_CHECKING:
    from hookcode.permission import PermissionRequest, Rule, Vote
    from hookcode.runtime import Runtime
    from hookcode.shell import RequestPlan

__all__ = ["explain"]


def explain(rt: Runtime, agent: str, permission: str, pattern: str, *, as_json: bool) -> None:
    from hookcode.tools import EDIT_PERMISSION, ToolCall, ToolContext

    # no tool, no session: a context for the plugins that take the pattern apart
    ctx = ToolContext(rt, ToolCall(tool="", args={}, call_id="explain", session_id="", agent=agent))
    plan = rt.plugins.call_first("permission_plan", permission=permission, pattern=pattern, ctx=ctx)
    if plan is not None:
        _planned(rt, agent, permission, pattern, plan, as_json)
        return
    metadata: dict[str, Any] = {}
    protected: str | None = None
    if permission == EDIT_PERMISSION:
        # a protected path asks whatever the rules say, as the writing tools mark it
        import os

        spelled = os.path.normpath(os.path.join(rt.worktree, os.path.expanduser(pattern)))
        protected = rt.protected.entry(spelled, os.path.realpath(spelled))
        if protected is not None:
            metadata = {"protected": {pattern: protected}}
    request, vote = _vote(rt, agent, permission, [pattern], [pattern], metadata)
    decision = request.ruleset.decide_one(permission, pattern)
    data = {
        "permission": permission,
        "pattern": pattern,
        "agent": agent,
        "decision": vote.action,
        "rule": decision.rule.to_dict() if decision.rule else None,
        "commands": [
            {
                "pattern": pattern,
                "action": decision.action,
                "rule": _rule_dict(decision.rule),
            }
        ],
        "opaque": False,
        "protected": protected,
        "outside_dirs": [],
        "reason": vote.reason,
        "votes": {name: v.action for name, v in request.votes.items()},
    }
    if as_json:
        print_json(data)
        return
    typer.echo(f"{vote.action}  ({permission} {pattern!r}, agent {agent})")
    typer.echo("rule: " + _rule_text(decision.rule))
    if protected is not None:
        typer.echo(f"protected: {vote.reason or pattern}")
    elif vote.reason:
        typer.echo(f"reason: {vote.reason}")
    _echo_votes(request)


def _planned(
    rt: Runtime, agent: str, permission: str, pattern: str, plan: RequestPlan, as_json: bool
) -> None:
    """Every request of ``plan`` with its decision; the requests of ``permission`` itself
    pattern by pattern (a shell command: one per simple command)."""
    analysis = plan.analysis
    results = []
    overall = "allow"
    for ask in plan.asks:
        request, vote = _vote(rt, agent, ask.permission, ask.patterns, ask.always, ask.metadata)
        decisions = [request.ruleset.decide_one(ask.permission, p) for p in ask.patterns]
        results.append((ask, request, vote, decisions))
        if vote.action == "deny" or (vote.action == "ask" and overall == "allow"):
            overall = vote.action
    opaque = analysis is None or analysis.opaque
    reasons = ["no shell analyser is loaded"] if analysis is None else list(analysis.reasons)
    own = next((r for r in results if r[0].permission == permission), None)
    if as_json:
        print_json(
            {
                "permission": permission,
                "pattern": pattern,
                "agent": agent,
                "decision": overall,
                "opaque": opaque,
                "reasons": reasons if opaque else [],
                "commands": [
                    {"pattern": d.pattern, "action": d.action, "rule": _rule_dict(d.rule)}
                    for d in (own[3] if own else [])
                ],
                "read_only": list(analysis.read_only) if analysis is not None else [],
                "outside_dirs": list(analysis.outside_dirs) if analysis is not None else [],
                "reads": list(analysis.reads) if analysis is not None else [],
                "writes": list(analysis.writes) if analysis is not None else [],
                "requests": [
                    {
                        "permission": ask.permission,
                        "patterns": ask.patterns,
                        "decision": vote.action,
                        "reason": vote.reason,
                        "protected": ask.metadata.get("protected") or {},
                        "votes": {name: v.action for name, v in request.votes.items()},
                        "rules": [_rule_dict(d.rule) for d in decisions],
                    }
                    for ask, request, vote, decisions in results
                ],
            }
        )
        return
    typer.echo(f"{overall}  ({permission} {pattern!r}, agent {agent})")
    for ask, request, vote, decisions in results:
        if ask.permission == permission:
            for d in decisions:
                typer.echo(f"  {d.pattern!r}: {d.action} by {_rule_text(d.rule)}")
            if analysis is not None and analysis.read_only:
                typer.echo("read-only: " + ", ".join(repr(p) for p in analysis.read_only))
        else:
            what = ", ".join(ask.patterns)
            typer.echo(f"{ask.permission} {what}: {vote.action}")
            protected = ask.metadata.get("protected") or {}
            for path, entry in protected.items():
                typer.echo(f"  protected: {path} ({entry}) asks unless a rule names it")
        if vote.action != "allow" and vote.reason and ask.permission == permission:
            typer.echo(f"reason: {vote.reason}")
        if ask.permission == permission:
            _echo_votes(request)
    if opaque:
        typer.echo(
            "opaque: the command could not be analysed completely, so rules cannot allow it:"
        )
        for reason in reasons:
            typer.echo(f"  - {reason}")
    if analysis is not None and analysis.outside_dirs:
        typer.echo("outside the project: " + ", ".join(analysis.outside_dirs))


def _vote(
    rt: Runtime,
    agent: str,
    permission: str,
    patterns: list[str],
    always: list[str],
    metadata: dict[str, Any],
) -> tuple[PermissionRequest, Vote]:
    from hookcode.permission import PermissionRequest

    request = PermissionRequest(
        id="explain",
        session_id="",
        permission=permission,
        patterns=patterns,
        always=always,
        metadata=metadata,
        agent=agent,
        tool={},
        ruleset=rt.ruleset(agent, None),
        cwd=str(rt.cwd),
        worktree=str(rt.worktree),
    )
    return request, rt.permissions.vote(request)


def _rule_dict(rule: Rule | None) -> dict[str, str] | None:
    return rule.to_dict() if rule is not None else None


def _rule_text(rule: Rule | None) -> str:
    if rule is None:
        return "none matched (ask)"
    return f"{rule.permission} {rule.pattern!r} {rule.action}  [{rule.source}]"


def _echo_votes(request: PermissionRequest) -> None:
    if request.votes:
        typer.echo("votes: " + ", ".join(f"{k}={v.action}" for k, v in request.votes.items()))
    else:
        typer.echo("votes: none (no policy plugin voted, so the answer is ask)")
