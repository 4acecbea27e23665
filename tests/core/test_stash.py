"""Per-run plugin state and teardown: ``hookcode.Stash``/``StashKey``, ``runtime.stash`` and
``runtime.on_close`` (closed, garbage-collected, at exit); the runtime as a hook argument; the
``register_tools`` hook and its deprecated ``tool`` alias."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
import warnings
import weakref
from typing import Any

import hookcode
import pytest
from hookcode import Stash, StashKey, Tool, hookimpl, tool


@pytest.fixture(autouse=True)
def _no_installed_plugins(hookcode_env: Any) -> None:
    """Only the plugins a test registers itself."""
    hookcode_env.env["HOOKCODE_LOAD_PLUGINS"] = ""


# -- Stash ------------------------------------------------------------------------------------


def test_a_stash_maps_typed_keys_to_values() -> None:
    stash = Stash()
    count, names = StashKey[int](), StashKey[list[str]]()
    assert count not in stash and len(stash) == 0
    with pytest.raises(KeyError):
        stash[count]
    assert stash.get(count, None) is None
    stash[count] = 3
    assert stash[count] == 3 and count in stash and names not in stash
    listed = stash.setdefault(names, ["a"])
    assert stash.setdefault(names, ["b"]) is listed == ["a"]
    del stash[count]
    assert count not in stash and len(stash) == 1
    with pytest.raises(KeyError):
        del stash[count]


def test_keys_are_compared_by_identity() -> None:
    stash = Stash()
    first, second = StashKey[str](), StashKey[str]()
    stash[first] = "one"
    assert second not in stash


def test_stash_and_stash_key_are_public() -> None:
    assert "Stash" in hookcode.__all__ and "StashKey" in hookcode.__all__
    assert hookcode.StashKey is StashKey


# -- runtime.stash and on_close ---------------------------------------------------------------

KEY = StashKey[list[str]]()


def test_each_runtime_has_its_own_stash(hookcode_env: Any) -> None:
    one, two = hookcode_env.runtime(), hookcode_env.runtime()
    one.stash[KEY] = ["one"]
    assert KEY not in two.stash
    assert one.stash[KEY] == ["one"]


def test_close_runs_the_callbacks_once_in_order_and_reports_a_raising_one(
    hookcode_env: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    runtime = hookcode_env.runtime()
    calls: list[str] = []

    def boom() -> None:
        calls.append("boom")
        raise RuntimeError("no luck")

    runtime.on_close(lambda: calls.append("first"))
    runtime.on_close(boom)
    runtime.on_close(lambda: calls.append("last"))
    runtime.close()
    runtime.close()
    assert calls == ["first", "boom", "last"]
    assert "a close callback raised: RuntimeError: no luck" in capsys.readouterr().err


def test_a_runtime_used_again_after_close_closes_again(hookcode_env: Any) -> None:
    runtime = hookcode_env.runtime()
    runtime.close()
    calls: list[str] = []
    runtime.on_close(lambda: calls.append("again"))
    runtime.close()
    assert calls == ["again"]


def test_a_runtime_nobody_closed_runs_its_callbacks_when_collected(hookcode_env: Any) -> None:
    from hookcode.runtime import Runtime

    calls: list[str] = []
    runtime = Runtime(cwd=hookcode_env.project, env=hookcode_env.env, trusted=True)
    runtime.on_close(lambda: calls.append("closed"))
    alive = weakref.ref(runtime)
    del runtime
    gc.collect()
    assert alive() is None, "the runtime must not be kept alive by its close callbacks"
    assert calls == ["closed"]


def test_a_runtime_nobody_closed_runs_its_callbacks_at_exit(hookcode_env: Any, tmp_path) -> None:
    marker = tmp_path / "closed.txt"
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from hookcode.runtime import Runtime

        runtime = Runtime(cwd={str(hookcode_env.project)!r}, trusted=True)
        runtime.on_close(lambda: Path({str(marker)!r}).write_text("closed"))
        """
    )
    subprocess.run([sys.executable, "-c", script], env=hookcode_env.env, check=True, timeout=60)
    assert marker.read_text() == "closed"


# -- hooks that receive the runtime -----------------------------------------------------------


