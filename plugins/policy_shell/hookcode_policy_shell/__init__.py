"""policy_shell: a shell-aware permission policy for the ``bash`` permission.

* ``shell_analyze(command, cwd)`` parses a command with tree-sitter-bash (imported on first
  use) and reports the simple commands it runs, their "always" prefixes, the directories
  outside the project it touches, and whether anything could not be seen through
  (analyze.py has the details). The bash tool asks ``external_directory`` for the outside
  directories and ``bash`` with the commands as patterns; ``policy_rules`` judges each.
* The ``strict`` profile (``[tool.bash] profile = "strict"``): the Go reference's lists as
  default rules (``permission_defaults``), so explicit ``[permission]`` rules still win:
  network and browser commands are denied, read-only commands allowed (reference/
  permissions.md §11, "ours"). Rules match case-sensitively; ``permission_ask`` also denies a
  banned command spelled in another case (``CURL``) unless a rule of the user allows it, and
  votes ``ask`` when a strict allow rule would let a command write a file through an output
  redirection.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

from hookcode import hookimpl

if TYPE_CHECKING:  # imported where used: start-up does not load the permission module
    from hookcode.permission import PermissionRequest, Rule, ShellAnalysis, Vote

__all__ = [
    "STRICT_ALLOW",
    "STRICT_ASK",
    "STRICT_BANNED",
    "STRICT_SOURCE",
    "permission_ask",
    "permission_defaults",
    "profile_of",
    "shell_analyze",
    "strict_rules",
]

STRICT_SOURCE = "plugin:policy_shell (strict profile)"

#: the Go reference's banned commands, plus the names httpie, netcat and Chrome install as
STRICT_BANNED = [
    "alias",
    "curl",
    "curlie",
    "wget",
    "axel",
    "aria2c",
    "nc",
    "telnet",
    "lynx",
    "w3m",
    "links",
    "httpie",
    "xh",
    "http-prompt",
    "chrome",
    "firefox",
    "safari",
    "http",
    "https",
    "ncat",
    "netcat",
    "google-chrome",
    "chromium",
    "chromium-browser",
]

#: the read-only part of the Go reference's safe list (``N *`` also matches bare ``N``)
STRICT_ALLOW = [
    *(
        f"{name} *"
        for name in [
            "ls",
            "echo",
            "pwd",
            "date",
            "cal",
            "uptime",
            "whoami",
            "id",
            "groups",
            "printenv",
            "which",
            "type",
            "whereis",
            "whatis",
            "uname",
            "hostname",
            "df",
            "du",
            "free",
            "ps",
        ]
    ),
    *(
        f"git {sub} *"
        for sub in (
            [
                "status",
                "log",
                "diff",
                "show",
                "ls-files",
                "rev-parse",
                "describe",
                "blame",
                "grep",
                "shortlog",
            ]
        )
    ),
    # branch / tag / remote: bare or listing forms only
    "git branch",
    *(
        f"git branch {opt}"
        for opt in [
            "-a",
            "-r",
            "-v",
            "-vv",
            "-av",
            "-va",
            "--all",
            "--remotes",
            "--verbose",
            "--show-current",
        ]
    ),
    "git branch --list *",
    "git branch -l *",
    "git tag",
    "git tag -l *",
    "git tag --list *",
    "git remote",
    "git remote -v",
    "git remote --verbose",
    "git remote get-url *",
    "git config --get *",
    "git config --get-all *",
    "git config --get-regexp *",
    "git config --list *",
    "git config -l *",
    "go version *",
    "go list *",
    "go doc *",
    "go vet *",
    "go env *",
]

#: exceptions to the allow rules (later rules win): options that write files or run programs
STRICT_ASK = [
    "git * --output*",
    "git grep *-O*",
    "git grep *--open-files-in-pager*",
    "git * --ext-diff*",
    "go env *-w*",
    "go env *-u*",
    "go vet *-vettool*",
    "go list *-toolexec*",
    "go vet *-toolexec*",
]


def strict_rules() -> list[Rule]:
    """The strict profile as rules: everything asks, banned commands are denied, read-only
    ones allowed, then the asks that override those allows (the last match wins)."""
    from hookcode.permission import Rule

    return [
        Rule("bash", "*", "ask", STRICT_SOURCE),
        *(Rule("bash", f"{name} *", "deny", STRICT_SOURCE) for name in STRICT_BANNED),
        *(Rule("bash", pattern, "allow", STRICT_SOURCE) for pattern in STRICT_ALLOW),
        *(Rule("bash", pattern, "ask", STRICT_SOURCE) for pattern in STRICT_ASK),
    ]


def profile_of(config: Any) -> str | None:
    """``[tool.bash] profile``: from the bash tool's validated section when it has one, else
    from the raw config (the bash tool may not be loaded)."""
    if config is None:
        return None
    section = config.section("tool.bash") if hasattr(config, "section") else None
    value = getattr(section, "profile", None) if section is not None else None
    if value is None:
        raw = getattr(config, "raw", None) or {}
        tool = raw.get("tool") if isinstance(raw, dict) else None
        bash = tool.get("bash") if isinstance(tool, dict) else None
        value = bash.get("profile") if isinstance(bash, dict) else None
    return value if isinstance(value, str) else None


@hookimpl
def shell_analyze(command: str, cwd: str) -> ShellAnalysis:
    from hookcode_policy_shell.analyze import analyze

    return analyze(command, cwd)


@hookimpl
def permission_defaults(agent: Any, config: Any) -> list[Rule]:
    if profile_of(config) == "strict":
        return strict_rules()
    return []


@lru_cache(maxsize=1024)
def _writes_output(pattern: str) -> bool:
    from hookcode_policy_shell.analyze import writes_output

    return writes_output(pattern)


@hookimpl
def permission_ask(request: PermissionRequest) -> Vote | None:
    """Only for ``bash`` requests whose rules include the strict profile."""
    if request.permission != "bash":
        return None
    ruleset = request.ruleset
    if not any(rule.source == STRICT_SOURCE for rule in ruleset.rules):
        return None
    for pattern in request.patterns:
        decision = ruleset.decide_one("bash", pattern)
        rule = decision.rule
        if (
            decision.action == "allow"
            and rule is not None
            and rule.source == STRICT_SOURCE
            and _writes_output(pattern)
        ):
            from hookcode.permission import Vote

            return Vote(
                "ask",
                f"{pattern!r} redirects output to a file: the strict profile never allows "
                "that by itself",
            )
        name, space, rest = pattern.partition(" ")
        lowered = name.lower()
        if lowered != name and lowered in STRICT_BANNED:
            other = ruleset.decide_one("bash", lowered + space + rest)
            if (
                other.action == "deny"
                and other.rule is not None
                and other.rule.source == STRICT_SOURCE
            ):
                from hookcode.permission import Vote

                return Vote(
                    "deny",
                    f"{name!r} is a banned command in the strict profile (network and "
                    "browser commands are not allowed)",
                )
    return None
