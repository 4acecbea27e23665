"""The votes of policies on a permission request (``permission_ask``): a :class:`Vote`, how
votes combine (deny beats ask beats allow), and core's own vote on protected paths."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hookcode.permission.rules import ACTIONS, Action, Ruleset, wildcard_match

__all__ = ["Vote", "as_vote", "combine_votes", "protected_vote"]


@dataclass
class Vote:
    """A policy's vote with an optional reason (a deny's reason is what the model reads)."""

    action: Action
    reason: str | None = None


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
