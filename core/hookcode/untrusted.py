"""What an untrusted folder keeps from running: the project config's trusted-only settings and
allow rules, its agent files' allow rules, and what plugins report through ``project_code``.

It sits above :mod:`hookcode.trust` (the trust store and :func:`~hookcode.trust.is_trusted`),
which needs neither the config nor the plugins."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hookcode.plugin_manager import HookCaller

__all__ = ["project_code_items", "untrusted_items"]


def untrusted_items(
    cwd: Path,
    worktree: Path,
    env: Mapping[str, str],
    plugins: HookCaller,
    *,
    claimed: Mapping[str, Any] | None = None,
) -> list[str]:
    """What an untrusted run in ``cwd`` would skip: the project config's trusted-only settings
    and allow rules, its agent files' allow rules, and what plugins report through
    ``project_code``. Reads files only; imports and runs nothing of the project."""
    from hookcode.config import claimed_sections, untrusted_agent_items, untrusted_config_items

    if claimed is None:
        claimed, _owners = claimed_sections(plugins)
    items = untrusted_config_items(cwd, worktree, claimed, env=env)
    items += untrusted_agent_items(cwd, worktree, env)
    items += project_code_items(plugins, cwd, worktree, env)
    return list(dict.fromkeys(items))


def project_code_items(
    plugins: HookCaller, cwd: Path, worktree: Path, env: Mapping[str, str]
) -> list[str]:
    """Every plugin's answer to ``project_code`` (a raising plugin is reported and skipped)."""
    items: list[str] = []
    for plugin, found in plugins.collect("project_code", cwd=cwd, worktree=worktree, env=env):
        if isinstance(found, str) or not isinstance(found, list | tuple):
            plugins.warn(f"plugin {plugin!r}: project_code must return a list of strings")
            continue
        items += [str(item) for item in found]
    return items
