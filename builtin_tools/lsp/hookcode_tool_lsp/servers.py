"""Which language servers handle a file, and in which workspace root.

The ``[lsp.servers.NAME]`` tables whose ``extensions`` match a file handle it; for an
extension no configured server covers, the first built-in default found (Python:
``basedpyright-langserver``, else ``pyright-langserver``, else ``pylsp``). Bare command names
are looked up on the runtime's PATH, then in hookcode's own environment (the directory of the
running interpreter, where ``pip install basedpyright`` puts its script). A server's root is
the nearest directory holding one of its root markers, up to the worktree.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "DEFAULT_GROUPS",
    "LANGUAGE_IDS",
    "PYTHON_EXTENSIONS",
    "PYTHON_ROOT_MARKERS",
    "ServerSpec",
    "find_specs",
    "is_relative_to",
    "language_id",
    "normalise_extension",
    "root_for",
    "which",
]

PYTHON_EXTENSIONS = (".py", ".pyi")
PYTHON_ROOT_MARKERS = (
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "requirements.txt",
    "Pipfile",
    "pyrightconfig.json",
)


@dataclass(frozen=True)
class _Default:
    name: str
    command: tuple[str, ...]
    extensions: tuple[str, ...]
    root_markers: tuple[str, ...]


#: built-in defaults: per group, the first one found is used
DEFAULT_GROUPS: tuple[tuple[_Default, ...], ...] = (
    (
        _Default(
            "basedpyright",
            ("basedpyright-langserver", "--stdio"),
            PYTHON_EXTENSIONS,
            PYTHON_ROOT_MARKERS,
        ),
        _Default(
            "pyright", ("pyright-langserver", "--stdio"), PYTHON_EXTENSIONS, PYTHON_ROOT_MARKERS
        ),
        _Default("pylsp", ("pylsp",), PYTHON_EXTENSIONS, PYTHON_ROOT_MARKERS),
    ),
)
_DEFAULTS = {d.name: d for group in DEFAULT_GROUPS for d in group}

LANGUAGE_IDS = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascriptreact",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "typescriptreact",
    ".go": "go",
    ".rs": "rust",
    ".rb": "ruby",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".hpp": "cpp",
    ".cs": "csharp",
    ".java": "java",
    ".kt": "kotlin",
    ".lua": "lua",
    ".php": "php",
    ".sh": "shellscript",
    ".bash": "shellscript",
    ".zig": "zig",
    ".swift": "swift",
    ".ex": "elixir",
    ".exs": "elixir",
    ".vue": "vue",
    ".svelte": "svelte",
}


@dataclass(frozen=True)
class ServerSpec:
    """One server as configured (or found) for this runtime."""

    name: str
    command: tuple[str, ...]
    extensions: frozenset[str]
    env: tuple[tuple[str, str], ...] = ()
    initialization: Any = None
    root_markers: tuple[str, ...] = ()
    language_id: str | None = None
    configured: bool = True
    #: why the server cannot run (its command was not found), else None
    unavailable: str | None = None

    def handles(self, path: str) -> bool:
        return _extension(path) in self.extensions


def find_specs(
    settings: Any, env: Mapping[str, str], cwd: Path, problems: list[str]
) -> list[ServerSpec]:
    """The servers of ``settings`` (the ``[lsp]`` section), then for each built-in group
    whose extensions no configured server covers, its first default found; a configured
    server that cannot be used is named in ``problems``."""
    specs: list[ServerSpec] = []
    covered: set[str] = set()
    configured = dict(settings.servers)
    for name, server in configured.items():
        if server.disabled:
            continue
        default = _DEFAULTS.get(name)
        command = list(server.command or (default.command if default else ()))
        extensions = server.extensions or (list(default.extensions) if default else [])
        if not command or not extensions:
            problems.append(
                f"server '{name}' needs `command` and `extensions` in [lsp.servers.{name}]"
            )
            continue
        markers = server.root_markers
        if markers is None:
            markers = list(default.root_markers) if default else []
        exts = frozenset(normalise_extension(e) for e in extensions)
        covered |= exts
        found = which(command[0], env, cwd)
        specs.append(
            ServerSpec(
                name=name,
                command=(found or command[0], *command[1:]),
                extensions=exts,
                env=tuple(server.env.items()),
                initialization=server.initialization or None,
                root_markers=tuple(markers),
                language_id=server.language_id,
                configured=True,
                unavailable=None if found else f"command not found: {command[0]}",
            )
        )
    for group in DEFAULT_GROUPS:
        for default in group:
            exts = frozenset(default.extensions) - covered
            if not exts or default.name in configured:
                continue
            found = which(default.command[0], env, cwd)
            if found is None:
                continue
            specs.append(
                ServerSpec(
                    name=default.name,
                    command=(found, *default.command[1:]),
                    extensions=exts,
                    root_markers=default.root_markers,
                    configured=False,
                )
            )
            covered |= exts
            break
    return specs


def which(program: str, env: Mapping[str, str], cwd: Path) -> str | None:
    """Where ``program`` is: a path (relative to ``cwd``) as it is, a bare name on ``env``'s
    PATH, then in hookcode's own environment (where ``pip install basedpyright`` puts its
    script)."""
    if os.sep in program or (os.altsep and os.altsep in program):
        path = Path(program).expanduser()
        if not path.is_absolute():
            path = cwd / path
        return str(path) if path.is_file() and os.access(path, os.X_OK) else None
    dirs = env.get("PATH", os.defpath).split(os.pathsep)
    dirs += [str(Path(sys.executable).parent), sysconfig.get_path("scripts")]
    return shutil.which(program, path=os.pathsep.join(d for d in dirs if d))


def root_for(spec: ServerSpec, path: str | Path, worktree: Path) -> Path:
    """The nearest directory holding a root marker, up to the worktree (inclusive);
    else the worktree (or, outside it, the file's directory)."""
    file = Path(path)
    inside = is_relative_to(file, worktree)
    directory = file.parent
    while True:
        if any((directory / marker).exists() for marker in spec.root_markers):
            return directory
        if (inside and directory == worktree) or directory.parent == directory:
            break
        directory = directory.parent
    return worktree if inside else file.parent


def _extension(path: str) -> str:
    return os.path.splitext(path)[1].lower()


def normalise_extension(ext: str) -> str:
    ext = ext.strip().lower()
    return ext if ext.startswith(".") else "." + ext


def language_id(spec: ServerSpec, path: str) -> str:
    """The ``languageId`` a server is told for ``path``."""
    if spec.language_id:
        return spec.language_id
    ext = _extension(path)
    return LANGUAGE_IDS.get(ext, ext.lstrip(".") or "plaintext")


def is_relative_to(path: Path, parent: Path) -> bool:
    try:
        path.relative_to(parent)
    except ValueError:
        return False
    return True
