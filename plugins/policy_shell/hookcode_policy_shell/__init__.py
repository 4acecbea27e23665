"""policy_shell: a shell-aware permission policy for the ``bash`` permission.

* ``shell_analyze(command, cwd)`` parses a command with tree-sitter-bash (imported on first
  use) and reports the simple commands it runs, their "always" prefixes, the directories
  outside the project it touches, the files it reads and writes, the patterns proven
  read-only, and whether anything is outside the understood subset (analyze.py has the
  rule). The bash tool asks ``external_directory``, ``read`` and (for protected files)
  ``edit`` for those paths, and ``bash`` with the commands as patterns; ``policy_rules``
  judges each. ``permission_plan`` gives ``permissions explain bash`` those requests when
  the bash tool is not loaded.
* Default rules (``permission_defaults``): the read-only commands (``READ_ONLY_ALLOW``: ``ls``,
  ``cat``, ``grep``, ``git status``, ... the strict profile's safe list) are allowed for every
  agent that does not close ``bash``; the agents' own ``bash = ask`` covers the rest. A user's
  ``bash = "allow"`` in ``[permission]`` comes later and restores allow-all.
* ``permission_ask``: an allow that comes from those default rules holds only for a pattern the
  analysis proved read-only (no output redirection to a file, no option that writes or runs a
  program); otherwise the vote is ``ask``.
* The ``strict`` profile (``[tool.bash] profile = "strict"``) adds the Go reference's banned
  network and browser commands as deny rules (reference/permissions.md §11, "ours"); rules
  match case-sensitively, so ``permission_ask`` also denies a banned command spelled in
  another case (``CURL``) unless a rule of the user allows it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hookcode import hookimpl

if TYPE_CHECKING:  # imported where used: start-up does not load the permission module
    from hookcode.permission import PermissionRequest, Rule, ShellAnalysis, Vote
    from hookcode.shell import RequestPlan
    from hookcode.tools import ToolContext

__all__ = [
    "READ_ONLY_ALLOW",
    "READ_ONLY_GIT",
    "READ_ONLY_NAMES",
    "READ_ONLY_SOURCE",
    "STRICT_ALLOW",
    "STRICT_ASK",
    "STRICT_BANNED",
    "STRICT_SOURCE",
    "permission_ask",
    "permission_defaults",
    "permission_plan",
    "profile_of",
    "read_only_rules",
    "shell_analyze",
    "strict_rules",
]

READ_ONLY_SOURCE = "plugin:policy_shell (read-only commands)"
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

#: the commands the analysis can prove read-only: the read-only part of the Go reference's
#: safe list, then readers of ours (they show files, so the read rules apply to their
#: arguments); git and go come with their sub-commands below
READ_ONLY_NAMES = (
    "ls", "echo", "pwd", "date", "cal", "uptime", "whoami", "id", "groups", "printenv",
    "which", "type", "whereis", "whatis", "uname", "hostname", "df", "du", "free", "ps",
    "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "find", "tree", "stat",
    "file", "basename", "dirname", "realpath", "readlink", "diff", "cmp", "sort", "uniq",
    "cut", "tr", "nl", "tac", "md5sum", "sha1sum", "sha256sum", "sha512sum", "true", "false",
    "test", "[",
)  # fmt: skip

#: the git sub-commands that only read (others, like ``branch``, only in listing forms)
READ_ONLY_GIT = (
    "status", "log", "diff", "show", "ls-files", "rev-parse", "describe", "blame", "grep",
    "shortlog",
)  # fmt: skip

#: the read-only commands as rule patterns (``N *`` also matches bare ``N``); an allow by these
#: holds only for a command the analysis proved read-only (see ``permission_ask``)
STRICT_ALLOW = [
    *(f"{name} *" for name in READ_ONLY_NAMES),
    *(f"git {sub} *" for sub in READ_ONLY_GIT),
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
#: (the analysis finds these and more; the rules make ``permissions explain`` say so)
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


READ_ONLY_ALLOW = STRICT_ALLOW


def read_only_rules(source: str = READ_ONLY_SOURCE) -> list[Rule]:
    """The read-only commands as allow rules, then the asks that override those allows."""
    from hookcode.permission import Rule

    return [
        *(Rule("bash", pattern, "allow", source) for pattern in READ_ONLY_ALLOW),
        *(Rule("bash", pattern, "ask", source) for pattern in STRICT_ASK),
    ]


def strict_rules() -> list[Rule]:
    """The strict profile as rules: everything asks, banned commands are denied, read-only
    ones allowed, then the asks that override those allows (the last match wins)."""
    from hookcode.permission import Rule

    return [
        Rule("bash", "*", "ask", STRICT_SOURCE),
        *(Rule("bash", f"{name} *", "deny", STRICT_SOURCE) for name in STRICT_BANNED),
        *read_only_rules(STRICT_SOURCE),
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


@hookimpl(trylast=True)
def permission_plan(permission: str, pattern: str, ctx: ToolContext) -> RequestPlan | None:
    """``hookcode permissions explain bash COMMAND`` without the bash tool (which plans with
    the shell it would run, and comes first when it is loaded): the requests COMMAND needs in
    the working directory, read with ``[tool.bash] shell`` or bash."""
    if permission != "bash":
        return None
    from hookcode.shell import shell_plan

    section = ctx.config.section("tool.bash")
    shell = getattr(section, "shell", None) or "bash"
    return shell_plan(ctx, pattern, ctx.cwd, permission=permission, shell=shell)


@hookimpl
def permission_defaults(agent: Any, config: Any) -> list[Rule]:
    if profile_of(config) == "strict":
        return strict_rules()
    return read_only_rules()


#: the sources whose allow rules hold only for read-only commands
_READ_ONLY_SOURCES = (READ_ONLY_SOURCE, STRICT_SOURCE)


@hookimpl
def permission_ask(request: PermissionRequest) -> Vote | None:
    """For ``bash`` requests: an allow by the read-only default rules holds only for a pattern
    the analysis proved read-only; in the strict profile a banned command spelled in another
    case is denied."""
    if request.permission != "bash":
        return None
    ruleset = request.ruleset
    read_only = set(request.metadata.get("read_only") or ())
    strict = None
    for pattern in request.patterns:
        decision = ruleset.decide_one("bash", pattern)
        rule = decision.rule
        if (
            decision.action == "allow"
            and rule is not None
            and rule.source in _READ_ONLY_SOURCES
            and pattern not in read_only
        ):
            from hookcode.permission import Vote

            return Vote(
                "ask",
                f"{pattern!r} is not proven read-only (it may write a file or run another "
                "program): the default rules allow read-only commands only",
            )
        name, space, rest = pattern.partition(" ")
        lowered = name.lower()
        if lowered != name and lowered in STRICT_BANNED:
            if strict is None:
                strict = any(r.source == STRICT_SOURCE for r in ruleset.rules)
            if not strict:
                continue
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
