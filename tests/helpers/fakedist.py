"""Fake installed distributions with real ``hookcode`` entry points.

A :class:`FakeDists` is a directory that looks like a site-packages directory: each
:meth:`FakeDists.add` writes a package module plus a ``<name>-<version>.dist-info/`` directory
(``METADATA``, ``entry_points.txt``), so :func:`importlib.metadata.entry_points` finds it once the
directory is on the path. Use it

* in a subprocess: put :attr:`FakeDists.root` on ``PYTHONPATH`` (:meth:`FakeDists.env`), then run
  the CLI with :func:`run_cli`;
* in-process: ``with dists.on_sys_path(): ...`` inserts the directory in ``sys.path`` and
  removes it (and every module imported from it) afterwards.
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

__all__ = ["FakeDists", "cli_command", "run_cli"]


def _dist_dir_name(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


class FakeDists:
    """A directory of fake distributions."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def add(
        self,
        name: str,
        *,
        version: str = "1.0",
        entry_points: Mapping[str, str] | None = None,
        modules: Mapping[str, str] | None = None,
        group: str = "hookcode",
    ) -> Path:
        """Write distribution ``name``: ``modules`` ({module name: source}, dedented) and the
        entry points ``{entry point name: "module[:attr]"}``. Returns the dist-info directory."""
        for module, source in (modules or {}).items():
            path = self.root / Path(*module.split(".")).with_suffix(".py")
            path.parent.mkdir(parents=True, exist_ok=True)
            for parent in path.relative_to(self.root).parents:
                if parent != Path(".") and not (self.root / parent / "__init__.py").exists():
                    (self.root / parent / "__init__.py").write_text("")
            path.write_text(textwrap.dedent(source))
        info = self.root / f"{_dist_dir_name(name)}-{version}.dist-info"
        info.mkdir(parents=True, exist_ok=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        lines = [f"[{group}]", *(f"{ep} = {value}" for ep, value in (entry_points or {}).items())]
        (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
        (info / "RECORD").write_text("")
        importlib.invalidate_caches()
        return info

    def env(self, base: Mapping[str, str], **extra: str) -> dict[str, str]:
        """``base`` with this directory first on ``PYTHONPATH`` (plus ``extra``)."""
        env = dict(base)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(self.root), env.get("PYTHONPATH", "")) if p
        )
        env.update(extra)
        return env

    @contextmanager
    def on_sys_path(self) -> Iterator[FakeDists]:
        """This directory on ``sys.path`` for the ``with`` block; afterwards the path entry and
        every module imported from it are gone again."""
        root = str(self.root)
        sys.path.insert(0, root)
        importlib.invalidate_caches()
        try:
            yield self
        finally:
            while root in sys.path:
                sys.path.remove(root)
            for name, module in list(sys.modules.items()):
                file = getattr(module, "__file__", None) or ""
                if file.startswith(root + os.sep):
                    del sys.modules[name]
            sys.path_importer_cache.pop(root, None)
            importlib.invalidate_caches()


def cli_command() -> list[str]:
    """How to start the CLI in a subprocess, with the interpreter running the tests."""
    return [sys.executable, "-m", "hookcode"]


def run_cli(
    args: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path | str | None = None,
    input: str | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """Run ``hookcode ARGS`` headless (stdin is /dev/null unless ``input`` is given)."""
    return subprocess.run(
        [*cli_command(), *args],
        env=dict(env),
        cwd=cwd,
        input=input,
        stdin=subprocess.DEVNULL if input is None else None,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
