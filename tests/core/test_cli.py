"""The CLI contract, through real processes: ``hookcode [-C DIR] [--strict-plugins] COMMAND``.

Every command runs headless (stdin is /dev/null) with its data, config and home directories in
``tmp_path``; the tools come from fake distributions with real entry points on PYTHONPATH.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers.fakedist import FakeDists, run_cli
from helpers.packs import CLASH_ORDER, CLASH_WINNER, add_clash_packs, add_tool_pack

REJECTED = "The user rejected permission to use this specific tool call."
RESULT_KEYS = {"title", "output", "metadata", "attachments", "error"}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> FakeDists:
    dists = FakeDists(tmp_path_factory.mktemp("cli-site"))
    add_tool_pack(dists)
    add_clash_packs(dists)
    return dists


class Cli:
    """Runs ``hookcode`` in the test's isolated world (cwd: the project)."""

    def __init__(self, env: dict[str, str], project: Path) -> None:
        self.env = env
        self.project = project

    def __call__(
        self, *args: str, cwd: Path | None = None, **env: str
    ) -> subprocess.CompletedProcess[str]:
        return run_cli(list(args), env={**self.env, **env}, cwd=cwd or self.project)

    def json(self, *args: str, **kwargs: Any) -> Any:
        proc = self(*args, **kwargs)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    def call(self, *args: str, **kwargs: Any) -> tuple[int, dict[str, Any]]:
        """``tools call ARGS --json``: (exit code, the result object)."""
        proc = self("tools", "call", *args, "--json", **kwargs)
        assert proc.returncode in (0, 1), proc.stderr
        result = json.loads(proc.stdout)
        assert set(result) == RESULT_KEYS
        return proc.returncode, result

    def config(self, text: str) -> Path:
        path = self.project / "hookcode.toml"
        path.write_text(text)
        return path


@pytest.fixture
def cli(site: FakeDists, hookcode_env: Any) -> Cli:
    return Cli(site.env(hookcode_env.env), hookcode_env.project)


# ------------------------------------------------------------------------------ tools list/show


def test_tools_list_json(cli: Cli) -> None:
    tools = {t["name"]: t for t in cli.json("tools", "list", "--json")}
    for t in tools.values():
        assert {"name", "plugin", "distribution", "description", "shadows"} <= set(t)
    marker = tools["touch_marker"]
    assert marker["plugin"] == "tool_fake"
    assert marker["distribution"] == "hookcode-fakepack"
    assert marker["description"] == "Write a marker file (proves the body ran)."
    assert marker["shadows"] == []
    clash = tools["clash"]
    assert (clash["distribution"], clash["plugin"]) == CLASH_WINNER
    assert [(s["distribution"], s["plugin"]) for s in clash["shadows"]] == CLASH_ORDER[:-1]


def test_tools_list_table(cli: Cli) -> None:
    proc = cli("tools", "list")
    assert proc.returncode == 0, proc.stderr
    assert "touch_marker" in proc.stdout and "tool_fake" in proc.stdout
    assert "shadows" in proc.stdout


def test_tools_show(cli: Cli) -> None:
    data = cli.json("tools", "show", "touch_marker", "--json")
    assert data["name"] == "touch_marker"
    assert data["plugin"] == "tool_fake"
    assert data["description"] == "Write a marker file (proves the body ran)."
    params = data["parameters"]
    assert params["type"] == "object"
    assert params["properties"]["path"] == {"type": "string", "description": "Marker file"}
    assert params["properties"]["count"]["type"] == "integer"
    assert params["properties"]["count"]["default"] == 1
    assert params["required"] == ["path"]
    assert params.get("additionalProperties") is False


def test_tools_show_unknown_tool(cli: Cli) -> None:
    proc = cli("tools", "show", "nope")
    assert proc.returncode == 1
    assert "'nope'" in proc.stderr
    assert "touch_marker" in proc.stderr and "guarded" in proc.stderr  # the available tools
    assert "Traceback" not in proc.stderr


# ------------------------------------------------------------------------------ tools call


def test_tools_call_json_success(cli: Cli) -> None:
    code, result = cli.call("touch_marker", '{"path": "m", "count": 3}')
    assert code == 0
    assert result["error"] is None
    assert result["output"] == "wrote m x3"
    assert (cli.project / "m").read_text() == "3"


def test_tools_call_plain_output_and_defaults(cli: Cli) -> None:
    proc = cli("tools", "call", "touch_marker", '{"path": "m"}')
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "wrote m x1"
    assert (cli.project / "m").read_text() == "1"


def test_tools_call_unknown_tool(cli: Cli) -> None:
    code, result = cli.call("nope", "{}")
    assert code == 1
    assert "'nope'" in result["error"]
    assert "touch_marker" in result["error"]  # names the available tools


