"""What Claude Code's hooks expect: its tool names and its snake_case input keys."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["CLAUDE_NAMES", "claude_name", "from_claude_input", "to_claude_input"]

#: hookcode tool -> Claude Code tool, where Claude Code has one
CLAUDE_NAMES = {
    "bash": "Bash",
    "read": "Read",
    "write": "Write",
    "edit": "Edit",
    "multiedit": "MultiEdit",
    "glob": "Glob",
    "grep": "Grep",
    "list": "LS",
    "webfetch": "WebFetch",
    "websearch": "WebSearch",
    "task": "Task",
    "todowrite": "TodoWrite",
}

_MISSING = object()


def claude_name(tool: str) -> str:
    """Claude Code's name for ``tool``; hookcode's own name when Claude Code has none."""
    return CLAUDE_NAMES.get(tool, tool)


def _snake(key: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower()


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def to_claude_input(value: Any) -> Any:
    """Our arguments with a snake_case twin beside every camelCase key (``filePath`` and
    ``file_path``), at every depth (``edits[].old_string``)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out[key] = to_claude_input(item)
        for key in value:
            twin = _snake(key) if isinstance(key, str) else key
            if twin != key and twin not in value:
                out[twin] = out[key]
        return out
    if isinstance(value, list):
        return [to_claude_input(item) for item in value]
    return value


def from_claude_input(updated: Any, current: Any) -> Any:
    """A hook's ``updatedInput`` in our keys, ``current`` (our arguments) as the template:
    a snake_case key maps back to the camelCase one we use; when both spellings of a key come
    back (a hook echoing the input it got), the one the hook changed wins."""
    if isinstance(updated, dict) and isinstance(current, dict):
        candidates: dict[str, list[Any]] = {}
        for key, item in updated.items():
            ours = key
            if key not in current and isinstance(key, str) and _camel(key) in current:
                ours = _camel(key)
            template = current.get(ours)
            candidates.setdefault(ours, []).append(from_claude_input(item, template))
        out: dict[str, Any] = {}
        for key, values in candidates.items():
            before = current.get(key, _MISSING)
            changed = [v for v in values if v != before]
            out[key] = changed[0] if changed else values[0]
        return out
    if isinstance(updated, list) and isinstance(current, list):
        # item i against our item i; extra items against the first (for the key spellings)
        first = next((item for item in current if isinstance(item, dict)), None)
        return [
            from_claude_input(item, current[i] if i < len(current) else first)
            for i, item in enumerate(updated)
        ]
    return updated
