"""The hooks of Claude Code's own settings files (``[shell_hooks] claude_settings = true``).

Claude Code reads hooks from ``~/.claude/settings.json`` (``$CLAUDE_CONFIG_DIR/settings.json``
when that is set), the project's ``.claude/settings.json`` and ``.claude/settings.local.json``,
in this nested shape::

    {"hooks": {"PreToolUse": [{"matcher": "Bash",
                               "hooks": [{"type": "command", "command": "...", "timeout": 30}]}]}}

This module reads the same files in that order (the project is the worktree: the git root,
where Claude Code is usually started) into :class:`~hookcode_shell_hooks.settings.Hook` lists.
The project's two files run commands that whoever wrote the repository chose: they count only
in a trusted folder (:mod:`hookcode.trust`); an untrusted folder's are skipped with one line
saying so. What hookcode cannot run is reported, one line per file, never silently dropped: an
event this plugin does not run (``SessionStart``, ``Notification``...), a hook whose ``type``
is not ``command`` (``prompt``, ``agent``, ``http``), a malformed entry or an invalid matcher.
``"disableAllHooks": true`` in any of the files turns off the hooks of all of them, as in
Claude Code.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from hookcode_shell_hooks.settings import DEFAULT_TIMEOUT, EVENTS, Hook, valid_matcher

__all__ = ["ClaudeSettings", "claude_hooks", "settings_files"]


def settings_files(env: Mapping[str, str], worktree: Path) -> list[tuple[Path, bool]]:
    """Claude Code's settings files in the order it reads them: (path, whether it is the
    project's own)."""
    config_dir = env.get("CLAUDE_CONFIG_DIR") or ""
    if config_dir:
        user = Path(os.path.expanduser(config_dir))
    else:
        user = Path(env.get("HOME") or os.path.expanduser("~")) / ".claude"
    project = worktree / ".claude"
    return [
        (user / "settings.json", False),
        (project / "settings.json", True),
        (project / "settings.local.json", True),
    ]


class ClaudeSettings:
    """The hooks found in Claude Code's settings files, by event, with what was skipped."""

    def __init__(self) -> None:
        self.hooks: dict[str, list[Hook]] = {event: [] for event in EVENTS}
        #: one line per problem (a file, an event, an entry that hookcode cannot run)
        self.problems: list[str] = []
        #: project files with hooks that an untrusted folder did not run
        self.untrusted: list[str] = []
        self.disabled_by: str | None = None

    def read(self, path: Path, label: str, *, run: bool) -> None:
        """Add the hooks of ``path`` (shown as ``label``); with ``run`` False (an untrusted
        project file) only note that it has some."""
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return
        except (OSError, UnicodeDecodeError) as exc:
            self.problems.append(f"{label}: cannot be read ({exc}); its hooks are skipped")
            return
        try:
            data = json.loads(text)
        except ValueError as exc:
            self.problems.append(f"{label}: not valid JSON ({exc}); its hooks are skipped")
            return
        if not isinstance(data, dict):
            self.problems.append(f"{label}: not a JSON object; its hooks are skipped")
            return
        hooks = data.get("hooks")
        if data.get("disableAllHooks") is True and run:
            self.disabled_by = label
        if hooks is None:
            return
        if not isinstance(hooks, dict):
            self.problems.append(f"{label}: `hooks` is not an object; skipped")
            return
        if not run:
            if hooks:
                self.untrusted.append(label)
            return
        unsupported = [event for event in hooks if event not in EVENTS]
        if unsupported:
            self.problems.append(
                f"{label}: hookcode does not run {', '.join(unsupported)} hooks (it runs "
                f"{', '.join(EVENTS)}); skipped"
            )
        for event in EVENTS:
            groups = hooks.get(event)
            if groups is None:
                continue
            if not isinstance(groups, list):
                self.problems.append(f"{label}: hooks.{event} is not a list; skipped")
                continue
            for i, group in enumerate(groups):
                self._group(f"{label}: hooks.{event}[{i}]", label, event, group)

    def _group(self, where: str, label: str, event: str, group: Any) -> None:
        if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
            self.problems.append(f"{where}: expected {{matcher, hooks: [...]}}; skipped")
            return
        matcher = group.get("matcher")
        if matcher is not None and not isinstance(matcher, str):
            self.problems.append(f"{where}: the matcher is not a string; skipped")
            return
        problem = valid_matcher(matcher)
        if problem is not None:
            self.problems.append(f"{where}: {problem}; skipped")
            return
        for j, hook in enumerate(group["hooks"]):
            entry = self._hook(f"{where}.hooks[{j}]", hook, matcher, label)
            if entry is not None:
                self.hooks[event].append(entry)

    def _hook(self, where: str, hook: Any, matcher: str | None, label: str) -> Hook | None:
        from hookcode.tools import MAX_TIMEOUT_SECONDS

        if not isinstance(hook, dict):
            self.problems.append(f"{where}: not an object; skipped")
            return None
        kind = hook.get("type", "command")
        if kind != "command":
            self.problems.append(
                f"{where}: hooks of type {kind!r} are not supported (only 'command'); skipped"
            )
            return None
        command = hook.get("command")
        if not isinstance(command, str) or not command.strip():
            self.problems.append(f"{where}: no command; skipped")
            return None
        timeout = hook.get("timeout", DEFAULT_TIMEOUT)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            self.problems.append(f"{where}: timeout {timeout!r} is not a positive number; skipped")
            return None
        return Hook(command, matcher, min(float(timeout), MAX_TIMEOUT_SECONDS), label)


def claude_hooks(
    env: Mapping[str, str], worktree: Path, *, trusted: bool, describe: Callable[[Path], str]
) -> ClaudeSettings:
    """Read every Claude Code settings file (``describe`` names a file in messages); the
    project's run only when ``trusted``."""
    found = ClaudeSettings()
    seen: set[str] = set()
    for path, project in settings_files(env, worktree):
        real = os.path.realpath(path)
        if real in seen:  # the project is the home directory: its file is the user's
            continue
        seen.add(real)
        found.read(path, describe(path), run=trusted or not project)
    if found.disabled_by is not None:
        found.hooks = {event: [] for event in EVENTS}
    return found
