"""The test kit for hookcode and its plugins.

Registered with pytest through the ``pytest11`` entry point, so in any project that has
hookcode installed these fixtures are available:

* ``hookcode_env`` — an isolated world: a project directory, a data directory and a config
  directory in ``tmp_path``, environment variables pointing at them; build runtimes with
  ``hookcode_env.runtime()``, write config with ``hookcode_env.write_config(...)``, and
  register a plugin for this test only with ``hookcode_env.register(plugin, name)``. The
  project is trusted (it is in the world's trust store, and runtimes are built trusted);
  ``hookcode_env.trust(False)`` makes it an untrusted clone, ``runtime(trusted=False)`` one
  untrusted runtime.
* ``hookcode_runtime`` — ``hookcode_env.runtime()``.
* ``hookcode_plugins`` — a fresh plugin manager (entry points loaded).

Outside fixtures: :func:`invoke_tool` runs one call through the whole pipeline, and
:class:`ScriptedModel` replays scripted assistant turns so the agent loop runs offline.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from hookcode.permission import Reply
from hookcode.plugins import hookimpl
from hookcode.testing.scripted import ScriptedModel, ScriptError, ToolCallSpec, Turn, parse_script

if TYPE_CHECKING:
    from hookcode.pipeline import Outcome
    from hookcode.runtime import Runtime
    from hookcode.tools import AbortSignal

__all__ = [
    "HookcodeEnv",
    "ReplyWith",
    "ScriptError",
    "ScriptedModel",
    "ToolCallSpec",
    "Turn",
    "ainvoke_tool",
    "invoke_tool",
    "missing",
    "parse_script",
]


def missing(what: str) -> NoReturn:
    """A real server or binary a test needs is missing: the test FAILS in CI (``CI`` set) and
    is skipped elsewhere, so a CI run can never pass by skipping what it must exercise."""
    import pytest

    if os.environ.get("CI"):
        pytest.fail(f"{what} (CI must provide it)", pytrace=False)
    pytest.skip(what)


class ReplyWith:
    """A front end that answers every permission ask with ``kind`` (``once``, ``always`` or
    ``reject``) and records the requests it saw."""

    def __init__(self, kind: str = "once", *, scope: str = "session", feedback: str | None = None):
        self.reply = Reply(kind, feedback=feedback, scope=scope)  # type: ignore[arg-type]
        self.requests: list[Any] = []

    @hookimpl
    def permission_prompt(self, request: Any) -> Reply:
        self.requests.append(request)
        return self.reply


async def ainvoke_tool(
    runtime: Runtime,
    name: str,
    args: Mapping[str, Any] | str | None = None,
    *,
    agent: str | None = None,
    session_id: str | None = None,
    model: str | None = None,
    abort: AbortSignal | None = None,
) -> Outcome:
    """Run one call through the whole pipeline in a (new) session: :meth:`Runtime.call_tool
    <hookcode.runtime.Runtime.call_tool>`. Returns the Outcome; ``abort`` aborts the call when
    it fires."""
    return await runtime.call_tool(
        name, args, agent=agent, session_id=session_id, model=model, abort=abort
    )


def invoke_tool(
    runtime: Runtime, name: str, args: Mapping[str, Any] | str | None = None, **kwargs: Any
) -> Outcome:
    """Sync :func:`ainvoke_tool` (runs its own event loop)."""
    import asyncio

    return asyncio.run(ainvoke_tool(runtime, name, args, **kwargs))


class HookcodeEnv:
    """An isolated hookcode world under one directory."""

    def __init__(self, root: Path, *, base_env: Mapping[str, str] | None = None) -> None:
        self.root = root
        self.project = root / "project"
        self.data_dir = root / "data"
        self.config_dir = root / "config"
        self.home = root / "home"
        for directory in (self.project, self.data_dir, self.config_dir, self.home):
            directory.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ if base_env is None else base_env)
        for key in list(env):
            # hookcode's own switches, and real provider credentials: a test never talks to a
            # real model by accident, and never depends on the developer's keys
            if key.startswith(("HOOKCODE_", "ANTHROPIC_", "OPENAI_")):
                del env[key]
        env.update(
            HOOKCODE_DATA_DIR=str(self.data_dir),
            XDG_CONFIG_HOME=str(self.config_dir),
            XDG_DATA_HOME=str(self.root / "xdg-data"),
            HOME=str(self.home),
        )
        self.env: dict[str, str] = env
        self.plugins: dict[str, object] = {}
        self._runtimes: list[Any] = []
        #: whether runtimes are built trusted (see :meth:`trust`)
        self.trusted = True
        self.trust(True)

    def trust(self, trusted: bool = True, folder: Path | None = None) -> None:
        """Trust ``folder`` (default: the project) in this world's trust store, so that CLI
        processes run with :attr:`env` trust it too, and build runtimes trusted; or, with
        ``trusted=False``, remove it and build runtimes untrusted (a fresh clone)."""
        from hookcode.trust import TrustStore

        store = TrustStore(self.data_dir)
        target = folder or self.project
        if trusted:
            store.add(target)
        else:
            store.remove(target)
        if folder is None:
            self.trusted = trusted

    def register(self, plugin: object, name: str | None = None) -> object:
        """Register ``plugin`` in every runtime built from now on (for this test only)."""
        self.plugins[name or getattr(plugin, "__name__", None) or type(plugin).__name__] = plugin
        return plugin

    def write_config(self, content: str | Mapping[str, Any], *, where: str = "project") -> Path:
        """Write ``hookcode.toml`` in the project (``where="global"``: the user config)."""
        text = content if isinstance(content, str) else _to_toml(content)
        if where == "global":
            path = self.config_dir / "hookcode" / "config.toml"
        else:
            path = self.project / "hookcode.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def runtime(
        self,
        *,
        cwd: Path | None = None,
        entrypoints: bool = True,
        strict: bool = False,
        trusted: bool | None = None,
        **env: str,
    ) -> Any:
        """A runtime for ``cwd`` (default: the project), trusted unless ``trusted=False`` or
        :meth:`trust` said otherwise."""
        from hookcode.plugins import create_plugins
        from hookcode.runtime import Runtime

        full_env = {**self.env, **env}
        directory = cwd or self.project
        trusted = self.trusted if trusted is None else trusted
        plugins = create_plugins(
            env=full_env,
            strict=strict,
            entrypoints=entrypoints,
            extra=self.plugins,
            cwd=directory,
            trusted=trusted,
        )
        runtime = Runtime(cwd=directory, env=full_env, plugins=plugins, trusted=trusted)
        self._runtimes.append(runtime)
        return runtime

    def close(self) -> None:
        for runtime in self._runtimes:
            runtime.close()
        self._runtimes.clear()


def _to_toml(data: Mapping[str, Any], prefix: str = "") -> str:
    """A small TOML writer for test configs (tables, strings, numbers, bools, lists)."""
    lines: list[str] = []
    tables: list[tuple[str, Mapping[str, Any]]] = []
    for key, value in data.items():
        if isinstance(value, Mapping):
            tables.append((key, value))
        else:
            lines.append(f"{json.dumps(key)} = {json.dumps(value)}")
    out = "\n".join(lines)
    for key, value in tables:
        name = f"{prefix}.{json.dumps(key)}" if prefix else json.dumps(key)
        out += f"\n[{name}]\n" + _to_toml(value, name)
    return out.strip() + "\n"
