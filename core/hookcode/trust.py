"""Workspace trust: whether the code and commands a project brings may run.

A cloned repository is not the user's: its ``.hookcode/tools/*.py``, the shell hooks, MCP
servers and language-server commands of its ``hookcode.toml``, its skills, its provider
endpoints and its allow rules all come from whoever wrote it. Until the user trusts the folder,
hookcode loads none of that; the project's config may still tighten the policy (deny and ask
rules) but not loosen it. User-level configuration (``~/.config/hookcode``, ``HOOKCODE_CONFIG``,
``HOOKCODE_CONFIG_CONTENT``, ``HOOKCODE_PERMISSION``) is always trusted.

The folder that needs trust is the worktree (the git root of the working directory, else the
working directory). Trusted folders are kept in ``<data dir>/trust.json`` (mode 0600) as real
paths; a folder is trusted when it or one of its ancestors is listed, so ``hookcode trust ~/src``
trusts every project below ``~/src``. A trust file that cannot be read is an error naming it,
never "trusted".

Plugins take part in two ways:

* a config setting that runs a program, sends data somewhere or weakens a policy is declared
  with :func:`trusted_only` in the plugin's config model; core drops it from the project's files
  of an untrusted folder before anything sees the config (see :mod:`hookcode.config`);
* a plugin that loads files from the project itself reports them through the ``project_code``
  hook and loads them only when :attr:`hookcode.runtime.Runtime.trusted` is true.

This module is the trust store and :func:`is_trusted`, below the config and the plugins; what
an untrusted folder would skip (which needs both) is :mod:`hookcode.untrusted`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hookcode.configfiles import data_dir_for, read_config_file
from hookcode.errors import ConfigError, HookcodeError

__all__ = [
    "TRUSTED_ONLY",
    "TRUST_FILE",
    "Trust",
    "TrustStore",
    "ask_on_terminal",
    "describe_path",
    "is_trusted",
    "trusted_only",
]

#: the trust store's file name in the data directory
TRUST_FILE = "trust.json"
#: the JSON-schema key :func:`trusted_only` sets on a field or a model
TRUSTED_ONLY = "x-trusted-only"

_VERSION = 1


def trusted_only(*, keep: Sequence[Any] = ()) -> dict[str, Any]:
    """``json_schema_extra`` for a config field (or a whole model) that the project files of an
    untrusted folder may not set: it runs a program, sends data or credentials somewhere, or
    loosens a policy. Values in ``keep`` are still honoured (they only tighten: ``enabled =
    false``). On a model, every field counts as trusted-only unless it has its own marker, and
    a table left empty is dropped whole::

        command: list[str] | None = Field(None, json_schema_extra=trusted_only())
        enabled: bool = Field(True, json_schema_extra=trusted_only(keep=[False]))
    """
    return {TRUSTED_ONLY: list(keep)}


def describe_path(path: str | os.PathLike[str], worktree: Path) -> str:
    """``path`` relative to the worktree when it is inside it (short and unambiguous in one
    warning line), else as given."""
    try:
        return Path(path).relative_to(worktree).as_posix()
    except ValueError:
        return str(path)


# ---------------------------------------------------------------------------------------------
# the store
# ---------------------------------------------------------------------------------------------


class TrustStore:
    """The trusted folders, ``<data dir>/trust.json``: ``{"version": 1, "folders": [...]}``.

    Changes go through :func:`hookcode.sharedfile.update` (a lock, so two processes trusting
    two folders at once keep both; an atomic write with mode 0600)."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self.path = self.data_dir / TRUST_FILE

    def _corrupt(self, why: str) -> HookcodeError:
        return HookcodeError(
            f"{self.path}: the trust store is corrupt ({why}); fix or delete it, then trust "
            "your folders again with `hookcode trust DIR`"
        )

    def _document(self) -> dict[str, Any]:
        """The file's content, checked: ``{"version": 1, "folders": [absolute paths]}``
        (empty when there is no file)."""
        try:
            data = read_config_file(self.path)
        except ConfigError as exc:
            raise self._corrupt(exc.detail) from None
        if data is None:
            return {"version": _VERSION, "folders": []}
        try:
            value = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, RecursionError, ValueError) as exc:
            raise self._corrupt(f"not JSON: {type(exc).__name__}") from None
        if not isinstance(value, dict) or not isinstance(value.get("folders"), list):
            raise self._corrupt('expected {"version": 1, "folders": [...]}')
        if value.get("version") != _VERSION:
            raise self._corrupt(f"unknown version {value.get('version')!r}")
        folders = []
        for entry in value["folders"]:
            if not isinstance(entry, str) or not os.path.isabs(entry):
                raise self._corrupt(f"{entry!r} is not an absolute path")
            folders.append(str(Path(entry)))
        return {"version": _VERSION, "folders": folders}

    def folders(self) -> list[Path]:
        """Every trusted folder, in the order they were trusted."""
        return [Path(entry) for entry in self._document()["folders"]]

    def trusted_by(self, folder: str | os.PathLike[str]) -> Path | None:
        """The entry that makes ``folder`` trusted (itself or an ancestor), else None."""
        real = Path(os.path.realpath(folder))
        entries = set(self.folders())
        for directory in (real, *real.parents):
            if directory in entries:
                return directory
        return None

    def add(self, folder: str | os.PathLike[str]) -> tuple[Path, bool]:
        """Trust ``folder`` (stored as its real path); (that path, whether it was added)."""
        real = Path(os.path.realpath(folder))

        def add(document: dict[str, Any]) -> bool:
            if str(real) in document["folders"]:
                return False
            document["folders"].append(str(real))
            return True

        return real, self._update(add)

    def remove(self, folder: str | os.PathLike[str]) -> tuple[Path, bool]:
        """Stop trusting ``folder`` itself; (its real path, whether it was listed)."""
        real = Path(os.path.realpath(folder))

        def remove(document: dict[str, Any]) -> bool:
            if str(real) not in document["folders"]:
                return False
            document["folders"] = [f for f in document["folders"] if f != str(real)]
            return True

        return real, self._update(remove)

    def _update(self, change: Callable[[dict[str, Any]], bool]) -> bool:
        from hookcode.sharedfile import update

        return update(self.path, self._document, change, _dump)


