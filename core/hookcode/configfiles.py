"""Finding and reading the config layers, with the standard library only.

What :mod:`hookcode.config` validates with pydantic is read here; :func:`plugin_selection`
runs before the plugins load (on every command, ``--help`` included), so this module must
stay free of pydantic and of the rest of hookcode. :mod:`hookcode.config` re-exports all of it.
"""

from __future__ import annotations

import copy
import os
import stat
from collections.abc import Callable, Mapping
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
    "check_depth",
    "config_paths",
    "data_dir_for",
    "deep_merge",
    "find_worktree",
    "plugin_selection",
    "project_dirs",
    "read_config_file",
    "user_config_dir",
]

CONFIG_ENV = "HOOKCODE_CONFIG"
CONTENT_ENV = "HOOKCODE_CONFIG_CONTENT"
PERMISSION_ENV = "HOOKCODE_PERMISSION"

#: how deeply tables and arrays of a config may nest (the deepest real key is about 6 levels;
#: recursion over a value nested thousands of levels deep would crash)
MAX_DEPTH = 64


@dataclass
class Layer:
    """One config source that exists: a file path, or the name of an environment variable.
    ``project`` marks the files of the project itself (``hookcode.toml``,
    ``.hookcode/config.toml``), which an untrusted folder may only use to tighten."""

    source: str
    data: dict[str, Any]
    project: bool = False


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


def data_dir_for(env: Mapping[str, str]) -> Path:
    """``HOOKCODE_DATA_DIR``, else the platform's user data directory (the session store,
    spill files, credentials and the trust store live there)."""
    configured = env.get("HOOKCODE_DATA_DIR")
    if configured:
        return Path(configured).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("hookcode", appauthor=False))


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
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML: {exc}", file=source) from None
    except RecursionError:
        raise _too_deep(source) from None
    check_depth(data, source)
    return data


def _parse_json(text: str, source: str) -> Any:
    import json

    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"invalid JSON: {exc}", file=source) from None
    except RecursionError:
        raise _too_deep(source) from None
    check_depth(value, source)
    return value


def _too_deep(source: str) -> ConfigError:
    return ConfigError(f"tables or arrays nested deeper than {MAX_DEPTH} levels", file=source)


def check_depth(value: Any, source: str) -> None:
    """Refuse a value nested deeper than :data:`MAX_DEPTH` (checked without recursion, before
    anything recursive, merging or validation, looks at it)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth >= MAX_DEPTH:
            raise _too_deep(source)
        stack.extend((child, depth + 1) for child in children)


_KINDS = (
    (stat.S_ISDIR, "is a directory"),
    (stat.S_ISFIFO, "is a FIFO (named pipe), not a regular file"),
    (stat.S_ISSOCK, "is a socket, not a regular file"),
    (stat.S_ISCHR, "is a character device, not a regular file"),
    (stat.S_ISBLK, "is a block device, not a regular file"),
)


def _not_regular(mode: int) -> str | None:
    for test, why in _KINDS:
        if test(mode):
            return why
    return None if stat.S_ISREG(mode) else "is not a regular file"


def read_config_file(path: Path) -> bytes | None:
    """The bytes of a config-like file; None when there is no such file. Anything else that
    is not a regular file (a directory, a FIFO, a device, a symbolic link to a missing file or
    a link loop) is a :class:`ConfigError` naming it: such a file is never silently skipped,
    and a FIFO is never opened in a way that could block."""
    name = str(path)
    try:
        link = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None  # no such file (or a parent is not a directory: no such file either)
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror or exc}", file=name) from None
    try:
        target = os.stat(path)
    except FileNotFoundError:
        raise ConfigError(
            f"is a symbolic link to a missing file ({os.readlink(path)})", file=name
        ) from None
    except OSError as exc:
        what = "symbolic link that cannot be followed" if stat.S_ISLNK(link.st_mode) else "file"
        raise ConfigError(f"is a {what}: {exc.strerror or exc}", file=name) from None
    why = _not_regular(target.st_mode)
    if why is not None:
        raise ConfigError(why, file=name)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror or exc}", file=name) from None
    with os.fdopen(fd, "rb") as handle:
        # the file may have been swapped for something else since the stat above
        why = _not_regular(os.fstat(fd).st_mode)
        if why is not None:
            raise ConfigError(why, file=name)
        try:
            return handle.read()
        except OSError as exc:
            raise ConfigError(f"cannot read: {exc.strerror or exc}", file=name) from None


def _read_file(path: Path) -> dict[str, Any] | None:
    data = read_config_file(path)
    if data is None:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not valid UTF-8: {exc}", file=str(path)) from None
    return _parse_toml(text, str(path))


def _read_layers(
    cwd: Path, worktree: Path, env: Mapping[str, str]
) -> tuple[list[Path], list[Layer]]:
    candidates = config_paths(cwd, worktree, env)
    env_file = _config_file_from_env(cwd, env)
    project = {
        directory / name
        for directory in project_dirs(cwd, worktree)
        for name in ("hookcode.toml", ".hookcode/config.toml")
    }
    layers = []
    for path in candidates:
        data = _read_file(path)
        if data is None:
            if path == env_file:
                raise ConfigError(f"the file named by {CONFIG_ENV} does not exist", file=str(path))
            continue
        # a file named by HOOKCODE_CONFIG is the user's, wherever it lives
        layers.append(Layer(str(path), data, project=path in project and path != env_file))

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
    cwd: Path,
    worktree: Path,
    env: Mapping[str, str] = os.environ,
    *,
    trusted: bool | Callable[[], bool],
) -> PluginSelection:
    """The merged ``[plugins]`` table, read ahead of plugin loading (plugins decide which
    sections exist, so the full validation comes later). Unreadable or invalid config gives
    the defaults here; the full load reports the problem. The project's own files count
    only when the folder is ``trusted`` (a function is asked only when a project file has
    a ``[plugins]`` table): blocking a plugin can loosen the policy as surely as loading one."""
    try:
        _candidates, layers = _read_layers(cwd, worktree, env)
    except ConfigError:
        return PluginSelection()
    merged: dict[str, Any] = {}
    for layer in layers:
        value = layer.data.get("plugins")
        if not isinstance(value, dict):
            continue
        if layer.project and callable(trusted):
            trusted = trusted()
        if not layer.project or trusted:
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
