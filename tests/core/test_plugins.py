"""Plugin loading (core/hookcode/plugins.py): real entry points from fake distributions, each
plugin isolated; HOOKCODE_LOAD/BLOCK/TRACE_PLUGINS; --strict-plugins; registration order;
raising lifecycle hooks; the historic ``config`` hook."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.fakedist import FakeDists, run_cli
from helpers.packs import (
    BAD_PLUGINS,
    CLASH_ORDER,
    CLASH_WINNER,
    add_bad_plugins,
    add_clash_packs,
    add_noisy_plugins,
    add_tool_pack,
)
from hookcode import hookimpl, tool
from hookcode.errors import PluginError
from hookcode.plugins import create_plugins


@pytest.fixture
def dists(tmp_path: Path) -> Iterator[FakeDists]:
    """An empty directory of fake distributions, on sys.path for the test."""
    fake = FakeDists(tmp_path / "site")
    with fake.on_sys_path():
        yield fake


def load(env: dict[str, str], **kwargs: Any) -> tuple[Any, list[str]]:
    """create_plugins with stderr captured: (plugins, stderr lines)."""
    err = io.StringIO()
    plugins = create_plugins(env=env, stderr=err, **kwargs)
    return plugins, err.getvalue().splitlines()


def lines_naming(lines: list[str], name: str) -> list[str]:
    return [line for line in lines if f"'{name}'" in line]


# ------------------------------------------------------------------------------ failures


def test_failing_plugins_are_recorded_and_skipped_with_one_line_each(
    dists: FakeDists, hookcode_env: Any
) -> None:
    add_tool_pack(dists)
    add_bad_plugins(dists)
    plugins, lines = load(hookcode_env.env)

    for name, (dist, version, mentions) in BAD_PLUGINS.items():
        info = plugins.infos[name]
        assert info.status == "failed", name
        assert (info.distribution, info.version) == (dist, version)
        assert info.hooks == []
        assert mentions in (info.error or ""), (name, info.error)
        assert "\n" not in (info.error or "")
        assert plugins.pm.get_plugin(name) is None
        naming = lines_naming(lines, name)
        assert len(naming) == 1, (name, lines)
        assert dist in naming[0] and version in naming[0] and "failed to load" in naming[0]
    # everything else keeps working
    assert plugins.infos["core"].status == "loaded"
    good = plugins.infos["tool_fake"]
    assert (good.status, good.distribution, good.version, good.hooks) == (
        "loaded",
        "hookcode-fakepack",
        "2.5",
        ["register_tools"],
    )
    registered: list[Any] = []
    plugins.collect(
        "register_tools", register=lambda *tools: registered.extend(tools), runtime=None
    )
    names = [t.name for t in registered]
    assert {"touch_marker", "guarded"} <= set(names)


def test_misspelled_hook_names_the_right_one(dists: FakeDists, hookcode_env: Any) -> None:
    add_bad_plugins(dists)
    plugins, _ = load(hookcode_env.env)
    error = plugins.infos["typo"].error
    assert error == "unknown hook 'tool_exectue_before' (did you mean 'tool_execute_before'?)"


def test_validation_error_names_the_unknown_argument(dists: FakeDists, hookcode_env: Any) -> None:
    add_bad_plugins(dists)
    plugins, _ = load(hookcode_env.env)
    error = plugins.infos["badargs"].error or ""
    assert error.startswith("PluginValidationError:")
    assert "tool_definition" in error and "bogus" in error


def test_strict_turns_failures_into_an_error(dists: FakeDists, hookcode_env: Any) -> None:
    add_bad_plugins(dists)
    with pytest.raises(PluginError) as caught:
        load(hookcode_env.env, strict=True)
    message = str(caught.value)
    for name in BAD_PLUGINS:
        assert name in message


def test_strict_without_failures_is_fine(dists: FakeDists, hookcode_env: Any) -> None:
    add_tool_pack(dists)
    plugins, lines = load(hookcode_env.env, strict=True)
    assert plugins.infos["tool_fake"].status == "loaded"
    assert not [line for line in lines if "failed" in line]


def test_same_entry_point_name_in_two_distributions_is_reported(
    dists: FakeDists, hookcode_env: Any
) -> None:
    dists.add(
        "first-dup",
        entry_points={"dup": "hkt_dup_a"},
        modules={"hkt_dup_a": "from hookcode import hookimpl\n"},
    )
    dists.add(
        "second-dup",
        entry_points={"dup": "hkt_dup_b"},
        modules={"hkt_dup_b": "from hookcode import hookimpl\n"},
    )
    plugins, lines = load(hookcode_env.env)
    assert plugins.infos["dup"].status == "loaded"
    naming = lines_naming(lines, "dup")
    assert len(naming) == 1
    assert "first-dup" in naming[0] and "second-dup" in naming[0]


def test_entry_points_are_read_once(
    dists: FakeDists, hookcode_env: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.metadata

    add_tool_pack(dists)
    real = importlib.metadata.entry_points
    groups: list[Any] = []

    def counting(**kwargs: Any) -> Any:
        groups.append(kwargs.get("group"))
        return real(**kwargs)

    monkeypatch.setattr(importlib.metadata, "entry_points", counting)
    runtime = hookcode_env.runtime()
    assert "touch_marker" in runtime.registry.entries
    runtime.registry.definitions(runtime.default_agent)
    assert groups.count("hookcode") == 1


# ------------------------------------------------------------------------------ selection


def test_load_plugins_selects_only_those(dists: FakeDists, hookcode_env: Any) -> None:
    add_tool_pack(dists)
    add_bad_plugins(dists)
    env = {**hookcode_env.env, "HOOKCODE_LOAD_PLUGINS": " tool_fake , policy_rules"}
    plugins, lines = load(env)
    assert plugins.infos["tool_fake"].status == "loaded"
    assert plugins.infos["policy_rules"].status == "loaded"
    assert plugins.infos["core"].status == "loaded"  # core is not an entry point
    for name in BAD_PLUGINS:
        info = plugins.infos[name]
        assert info.status == "disabled"
        assert "HOOKCODE_LOAD_PLUGINS" in (info.error or "")
        assert info.distribution == BAD_PLUGINS[name][0]
    assert not [line for line in lines if "failed" in line]  # never even imported
    assert "hkt_bad_broken" not in sys.modules


def test_empty_load_plugins_means_none(dists: FakeDists, hookcode_env: Any) -> None:
    add_tool_pack(dists)
    plugins, _ = load({**hookcode_env.env, "HOOKCODE_LOAD_PLUGINS": ""})
    assert [i.name for i in plugins.loaded()] == ["core"]
    assert plugins.infos["tool_fake"].status == "disabled"
    assert plugins.infos["policy_rules"].status == "disabled"
    registered: list[Any] = []
    plugins.collect(
        "register_tools", register=lambda *tools: registered.extend(tools), runtime=None
    )
    assert registered == []


def test_block_plugins(dists: FakeDists, hookcode_env: Any) -> None:
    add_tool_pack(dists)
    add_bad_plugins(dists)
    blocked = ",".join(BAD_PLUGINS)
    plugins, lines = load({**hookcode_env.env, "HOOKCODE_BLOCK_PLUGINS": blocked})
    for name in BAD_PLUGINS:
        info = plugins.infos[name]
        assert info.status == "disabled"
        assert "HOOKCODE_BLOCK_PLUGINS" in (info.error or "")
    assert plugins.infos["tool_fake"].status == "loaded"
    assert not [line for line in lines if "failed" in line]
    # blocked plugins are not failures, so strict mode is happy
    load({**hookcode_env.env, "HOOKCODE_BLOCK_PLUGINS": blocked}, strict=True)


@pytest.mark.parametrize("value", ["1", "yes", "true"])
def test_trace_plugins(dists: FakeDists, hookcode_env: Any, value: str) -> None:
    add_tool_pack(dists)
    plugins, lines = load({**hookcode_env.env, "HOOKCODE_TRACE_PLUGINS": value})
    assert any(
        "trace: loaded plugin 'tool_fake'" in line and "hookcode-fakepack" in line for line in lines
    ), lines
    err = plugins.stderr
    before = len(err.getvalue().splitlines())
    plugins.collect("register_tools", register=lambda *tools: None, runtime=None)
    after = err.getvalue().splitlines()[before:]
    assert any("trace: hook register_tools -> tool_fake" in line for line in after), after


@pytest.mark.parametrize("value", ["", "0", "false"])
def test_trace_off(dists: FakeDists, hookcode_env: Any, value: str) -> None:
    add_tool_pack(dists)
    plugins, _ = load({**hookcode_env.env, "HOOKCODE_TRACE_PLUGINS": value})
    plugins.collect("register_tools", register=lambda *tools: None, runtime=None)
    assert not [line for line in plugins.stderr.getvalue().splitlines() if "trace:" in line]


# ------------------------------------------------------------------------------ order


def test_registration_order_and_tool_clashes(dists: FakeDists, hookcode_env: Any) -> None:
    add_clash_packs(dists)
    runtime = hookcode_env.runtime()
    plugins = runtime.plugins
    names = list(plugins.infos)
    assert names[0] == "core"
    mine = [name for name in names if name in {ep for _, ep in CLASH_ORDER}]
    assert mine == [ep for _, ep in CLASH_ORDER]
    # the hookcode-* group (policy_rules, ...) comes before every other distribution
    assert names.index("policy_rules") < names.index("zz")
    assert [info.order for info in plugins.infos.values()] == sorted(
        info.order for info in plugins.infos.values()
    )

    entry = runtime.registry.get("clash")
    assert (entry.distribution, entry.plugin) == CLASH_WINNER
    assert [(s.distribution, s.plugin) for s in entry.shadows] == CLASH_ORDER[:-1]
    from hookcode.testing import invoke_tool

    assert invoke_tool(runtime, "clash", {}).result.output == CLASH_WINNER[0]


def test_extra_plugins_register_after_entry_points(dists: FakeDists, hookcode_env: Any) -> None:
    add_clash_packs(dists)

    @tool(name="clash")
    def late_clash() -> str:
        """The test's own."""
        return "extra"

    class Extra:
        @hookimpl
        def register_tools(self, register: Any) -> None:
            register(late_clash)

    hookcode_env.register(Extra(), "extra")
    runtime = hookcode_env.runtime()
    entry = runtime.registry.get("clash")
    assert entry.plugin == "extra"
    assert [s.plugin for s in entry.shadows] == [ep for _, ep in CLASH_ORDER]


