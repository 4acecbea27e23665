"""Plugin loading and hook calling for hookcode's own hooks.

:func:`create_plugins` builds a fresh :class:`Plugins` (there is no module-global plugin
manager): it registers core's own implementations, then reads the ``hookcode`` entry-point
group once and loads each plugin inside its own try/except. A plugin that fails to import,
fails pluggy's validation or implements a hook that does not exist is recorded as failed and
skipped with one line on stderr; everything else keeps working. The manager itself, apart from
the specifications, is :class:`hookcode.plugin_manager.PluginsBase`.

Environment:
    ``HOOKCODE_LOAD_PLUGINS=a,b``  load only these entry points (empty: none)
    ``HOOKCODE_BLOCK_PLUGINS=a,b`` never load these
    ``HOOKCODE_TRACE_PLUGINS=1``   trace plugin loading and every hook call on stderr
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import IO

import hookcode.hookspecs as hookspecs
from hookcode.plugin_manager import PluginInfo as PluginInfo
from hookcode.plugin_manager import PluginsBase
from hookcode.plugin_manager import hookimpl as hookimpl

__all__ = ["PluginInfo", "Plugins", "create_plugins", "hookimpl"]


class Plugins(PluginsBase):
    """The plugin manager of hookcode's hooks (:mod:`hookcode.hookspecs`)."""

    def __init__(self, *, strict: bool = False, trace: bool = False, stderr: IO[str] | None = None):
        super().__init__(hookspecs, strict=strict, trace=trace, stderr=stderr)


def create_plugins(
    *,
    env: Mapping[str, str] = os.environ,
    strict: bool = False,
    entrypoints: bool = True,
    extra: Mapping[str, object] | None = None,
    stderr: IO[str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    trusted: bool | None = None,
) -> Plugins:
    """A fresh plugin manager: core's own implementations, then the entry-point plugins, then
    ``extra`` ({name: plugin}) in order. With ``cwd``, the ``[plugins]`` table of the config
    that applies there selects entry points too; the project's own files count only when the
    folder is ``trusted`` (None: as the trust store says)."""
    import hookcode.core_plugin as core_plugin

    trace = env.get("HOOKCODE_TRACE_PLUGINS", "").strip().lower() not in ("", "0", "false", "no")
    plugins = Plugins(strict=strict, trace=trace, stderr=stderr)
    plugins.register(core_plugin, "core", distribution="hookcode-core", version=_core_version())
    if entrypoints:
        load = block = None
        if cwd is not None:
            from pathlib import Path

            # the light reader: neither pydantic nor the runtime before the plugins load
            from hookcode.configfiles import find_worktree, plugin_selection

            directory = Path(os.path.realpath(cwd))
            worktree = find_worktree(directory)
            selection = plugin_selection(
                directory,
                worktree,
                env,
                trusted=trusted if trusted is not None else lambda: _store_trusts(worktree, env),
            )
            load, block = selection.load, selection.block
        plugins.load_entrypoints(env, load=load, block=block)
    for name, plugin in (extra or {}).items():
        plugins.register(plugin, name)
    if strict:
        plugins.raise_failures()
    return plugins


def _store_trusts(worktree: os.PathLike[str], env: Mapping[str, str]) -> bool:
    """Whether the trust store trusts ``worktree`` (a broken store: no; the runtime reports it)."""
    from hookcode.errors import HookcodeError
    from hookcode.trust import is_trusted

    try:
        return is_trusted(worktree, env)
    except HookcodeError:
        return False


def _core_version() -> str | None:
    from hookcode.version import __version__

    return __version__
