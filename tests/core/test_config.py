"""Layered config: files, env layers, merging, validation, plugin sections, schema."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.fakedist import run_cli
from hookcode.config import (
    AgentConfig,
    Config,
    CoreConfig,
    config_paths,
    deep_merge,
    json_schema,
    load_config,
)
from hookcode.configfiles import CONTENT_ENV, MAX_DEPTH, PERMISSION_ENV
from hookcode.errors import ConfigError
from hookcode.testing import HookcodeEnv
from pydantic import BaseModel, ConfigDict, Field


class BashSection(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_timeout: int | None = Field(default=None, gt=0)


class ProviderSection(BaseModel):
    model_config = ConfigDict(extra="forbid")
    api_key: str | None = None
    base_url: str = "https://example.invalid"


class AuditSection(BaseModel):
    model_config = ConfigDict(extra="forbid")
    enabled: bool = True
    path: str | None = None


CLAIMED: dict[str, type[BaseModel]] = {
    "tool.bash": BashSection,
    "provider.*": ProviderSection,
    "audit": AuditSection,
}


class Project:
    """A global config dir, a worktree and a sub-directory, all under tmp_path."""

    def __init__(self, root: Path):
        self.config_home = root / "xdg"
        self.worktree = root / "repo"
        self.cwd = self.worktree / "pkg" / "sub"
        self.cwd.mkdir(parents=True)
        self.env: dict[str, str] = {"XDG_CONFIG_HOME": str(self.config_home), "HOME": str(root)}

    @property
    def global_file(self) -> Path:
        return self.config_home / "hookcode" / "config.toml"

    def write(self, path: Path, text: str) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def load(self, claimed: dict[str, type[BaseModel]] | None = None, **kwargs: Any) -> Config:
        kwargs.setdefault("trusted", True)  # layering, not trust (tests/core/test_trust.py)
        return load_config(self.cwd, self.worktree, claimed, env=self.env, **kwargs)


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path)


# ----------------------------------------------------------------------------- paths, layers


def test_config_paths_order(project: Project) -> None:
    project.env["HOOKCODE_CONFIG"] = "extra.toml"
    wt, pkg, sub = (
        project.worktree.resolve(),
        project.worktree.resolve() / "pkg",
        project.cwd.resolve(),
    )
    assert config_paths(project.cwd, project.worktree, project.env) == [
        project.global_file,
        wt / "hookcode.toml",
        wt / ".hookcode" / "config.toml",
        pkg / "hookcode.toml",
        pkg / ".hookcode" / "config.toml",
        sub / "hookcode.toml",
        sub / ".hookcode" / "config.toml",
        sub / "extra.toml",  # relative to the working directory
    ]


def test_config_dir_override_and_home_default(tmp_path: Path) -> None:
    env = {"HOOKCODE_CONFIG_DIR": str(tmp_path / "cfg"), "XDG_CONFIG_HOME": str(tmp_path / "x")}
    assert config_paths(tmp_path, tmp_path, env)[0] == tmp_path / "cfg" / "config.toml"
    env = {"HOME": str(tmp_path / "home")}
    assert (
        config_paths(tmp_path, tmp_path, env)[0] == tmp_path / "home/.config/hookcode/config.toml"
    )


def test_cwd_outside_worktree_uses_cwd_only(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    paths = config_paths(tmp_path / "b", tmp_path / "a", {"XDG_CONFIG_HOME": str(tmp_path)})
    cwd = (tmp_path / "b").resolve()
    assert paths[1:] == [cwd / "hookcode.toml", cwd / ".hookcode" / "config.toml"]


def test_layer_precedence(project: Project) -> None:
    files = [
        project.global_file,
        project.worktree / "hookcode.toml",
        project.worktree / ".hookcode" / "config.toml",
        project.cwd / "hookcode.toml",
        project.cwd / ".hookcode" / "config.toml",
        project.worktree / "elsewhere.toml",  # HOOKCODE_CONFIG
    ]
    # Layer i sets k_i .. k_7, so the winner of k_i is layer i.
    for i, path in enumerate(files):
        lines = "".join(f'k{j} = "L{i}"\n' for j in range(i, 8))
        project.write(path, f"[experimental]\n{lines}")
    project.env["HOOKCODE_CONFIG"] = str(files[-1])
    project.env["HOOKCODE_CONFIG_CONTENT"] = '[experimental]\nk6 = "content"\nk7 = "content"\n'
    project.env["HOOKCODE_PERMISSION"] = '{"bash": "deny"}'
    project.write(
        project.cwd / ".hookcode" / "config.toml",
        '[experimental]\nk4 = "L4"\n[permission]\nbash = "ask"\n',
    )
    config = project.load()
    assert config.experimental == {
        "k0": "L0",
        "k1": "L1",
        "k2": "L2",
        "k3": "L3",
        "k4": "L4",
        "k5": "L5",
        "k6": "content",
        "k7": "content",
    }
    assert config.permission == {"bash": "deny"}  # HOOKCODE_PERMISSION beats every layer
    sources = [str(files[0]), *(str(path.resolve()) for path in files[1:])]
    assert [layer.source for layer in config.layers] == [
        *sources,
        "HOOKCODE_CONFIG_CONTENT",
        "HOOKCODE_PERMISSION",
    ]
    for i, source in enumerate(sources):
        assert config.source_of("experimental", f"k{i}") == source
    assert config.source_of("experimental", "k7") == "HOOKCODE_CONFIG_CONTENT"
    assert config.source_of("permission", "bash") == "HOOKCODE_PERMISSION"


def test_permission_env_beats_content_and_files(project: Project) -> None:
    project.write(
        project.worktree / "hookcode.toml", '[permission]\nbash = "allow"\nedit = "ask"\n'
    )
    project.env["HOOKCODE_CONFIG_CONTENT"] = '{"permission": {"bash": "ask", "read": "allow"}}'
    project.env["HOOKCODE_PERMISSION"] = '{"bash": "deny"}'
    config = project.load()
    assert config.permission == {"bash": "deny", "edit": "ask", "read": "allow"}
    assert config.source_of("permission", "bash") == "HOOKCODE_PERMISSION"
    assert config.source_of("permission", "read") == "HOOKCODE_CONFIG_CONTENT"
    assert config.source_of("permission", "edit") == str(
        (project.worktree / "hookcode.toml").resolve()
    )


def test_no_files_gives_defaults(project: Project) -> None:
    config = project.load()
    assert config.layers == []
    assert config.model is None
    assert config.permission == {}
    assert config.truncation.max_lines == 2000
    assert config.truncation.max_bytes == 51200
    assert config.plugins.load is None
    assert len(config.candidates) == 7


def test_content_json_and_toml(project: Project) -> None:
    project.env["HOOKCODE_CONFIG_CONTENT"] = (
        '  {"model": "anthropic/x", "agent": {"a": {"steps": 3}}}'
    )
    config = project.load()
    assert config.model == "anthropic/x"
    assert config.agent["a"] == AgentConfig(steps=3)
    project.env["HOOKCODE_CONFIG_CONTENT"] = 'model = "openai/y"'
    assert project.load().model == "openai/y"


def test_content_invalid_json(project: Project) -> None:
    project.env["HOOKCODE_CONFIG_CONTENT"] = '{"model": '
    with pytest.raises(ConfigError, match=r"^HOOKCODE_CONFIG_CONTENT: invalid JSON"):
        project.load()
    project.env["HOOKCODE_CONFIG_CONTENT"] = "model = ?"
    with pytest.raises(ConfigError, match=r"^HOOKCODE_CONFIG_CONTENT: invalid TOML.*line 1"):
        project.load()


def test_permission_env_must_be_json_object(project: Project) -> None:
    project.env["HOOKCODE_PERMISSION"] = "[1]"
    with pytest.raises(ConfigError, match=r"^HOOKCODE_PERMISSION: expected a JSON object"):
        project.load()


def test_missing_hookcode_config_file(project: Project) -> None:
    missing = project.worktree / "nope.toml"
    project.env["HOOKCODE_CONFIG"] = str(missing)
    with pytest.raises(ConfigError) as info:
        project.load()
    assert info.value.file == str(missing)
    assert "HOOKCODE_CONFIG" in str(info.value)
    assert str(missing) in str(info.value)


def test_toml_syntax_error_names_file_and_line(project: Project) -> None:
    bad = project.write(project.cwd / "hookcode.toml", 'model = "a/b"\n\n[permission\n')
    with pytest.raises(ConfigError) as info:
        project.load()
    assert info.value.file == str(bad.resolve())
    assert str(info.value).startswith(f"{bad.resolve()}: invalid TOML")
    assert "line 3" in str(info.value)


# ----------------------------------------------------------------------------- merging, order


def test_deep_merge_keeps_first_position_and_appends() -> None:
    base = {"a": 1, "t": {"x": 1, "y": 2}, "b": 2}
    over = {"c": 3, "t": {"z": 3, "x": 9}, "a": 7}
    merged = deep_merge(base, over)
    assert merged == {"a": 7, "t": {"x": 9, "y": 2, "z": 3}, "b": 2, "c": 3}
    assert list(merged) == ["a", "t", "b", "c"]
    assert list(merged["t"]) == ["x", "y", "z"]
    assert base == {"a": 1, "t": {"x": 1, "y": 2}, "b": 2}  # inputs untouched


def test_deep_merge_replaces_non_tables() -> None:
    assert deep_merge({"p": "ask", "l": [1, 2]}, {"p": {"*": "deny"}, "l": [3]}) == {
        "p": {"*": "deny"},
        "l": [3],
    }
    assert deep_merge({"p": {"*": "deny"}}, {"p": "ask"}) == {"p": "ask"}


def test_permission_order_kept_through_layers(project: Project) -> None:
    project.write(
        project.global_file,
        '[permission]\n"*" = "allow"\nedit = "ask"\n'
        'bash = { "*" = "ask", "git status *" = "allow", "rm *" = "deny" }\n',
    )
    project.write(
        project.cwd / ".hookcode" / "config.toml",
        '[permission]\nwebfetch = "deny"\n"*" = "ask"\nbash = { "ls *" = "allow", "*" = "deny" }\n',
    )
    permission = project.load().permission
    assert isinstance(permission, dict)
    assert list(permission) == ["*", "edit", "bash", "webfetch"]
    assert permission["*"] == "ask"
    bash = permission["bash"]
    assert isinstance(bash, dict)
    assert list(bash.items()) == [
        ("*", "deny"),
        ("git status *", "allow"),
        ("rm *", "deny"),
        ("ls *", "allow"),
    ]


def test_json_content_keeps_order(project: Project) -> None:
    project.env["HOOKCODE_CONFIG_CONTENT"] = json.dumps(
        {"permission": {"zeta": "allow", "alpha": {"b *": "deny", "a *": "allow"}}}
    )
    permission = project.load().permission
    assert isinstance(permission, dict)
    assert list(permission) == ["zeta", "alpha"]
    assert list(permission["alpha"]) == ["b *", "a *"]  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- permission shapes


def test_permission_bare_action(project: Project) -> None:
    project.write(project.worktree / "hookcode.toml", 'permission = "ask"\n')
    assert project.load().permission == "ask"


def test_permission_table_and_agent_permission(project: Project) -> None:
    project.write(
        project.worktree / "hookcode.toml",
        '[permission]\n"*" = "allow"\nexternal_directory = { "*" = "ask", "~/scratch/*" = "allow" }\n'
        '"github_*" = "ask"\n\n[agent.review]\nmode = "subagent"\nsteps = 4\n\n'
        '[agent.review.permission]\nedit = "deny"\nbash = { "*" = "ask" }\n\n'
        '[agent.strict]\npermission = "deny"\n',
    )
    config = project.load()
    assert config.permission == {
        "*": "allow",
        "external_directory": {"*": "ask", "~/scratch/*": "allow"},
        "github_*": "ask",
    }
    assert config.agent["review"].permission == {"edit": "deny", "bash": {"*": "ask"}}
    assert config.agent["review"].steps == 4
    assert config.agent["strict"].permission == "deny"


def test_invalid_action_names_key_and_file(project: Project) -> None:
    project.write(project.worktree / "hookcode.toml", '[permission]\nbash = { "*" = "ask" }\n')
    bad = project.write(
        project.cwd / "hookcode.toml", '[permission.bash]\n"rm *" = "never"\n'
    ).resolve()
    with pytest.raises(ConfigError) as info:
        project.load()
    assert info.value.file == str(bad)
    assert info.value.key == "permission.bash.rm *"
    assert str(info.value) == (
        f"{bad}: permission.bash.rm *: Input should be 'allow', 'deny' or 'ask' (got 'never')"
    )


def test_invalid_permission_shapes(project: Project) -> None:
    project.env["HOOKCODE_PERMISSION"] = '{"edit": 3}'
    with pytest.raises(ConfigError, match=r"^HOOKCODE_PERMISSION: permission\.edit: Input should"):
        project.load()
    project.env["HOOKCODE_PERMISSION"] = '"sometimes"'
    with pytest.raises(ConfigError, match=r"^HOOKCODE_PERMISSION: permission: Input should"):
        project.load()


def test_several_errors_reported_together(project: Project) -> None:
    path = project.write(
        project.worktree / "hookcode.toml",
        '[agent.review]\nsteps = 0\nmode = "boss"\n[permission]\nread = "maybe"\n',
    ).resolve()
    with pytest.raises(ConfigError) as info:
        project.load()
    lines = str(info.value).splitlines()
    assert lines[0] == f"{path}: 3 config errors:"
    assert lines[1].startswith(f"{path}: permission.read: Input should be 'allow'")
    assert lines[2].startswith(f"{path}: agent.review.mode: Input should be 'primary'")
    assert lines[3].startswith(
        f"{path}: agent.review.steps: Input should be greater than or equal to 1"
    )


def test_nested_unknown_key_is_error_with_suggestion(project: Project) -> None:
    path = project.write(
        project.worktree / "hookcode.toml", "[agent.review]\nstpes = 3\n"
    ).resolve()
    with pytest.raises(ConfigError) as info:
        project.load()
    assert (
        str(info.value)
        == f"{path}: agent.review.stpes: unknown key 'stpes' (did you mean 'steps'?)"
    )


def test_top_level_value_that_should_be_a_table(project: Project) -> None:
    path = project.write(
        project.worktree / "hookcode.toml", 'truncation = 5\ntool = "x"\n'
    ).resolve()
    with pytest.raises(ConfigError) as info:
        project.load(CLAIMED)
    text = str(info.value)
    assert f"{path}: truncation: " in text
    assert f"{path}: tool: expected a table, got a string" in text


def test_truncation_per_tool_limits(project: Project) -> None:
    project.write(
        project.worktree / "hookcode.toml",
        "[truncation]\nmax_lines = 100\n[truncation.tools.bash]\nmax_bytes = 10\n",
    )
    truncation = project.load().truncation
    assert truncation.max_lines == 100
    assert truncation.max_bytes == 51200
    assert truncation.tools["bash"].max_bytes == 10
    assert truncation.tools["bash"].max_lines is None
    project.write(project.cwd / "hookcode.toml", "[truncation.tools.bash]\nmax_lines = 0\n")
    with pytest.raises(
        ConfigError, match=r"truncation\.tools\.bash\.max_lines: Input should be greater"
    ):
        project.load()


# ----------------------------------------------------------------------------- unknown keys


def test_unknown_key_error_with_suggestion_and_file(project: Project) -> None:
    path = project.write(project.cwd / "hookcode.toml", 'modle = "a/b"\n').resolve()
    with pytest.raises(ConfigError) as info:
        project.load()
    assert info.value.file == str(path)
    assert info.value.key == "modle"
    assert str(info.value) == f"{path}: modle: unknown key 'modle' (did you mean 'model'?)"


def test_unknown_sub_key_of_claimed_table(project: Project) -> None:
    path = project.write(
        project.worktree / "hookcode.toml", "[tool.bsh]\nmax_timeout = 1\n"
    ).resolve()
    with pytest.raises(ConfigError) as info:
        project.load(CLAIMED)
    assert str(info.value) == f"{path}: tool.bsh: unknown key 'tool.bsh' (did you mean 'bash'?)"


def test_unknown_keys_are_warnings_when_plugins_are_not_loaded(project: Project) -> None:
    path = project.write(
        project.worktree / "hookcode.toml",
        'model = "a/b"\n[tool.bash]\nmax_timeout = "whatever"\n[cache]\ntools = ["read"]\n',
    ).resolve()
    config = project.load(unloaded_plugins=["tool_bash", "cache"])
    assert config.warnings == [
        f"config key 'tool.bash' in {path} is not used by any loaded plugin (not loaded: tool_bash)",
        f"config key 'cache' in {path} is not used by any loaded plugin (not loaded: cache)",
    ]
    assert config.raw["tool"] == {"bash": {"max_timeout": "whatever"}}
    assert config.sections == {}
    assert config.to_dict()["cache"] == {"tools": ["read"]}  # kept, not dropped
    assert config.model == "a/b"


def test_sections_of_uninstalled_distributions_are_warnings_naming_them(project: Project) -> None:
    """A section of one of hookcode's own distributions that is not installed (uninstalled,
    its section kept) warns naming the section and the distribution; the rest still works."""
    path = project.write(
        project.worktree / "hookcode.toml",
        'model = "a/b"\n[tool.bash]\nmax_timeout = 1000\n[audit]\nenabled = false\n'
        '[mcp.github]\nurl = "http://x"\n[provider.anthropic]\ncache = true\n',
    ).resolve()
    config = project.load(CLAIMED, installed={"hookcode-core", "hookcode-tool-read"})
    assert config.warnings == [
        f"config key 'mcp.github' in {path} is not used: hookcode-mcp, whose plugin reads it, "
        "is not installed (install it, or remove the section)",
        f"config key 'provider.anthropic' in {path} is not used: hookcode-provider-anthropic, "
        "whose plugin reads it, is not installed (install it, or remove the section)",
    ]
    assert config.model == "a/b"
    # with nothing claiming them, bash's and audit's own sections warn too
    config = project.load(installed={"hookcode-core"})
    assert [w.split(" in ")[0] for w in config.warnings] == [
        "config key 'tool.bash'",
        "config key 'audit'",
        "config key 'mcp.github'",
        "config key 'provider.anthropic'",
    ]
    assert "hookcode-tool-bash, whose plugin reads it, is not installed" in config.warnings[0]
    assert config.raw["tool"] == {"bash": {"max_timeout": 1000}}


def test_a_section_nobody_would_own_stays_an_error_beside_an_uninstalled_one(
    project: Project,
) -> None:
    path = project.write(
        project.worktree / "hookcode.toml", "[tool.bash]\nmax_timeout = 1\n[tool.nope]\nx = 1\n"
    ).resolve()
    with pytest.raises(ConfigError) as info:
        project.load(installed={"hookcode-core"})
    assert str(info.value) == f"{path}: tool.nope: unknown key 'tool.nope'"
    # installed but claiming nothing (not a hookcode distribution's section): an error
    project.write(project.worktree / "hookcode.toml", "[tool.bash]\nmax_timeout = 1\n")
    with pytest.raises(ConfigError, match="unknown key 'tool'"):
        project.load(installed={"hookcode-core", "hookcode-tool-bash"})


def test_warnings_name_the_file_of_each_section(project: Project) -> None:
    first = project.write(project.worktree / "hookcode.toml", "[mcp.github]\nurl = 1\n").resolve()
    second = project.write(project.cwd / "hookcode.toml", "[mcp.local]\ncmd = 2\n").resolve()
    config = project.load(unloaded_plugins=["mcp"])
    assert config.warnings == [
        f"config key 'mcp.github' in {first} is not used by any loaded plugin (not loaded: mcp)",
        f"config key 'mcp.local' in {second} is not used by any loaded plugin (not loaded: mcp)",
    ]
    assert config.raw["mcp"] == {"github": {"url": 1}, "local": {"cmd": 2}}


def test_warning_for_unclaimed_sub_key(project: Project) -> None:
    path = project.write(
        project.worktree / "hookcode.toml", "[tool.bash]\nmax_timeout = 5\n[tool.grep]\nx = 1\n"
    ).resolve()
    config = project.load(CLAIMED, unloaded_plugins=["tool_grep"])
    assert config.warnings == [
        f"config key 'tool.grep' in {path} is not used by any loaded plugin (not loaded: tool_grep)"
    ]
    assert config.section("tool.bash") == BashSection(max_timeout=5)
    assert config.to_dict()["tool"] == {"bash": {"max_timeout": 5}, "grep": {"x": 1}}


def test_core_errors_are_not_warnings(project: Project) -> None:
    project.write(project.worktree / "hookcode.toml", "[agent.a]\nbogus = 1\n")
    with pytest.raises(ConfigError, match=r"agent\.a\.bogus: unknown key"):
        project.load(unloaded_plugins=["x"])


# ----------------------------------------------------------------------------- claimed sections


def test_claimed_sections_one_and_two_segments(project: Project) -> None:
    project.write(
        project.worktree / "hookcode.toml",
        "[tool.bash]\nmax_timeout = 600000\n"
        '[provider.openai]\napi_key = "k"\n[provider.local]\nbase_url = "http://localhost"\n'
        "[audit]\nenabled = false\n",
    )
    config = project.load(CLAIMED)
    assert config.section("tool.bash") == BashSection(max_timeout=600000)
    assert config.section("provider.openai") == ProviderSection(api_key="k")
    assert config.section("provider.local") == ProviderSection(base_url="http://localhost")
    assert config.section("audit") == AuditSection(enabled=False)
    assert config.section("provider.missing") is None
    assert list(config.sections) == ["tool.bash", "provider.openai", "provider.local", "audit"]


def test_literal_pattern_beats_wildcard(project: Project) -> None:
    class Special(BaseModel):
        model_config = ConfigDict(extra="forbid")
        flag: bool = False

    project.write(project.worktree / "hookcode.toml", "[mcp.special]\nflag = true\n[mcp.other]\n")
    config = project.load({"mcp.*": ProviderSection, "mcp.special": Special})
    assert config.section("mcp.special") == Special(flag=True)
    assert config.section("mcp.other") == ProviderSection()


def test_error_inside_claimed_section_names_file_and_key(project: Project) -> None:
    project.write(project.worktree / "hookcode.toml", "[tool.bash]\nmax_timeout = 10\n")
    path = project.write(project.cwd / "hookcode.toml", "[tool.bash]\nmax_timeout = -1\n").resolve()
    with pytest.raises(ConfigError) as info:
        project.load(CLAIMED)
    assert info.value.file == str(path)
    assert info.value.key == "tool.bash.max_timeout"
    assert "greater than 0" in str(info.value)


def test_unknown_field_in_claimed_section(project: Project) -> None:
    path = project.write(project.worktree / "hookcode.toml", '[provider.openai]\napi_kye = "k"\n')
    with pytest.raises(ConfigError) as info:
        project.load(CLAIMED)
    assert str(info.value) == (
        f"{path.resolve()}: provider.openai.api_kye: unknown key 'api_kye' (did you mean 'api_key'?)"
    )


def test_claimed_pattern_clashing_with_core(project: Project) -> None:
    with pytest.raises(ConfigError, match="owned by core"):
        project.load({"permission": AuditSection})
    with pytest.raises(ConfigError, match="section pattern"):
        project.load({"a.b.c": AuditSection})


def test_claimed_section_shape_and_missing_field_errors(project: Project) -> None:
    class Needs(BaseModel):
        token: str

    path = project.write(
        project.worktree / "hookcode.toml", "audit = true\n[needs]\nother = 1\n"
    ).resolve()
    with pytest.raises(ConfigError) as info:
        project.load({"audit": AuditSection, "needs": Needs})
    lines = str(info.value).splitlines()
    assert lines[1] == f"{path}: audit: expected a table, got a boolean"
    assert lines[2] == f"{path}: needs.token: Field required"


def test_list_items_in_error_keys(project: Project) -> None:
    path = project.write(project.worktree / "hookcode.toml", '[plugins]\nload = ["a", 2]\n')
    with pytest.raises(ConfigError) as info:
        project.load()
    assert info.value.file == str(path.resolve())
    assert info.value.key == "plugins.load[1]"


def test_non_utf8_file(project: Project) -> None:
    path = project.worktree / "hookcode.toml"
    path.write_bytes(b'model = "\xff"\n')
    with pytest.raises(ConfigError, match="not valid UTF-8"):
        project.load()


def test_pattern_claimed_whole_and_by_sub_table(project: Project) -> None:
    with pytest.raises(ConfigError, match="claimed both"):
        project.load({"mcp": AuditSection, "mcp.*": ProviderSection})


# ----------------------------------------------------------------------------- output


def test_to_dict_round_trip(project: Project) -> None:
    project.write(
        project.worktree / "hookcode.toml",
        'model = "a/b"\n[permission]\n"*" = "allow"\nbash = { "*" = "ask", "rm *" = "deny" }\n'
        '[agent.review]\nsteps = 2\n[tool.bash]\nmax_timeout = 5\n[audit]\npath = "x"\n'
        "[experimental]\nwhen = 1979-05-27\n",
    )
    config = project.load(CLAIMED)
    data = config.to_dict()
    json.dumps(data)  # JSON-compatible
    assert list(data)[: len(CoreConfig.model_fields)] == list(CoreConfig.model_fields)
    assert data["permission"] == {"*": "allow", "bash": {"*": "ask", "rm *": "deny"}}
    assert data["truncation"]["max_lines"] == 2000
    assert data["tool"] == {"bash": {"max_timeout": 5}}
    assert data["audit"] == {"enabled": True, "path": "x"}
    assert data["experimental"] == {"when": "1979-05-27"}

    again = load_config(
        project.cwd,
        project.cwd,
        CLAIMED,
        env={
            "HOOKCODE_CONFIG_DIR": str(project.worktree / "none"),
            "HOOKCODE_CONFIG_CONTENT": json.dumps(data),
        },
    )
    assert again.to_dict() == data
    assert json.dumps(again.to_dict()) == json.dumps(data)  # same key order too


def test_getattr_delegates_only_core_fields(project: Project) -> None:
    config = project.load()
    assert config.default_agent is None
    with pytest.raises(AttributeError):
        _ = config.no_such_thing


def test_provenance(project: Project) -> None:
    first = project.write(
        project.worktree / "hookcode.toml",
        '[permission]\nbash = { "rm *" = "deny" }\nedit = "ask"\n',
    ).resolve()
    second = project.write(
        project.cwd / ".hookcode" / "config.toml", '[permission]\nbash = "allow"\n'
    ).resolve()
    config = project.load()
    assert config.source_of("permission", "edit") == str(first)
    assert config.source_of("permission", "bash") == str(second)
    assert config.source_of("permission") == str(second)
    # The replaced table's keys are gone, and so is their provenance.
    assert config.source_of("permission", "bash", "rm *") is None
    assert config.source_of("model") is None


def test_json_schema_includes_core_and_claimed_sections() -> None:
    schema = json_schema(CLAIMED)
    json.loads(json.dumps(schema))
    props = schema["properties"]
    for key in CoreConfig.model_fields:
        assert key in props
    assert schema["additionalProperties"] is False
    assert props["audit"] == {"$ref": "#/$defs/AuditSection"}
    assert props["tool"]["properties"]["bash"] == {"$ref": "#/$defs/BashSection"}
    assert props["tool"]["additionalProperties"] is False
    assert props["provider"]["additionalProperties"] == {"$ref": "#/$defs/ProviderSection"}
    for name in ("AgentConfig", "AuditSection", "BashSection", "ProviderSection"):
        assert name in schema["$defs"]
    refs = {ref for ref in _refs(schema)}
    assert refs <= {f"#/$defs/{name}" for name in schema["$defs"]}  # every $ref resolves


def test_json_schema_without_claims() -> None:
    schema = json_schema()
    assert set(schema["properties"]) == set(CoreConfig.model_fields)


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [ref for value in node.values() for ref in _refs(value)]
    if isinstance(node, list):
        return [ref for value in node for ref in _refs(value)]
    return []


def test_a_misspelled_core_key_is_an_error_even_with_plugins_not_loaded(project: Project) -> None:
    path = project.write(project.worktree / "hookcode.toml", 'modle = "a/b"\n').resolve()
    with pytest.raises(ConfigError) as info:
        project.load(unloaded_plugins=["tool_bash", "mcp"])
    assert str(info.value) == f"{path}: modle: unknown key 'modle' (did you mean 'model'?)"


def test_a_wildcard_claim_leaves_a_table_named_after_an_unloaded_plugin(project: Project) -> None:
    class AnyProvider(BaseModel):
        model_config = {"extra": "forbid"}
        base_url: str | None = None

    path = project.write(
        project.worktree / "hookcode.toml",
        '[provider.anthropic]\ncache = true\n[provider.local]\nbase_url = "http://x"\n',
    ).resolve()
    config = project.load({"provider.*": AnyProvider}, unloaded_plugins=["provider_anthropic"])
    assert config.warnings == [
        f"config key 'provider.anthropic' in {path} is not used by any loaded plugin "
        "(not loaded: provider_anthropic)"
    ]
    assert config.section("provider.local").base_url == "http://x"  # type: ignore[union-attr]
    with pytest.raises(ConfigError):  # with the plugin loaded, the wildcard model applies
        project.load({"provider.*": AnyProvider})


# ----------------------------------------------------------------------------- bad input
#
# A config file that is not a regular file, or a value nested thousands of levels deep, is one
# line naming the file (or the variable), exit 1, and nothing is changed; a FIFO is never
# opened in a way that blocks.

DEEP_TABLE = "[" + ".".join(["a"] * 10_000) + "]\nx = 1\n"
DEEP_ARRAY = "a = " + "[" * 10_000 + "]" * 10_000 + "\n"
DEEP_JSON = '{"a":' * 10_000 + "1" + "}" * 10_000


def _special(kind: str, path: Path) -> str:
    """Make ``path`` a non-regular file of ``kind``; the expected message."""
    if kind == "fifo":
        os.mkfifo(path)
        return "is a FIFO (named pipe), not a regular file"
    if kind == "directory":
        path.mkdir()
        return "is a directory"
    if kind == "dangling":
        path.symlink_to(path.parent / "missing.toml")
        return f"is a symbolic link to a missing file ({path.parent / 'missing.toml'})"
    if kind == "loop":
        path.symlink_to(path)
        return "is a symbolic link that cannot be followed: Too many levels of symbolic links"
    if kind == "device":
        path.symlink_to("/dev/zero")
        return "is a character device, not a regular file"
    if kind == "socket":
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        server.close()
        return "is a socket, not a regular file"
    raise AssertionError(kind)


SPECIAL = ["fifo", "directory", "dangling", "loop", "device", "socket"]


@pytest.mark.parametrize("kind", SPECIAL)
@pytest.mark.parametrize("where", ["hookcode.toml", ".hookcode/config.toml", "global", "env"])
def test_a_config_file_that_is_not_a_regular_file_is_an_error(
    project: Project, kind: str, where: str
) -> None:
    if where == "global":
        path = project.global_file
    elif where == "env":
        path = project.worktree / "named.toml"
        project.env["HOOKCODE_CONFIG"] = str(path)
    else:
        path = project.worktree / where
    path.parent.mkdir(parents=True, exist_ok=True)
    why = _special(kind, path)
    started = time.monotonic()
    with pytest.raises(ConfigError) as info:
        project.load()
    assert time.monotonic() - started < 5  # the FIFO was never waited on
    assert str(info.value) == f"{path}: {why}"
    for trusted in (True, False):  # the same through either reading of a project
        with pytest.raises(ConfigError):
            project.load(trusted=trusted)


@pytest.mark.parametrize(
    ("source", "text"),
    [
        ("file", DEEP_TABLE),
        ("file", DEEP_ARRAY),
        ("file", "a = " + "{b = " * 1000 + "1" + "}" * 1000 + "\n"),
        (CONTENT_ENV, DEEP_TABLE),
        (CONTENT_ENV, DEEP_ARRAY),
        (CONTENT_ENV, DEEP_JSON),
        (PERMISSION_ENV, DEEP_JSON),
        (PERMISSION_ENV, '{"bash": ' + "[" * 70 + "]" * 70 + "}"),
    ],
)
def test_deeply_nested_config_is_one_error_naming_the_source(
    project: Project, source: str, text: str
) -> None:
    if source == "file":
        path = project.write(project.worktree / "hookcode.toml", text).resolve()
        name = str(path)
    else:
        project.env[source] = text
        name = source
    with pytest.raises(ConfigError) as info:
        project.load()
    assert str(info.value) == f"{name}: tables or arrays nested deeper than {MAX_DEPTH} levels"


def test_nesting_up_to_the_limit_is_validated_and_merged(project: Project) -> None:
    def nested(levels: int) -> Any:  # a document of ``levels`` tables, the top one included
        value: Any = 1
        for _ in range(levels - 1):
            value = {"k": value}
        return {"experimental": value}

    project.write(project.global_file, "[experimental]\nk = 0\n")
    project.env[CONTENT_ENV] = json.dumps(nested(MAX_DEPTH))
    project.env[PERMISSION_ENV] = json.dumps({"bash": {"*": "ask"}})
    config = project.load()  # merged over the global file, validated
    tables, node = 1, config.experimental  # the document itself, then experimental's
    while isinstance(node, dict):
        tables, node = tables + 1, node["k"]
    assert tables == MAX_DEPTH
    assert deep_merge(nested(MAX_DEPTH), nested(MAX_DEPTH)) == nested(MAX_DEPTH)
    project.env[CONTENT_ENV] = json.dumps(nested(MAX_DEPTH + 1))
    with pytest.raises(ConfigError, match="nested deeper than"):
        project.load()


def test_an_agent_file_that_is_a_fifo_is_a_warning_not_a_hang(
    hookcode_env: HookcodeEnv,
) -> None:
    agents = hookcode_env.project / ".hookcode" / "agents"
    agents.mkdir(parents=True)
    os.mkfifo(agents / "stuck.md")
    (agents / "dangling.md").symlink_to(agents / "gone.md")
    (agents / "ok.md").write_text("---\ndescription: fine\n---\nHello.\n")
    rt = hookcode_env.runtime()
    assert rt.agent("ok").prompt == "Hello."
    assert (
        f"agent file {agents / 'stuck.md'}: is a FIFO (named pipe), not a regular file; skipped"
        in (rt.config.warnings)
    )
    assert any("dangling.md: is a symbolic link to a missing file" in w for w in rt.config.warnings)


def test_an_agent_file_nested_thousands_of_levels_is_a_warning(hookcode_env: HookcodeEnv) -> None:
    agents = hookcode_env.project / ".hookcode" / "agents"
    agents.mkdir(parents=True)
    lines = ["---", *(" " * i + f"k{i}:" for i in range(5000)), " " * 5000 + "x: 1", "---", "b"]
    (agents / "deep.md").write_text("\n".join(lines))
    rt = hookcode_env.runtime()
    assert "deep" not in rt.agents()
    (warning,) = [w for w in rt.config.warnings if "deep.md" in w]
    assert warning.endswith(f"nested deeper than {MAX_DEPTH} levels; skipped")


@pytest.mark.parametrize("kind", ["fifo", "directory", "dangling"])
def test_cli_bad_config_file_is_one_line_exit_1(hookcode_env: HookcodeEnv, kind: str) -> None:
    path = hookcode_env.project / "hookcode.toml"
    why = _special(kind, path)
    for args in (["config", "show"], ["tools", "list"], ["--help"]):
        proc = run_cli(args, env=hookcode_env.env, cwd=hookcode_env.project, timeout=30)
        if args == ["--help"]:  # help never reads the config for more than plugin selection
            assert proc.returncode == 0, proc.stderr
            continue
        assert proc.returncode == 1, proc.stderr
        assert proc.stderr.splitlines() == [
            f"hookcode: error: {path.parent.resolve() / path.name}: {why}"
        ]
        assert proc.stdout == ""
    assert sorted(p.name for p in hookcode_env.data_dir.iterdir()) == [
        "trust.json",
        "trust.json.lock",
    ]


@pytest.mark.parametrize(
    ("variable", "text"),
    [(CONTENT_ENV, DEEP_JSON), (CONTENT_ENV, DEEP_ARRAY), (PERMISSION_ENV, DEEP_JSON)],
)
def test_cli_deep_env_config_is_one_line_exit_1(
    hookcode_env: HookcodeEnv, variable: str, text: str
) -> None:
    proc = run_cli(
        ["config", "show"], env={**hookcode_env.env, variable: text}, cwd=hookcode_env.project
    )
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        f"hookcode: error: {variable}: tables or arrays nested deeper than {MAX_DEPTH} levels"
    ]
    deep_file = hookcode_env.project / "hookcode.toml"
    deep_file.write_text(DEEP_TABLE)
    proc = run_cli(["config", "show"], env=hookcode_env.env, cwd=hookcode_env.project)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        f"hookcode: error: {deep_file.resolve()}: tables or arrays nested deeper than "
        f"{MAX_DEPTH} levels"
    ]