# ------------------------------------------------------------------------------ raising hooks


class Recorder:
    def __init__(self) -> None:
        self.seen: list[str] = []
        self.configs: list[Any] = []

    @hookimpl
    def event(self, event: Any) -> None:
        self.seen.append(f"event {event.type}")

    @hookimpl
    def config(self, config: Any) -> None:
        self.configs.append(config)

    @hookimpl
    def tool_definition(self, tool_id: str, definition: dict[str, Any]) -> None:
        definition["description"] += " [recorded]"

    @hookimpl
    def register_tools(self, register: Any) -> None:
        @tool
        def recorded() -> str:
            """A tool."""
            return "ok"

        register(recorded)


class Raiser:
    @hookimpl
    def event(self, event: Any) -> None:
        raise RuntimeError("raiser boom")

    @hookimpl
    def config(self, config: Any) -> None:
        raise RuntimeError("raiser boom")

    @hookimpl
    def tool_definition(self, tool_id: str) -> None:
        raise RuntimeError("raiser boom")

    @hookimpl
    def register_tools(self, register: Any) -> None:
        raise RuntimeError("raiser boom")

    @hookimpl
    def agent(self) -> list[Any]:
        raise RuntimeError("raiser boom")


def test_raising_lifecycle_hooks_are_skipped_and_named(
    hookcode_env: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    recorder = Recorder()
    hookcode_env.register(recorder, "recorder")
    hookcode_env.register(Raiser(), "raiser")  # later: pluggy calls it first
    runtime = hookcode_env.runtime()

    # config (historic, called while the runtime is built)
    assert recorder.configs == [runtime.config]
    # register_tools (registration) and tool_definition (lifecycle)
    assert "recorded" in runtime.registry.entries
    definitions = {d["name"]: d for d in runtime.registry.definitions(runtime.default_agent)}
    assert definitions["recorded"]["description"] == "A tool. [recorded]"
    # agent: the other agents are still there
    assert "build" in runtime.agents()
    # event
    runtime.events.publish("todo.updated", session_id="s")
    assert "event todo.updated" in recorder.seen

    err = capsys.readouterr().err.splitlines()
    for hook in ("config", "register_tools", "tool_definition", "agent", "event"):
        lines = [line for line in err if f"in hook '{hook}'" in line]
        assert lines, (hook, err)
        assert all("'raiser'" in line and "raiser boom" in line for line in lines), lines
    assert not [line for line in err if "'recorder'" in line]
    assert runtime.plugins.infos["raiser"].status == "loaded"


def test_historic_config_reaches_plugins_registered_later(
    hookcode_env: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    runtime = hookcode_env.runtime()
    late = Recorder()
    info = runtime.plugins.register(late, "late")
    assert info.status == "loaded"
    assert late.configs == [runtime.config]
    # a late plugin whose config hook raises is reported and stays registered
    info = runtime.plugins.register(Raiser(), "late_raiser")
    assert info.status == "loaded"
    err = capsys.readouterr().err
    assert "'late_raiser'" in err and "'config'" in err
    # and the history is not replayed twice to the first one
    assert len(late.configs) == 1


# ------------------------------------------------------------------------------ real processes


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> dict[str, FakeDists]:
    root = tmp_path_factory.mktemp("plugin-sites")
    good, bad, noisy = (FakeDists(root / n) for n in ("good", "bad", "noisy"))
    add_tool_pack(good)
    add_bad_plugins(bad)
    add_noisy_plugins(noisy)
    return {"good": good, "bad": bad, "noisy": noisy}


def test_cli_keeps_working_with_failing_plugins(
    site: dict[str, FakeDists], hookcode_env: Any
) -> None:
    env = site["good"].env(site["bad"].env(hookcode_env.env))
    proc = run_cli(["plugins", "list", "--json"], env=env, cwd=hookcode_env.project)
    assert proc.returncode == 0, proc.stderr
    infos = {i["name"]: i for i in json.loads(proc.stdout)}
    for name, (dist, version, mentions) in BAD_PLUGINS.items():
        assert infos[name]["status"] == "failed"
        assert (infos[name]["distribution"], infos[name]["version"]) == (dist, version)
        assert mentions in infos[name]["error"]
        assert len(lines_naming(proc.stderr.splitlines(), name)) == 1, proc.stderr
    assert infos["tool_fake"]["status"] == "loaded"
    assert set(infos["tool_fake"]) >= {
        "name",
        "distribution",
        "version",
        "hooks",
        "status",
        "error",
    }

    proc = run_cli(
        ["tools", "call", "touch_marker", '{"path": "m"}'], env=env, cwd=hookcode_env.project
    )
    assert proc.returncode == 0, proc.stderr
    assert (hookcode_env.project / "m").read_text() == "1"


def test_cli_strict_plugins(site: dict[str, FakeDists], hookcode_env: Any) -> None:
    env = site["good"].env(site["bad"].env(hookcode_env.env))
    proc = run_cli(["--strict-plugins", "tools", "list"], env=env, cwd=hookcode_env.project)
    assert proc.returncode == 1
    assert "--strict-plugins" in proc.stderr
    for name in BAD_PLUGINS:
        assert name in proc.stderr
    assert "Traceback" not in proc.stderr
    # the same with nothing failing
    proc = run_cli(
        ["--strict-plugins", "tools", "list", "--json"],
        env=site["good"].env(hookcode_env.env),
        cwd=hookcode_env.project,
    )
    assert proc.returncode == 0, proc.stderr
    assert "touch_marker" in {t["name"] for t in json.loads(proc.stdout)}


def test_cli_raising_hooks_do_not_break_a_call(
    site: dict[str, FakeDists], hookcode_env: Any
) -> None:
    record = hookcode_env.root / "record.txt"
    env = site["good"].env(site["noisy"].env(hookcode_env.env), HKT_RECORD=str(record))
    proc = run_cli(
        ["tools", "call", "touch_marker", '{"path": "m"}', "--json"],
        env=env,
        cwd=hookcode_env.project,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["error"] is None
    assert (hookcode_env.project / "m").exists()
    err = proc.stderr.splitlines()
    for hook in ("config", "register_tools", "event"):
        assert any("'noisy'" in line and f"'{hook}'" in line for line in err), (hook, err)
    assert not [line for line in err if "'recorder'" in line]
    seen = record.read_text().splitlines()
    assert "config" in seen
    assert "event tool.completed" in seen


def test_cli_trace_plugins(site: dict[str, FakeDists], hookcode_env: Any) -> None:
    env = site["good"].env(hookcode_env.env, HOOKCODE_TRACE_PLUGINS="1")
    proc = run_cli(
        ["tools", "call", "touch_marker", '{"path": "m"}'], env=env, cwd=hookcode_env.project
    )
    assert proc.returncode == 0, proc.stderr
    assert "trace: loaded plugin 'tool_fake'" in proc.stderr
    assert "trace: hook register_tools -> tool_fake" in proc.stderr
    assert "trace: hook tool_execute -> core" in proc.stderr
