"""Permissions: rules, wildcard matching, evaluation, and the ask/reply flow.

A rule is (permission, pattern, action). The effective rules of a call are, in order: the
agent's default rules, plugin default rules (``permission_defaults``), ``[permission]``,
``[agent.NAME.permission]``, the session's own rules (a child session's denies), then the
remembered "always" approvals. The LAST matching rule decides; no match means ``ask``; a
remembered approval never beats a deny.

Deciding is the job of policy plugins voting in ``permission_ask`` (``policy_rules`` evaluates
the rules); core combines the votes (deny beats ask beats allow; no vote means ask) and runs
the ask/reply flow through ``permission_prompt``. With nobody to ask, the answer is reject.

The parts, by what each owns: :mod:`hookcode.permission.rules` (rules, matching, evaluation),
:mod:`hookcode.permission.votes` (votes and how they combine) and this module (the request,
the reply and the ask/reply flow); import them from :mod:`hookcode.permission`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from hookcode.errors import PermissionDenied, PermissionRejected

# re-exported: the names of the parts stay importable from here
from hookcode.permission.rules import ACTIONS as ACTIONS
from hookcode.permission.rules import DENY_MESSAGE_RULES as DENY_MESSAGE_RULES
from hookcode.permission.rules import (
    Action,
    Decision,
    Rule,
    Ruleset,
    deny_message,
    expand_home,
    rules_from_config,
    wildcard_match,
)
from hookcode.permission.rules import PatternDecision as PatternDecision
from hookcode.permission.rules import rules_from_legacy_tools as rules_from_legacy_tools
from hookcode.permission.votes import Vote, as_vote, combine_votes, protected_vote
from hookcode.shell_analysis import ShellAnalysis as ShellAnalysis

if TYPE_CHECKING:
    import asyncio
    from pathlib import Path

    from hookcode.calls import ToolCall
    from hookcode.events import EventBus
    from hookcode.plugin_manager import PluginsBase
    from hookcode.store import Store

T = TypeVar("T")

__all__ = [
    "Action",
    "Asker",
    "Decision",
    "PermissionHost",
    "PermissionRequest",
    "PermissionService",
    "Reply",
    "Rule",
    "Ruleset",
    "ShellAnalysis",
    "Vote",
    "combine_votes",
    "deny_message",
    "expand_home",
    "protected_vote",
    "rules_from_config",
    "wildcard_match",
]


@dataclass
class Reply:
    """A front end's answer to an ``ask``."""

    kind: Literal["once", "always", "reject"]
    feedback: str | None = None
    scope: Literal["session", "project"] = "session"


# ---------------------------------------------------------------------------------------------
# the ask/reply flow
# ---------------------------------------------------------------------------------------------


@dataclass
class PermissionRequest:
    """One permission request, as policies (``permission_ask``) and front ends
    (``permission_prompt``) see it."""

    id: str
    session_id: str
    permission: str
    patterns: list[str]
    always: list[str]
    metadata: dict[str, Any]
    agent: str
    tool: dict[str, Any]  # {"name", "call_id", "message_id"}
    ruleset: Ruleset
    cwd: str = ""
    worktree: str = ""
    #: per-policy votes, filled in by core as they arrive (``{plugin: Vote}``)
    votes: dict[str, Vote] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "session_id": self.session_id,
            "permission": self.permission,
            "patterns": self.patterns,
            "always": self.always,
            "metadata": self.metadata,
            "agent": self.agent,
            "tool": self.tool,
        }


class PermissionHost(Protocol):
    """The part of the runtime (:class:`hookcode.runtime.Runtime`) the permission flow uses."""

    @property
    def cwd(self) -> Path: ...
    @property
    def worktree(self) -> Path: ...
    @property
    def project(self) -> str: ...
    @property
    def plugins(self) -> PluginsBase: ...
    @property
    def events(self) -> EventBus: ...
    @property
    def store(self) -> Store: ...
    @property
    def refusals(self) -> list[PermissionRequest]: ...
    def new_id(self, prefix: str) -> str: ...
    def ruleset(
        self, agent: str, session_id: str | None = None, *, approvals: bool = True
    ) -> Ruleset: ...