@pytest.mark.parametrize(
    ("args", "usage"),
    [
        (["tools", "call", "touch_marker", '{"path": "m"}', "--bogus"], "--bogus"),
        (["tools", "call"], "NAME"),
        (["tools", "call", "touch_marker", '{"path": "m"}', "--agent"], "--agent"),
    ],
    ids=["unknown-option", "missing-name", "option-without-value"],
)
def test_tools_call_usage_errors_exit_2(cli: Cli, args: list[str], usage: str) -> None:
    proc = cli(*args)
    assert proc.returncode == 2, proc.stderr
    assert usage.lower() in proc.stderr.lower()
    assert not (cli.project / "m").exists()


@pytest.mark.parametrize(
    ("args", "culprit"),
    [
        ('{"path": ', "not valid JSON"),
        ('{"path": 3}', "path"),
        ('{"path": "m", "count": "many"}', "count"),
        ('{"count": 2}', "path: required argument is missing"),
        ('{"path": "m", "extra": 1}', "extra: unknown argument"),
        ('["m"]', "expected a JSON object"),
    ],
    ids=["malformed", "wrong-type", "wrong-type-2", "missing", "extra", "not-an-object"],
)
def test_tools_call_invalid_arguments(cli: Cli, args: str, culprit: str) -> None:
    code, result = cli.call("touch_marker", args)
    assert code == 1
    assert "touch_marker" in result["error"]
    assert culprit in result["error"]
    assert result["output"] == ""
    assert not (cli.project / "m").exists()  # the body never ran


def test_headless_ask_is_refused_and_yes_approves(cli: Cli) -> None:
    cli.config('[permission]\ntouch_marker = "ask"\n')
    code, result = cli.call("touch_marker", '{"path": "m"}')
    assert code == 1
    assert result["error"] == REJECTED
    assert not (cli.project / "m").exists()

    code, result = cli.call("touch_marker", '{"path": "m"}', "--yes")
    assert code == 0, result
    assert result["error"] is None
    assert (cli.project / "m").exists()


def test_a_headless_refusal_says_what_was_asked_and_how_to_approve(cli: Cli) -> None:
    cli.config('[permission]\ntouch_marker = "ask"\n')
    proc = cli("tools", "call", "touch_marker", '{"path": "m"}')
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == (
        "hookcode: touch_marker: refused, nobody to approve touch_marker *: run in a terminal, "
        "or pass --yes or a rule in hookcode.toml"
    )
    assert "The user rejected" not in proc.stderr
    assert not (cli.project / "m").exists()


def test_a_tool_that_asks_itself(cli: Cli) -> None:
    cli.config('[permission]\nguarded = { "*" = "ask", "secret*" = "deny" }\n')
    # ask, headless: refused
    code, result = cli.call("guarded", '{"target": "ok", "marker": "m1"}')
    assert (code, result["error"]) == (1, REJECTED)
    assert not (cli.project / "m1").exists()
    # a configured deny is not approved by --yes
    code, result = cli.call("guarded", '{"target": "secret-1", "marker": "m2"}', "--yes")
    assert code == 1
    assert "rule" in result["error"] and "secret*" in result["error"]
    assert result["error"] != REJECTED
    assert not (cli.project / "m2").exists()
    # --yes approves the ask
    code, result = cli.call("guarded", '{"target": "ok", "marker": "m3"}', "--yes")
    assert (code, result["error"], result["output"]) == (0, None, "guarded ok")
    assert (cli.project / "m3").read_text() == "ok"


def test_a_denied_tool_is_unavailable_even_with_yes(cli: Cli) -> None:
    cli.config('[permission]\ntouch_marker = "deny"\n')
    code, result = cli.call("touch_marker", '{"path": "m"}', "--yes")
    assert code == 1
    assert "touch_marker" in result["error"] and "unavailable" in result["error"]
    assert not (cli.project / "m").exists()


def test_tools_call_agent(cli: Cli) -> None:
    # explore denies everything but the read-only tools: touch_marker is not offered
    code, result = cli.call("touch_marker", '{"path": "m"}', "--agent", "explore", "--yes")
    assert code == 1
    assert "unavailable" in result["error"]
    assert not (cli.project / "m").exists()
    proc = cli("tools", "call", "touch_marker", '{"path": "m"}', "--agent", "nosuch")
    assert proc.returncode == 1
    assert "nosuch" in proc.stderr and "build" in proc.stderr  # names the available agents
    assert not (cli.project / "m").exists()


# ------------------------------------------------------------------------------ -C DIR


