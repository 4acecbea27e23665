"""local_tools: Python files that become tools without packaging.

Every ``*.py`` file in these directories is imported when the tool registry is built, and
each function in it decorated with :func:`hookcode.tool` becomes a tool:

1. ``<user config dir>/{tool,tools}/`` (``~/.config/hookcode``, ``$XDG_CONFIG_HOME/hookcode``
   or ``$HOOKCODE_CONFIG_DIR``, as for ``config.toml``);
2. ``.hookcode/tool/`` and ``.hookcode/tools/`` in every directory from the git root down to
   the working directory.

A file with exactly one tool names it after the file (``wordcount.py`` -> ``wordcount``); a
file with several names each ``<file>_<function>`` (the reference's rule). Later files win a
name clash (the directory nearest the working directory last), and local tools register after
every packaged tool (``trylast``), so a local ``read`` replaces the built-in one and
``hookcode tools list`` shows what it shadows. A file that fails to import is reported on
stderr (one line naming it) and skipped; the other files still load.

The project's own directories (2.) are imported only when the folder is trusted
(``hookcode trust``): cloning a repository and listing its tools must not run its code. In an
untrusted folder their files are named by the ``project_code`` hook (the trust prompt and the
one-line warning) and left alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookcode import hookimpl

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path

    from hookcode.runtime import Runtime

__all__ = ["project_code", "register_tools"]


@hookimpl(trylast=True)
def register_tools(register: Callable[..., None], runtime: Runtime) -> None:
    from hookcode_local_tools.loader import load_tools

    register(
        *load_tools(
            runtime.cwd,
            runtime.worktree,
            runtime.env,
            warn=runtime.plugins.warn,
            trusted=runtime.trusted,
        )
    )


@hookimpl
def project_code(cwd: Path, worktree: Path, env: Mapping[str, str]) -> list[str]:
    from hookcode.trust import describe_path

    from hookcode_local_tools.loader import project_files

    return [describe_path(path, worktree) for path in project_files(cwd, worktree, env)]