class Asker(Protocol):
    """Who asks: the part of a :class:`hookcode.tools.ToolContext` the permission flow uses."""

    @property
    def call(self) -> ToolCall: ...
    @property
    def agent(self) -> str: ...
    @property
    def session_id(self) -> str: ...
    async def run_blocking(self, fn: Callable[[], T]) -> T: ...


class PermissionService:
    """Runs ``ctx.ask``: votes, then (for ``ask``) the prompt, remembering ``always`` replies."""

    def __init__(self, runtime: PermissionHost) -> None:
        self.runtime = runtime
        self._locks: dict[str, asyncio.Lock] = {}
        self._seq = 0
        self._rejected_upto: dict[str, int] = {}
        #: requests waiting for an answer, by id
        self.pending: dict[str, PermissionRequest] = {}

    def vote(self, request: PermissionRequest) -> Vote:
        """Ask every policy; combine their votes."""
        votes: list[Vote] = []
        for plugin, value, error in self.runtime.plugins.call_each_outcomes(
            "permission_ask", request=request, runtime=self.runtime
        ):
            if error is not None:
                vote = Vote("ask", f"policy {plugin} failed: {error}")
            else:
                try:
                    vote = as_vote(value)
                except TypeError as exc:
                    self.runtime.plugins.report(plugin, "permission_ask", exc)
                    vote = Vote("ask", f"policy {plugin} returned an invalid vote")
            if vote is not None:
                request.votes[plugin] = vote
                votes.append(vote)
        protected = request.metadata.get("protected")
        if protected:
            vote = protected_vote(request.ruleset, request.permission, protected)
            if vote is not None:
                request.votes["core"] = vote
                votes.append(vote)
        return combine_votes(votes)

    async def ask(
        self,
        ctx: Asker,
        *,
        permission: str,
        patterns: list[str],
        always: list[str] | None,
        metadata: dict[str, Any],
    ) -> None:
        pending = self.decide(
            ctx, permission=permission, patterns=patterns, always=always, metadata=metadata
        )
        if pending is not None:
            await self.wait(ctx, pending)

    def decide(
        self,
        ctx: Asker,
        *,
        permission: str,
        patterns: list[str],
        always: list[str] | None,
        metadata: dict[str, Any],
    ) -> tuple[PermissionRequest, int] | None:
        """The synchronous start of :meth:`ask`: the votes. Returns None when they allowed the
        request, raises PermissionDenied when they denied it, else returns what
        :meth:`wait` needs to settle it (queue, re-vote, prompt)."""
        runtime = self.runtime
        self._seq += 1
        seq = self._seq
        call = ctx.call
        request = PermissionRequest(
            id=runtime.new_id("per"),
            session_id=call.session_id,
            permission=permission,
            patterns=patterns,
            always=always if always is not None else list(patterns),
            metadata=metadata,
            agent=call.agent,
            tool={"name": call.tool, "call_id": call.call_id, "message_id": call.message_id},
            ruleset=runtime.ruleset(call.agent, call.session_id),
            cwd=str(runtime.cwd),
            worktree=str(runtime.worktree),
        )
        vote = self.vote(request)
        if vote.action == "allow":
            self._decided(request, vote)
            return None
        if vote.action == "deny":
            self._decided(request, vote)
            raise PermissionDenied(
                vote.reason or deny_message(request.ruleset.matching(permission)),
                rules=request.ruleset.matching(permission),
            )
        return request, seq

    async def wait(self, ctx: Asker, pending: tuple[PermissionRequest, int]) -> None:
        """The rest of :meth:`ask` for a request the votes left at ``ask``."""
        import asyncio

        runtime = self.runtime
        request, seq = pending
        permission = request.permission
        lock = self._locks.setdefault(ctx.session_id, asyncio.Lock())
        self.pending[request.id] = request
        runtime.events.publish("permission.asked", **request.to_dict())  # pending from now (§5)
        try:
            async with lock:
                if self._rejected_upto.get(ctx.session_id, 0) >= seq:
                    # rejected together with an earlier request of this session (§5): a
                    # refusal like any other, with its own reject event
                    runtime.refusals.append(request)
                    self._replied(
                        ctx.session_id,
                        request,
                        "reject",
                        reason="rejected together with an earlier request of this session",
                    )
                    raise PermissionRejected()
                # an "always" given while we waited may cover this request now
                request.ruleset = runtime.ruleset(ctx.agent, ctx.session_id)
                request.votes.clear()
                vote = self.vote(request)
                if vote.action == "allow":
                    # resolved by an "always" reply given meanwhile (§5: an event each)
                    self._replied(
                        ctx.session_id,
                        request,
                        "always",
                        reason="covered by an 'always' reply given while it waited",
                    )
                    return
                if vote.action == "deny":
                    self._decided(request, vote)
                    raise PermissionDenied(
                        vote.reason or deny_message(request.ruleset.matching(permission)),
                        rules=request.ruleset.matching(permission),
                    )
                front_end, reply = await self._prompt(request, ctx)
                self._replied(
                    ctx.session_id,
                    request,
                    reply.kind,
                    scope=reply.scope,
                    feedback=reply.feedback,
                    front_end=front_end,
                    reason=None if front_end else "no front end answered (headless)",
                )
                if reply.kind == "once":
                    return
                if reply.kind == "always":
                    self.remember(request, reply.scope)
                    return
                self._rejected_upto[ctx.session_id] = self._seq
                runtime.refusals.append(request)
                raise PermissionRejected(feedback=reply.feedback)
        finally:
            self.pending.pop(request.id, None)

    def _decided(self, request: PermissionRequest, vote: Vote) -> None:
        """Publish ``permission.decided``: the votes settled ``request`` without asking anyone
        (allow or deny); who decided is in ``votes`` and, for the rules, in ``rules`` (each
        pattern's deciding rule with its source)."""
        if not self.runtime.events.listened:
            return
        decision = request.ruleset.evaluate(request.permission, request.patterns)
        self.runtime.events.publish(
            "permission.decided",
            **request.to_dict(),
            request_id=request.id,
            action=vote.action,
            reason=vote.reason,
            votes={
                plugin: {"action": v.action, "reason": v.reason}
                for plugin, v in request.votes.items()
            },
            rules=[
                {
                    "pattern": p.pattern,
                    "action": p.action,
                    "rule": p.rule.to_dict() if p.rule is not None else None,
                }
                for p in decision.patterns
            ],
        )

    def _replied(
        self,
        session_id: str,
        request: PermissionRequest,
        kind: str,
        *,
        scope: str | None = None,
        feedback: str | None = None,
        front_end: str | None = None,
        reason: str | None = None,
    ) -> None:
        """Publish ``permission.replied`` for ``request`` (§5: an event for every reply)."""
        self.runtime.events.publish(
            "permission.replied",
            session_id=session_id,
            request_id=request.id,
            reply=kind,
            scope=scope,
            feedback=feedback,
            front_end=front_end,
            reason=reason,
        )

    async def _prompt(self, request: PermissionRequest, ctx: Asker) -> tuple[str | None, Reply]:
        """The front end that answered (None: nobody, so reject) and its reply."""
        plugins = self.runtime.plugins
        if not plugins.has_impls("permission_prompt"):
            return None, Reply("reject")

        def first_answer() -> tuple[str | None, Any]:
            for plugin, value, error in plugins.call_each_outcomes(
                "permission_prompt", request=request, runtime=self.runtime
            ):
                if error is not None:
                    plugins.report(plugin, "permission_prompt", error)
                elif value is not None:
                    return plugin, value
            return None, None

        front_end, reply = await ctx.run_blocking(first_answer)
        if reply is None:
            return None, Reply("reject")
        if isinstance(reply, str):
            reply = Reply(reply)  # type: ignore[arg-type]
        return front_end, reply

    def remember(self, request: PermissionRequest, scope: str) -> None:
        store = self.runtime.store
        session_id = request.session_id if scope == "session" else None
        for pattern in request.always:
            store.add_approval(
                project=self.runtime.project,
                permission=request.permission,
                pattern=pattern,
                session_id=session_id,
                directory=str(self.runtime.worktree),
            )
