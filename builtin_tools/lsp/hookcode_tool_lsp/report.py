"""The diagnostics text appended to the file tools' outputs (reference/tools.md §23)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "MAX_OTHER_FILES",
    "MAX_PER_FILE",
    "block",
    "errors",
    "pretty",
    "render_apply_patch",
    "render_edit",
    "render_write",
]

#: diagnostics shown per file
MAX_PER_FILE = 20
#: other files' blocks after a write
MAX_OTHER_FILES = 5
SEVERITY = {1: "ERROR", 2: "WARN", 3: "INFO", 4: "HINT"}


def pretty(diagnostic: Mapping[str, Any]) -> str:
    """``ERROR [<line>:<col>] <message>`` (1-based)."""
    severity = SEVERITY.get(diagnostic.get("severity") or 1, "ERROR")
    start = (diagnostic.get("range") or {}).get("start") or {}
    line = int(start.get("line", 0)) + 1
    col = int(start.get("character", 0)) + 1
    return f"{severity} [{line}:{col}] {diagnostic.get('message', '')}"


def errors(diagnostics: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Only errors: severity 1 (a missing severity counts as an error, as the reference)."""
    return [d for d in diagnostics if (d.get("severity") or 1) == 1]


def block(path: str, diagnostics: Sequence[Mapping[str, Any]]) -> str:
    """``<diagnostics file="ABS">`` with up to 20 lines, then ``... and <n> more``."""
    shown = "\n".join(pretty(d) for d in diagnostics[:MAX_PER_FILE])
    more = len(diagnostics) - MAX_PER_FILE
    suffix = f"\n... and {more} more" if more > 0 else ""
    return f'<diagnostics file="{path}">\n{shown}{suffix}\n</diagnostics>'


def render_edit(path: str, files: Mapping[str, Sequence[Mapping[str, Any]]]) -> str:
    """What edit and multiedit append: this file's errors only."""
    found = errors(files.get(path, []))
    if not found:
        return ""
    return "\n\nLSP errors detected in this file, please fix:\n" + block(path, found)


def render_write(path: str, files: Mapping[str, Sequence[Mapping[str, Any]]]) -> str:
    """What write appends: this file's errors, then up to 5 other files with errors."""
    out = render_edit(path, files)
    others = []
    for other, diagnostics in files.items():
        if other == path:
            continue
        found = errors(diagnostics)
        if found:
            others.append(block(other, found))
        if len(others) == MAX_OTHER_FILES:
            break
    if others:
        out += "\n\nLSP errors detected in other files:\n" + "\n\n".join(others)
    return out


def render_apply_patch(
    changed: Iterable[tuple[str, str]], files: Mapping[str, Sequence[Mapping[str, Any]]]
) -> str:
    """What apply_patch appends: one block per changed file with errors; ``changed`` is
    (absolute path, worktree-relative path) in hunk order."""
    out = ""
    for path, relative in changed:
        found = errors(files.get(path, []))
        if found:
            out += f"\n\nLSP errors detected in {relative}, please fix:\n" + block(path, found)
    return out
