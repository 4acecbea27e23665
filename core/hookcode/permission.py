"""Permissions: rules, wildcard matching, evaluation, and the ask/reply flow.

A rule is (permission, pattern, action). The effective rules of a call are, in order: the
agent's default rules, plugin default rules (``permission_defaults``), ``[permission]``,
``[agent.NAME.permission]``, the session's own rules (a child session's denies), then the
remembered "always" approvals. The LAST matching rule decides; no match means ``ask``; a
remembered approval never beats a deny.

Deciding is the job of policy plugins voting in ``permission_ask`` (``policy_rules`` evaluates
the rules); core combines the votes (deny beats ask beats allow; no vote means ask) and runs
the ask/reply flow through ``permission_prompt``. With nobody to ask, the answer is reject.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from hookcode.errors import PermissionDenied, PermissionRejected

if TYPE_CHECKING:
    import asyncio

    from hookcode.runtime import Runtime
    from hookcode.tools import ToolContext

__all__ = [
    "Action",
    "Decision",
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

Action = Literal["allow", "deny", "ask"]
ACTIONS: tuple[str, ...] = ("allow", "deny", "ask")


@dataclass(frozen=True)
class Rule:
    """One rule. ``source`` says where it came from (``agent:build``, ``config:<file>``,
    ``plugin:<name>``, ``approval:session``, ...); ``permissions explain`` shows it."""

    permission: str
    pattern: str
    action: Action
    source: str = ""

    def to_dict(self) -> dict[str, str]:
        return {
            "permission": self.permission,
            "pattern": self.pattern,
            "action": self.action,
            "source": self.source,
        }


@dataclass
class Vote:
    """A policy's vote with an optional reason (a deny's reason is what the model reads)."""

    action: Action
    reason: str | None = None


@dataclass
class Reply:
    """A front end's answer to an ``ask``."""

    kind: Literal["once", "always", "reject"]
    feedback: str | None = None
    scope: Literal["session", "project"] = "session"


@dataclass
class ShellAnalysis:
    """What a shell command runs, as ``shell_analyze`` reports it."""

    commands: list[str] = field(default_factory=list)  # the simple commands' texts
    always: list[str] = field(default_factory=list)  # "always" prefixes (``git log *``)
    outside_dirs: list[str] = field(default_factory=list)  # directories outside the project
    opaque: bool = False  # something could not be seen through
    reasons: list[str] = field(default_factory=list)  # why it is opaque
    #: files whose contents a command shows or copies (``DIR/**``: read recursively)
    reads: list[str] = field(default_factory=list)
    #: files a command creates, changes or deletes (``DIR/**``: recursively)
    writes: list[str] = field(default_factory=list)
    #: the patterns of ``commands`` proven read-only (the default rules allow only those)
    read_only: list[str] = field(default_factory=list)

    def request_metadata(self) -> dict[str, Any]:
        """What the ``bash`` permission request carries for the policies: whether the command
        is opaque and why, and which of its patterns are read-only."""
        return {
            "opaque": self.opaque,
            "reasons": list(self.reasons),
            "read_only": list(self.read_only),
        }


# ---------------------------------------------------------------------------------------------
# matching
# ---------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def _compile(pattern: str) -> re.Pattern[str]:
    pattern = pattern.replace("\\", "/")
    optional_tail = pattern.endswith(" *")
    body = pattern[:-2] if optional_tail else pattern
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in body)
    if optional_tail:
        regex += "(?: .*)?"
    flags = re.DOTALL | (re.IGNORECASE if os.name == "nt" else 0)
    return re.compile(regex, flags)


def wildcard_match(pattern: str, text: str) -> bool:
    """Match ``text`` against a rule pattern: ``*`` any run (``/`` and newlines included),
    ``?`` one character, everything else literal; a trailing `` *`` also matches the bare
    text before it. Backslashes count as ``/``. Anchored at both ends."""
    if pattern == "*" or pattern == text:
        return True
    if "*" not in pattern and "?" not in pattern and os.name != "nt":
        # a literal (most permission names): equal once backslashes count as "/"
        return pattern.replace("\\", "/") == text.replace("\\", "/")
    return _compile(pattern).fullmatch(text.replace("\\", "/")) is not None


def _matcher(pattern: str) -> Callable[[str], bool]:
    """:func:`wildcard_match` with ``pattern`` fixed, for matching many texts."""
    if "*" not in pattern and "?" not in pattern and os.name != "nt":
        literal = pattern.replace("\\", "/")
        return lambda text: text == literal or text.replace("\\", "/") == literal
    fullmatch = _compile(pattern).fullmatch
    return lambda text: fullmatch(text.replace("\\", "/")) is not None


