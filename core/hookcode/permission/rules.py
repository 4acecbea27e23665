"""Permission rules: what a rule is, wildcard matching, rules from config, and evaluating a
:class:`Ruleset` (the LAST matching rule decides; no match means ``ask``; see
:mod:`hookcode.permission` for where the rules come from and who decides)."""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "ACTIONS",
    "DENY_MESSAGE_RULES",
    "Action",
    "Decision",
    "PatternDecision",
    "Rule",
    "Ruleset",
    "deny_message",
    "expand_home",
    "rules_from_config",
    "rules_from_legacy_tools",
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
