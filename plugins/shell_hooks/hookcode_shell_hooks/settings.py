"""The ``[hooks]`` and ``[shell_hooks]`` config sections (pydantic models, built on first use)
and :class:`Hook`, one configured hook whatever file it comes from."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

__all__ = ["EVENTS", "Hook", "hooks_model", "matches", "options_model", "valid_matcher"]

#: seconds a hook may run when its entry names no timeout (Claude Code's default)
DEFAULT_TIMEOUT = 60.0

#: the Claude Code events this plugin runs, in the order they are documented
EVENTS = ("PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop")

#: a matcher made only of names and ``|`` lists exact names (Claude Code's rule)
_SIMPLE = re.compile(r"^[A-Za-z0-9_|-]+$")


@dataclass(frozen=True)
class Hook:
    """One hook of one event: an ``[[hooks.EVENT]]`` entry or a command of a Claude Code
    settings file (``source`` names that file; None for hookcode's own config)."""

    command: str | list[str]
    matcher: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    source: str | None = None


@lru_cache(maxsize=1)
def hooks_model() -> type[Any]:
    """The model of ``[hooks]``: one list of entries per event."""
    from hookcode.tools import MAX_TIMEOUT_SECONDS
    from hookcode.trust import trusted_only
    from pydantic import BaseModel, ConfigDict, Field, field_validator

    class HookEntry(BaseModel):
        """One ``[[hooks.EVENT]]`` entry."""

        model_config = ConfigDict(extra="forbid", defer_build=True)

        matcher: str | None = Field(
            None,
            description=(
                "Tool names this hook runs for (PreToolUse, PostToolUse): names separated by "
                "'|' match exactly, anything else is a regular expression searched in the "
                "name; hookcode's names (bash, edit, fs_read_file) and Claude Code's (Bash, "
                "Edit, mcp__fs__read_file) both count. Empty, '*' or absent: every tool."
            ),
            examples=["Bash", "Write|Edit", "mcp__fs__.*"],
        )
        command: str | list[str] = Field(
            description=(
                "The hook: a string run by `sh -c`, or a list run as is. It reads the event "
                "as JSON on stdin, like a Claude Code hook."
            ),
            examples=["python3 .hookcode/hooks/check.py", ["./hooks/check", "--strict"]],
        )
        timeout: float = Field(
            DEFAULT_TIMEOUT,
            gt=0,
            le=MAX_TIMEOUT_SECONDS,
            description="Seconds before the hook is killed (reported, never blocking).",
        )

        @field_validator("matcher")
        @classmethod
        def _valid_regex(cls, value: str | None) -> str | None:
            problem = valid_matcher(value)
            if problem is not None:
                raise ValueError(problem)
            return value

        @field_validator("command")
        @classmethod
        def _not_empty(cls, value: str | list[str]) -> str | list[str]:
            if not value or (isinstance(value, str) and not value.strip()):
                raise ValueError("the command is empty")
            return value

    class HooksConfig(BaseModel):
        """Claude-Code-compatible shell hooks (``[[hooks.PreToolUse]]`` and the like). The
        project's own config of an untrusted folder cannot set any (each runs a command)."""

        model_config = ConfigDict(
            extra="forbid", defer_build=True, json_schema_extra=trusted_only()
        )

        PreToolUse: list[HookEntry] = Field(
            default_factory=list,
            description="Before a tool runs: may block it, decide its permission or rewrite its input.",
        )
        PostToolUse: list[HookEntry] = Field(
            default_factory=list,
            description="After a tool succeeded: may add feedback for the model to its output.",
        )
        UserPromptSubmit: list[HookEntry] = Field(
            default_factory=list,
            description="Before a user message is sent: may block it or add context.",
        )
        Stop: list[HookEntry] = Field(
            default_factory=list,
            description="When the agent loop ends (the model stopped asking for tools).",
        )

    return HooksConfig


@lru_cache(maxsize=1)
def options_model() -> type[Any]:
    """The model of ``[shell_hooks]``: the plugin's own options."""
    from hookcode.trust import trusted_only
    from pydantic import BaseModel, ConfigDict, Field

    class ShellHooksOptions(BaseModel):
        """Options of the shell hooks plugin."""

        model_config = ConfigDict(extra="forbid", defer_build=True)

        claude_settings: bool = Field(
            False,
            description=(
                "Also run the hooks of Claude Code's own settings files: ~/.claude/settings.json "
                "(or $CLAUDE_CONFIG_DIR/settings.json), then the project's "
                ".claude/settings.json and .claude/settings.local.json (those two only in a "
                "trusted folder), after the [[hooks.EVENT]] entries."
            ),
            examples=[True],
            json_schema_extra=trusted_only(keep=[False]),
        )

    return ShellHooksOptions


def valid_matcher(value: str | None) -> str | None:
    """What is wrong with a matcher (an invalid regular expression), or None."""
    if value and value != "*" and not _SIMPLE.match(value):
        try:
            re.compile(value)
        except re.error as exc:
            return f"invalid regular expression {value!r}: {exc}"
    return None


def matches(matcher: str | None, names: tuple[str, ...]) -> bool:
    """Whether a Claude Code matcher selects a tool known by any of ``names``."""
    if not matcher or matcher == "*":
        return True
    if _SIMPLE.match(matcher):
        wanted = set(matcher.split("|"))
        return any(name in wanted for name in names)
    pattern = _compiled(matcher)
    return any(pattern.search(name) for name in names)


@lru_cache(maxsize=256)
def _compiled(matcher: str) -> re.Pattern[str]:
    return re.compile(matcher)
