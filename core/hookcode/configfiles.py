"""Finding and reading the config layers, with the standard library only.

What :mod:`hookcode.config` validates with pydantic is read here; :func:`plugin_selection`
runs before the plugins load (on every command, ``--help`` included), so this module must
stay free of pydantic and of the rest of hookcode. :mod:`hookcode.config` re-exports all of it.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hookcode.errors import ConfigError

__all__ = [
    "CONFIG_ENV",
    "CONTENT_ENV",
    "PERMISSION_ENV",
    "Layer",
    "PluginSelection",
    "config_paths",
    "deep_merge",
    "find_worktree",
    "plugin_selection",
    "project_dirs",
    "user_config_dir",
]

CONFIG_ENV = "HOOKCODE_CONFIG"
CONTENT_ENV = "HOOKCODE_CONFIG_CONTENT"
PERMISSION_ENV = "HOOKCODE_PERMISSION"


@dataclass
class Layer:
    """One config source that exists: a file path, or the name of an environment variable."""

    source: str
    data: dict[str, Any]


def find_worktree(cwd: Path) -> Path:
    """The git root of ``cwd`` (a directory holding ``.git``), else ``cwd`` itself."""
    for directory in (cwd, *cwd.parents):
        if (directory / ".git").exists():
            return directory
    return cwd


# ----------------------------------------------------------------------------- paths


def user_config_dir(env: Mapping[str, str]) -> Path:
    """``HOOKCODE_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/hookcode``, else ``~/.config/hookcode``
    (where the user's ``config.toml``, agents, tools and skills live)."""
    if env.get("HOOKCODE_CONFIG_DIR"):
        return Path(env["HOOKCODE_CONFIG_DIR"]).expanduser()
    xdg = env.get("XDG_CONFIG_HOME", "")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "hookcode"
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    return home / ".config" / "hookcode"


def project_dirs(cwd: Path, worktree: Path) -> list[Path]:
    """Directories from the worktree down to cwd (inclusive); just cwd if it is outside."""
    cwd, worktree = cwd.resolve(), worktree.resolve()
    try:
        relative = cwd.relative_to(worktree)
    except ValueError:
        return [cwd]
    dirs = [worktree]
    for part in relative.parts:
        dirs.append(dirs[-1] / part)
    return dirs


def _config_file_from_env(cwd: Path, env: Mapping[str, str]) -> Path | None:
    value = env.get(CONFIG_ENV, "")
    if not value:
        return None
    path = Path(value).expanduser()
    return path if path.is_absolute() else cwd / path


def config_paths(cwd: Path, worktree: Path, env: Mapping[str, str] = os.environ) -> list[Path]:
    """Every config file consulted, in layer order, whether it exists or not."""
    paths = [user_config_dir(env) / "config.toml"]
    for directory in project_dirs(cwd, worktree):
        paths += [directory / "hookcode.toml", directory / ".hookcode" / "config.toml"]
    env_file = _config_file_from_env(cwd, env)
    if env_file is not None:
        paths.append(env_file)
    return paths


# ----------------------------------------------------------------------------- reading


def _parse_toml(text: str, source: str) -> dict[str, Any]:
    import tomllib  # only when some config exists: this module runs on every start-up

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML: {exc}", file=source) from None


def _parse_json(text: str, source: str) -> Any:
    import json

    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"invalid JSON: {exc}", file=source) from None


def _read_file(path: Path) -> dict[str, Any]:
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not valid UTF-8: {exc}", file=str(path)) from None
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror or exc}", file=str(path)) from None
    return _parse_toml(text, str(path))


def _read_layers(
    cwd: Path, worktree: Path, env: Mapping[str, str]
) -> tuple[list[Path], list[Layer]]:
    candidates = config_paths(cwd, worktree, env)
    env_file = _config_file_from_env(cwd, env)
    if env_file is not None and not env_file.is_file():
        why = "is not a file" if env_file.exists() else "does not exist"
        raise ConfigError(f"the file named by {CONFIG_ENV} {why}", file=str(env_file))
    layers = [Layer(str(path), _read_file(path)) for path in candidates if path.is_file()]

    content = env.get(CONTENT_ENV, "").strip()
    if content:
        # JSON text starting with "{" is an object, or invalid.
        parse = _parse_json if content.startswith("{") else _parse_toml
        layers.append(Layer(CONTENT_ENV, parse(content, CONTENT_ENV)))

    permission = env.get(PERMISSION_ENV, "").strip()
    if permission:
        value = _parse_json(permission, PERMISSION_ENV)
        if not isinstance(value, dict | str):
            raise ConfigError("expected a JSON object (or an action)", file=PERMISSION_ENV)
        layers.append(Layer(PERMISSION_ENV, {"permission": value}))
    return candidates, layers


# ----------------------------------------------------------------------------- merging


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """A new dict: ``over`` merged into ``base``. Later wins; tables merge recursively;
    an overridden key keeps its position in ``base``; new keys are appended."""
    result = copy.deepcopy(base)
    _merge_into(result, over)
    return result


def _merge_into(target: dict[str, Any], over: Mapping[str, Any]) -> None:
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge_into(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


# ----------------------------------------------------------------------------- [plugins]


@dataclass
class PluginSelection:
    """The ``[plugins]`` table as read before loading: the same checks as
    :class:`hookcode.config.PluginsConfig` (which validates it again in the full load)."""

    load: list[str] | None = None
    block: list[str] = field(default_factory=list)


def _names(value: Any) -> list[str] | None:
    """A list of strings, as pydantic's ``list[str]`` accepts it from TOML or JSON."""
    if isinstance(value, list | tuple) and all(isinstance(item, str) for item in value):
        return [str(item) for item in value]
    return None


def plugin_selection(
    cwd: Path, worktree: Path, env: Mapping[str, str] = os.environ
) -> PluginSelection:
    """The merged ``[plugins]`` table, read ahead of plugin loading (plugins decide which
    sections exist, so the full validation comes later). Unreadable or invalid config gives
    the defaults here; the full load reports the problem."""
    try:
        _candidates, layers = _read_layers(cwd, worktree, env)
    except ConfigError:
        return PluginSelection()
    merged: dict[str, Any] = {}
    for layer in layers:
        value = layer.data.get("plugins")
        if isinstance(value, dict):
            merged = deep_merge(merged, value)
    if set(merged) - {"load", "block"}:
        return PluginSelection()
    load = merged.get("load")
    block = merged.get("block", [])
    load_names = None if load is None else _names(load)
    block_names = _names(block)
    if (load is not None and load_names is None) or block_names is None:
        return PluginSelection()
    return PluginSelection(load=load_names, block=block_names)
