"""Finding and importing local tool files."""

from __future__ import annotations

import hashlib
import importlib.util
import itertools
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType

from hookcode.tools import FunctionTool, Tool, valid_tool_name

__all__ = ["load_file", "load_tools", "project_files", "tool_dirs"]

#: sub-directories of a config directory that hold tool files (the reference reads both)
SUBDIRS = ("tool", "tools")

_counter = itertools.count()


def _user_dirs(env: Mapping[str, str]) -> list[Path]:
    from hookcode.configfiles import user_config_dir

    return [user_config_dir(env) / sub for sub in SUBDIRS]


def _project_dirs(cwd: Path, worktree: Path) -> list[Path]:
    from hookcode.configfiles import project_dirs

    return [d / ".hookcode" / sub for d in project_dirs(cwd, worktree) for sub in SUBDIRS]


def tool_dirs(
    cwd: Path, worktree: Path, env: Mapping[str, str], *, trusted: bool = True
) -> list[Path]:
    """The directories searched, in registration order (a later one wins a name clash): the
    user's, then (when the folder is ``trusted``) the project's."""
    return _user_dirs(env) + (_project_dirs(cwd, worktree) if trusted else [])


def _files(directories: list[Path]) -> list[Path]:
    """The ``*.py`` files of ``directories``, each real file once (a symlinked directory)."""
    files: list[Path] = []
    seen: set[Path] = set()
    for directory in directories:
        if not directory.is_dir():
            continue
        for path in sorted(directory.glob("*.py")):
            real = path.resolve()
            if real in seen or not path.is_file():
                continue
            seen.add(real)
            files.append(path)
    return files


def project_files(cwd: Path, worktree: Path, env: Mapping[str, str]) -> list[Path]:
    """The project's tool files that an untrusted folder keeps from loading (a file also
    reachable from the user's directories is the user's)."""
    user = {path.resolve() for path in _files(_user_dirs(env))}
    return [p for p in _files(_project_dirs(cwd, worktree)) if p.resolve() not in user]


def load_tools(
    cwd: Path,
    worktree: Path,
    env: Mapping[str, str],
    *,
    warn: Callable[[str], None],
    trusted: bool = False,
) -> list[Tool]:
    """Every tool of every file, in registration order; broken files reported and skipped.
    The project's directories only when the folder is ``trusted``."""
    tools: list[Tool] = []
    for path in _files(tool_dirs(cwd, worktree, env, trusted=trusted)):
        tools += load_file(path, warn=warn)
    return tools


def load_file(path: Path, *, warn: Callable[[str], None]) -> list[Tool]:
    """The tools of one file, named by the reference's rule; [] (reported) when it is broken."""
    try:
        module = _import(path)
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        warn(f"local tool file {path} failed to load: {_describe(exc)}; skipped")
        return []
    found = [
        (attr, value)
        for attr, value in vars(module).items()
        if isinstance(value, Tool) and _defined_in(value, module)
    ]
    if not found:
        warn(f"local tool file {path} defines no tool (decorate a function with @hookcode.tool)")
        return []
    tools = []
    for attr, value in found:
        name = path.stem if len(found) == 1 else f"{path.stem}_{attr}"
        if not valid_tool_name(name):
            warn(
                f"local tool file {path}: {name!r} is not a valid tool name (letters, digits, "
                "'_' and '-', at most 64 characters); rename the file or the function; skipped"
            )
            continue
        value.name = name
        tools.append(value)
    return tools


def _import(path: Path) -> ModuleType:
    """Import ``path`` under a name of its own: never the bare file name (which could shadow a
    real module), never shared with another load (another runtime or a later rebuild)."""
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:12]
    stem = "".join(c if c.isalnum() else "_" for c in path.stem)
    name = f"_hookcode_local_tool_{stem}_{digest}_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    # present while the file runs (dataclasses and pydantic look their module up there), gone
    # after, so nothing outlives this load
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    return module


def _defined_in(value: Tool, module: ModuleType) -> bool:
    """A tool made in this file, not one it imported."""
    if isinstance(value, FunctionTool):
        return getattr(value.fn, "__module__", None) == module.__name__
    return type(value).__module__ == module.__name__


def _describe(exc: BaseException) -> str:
    if isinstance(exc, SyntaxError):
        return f"SyntaxError: {exc.msg} (line {exc.lineno})"
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
