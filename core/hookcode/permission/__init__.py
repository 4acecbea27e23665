"""Permissions: rules, wildcard matching, evaluation, votes and the ask/reply flow, in parts
by what each owns.

- :mod:`hookcode.permission.rules`: rules, wildcards, :class:`Ruleset` and its evaluation;
- :mod:`hookcode.permission.votes`: a policy's :class:`Vote` and how votes combine;
- :mod:`hookcode.permission.service`: the request, the reply and the ask/reply flow
  (:class:`PermissionService`); how the rules of a call are ordered is described there.

Import the names from here (``from hookcode.permission import Rule``); the submodules import
each other directly, never this package.
"""

from __future__ import annotations

from hookcode.permission.rules import (
    ACTIONS,
    DENY_MESSAGE_RULES,
    Action,
    Decision,
    PatternDecision,
    Rule,
    Ruleset,
    deny_message,
    expand_home,
    rules_from_config,
    rules_from_legacy_tools,
    wildcard_match,
)
from hookcode.permission.service import (
    Asker,
    PermissionHost,
    PermissionRequest,
    PermissionService,
    Reply,
)
from hookcode.permission.votes import Vote, as_vote, combine_votes, protected_vote
from hookcode.shell_analysis import ShellAnalysis

__all__ = [
    "ACTIONS",
    "DENY_MESSAGE_RULES",
    "Action",
    "Asker",
    "Decision",
    "PatternDecision",
    "PermissionHost",
    "PermissionRequest",
    "PermissionService",
    "Reply",
    "Rule",
    "Ruleset",
    "ShellAnalysis",
    "Vote",
    "as_vote",
    "combine_votes",
    "deny_message",
    "expand_home",
    "protected_vote",
    "rules_from_config",
    "rules_from_legacy_tools",
    "wildcard_match",
]
