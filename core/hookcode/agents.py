"""Agents: a name, a prompt, a model, a step limit, a mode, and default permission rules.

Agents come from the ``agent`` hook (the ``policy_rules`` plugin ships build, plan, general
and explore); ``[agent.NAME]`` config is applied on top, and ``disable = true`` removes one.
Markdown agent files (``.hookcode/agents/NAME.md``) are ``[agent.NAME]`` tables too: the
config reads them into its ``agent`` tables (:mod:`hookcode.config.agent_files`), so this
module, below the config, sees only the tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from hookcode.configfiles import project_dirs as project_dirs
from hookcode.configfiles import user_config_dir as user_config_dir
from hookcode.frontmatter import parse_frontmatter as parse_frontmatter

if TYPE_CHECKING:
    from hookcode.permission.rules import Rule

__all__ = ["AgentSpec", "Mode", "parse_frontmatter", "project_dirs", "user_config_dir"]

Mode = Literal["primary", "subagent", "all", "hidden"]


@dataclass
class AgentSpec:
    """A named agent.

    ``permission`` holds the agent's DEFAULT rules; the user's ``[agent.NAME.permission]``
    rules are kept apart (they come after the plugin defaults and ``[permission]``).
    """

    name: str
    description: str = ""
    mode: Mode = "all"
    prompt: str | None = None
    model: str | None = None
    steps: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    permission: list[Rule] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    plugin: str | None = None

    def with_config(self, cfg: Any) -> AgentSpec:
        """This agent with the non-permission fields of an ``[agent.NAME]`` table applied."""
        changes = {
            key: getattr(cfg, key)
            for key in ("description", "mode", "model", "prompt", "steps", "temperature", "top_p")
            if getattr(cfg, key, None) is not None
        }
        return replace(self, **changes)