def _dump(document: dict[str, Any]) -> bytes:
    return (json.dumps(document, indent=2) + "\n").encode("utf-8")


def is_trusted(folder: str | os.PathLike[str], env: Mapping[str, str] = os.environ) -> bool:
    """Whether the trust store of ``env``'s data directory trusts ``folder``. Raises
    :class:`~hookcode.errors.HookcodeError` when the store is corrupt."""
    return TrustStore(data_dir_for(env)).trusted_by(folder) is not None


# ---------------------------------------------------------------------------------------------
# one runtime's trust
# ---------------------------------------------------------------------------------------------


@dataclass
class Trust:
    """Whether a runtime's folder is trusted, and what was kept from running because it is not."""

    folder: Path
    trusted: bool
    #: what an untrusted folder did not load (``.hookcode/tools/a.py``, ``mcp.fs (hookcode.toml)``)
    skipped: list[str] = field(default_factory=list)

    def skip(self, *items: str) -> None:
        for item in items:
            if item not in self.skipped:
                self.skipped.append(item)

    def warning(self) -> str | None:
        """The one line an untrusted run prints (None when nothing was skipped)."""
        if self.trusted or not self.skipped:
            return None
        return (
            f"this folder is not trusted ({self.folder}); skipped: {', '.join(self.skipped)}; "
            "run 'hookcode trust' to trust it"
        )


def ask_on_terminal(
    folder: Path, items: Sequence[str], *, read: Callable[[], str], write: Callable[[str], Any]
) -> bool:
    """Ask whether to trust ``folder`` (the default, on an empty answer or end of input, is no;
    Ctrl-C stops the command)."""
    lines = [
        f"hookcode: this folder is not trusted: {folder}",
        "It brings code, commands or settings that run only in trusted folders:",
        *(f"  - {item}" for item in items),
        "Trusting it lets them run now and in every later session "
        "(`hookcode trust --revoke` undoes it).",
        f"Do you trust the files in this folder? {folder} [y/N] ",
    ]
    write("\n".join(lines))
    try:
        answer = read()
    except EOFError:
        answer = ""
    if not answer.endswith("\n"):
        write("\n")
    return answer.strip().lower() in ("y", "yes")