def test_cwd_option(cli: Cli, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    config = cli.config('[permission]\ntouch_marker = "ask"\n')
    # config is read from DIR, relative paths resolve against DIR
    proc = cli(
        "-C",
        str(cli.project),
        "tools",
        "call",
        "touch_marker",
        '{"path": "m"}',
        "--json",
        cwd=elsewhere,
    )
    assert proc.returncode == 1  # the project's config applied
    assert json.loads(proc.stdout)["error"] == REJECTED
    proc = cli(
        "-C",
        str(cli.project),
        "tools",
        "call",
        "touch_marker",
        '{"path": "m"}',
        "--yes",
        cwd=elsewhere,
    )
    assert proc.returncode == 0, proc.stderr
    assert (cli.project / "m").exists() and not (elsewhere / "m").exists()
    data = cli.json("-C", str(cli.project), "config", "path", "--json", cwd=elsewhere)
    assert {"path": str(config.resolve()), "exists": True} in data["files"]


def test_cwd_option_missing_directory(cli: Cli, tmp_path: Path) -> None:
    proc = cli("-C", str(tmp_path / "missing"), "tools", "list")
    assert proc.returncode == 1
    assert "missing" in proc.stderr
    assert "Traceback" not in proc.stderr


# ------------------------------------------------------------------------------ plugins


def test_plugins_list(cli: Cli) -> None:
    infos = {i["name"]: i for i in cli.json("plugins", "list", "--json")}
    for info in infos.values():
        assert {"name", "distribution", "version", "hooks", "status", "error"} <= set(info)
        assert info["status"] in ("loaded", "failed", "disabled")
    fake = infos["tool_fake"]
    assert (
        fake["distribution"],
        fake["version"],
        fake["hooks"],
        fake["status"],
        fake["error"],
    ) == ("hookcode-fakepack", "2.5", ["register_tools"], "loaded", None)
    assert infos["core"]["status"] == "loaded"
    assert infos["core"]["distribution"] == "hookcode-core"

    blocked = {
        i["name"]: i
        for i in cli.json("plugins", "list", "--json", HOOKCODE_BLOCK_PLUGINS="tool_fake")
    }
    assert blocked["tool_fake"]["status"] == "disabled"
    assert "HOOKCODE_BLOCK_PLUGINS" in blocked["tool_fake"]["error"]
    assert blocked["tool_fake"]["hooks"] == []


# ------------------------------------------------------------------------------ config


def test_config_show_and_path(cli: Cli) -> None:
    config = cli.config('[permission]\ntouch_marker = "ask"\n')
    shown = cli.json("config", "show", "--json")
    assert shown["permission"] == {"touch_marker": "ask"}
    paths = cli.json("config", "path", "--json")
    assert {"path": str(config.resolve()), "exists": True} in paths["files"]
    assert Path(paths["data_dir"]) == Path(cli.env["HOOKCODE_DATA_DIR"])


def test_config_schema_is_a_json_schema(cli: Cli) -> None:
    schema = cli.json("config", "schema")
    assert schema["$schema"].startswith("https://json-schema.org/")
    assert schema.get("type", "object") == "object"
    assert {"model", "permission", "agent"} <= set(schema["properties"])
    assert schema["additionalProperties"] is False
    # every $ref points at a definition that exists
    text = json.dumps(schema)
    for ref in {part.split('"')[0] for part in text.split('"$ref": "')[1:]}:
        assert ref.startswith("#/$defs/"), ref
        assert ref.removeprefix("#/$defs/") in schema["$defs"], ref


def test_invalid_config_names_file_and_key(cli: Cli) -> None:
    config = cli.config('[permission]\nread = "maybe"\n')
    for args in (["tools", "list"], ["config", "show"]):
        proc = cli(*args)
        assert proc.returncode == 1, args
        assert str(config.resolve()) in proc.stderr
        assert "permission.read" in proc.stderr
        assert "Traceback" not in proc.stderr


# ------------------------------------------------------------------------------ permissions


def test_permissions_explain_agent_rule(cli: Cli) -> None:
    data = cli.json("permissions", "explain", "read", "/x/.env", "--json")
    assert data["decision"] == "ask"
    assert data["rule"] == {
        "permission": "read",
        "pattern": "*.env",
        "action": "ask",
        "source": "agent:base",
    }
    proc = cli("permissions", "explain", "edit", "foo", "--agent", "plan")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("deny")
    assert "agent:plan" in proc.stdout


def test_permissions_explain_a_protected_path(cli: Cli) -> None:
    data = cli.json("permissions", "explain", "edit", ".git/hooks/pre-commit", "--json")
    assert (data["decision"], data["protected"]) == ("ask", ".git")
    assert data["votes"] == {"policy_rules": "allow", "core": "ask"}
    assert data["reason"].startswith(".git/hooks/pre-commit is a protected path (.git:")
    proc = cli("permissions", "explain", "edit", "hookcode.toml")
    assert proc.stdout.startswith("ask")
    assert "protected: hookcode.toml is a protected path" in proc.stdout
    cli.config('[permission]\nedit = { "*" = "allow", "hookcode.toml" = "allow" }\n')
    data = cli.json("permissions", "explain", "edit", "hookcode.toml", "--json")
    assert (data["decision"], data["protected"]) == ("allow", "hookcode.toml")
    assert cli.json("permissions", "explain", "edit", "src/a.py", "--json")["protected"] is None


def test_permissions_explain_config_rule(cli: Cli) -> None:
    config = cli.config('[permission]\nguarded = { "*" = "ask", "secret*" = "deny" }\n')
    data = cli.json("permissions", "explain", "guarded", "secret-1", "--json")
    assert data["decision"] == "deny"
    assert data["rule"]["pattern"] == "secret*"
    assert data["rule"]["source"] == f"config:{config.resolve()}"
