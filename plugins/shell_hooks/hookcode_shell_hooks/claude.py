"""What Claude Code's hooks expect: its tool names and its tool inputs.

Names: a built-in tool that Claude Code also has goes by Claude Code's name (``bash`` ->
``Bash``); an MCP tool goes by ``mcp__<server>__<tool>`` as Claude Code names it (the server's
configured name and the tool's own name, each with every character outside
``[a-zA-Z0-9_-]`` replaced by ``_``); any other tool keeps its name.

Inputs (``tool_input``) are what Claude Code sends for its tool: ``file_path`` (absolute) beside
our ``filePath``, the snake_case twin of every camelCase key at every depth (``old_string``,
``replace_all``), Grep's ``glob`` for our ``include``, and no ``null`` for an optional argument
that was not given (Claude Code leaves such keys out: a bash call without ``timeout`` or
``workdir`` has no such key). Paths a built-in tool takes are made absolute against the working
directory, as Claude Code's tools receive them.

An MCP tool is recognised by what it declares (``hookcode_mcp``'s ``McpTool``): its
``server.name`` (the configured server name) and its ``remote_name`` (the tool's name on the
server). Both are read, never imported: this plugin does not depend on the MCP plugin.
"""

from __future__ import annotations

import os
import re
from typing import Any

__all__ = [
    "CLAUDE_NAMES",
    "claude_name",
    "from_claude_input",
    "mcp_name",
    "to_claude_input",
]

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

#: per built-in tool: the top-level arguments that hold a path (made absolute for the hooks)
PATH_ARGUMENTS: dict[str, tuple[str, ...]] = {
    "read": ("filePath",),
    "write": ("filePath",),
    "edit": ("filePath",),
    "multiedit": ("filePath",),
    "lsp": ("filePath",),
    "glob": ("path",),
    "grep": ("path",),
    "list": ("path",),
    "bash": ("workdir",),
}

#: per built-in tool: our argument -> Claude Code's, where the names differ beyond their case
RENAMED: dict[str, dict[str, str]] = {"grep": {"include": "glob"}}

_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
_MISSING = object()


def mcp_name(tool: Any) -> str | None:
    """``mcp__<server>__<tool>`` for an MCP tool (one that declares ``server.name`` and
    ``remote_name``), else None."""
    remote = getattr(tool, "remote_name", None)
    server = getattr(getattr(tool, "server", None), "name", None)
    if not isinstance(remote, str) or not isinstance(server, str):
        return None
    return f"mcp__{_UNSAFE.sub('_', server)}__{_UNSAFE.sub('_', remote)}"


def claude_name(name: str, tool: Any = None) -> str:
    """Claude Code's name for the tool called ``name`` (``tool``: the tool object, when known,
    for the name of an MCP tool); hookcode's own name when Claude Code has none."""
    if tool is not None:
        found = mcp_name(tool)
        if found is not None:
            return found
    return CLAUDE_NAMES.get(name, name)


def _snake(key: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower()


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _absolute(path: str, cwd: str) -> str:
    expanded = os.path.expanduser(path)
    return os.path.normpath(os.path.join(cwd, expanded))


def to_claude_input(value: Any, tool: str | None = None, cwd: str | None = None) -> Any:
    """``value`` (the arguments of ``tool``) as a Claude Code hook reads them: ``None``
    values left out, a snake_case twin beside every camelCase key (``filePath`` and
    ``file_path``) at every depth, Claude Code's name beside ours where it differs (Grep's
    ``glob``), and, with ``cwd``, a built-in tool's paths absolute."""
    if isinstance(value, dict):
        value = dict(value)
        if tool is not None and cwd is not None:
            for key in PATH_ARGUMENTS.get(tool, ()):
                if isinstance(value.get(key), str) and value[key]:
                    value[key] = _absolute(value[key], cwd)
        out: dict[str, Any] = {}
        for key, item in value.items():
            if item is not None:
                out[key] = to_claude_input(item)
        for key in list(out):
            twin = _snake(key) if isinstance(key, str) else key
            if twin != key and twin not in value:
                out[twin] = out[key]
        if tool is not None:
            for ours, theirs in RENAMED.get(tool, {}).items():
                if ours in out and theirs not in value:
                    out[theirs] = out[ours]
        return out
    if isinstance(value, list):
        return [to_claude_input(item) for item in value]
    return value


def from_claude_input(updated: Any, current: Any, tool: str | None = None) -> Any:
    """A hook's ``updatedInput`` in our keys, ``current`` (our arguments of ``tool``) as the
    template: a snake_case key maps back to the camelCase one we use, Claude Code's name of an
    argument to ours (Grep's ``glob`` -> ``include``); when both spellings of a key come back
    (a hook echoing the input it got), the one the hook changed wins."""
    if isinstance(updated, dict) and isinstance(current, dict):
        renamed = {theirs: ours for ours, theirs in RENAMED.get(tool or "", {}).items()}
        candidates: dict[str, list[Any]] = {}
        for key, item in updated.items():
            ours = key
            if key not in current and isinstance(key, str):
                if key in renamed:
                    ours = renamed[key]
                elif _camel(key) in current:
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
