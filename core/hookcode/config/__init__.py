"""Layered TOML config, validated into pydantic models, in parts by what each owns.

- :mod:`hookcode.config.loading`: :func:`load_config` and :class:`Config`: the layers merged,
  trimmed for an untrusted project, validated (the order of the layers is described there);
- :mod:`hookcode.config.models`: core's models (:class:`CoreConfig` and its sections);
- :mod:`hookcode.config.validation`: which plugin claims which section, and the problems;
- :mod:`hookcode.config.tightening`: what a project file of an untrusted folder may set
  (:class:`Tightening`);
- :mod:`hookcode.config.agent_files`: Markdown agent files read into the ``[agent.NAME]``
  tables.

Finding, reading and merging the files is :mod:`hookcode.configfiles` (standard library only:
it runs before any plugin loads). Import the names from here (``from hookcode.config import
Config``); the submodules import each other directly, never this package.
"""

from __future__ import annotations

from hookcode.config.agent_files import load_agent_files, untrusted_agent_items
from hookcode.config.loading import Config, claimed_sections, json_schema, load_config
from hookcode.config.models import (
    Action,
    AgentConfig,
    CoreConfig,
    PermissionConfig,
    PermissionValue,
    PluginsConfig,
    ToolLimits,
    TruncationConfig,
)
from hookcode.config.tightening import Tightening, split_permission, untrusted_config_items
from hookcode.config.validation import OWN_SECTIONS
from hookcode.configfiles import Layer, config_paths, deep_merge

__all__ = [
    "OWN_SECTIONS",
    "Action",
    "AgentConfig",
    "Config",
    "CoreConfig",
    "Layer",
    "PermissionConfig",
    "PermissionValue",
    "PluginsConfig",
    "Tightening",
    "ToolLimits",
    "TruncationConfig",
    "claimed_sections",
    "config_paths",
    "deep_merge",
    "json_schema",
    "load_agent_files",
    "load_config",
    "split_permission",
    "untrusted_agent_items",
    "untrusted_config_items",
]