def expand_home(pattern: str, home: str | None = None) -> str:
    """``~`` / ``$HOME`` alone or as a leading ``~/`` / ``$HOME/`` become the home directory."""
    home = home if home is not None else os.path.expanduser("~")
    if pattern in ("~", "$HOME"):
        return home
    for prefix in ("~/", "$HOME/"):
        if pattern.startswith(prefix):
            return home.rstrip("/") + "/" + pattern[len(prefix) :]
    return pattern


# ---------------------------------------------------------------------------------------------
# rules from config
# ---------------------------------------------------------------------------------------------


def rules_from_config(value: Any, source: str, home: str | None = None) -> list[Rule]:
    """Rules from a ``[permission]``-shaped value: a bare action, or ``{permission: action |
    {pattern: action}}`` in order. Raises ValueError naming the key for a bad action.
    ``home`` is the home directory for ``~`` in patterns (default: the process's)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [Rule("*", "*", _action(value, ""), source)]
    if not isinstance(value, Mapping):
        raise ValueError(f"permission: expected an action or a table, got {type(value).__name__}")
    rules: list[Rule] = []
    for key, entry in value.items():
        if isinstance(entry, str):
            rules.append(Rule(key, "*", _action(entry, key), source))
        elif isinstance(entry, Mapping):
            for pattern, action in entry.items():
                rules.append(
                    Rule(
                        key,
                        expand_home(pattern, home),
                        _action(action, f"{key}.{pattern}"),
                        source,
                    )
                )
        else:
            raise ValueError(f"permission.{key}: expected an action or a table of patterns")
    return rules


def rules_from_legacy_tools(
    tools: Mapping[str, bool], source: str, permission_of: Callable[[str], str]
) -> list[Rule]:
    """Legacy ``[tools] name = true|false`` -> allow/deny rules for the permission each switch
    governs: ``permission_of(name)``, the tool's own permission (the tools that edit files:
    ``edit``; see :meth:`hookcode.registry.Registry.permission_of`)."""
    rules: list[Rule] = []
    for name, enabled in tools.items():
        rules.append(Rule(permission_of(name), "*", "allow" if enabled else "deny", source))
    return rules


def _action(value: Any, key: str) -> Action:
    if value not in ACTIONS:
        where = f"permission.{key}" if key else "permission"
        raise ValueError(f"{where}: {value!r} is not an action (allow, deny or ask)")
    return value  # type: ignore[return-value]


# ---------------------------------------------------------------------------------------------
# evaluation
# ---------------------------------------------------------------------------------------------


@dataclass
class PatternDecision:
    pattern: str
    action: Action
    rule: Rule | None  # the rule that decided; None = nothing matched (ask)


@dataclass
class Decision:
    action: Action
    patterns: list[PatternDecision]

    @property
    def rules(self) -> list[Rule]:
        return [p.rule for p in self.patterns if p.rule is not None]


#: how strict an action is: ``tighten`` rules only ever move a decision up this scale
_STRICTNESS = {"allow": 0, "ask": 1, "deny": 2}


class Ruleset:
    """The effective rules of one agent in one session, approvals kept apart.

    ``approvals`` may be given as ``load_approvals``, a function called the first time they
    are needed: only a pattern the rules leave at ``ask`` looks at them, so a call the rules
    allow never reads the remembered approvals from the store.

    ``tighten`` holds rules that may only make a decision stricter (the deny and ask rules of
    an untrusted folder's project config): their own last match decides among them, and it
    replaces the decision of ``rules`` only when it is stricter (deny > ask > allow)."""

    __slots__ = ("_approvals", "_load_approvals", "rules", "tighten")

    def __init__(
        self,
        rules: list[Rule] | None = None,
        approvals: list[Rule] | None = None,
        *,
        load_approvals: Callable[[], list[Rule]] | None = None,
        tighten: list[Rule] | None = None,
    ) -> None:
        self.rules: list[Rule] = rules if rules is not None else []
        self.tighten: list[Rule] = tighten if tighten is not None else []
        self._approvals = approvals
        self._load_approvals = load_approvals

    @property
    def approvals(self) -> list[Rule]:
        if self._approvals is None:
            load, self._load_approvals = self._load_approvals, None
            self._approvals = load() if load is not None else []
        return self._approvals

    @approvals.setter
    def approvals(self, value: list[Rule]) -> None:
        self._approvals, self._load_approvals = value, None

    def __repr__(self) -> str:
        tighten = f", tighten={self.tighten!r}" if self.tighten else ""
        return f"Ruleset(rules={self.rules!r}, approvals={self.approvals!r}{tighten})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Ruleset):
            return NotImplemented
        return (self.rules, self.approvals, self.tighten) == (
            other.rules,
            other.approvals,
            other.tighten,
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass it was

    def last_match(self, permission: str, pattern: str) -> Rule | None:
        for rule in reversed(self.rules):
            if wildcard_match(rule.permission, permission) and wildcard_match(
                rule.pattern, pattern
            ):
                return rule
        return None

    def decide_one(self, permission: str, pattern: str) -> PatternDecision:
        rule = self.last_match(permission, pattern)
        action: Action = rule.action if rule is not None else "ask"
        if self.tighten:
            stricter = _last_match(self.tighten, permission, pattern)
            if stricter is not None and _STRICTNESS[stricter.action] > _STRICTNESS[action]:
                rule, action = stricter, stricter.action
        if action == "ask":
            for approval in reversed(self.approvals):
                if wildcard_match(approval.permission, permission) and wildcard_match(
                    approval.pattern, pattern
                ):
                    return PatternDecision(pattern, "allow", approval)
        return PatternDecision(pattern, action, rule)

    def decider(self, permission: str) -> Callable[[str], Action]:
        """``decide_one(permission, pattern).action`` for many patterns at once: the rules of
        ``permission`` are picked and compiled once, so a tool can judge thousands of paths
        (read rules in grep, glob and list). An ``ask`` still looks at the approvals."""
        compiled: list[tuple[Callable[[str], bool] | None, Action]] = []
        for rule in reversed(self.rules):
            if not wildcard_match(rule.permission, permission):
                continue
            if rule.pattern == "*":
                compiled.append((None, rule.action))  # matches everything: nothing before counts
                break
            compiled.append((_matcher(rule.pattern), rule.action))

        def decide(pattern: str) -> Action:
            action: Action = "ask"
            for match, rule_action in compiled:
                if match is None or match(pattern):
                    action = rule_action
                    break
            if action == "ask":
                return self.decide_one(permission, pattern).action  # remembered approvals
            return action

        return decide

    def evaluate(self, permission: str, patterns: Iterable[str]) -> Decision:
        """Deny if any pattern is denied, else ask if any asks, else allow (no patterns: allow)."""
        decisions: list[PatternDecision] = []
        overall: Action = "allow"
        for pattern in patterns:
            decision = self.decide_one(permission, pattern)
            decisions.append(decision)
            if decision.action == "deny":
                return Decision("deny", decisions)
            if decision.action == "ask":
                overall = "ask"
        return Decision(overall, decisions)

    def disabled(self, permission: str) -> bool:
        """A tool is hidden when the last rule matching its permission (pattern ignored) is
        a deny with pattern ``*``, among ``rules`` or among ``tighten``."""
        for rule in reversed(self.rules):
            if wildcard_match(rule.permission, permission):
                if rule.pattern == "*" and rule.action == "deny":
                    return True
                break
        return bool(self.tighten) and _disables(self.tighten, permission)

    def matching(self, permission: str) -> list[Rule]:
        """The rules whose permission matches (for messages)."""
        return [r for r in self.rules + self.tighten if wildcard_match(r.permission, permission)]


def _last_match(rules: list[Rule], permission: str, pattern: str) -> Rule | None:
    for rule in reversed(rules):
        if wildcard_match(rule.permission, permission) and wildcard_match(rule.pattern, pattern):
            return rule
    return None


def _disables(rules: list[Rule], permission: str) -> bool:
    for rule in reversed(rules):
        if wildcard_match(rule.permission, permission):
            return rule.pattern == "*" and rule.action == "deny"
    return False


#: how many rules a deny message lists at most (the model reads them)
DENY_MESSAGE_RULES = 24


def deny_message(rules: list[Rule]) -> str:
    """The model-visible text of a deny, listing the rules of the permission (reference:
    "some of the relevant rules"). Past :data:`DENY_MESSAGE_RULES` (the shell policy's
    default rules alone are a hundred), the denying rules and the last ones, the user's own,
    are listed and the rest counted."""
    shown = list(rules)
    if len(shown) > DENY_MESSAGE_RULES:
        keep = {id(r) for r in shown if r.action == "deny"}
        keep |= {id(r) for r in shown[-DENY_MESSAGE_RULES:]}
        shown = [r for r in shown if id(r) in keep][-DENY_MESSAGE_RULES:]
    relevant = [
        {"permission": r.permission, "pattern": r.pattern, "action": r.action} for r in shown
    ]
    more = len(rules) - len(shown)
    return (
        "The user has specified a rule which prevents you from using this specific tool call. "
        f"Here are some of the relevant rules {json.dumps(relevant)}"
        + (f" (and {more} more)" if more else "")
    )


def protected_vote(ruleset: Ruleset, permission: str, protected: Mapping[str, str]) -> Vote | None:
    """Core's vote on a request that writes protected paths (``{pattern: entry}``, see
    :mod:`hookcode.protected`): ``ask`` unless, for every such pattern, the rule that allows
    it names the entry itself; a deny is left to the rules. None when nothing is left to ask."""
    from hookcode.protected import names_entry

    for pattern, entry in protected.items():
        decision = ruleset.decide_one(permission, pattern)
        if decision.action == "deny":
            continue
        rule = decision.rule
        if decision.action == "allow" and rule is not None and names_entry(rule.pattern, entry):
            continue
        # an "always" reply to such a request remembered this very path: a rule naming it
        # (the rules' allow above it would otherwise keep it from being looked at)
        if any(
            wildcard_match(a.permission, permission)
            and wildcard_match(a.pattern, pattern)
            and names_entry(a.pattern, entry)
            for a in ruleset.approvals
        ):
            continue
        return Vote(
            "ask",
            f"{pattern} is a protected path ({entry}: it configures hookcode or runs code); "
            f"only a rule naming it allows writing it without asking",
        )
    return None


def combine_votes(votes: Iterable[Vote]) -> Vote:
    """Deny beats ask beats allow; no vote at all is ask."""
    seen = list(votes)
    for action in ("deny", "ask", "allow"):
        for vote in seen:
            if vote.action == action:
                return vote
    return Vote("ask", "no policy voted")


def as_vote(value: Any) -> Vote | None:
    if value is None:
        return None
    if isinstance(value, Vote):
        return value
    if isinstance(value, str) and value in ACTIONS:
        return Vote(value)  # type: ignore[arg-type]
    raise TypeError(
        f"a permission_ask vote must be 'allow', 'deny', 'ask' or a Vote, not {value!r}"
    )


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


class PermissionService:
    """Runs ``ctx.ask``: votes, then (for ``ask``) the prompt, remembering ``always`` replies."""

    def __init__(self, runtime: Runtime) -> None:
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
            "permission_ask", request=request
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
        ctx: ToolContext,
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
        ctx: ToolContext,
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

    async def wait(self, ctx: ToolContext, pending: tuple[PermissionRequest, int]) -> None:
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
                    runtime.events.publish(
                        "permission.replied",
                        session_id=ctx.session_id,
                        request_id=request.id,
                        reply="reject",
                        scope=None,
                        feedback=None,
                        front_end=None,
                        reason="rejected together with an earlier request of this session",
                    )
                    raise PermissionRejected()
                # an "always" given while we waited may cover this request now
                request.ruleset = runtime.ruleset(ctx.agent, ctx.session_id)
                request.votes.clear()
                vote = self.vote(request)
                if vote.action == "allow":
                    # resolved by an "always" reply given meanwhile (§5: an event each)
                    runtime.events.publish(
                        "permission.replied",
                        session_id=ctx.session_id,
                        request_id=request.id,
                        reply="always",
                        scope=None,
                        feedback=None,
                        front_end=None,
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
                runtime.events.publish(
                    "permission.replied",
                    session_id=ctx.session_id,
                    request_id=request.id,
                    reply=reply.kind,
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

    async def _prompt(
        self, request: PermissionRequest, ctx: ToolContext
    ) -> tuple[str | None, Reply]:
        """The front end that answered (None: nobody, so reject) and its reply."""
        plugins = self.runtime.plugins
        if not plugins.has_impls("permission_prompt"):
            return None, Reply("reject")

        def first_answer() -> tuple[str | None, Any]:
            for plugin, value, error in plugins.call_each_outcomes(
                "permission_prompt", request=request
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
                project=str(self.runtime.worktree),
                permission=request.permission,
                pattern=pattern,
                session_id=session_id,
            )