class Observer:
    def __init__(self) -> None:
        self.seen: dict[str, Any] = {}

    @hookimpl
    def config(self, config: Any, runtime: Any) -> None:
        self.seen["config"] = runtime

    @hookimpl
    def permission_defaults(self, runtime: Any) -> list[Any]:
        self.seen["permission_defaults"] = runtime
        return []

    @hookimpl
    def event(self, event: Any, runtime: Any) -> None:
        self.seen["event"] = runtime


def test_hooks_receive_their_runtime(hookcode_env: Any) -> None:
    observer = Observer()
    hookcode_env.register(observer, "observer")
    runtime = hookcode_env.runtime()
    runtime.base_rules(runtime.default_agent)
    runtime.events.publish("todo.updated")
    assert observer.seen == {
        "config": runtime,
        "permission_defaults": runtime,
        "event": runtime,
    }


def test_current_runtime_is_gone() -> None:
    import hookcode.plugins

    assert not hasattr(hookcode.plugins, "current_runtime")


# -- register_tools and the deprecated tool hook ----------------------------------------------


def make(name: str) -> Tool:
    def body() -> str:
        return name

    return tool(body, name=name, description=f"The {name} tool.")


class Registers:
    def __init__(self, *tools: Tool) -> None:
        self.tools = tools
        self.runtime: Any = None

    @hookimpl
    def register_tools(self, register: Any, runtime: Any) -> None:
        self.runtime = runtime
        register(*self.tools)


class OldStyle:
    def __init__(self, *tools: Tool) -> None:
        self.tools = list(tools)

    @hookimpl
    def tool(self) -> list[Tool]:
        return self.tools


def test_register_tools_records_who_registered_what(hookcode_env: Any) -> None:
    plugin = Registers(make("alpha"), make("beta"))
    hookcode_env.register(plugin, "pack_new")
    runtime = hookcode_env.runtime()
    entries = runtime.registry.entries
    assert plugin.runtime is runtime
    assert {entries["alpha"].plugin, entries["beta"].plugin} == {"pack_new"}


def test_the_old_tool_hook_still_works_in_registration_order(hookcode_env: Any) -> None:
    hookcode_env.register(Registers(make("same"), make("other")), "first_new")
    hookcode_env.register(OldStyle(make("same")), "second_old")
    hookcode_env.register(Registers(make("other")), "third_new")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        runtime = hookcode_env.runtime()
    entries = runtime.registry.entries
    assert entries["same"].plugin == "second_old"
    assert [s.plugin for s in entries["same"].shadows] == ["first_new"]
    assert entries["other"].plugin == "third_new"


def test_the_old_tool_hook_warns_once_naming_the_plugin_and_the_new_hook() -> None:
    from hookcode.plugins import Plugins

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            Plugins(stderr=sys.stderr).register(OldStyle(make("x")), "legacy_pack_warns")
    deprecations = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    assert len(deprecations) == 1
    message = str(deprecations[0].message)
    assert "'legacy_pack_warns'" in message and "'tool'" in message
    assert "register_tools(register, runtime)" in message


def test_a_raising_register_tools_keeps_nothing_it_registered(
    hookcode_env: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    class Half:
        @hookimpl
        def register_tools(self, register: Any) -> None:
            register(make("half"))
            raise RuntimeError("broke halfway")

    hookcode_env.register(Half(), "half_pack")
    hookcode_env.register(Registers(make("whole")), "whole_pack")
    entries = hookcode_env.runtime().registry.entries
    assert "half" not in entries and entries["whole"].plugin == "whole_pack"
    assert "plugin 'half_pack' raised in hook 'register_tools'" in capsys.readouterr().err


def test_a_cli_command_closes_its_runtime_when_it_ends(
    hookcode_env: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The persistent shell a command started is gone when ``main`` returns, not at exit."""
    import os
    import re

    from hookcode.cli import main

    hookcode_env.env.pop("HOOKCODE_LOAD_PLUGINS", None)
    hookcode_env.write_config({"tool": {"bash": {"persistent": True}}})
    for key in list(os.environ):
        monkeypatch.delenv(key)
    for key, value in hookcode_env.env.items():
        monkeypatch.setenv(key, value)
    command = '{"command": "echo shell=$$", "description": "pid"}'
    code = main(["-C", str(hookcode_env.project), "tools", "call", "bash", command, "--yes"])
    out = capsys.readouterr().out
    assert code == 0, out
    found = re.search(r"shell=(\d+)", out)
    assert found is not None, out
    with pytest.raises(ProcessLookupError):
        os.kill(int(found.group(1)), 0)
