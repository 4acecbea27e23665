"""local_tools (plugins/local_tools): Python files in ``.hookcode/tool(s)/`` (project, up to the
git root) and the user config dir become tools; the reference's naming rule; broken files are
reported and skipped; a local tool replaces a built-in and ``tools list`` says so."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hookcode import hookimpl, tool
from hookcode.testing import invoke_tool

PLUGINS = "local_tools,policy_rules,tool_read"


@pytest.fixture
def project(hookcode_env: Any) -> Path:
    """A git project whose working directory is two levels below the root."""
    (hookcode_env.project / ".git").mkdir()
    cwd = hookcode_env.project / "pkg" / "mod"
    cwd.mkdir(parents=True)
    hookcode_env.env["HOOKCODE_LOAD_PLUGINS"] = PLUGINS
    return cwd


def write_tool(directory: Path, name: str, body: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(textwrap.dedent(body))
    return path


ONE = """
    from hookcode import tool

    @tool
    def anything(text: str) -> str:
        "Echo from {where}."
        return "{where}: " + text
"""


def one_tool(where: str) -> str:
    return ONE.replace("{where}", where)


def local_entries(runtime: Any) -> dict[str, Any]:
    return {n: e for n, e in runtime.registry.entries.items() if e.plugin == "local_tools"}


def run_cli(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hookcode.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


# ------------------------------------------------------------------------------- discovery


def test_discovery_up_to_the_git_root_and_in_the_user_dir(hookcode_env: Any, project: Path) -> None:
    root = hookcode_env.project
    write_tool(root / ".hookcode" / "tools", "at_root.py", one_tool("root"))
    write_tool(root / "pkg" / ".hookcode" / "tool", "at_pkg.py", one_tool("pkg"))
    write_tool(project / ".hookcode" / "tools", "at_cwd.py", one_tool("cwd"))
    write_tool(hookcode_env.config_dir / "hookcode" / "tools", "at_user.py", one_tool("user"))
    # above the git root: not part of the project
    write_tool(root.parent / ".hookcode" / "tools", "outside.py", one_tool("outside"))
    # beside the working directory, not above it
    write_tool(root / "other" / ".hookcode" / "tools", "sibling.py", one_tool("sibling"))

    runtime = hookcode_env.runtime(cwd=project)
    assert sorted(local_entries(runtime)) == ["at_cwd", "at_pkg", "at_root", "at_user"]
    for name, where in [("at_root", "root"), ("at_pkg", "pkg"), ("at_user", "user")]:
        outcome = invoke_tool(runtime, name, {"text": "hi"})
        assert outcome.ok, outcome.error_text
        assert outcome.result.output == f"{where}: hi"
    assert runtime.registry.get("at_cwd").tool.description == "Echo from cwd."


def test_user_dir_follows_xdg_config_home(hookcode_env: Any, project: Path, tmp_path: Path) -> None:
    xdg = tmp_path / "elsewhere"
    write_tool(xdg / "hookcode" / "tools", "xdg_tool.py", one_tool("xdg"))
    runtime = hookcode_env.runtime(cwd=project, XDG_CONFIG_HOME=str(xdg))
    assert "xdg_tool" in local_entries(runtime)
    # without the variable the user dir is ~/.config/hookcode
    home = tmp_path / "home"
    write_tool(home / ".config" / "hookcode" / "tool", "home_tool.py", one_tool("home"))
    env = {k: v for k, v in hookcode_env.env.items() if k != "XDG_CONFIG_HOME"}
    from hookcode.plugins import create_plugins
    from hookcode.runtime import Runtime

    env["HOME"] = str(home)
    runtime = Runtime(cwd=project, env=env, plugins=create_plugins(env=env, cwd=project))
    try:
        assert sorted(local_entries(runtime)) == ["home_tool"]
    finally:
        runtime.close()


def test_nearer_directories_win_a_name_clash(hookcode_env: Any, project: Path) -> None:
    write_tool(hookcode_env.config_dir / "hookcode" / "tools", "same.py", one_tool("user"))
    write_tool(hookcode_env.project / ".hookcode" / "tools", "same.py", one_tool("root"))
    write_tool(project / ".hookcode" / "tools", "same.py", one_tool("cwd"))
    runtime = hookcode_env.runtime(cwd=project)
    outcome = invoke_tool(runtime, "same", {"text": "x"})
    assert outcome.result.output == "cwd: x"
    assert len(runtime.registry.get("same").shadows) == 2


# ------------------------------------------------------------------------------- naming


def test_naming_rule(hookcode_env: Any, project: Path) -> None:
    tools = project / ".hookcode" / "tools"
    write_tool(tools, "single.py", one_tool("single"))
    write_tool(
        tools,
        "math_kit.py",
        """
        from typing import Annotated

        import hookcode
        from hookcode_tool_read import read  # an imported tool is not this file's

        @hookcode.tool
        def add(a: int, b: int) -> str:
            "Add two numbers."
            return str(a + b)

        @hookcode.tool(description="Multiply two numbers.")
        def mul(a: Annotated[int, "first"], b: int = 2) -> str:
            return str(a * b)

        def helper():  # not a tool
            return 1
        """,
    )
    write_tool(
        tools,
        "imports_only_one.py",
        """
        from hookcode import tool
        from hookcode_tool_read import read

        @tool
        def mine() -> str:
            "Mine."
            return "mine"
        """,
    )
    runtime = hookcode_env.runtime(cwd=project)
    assert sorted(local_entries(runtime)) == [
        "imports_only_one",
        "math_kit_add",
        "math_kit_mul",
        "single",
    ]
    assert invoke_tool(runtime, "math_kit_add", {"a": 2, "b": 3}).result.output == "5"
    assert invoke_tool(runtime, "math_kit_mul", {"a": 4}).result.output == "8"
    assert runtime.registry.get("read").plugin == "tool_read"
    params = runtime.registry.get("math_kit_mul").tool.parameters
    assert params["properties"]["a"]["description"] == "first"


def test_a_file_name_that_is_no_tool_name_is_reported(
    hookcode_env: Any, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_tool(project / ".hookcode" / "tools", "bad name.py", one_tool("x"))
    write_tool(project / ".hookcode" / "tools", "empty.py", "X = 1\n")
    runtime = hookcode_env.runtime(cwd=project)
    assert local_entries(runtime) == {}
    err = capsys.readouterr().err
    assert "bad name.py" in err and "not a valid tool name" in err
    assert "empty.py defines no tool" in err


# ------------------------------------------------------------------------------- bad files


def test_broken_files_are_reported_and_skipped(
    hookcode_env: Any, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tools = project / ".hookcode" / "tools"
    syntax = write_tool(tools, "broken.py", "def oops(:\n    pass\n")
    raises = write_tool(tools, "raises.py", "raise RuntimeError('no database here')\n")
    exits = write_tool(tools, "exits.py", "import sys\nsys.exit(3)\n")
    missing = write_tool(tools, "needs.py", "import module_that_does_not_exist_anywhere\n")
    write_tool(tools, "fine.py", one_tool("fine"))

    runtime = hookcode_env.runtime(cwd=project)
    assert sorted(local_entries(runtime)) == ["fine"]
    assert invoke_tool(runtime, "fine", {"text": "ok"}).ok
    err = capsys.readouterr().err.splitlines()
    for path, words in [
        (syntax, "SyntaxError"),
        (raises, "RuntimeError: no database here"),
        (exits, "SystemExit"),
        (missing, "ModuleNotFoundError"),
    ]:
        lines = [line for line in err if str(path) in line]
        assert len(lines) == 1, err
        assert words in lines[0] and "skipped" in lines[0]
    assert "line 1" in next(line for line in err if str(syntax) in line)


def test_files_do_not_pollute_sys_modules(hookcode_env: Any, project: Path) -> None:
    # a tool file named like a standard module shadows nothing
    write_tool(project / ".hookcode" / "tools", "json.py", one_tool("json"))
    import json as stdlib_json

    first = hookcode_env.runtime(cwd=project)
    second = hookcode_env.runtime(cwd=project)
    assert "json" in local_entries(first) and "json" in local_entries(second)
    assert sys.modules["json"] is stdlib_json
    assert not [name for name in sys.modules if "local_tool" in name and "json" in name]
    # each runtime imported the file for itself
    assert first.registry.get("json").tool is not second.registry.get("json").tool


# ------------------------------------------------------------------------------- replacing built-ins


def test_a_local_tool_replaces_a_builtin_and_later_plugins(
    hookcode_env: Any, project: Path
) -> None:
    write_tool(
        project / ".hookcode" / "tools",
        "read.py",
        """
        from hookcode import tool

        @tool
        def my_read(filePath: str) -> str:
            "A project-specific read."
            return "local read of " + filePath
        """,
    )

    @tool(name="read")
    def plugin_read(filePath: str) -> str:
        "A third-party read, registered after every entry point."
        return "plugin read"

    class LatePack:
        @hookimpl
        def register_tools(self, register: Any) -> None:
            register(plugin_read)

    hookcode_env.register(LatePack(), "late_pack")
    runtime = hookcode_env.runtime(cwd=project)
    entry = runtime.registry.get("read")
    assert entry.plugin == "local_tools"
    assert [s.plugin for s in entry.shadows] == ["tool_read", "late_pack"]
    outcome = invoke_tool(runtime, "read", {"filePath": "x.txt"})
    assert outcome.result.output == "local read of x.txt"


def test_tools_list_json_shows_the_shadowed_builtin(hookcode_env: Any, project: Path) -> None:
    write_tool(project / ".hookcode" / "tools", "read.py", one_tool("local"))
    proc = run_cli(hookcode_env.env, project, "tools", "list", "--json")
    assert proc.returncode == 0, proc.stderr
    read = next(t for t in json.loads(proc.stdout) if t["name"] == "read")
    assert read["plugin"] == "local_tools"
    assert read["distribution"] == "hookcode-local-tools"
    assert read["shadows"] == [{"plugin": "tool_read", "distribution": "hookcode-tool-read"}]


# ------------------------------------------------------------------------------- the CLI


def test_sync_and_async_tools_through_tools_call(hookcode_env: Any, project: Path) -> None:
    write_tool(
        project / ".hookcode" / "tools",
        "kit.py",
        """
        import asyncio
        import os

        from hookcode import ToolContext, tool

        @tool
        def where(ctx: ToolContext, name: str) -> str:
            "Sync: where am I?"
            return f"{name} in {ctx.cwd.name} ({os.getpid() > 0})"

        @tool
        async def later(n: int = 2) -> str:
            "Async: wait a little."
            await asyncio.sleep(0.01)
            return "async " * n
        """,
    )
    write_tool(project / ".hookcode" / "tools", "broken.py", "this is not python\n")
    proc = run_cli(hookcode_env.env, project, "tools", "call", "kit_where", '{"name": "x"}')
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "x in mod (True)"
    assert "broken.py" in proc.stderr
    proc = run_cli(hookcode_env.env, project, "tools", "call", "kit_later", '{"n": 3}', "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["output"].strip() == "async async async"
    proc = run_cli(hookcode_env.env, project, "tools", "call", "kit_later", '{"n": "many"}')
    assert proc.returncode == 1
    assert "n" in proc.stderr and "kit_later" in proc.stderr


def test_the_docs_page_example_works_as_shown(hookcode_env: Any, project: Path) -> None:
    """docs/local-tools.md: its tool file, its permission rule, and the call with the output
    the page shows."""
    import re
    import shlex

    page = (Path(__file__).resolve().parents[2] / "docs" / "local-tools.md").read_text()
    [(name, body)] = re.findall(r'```python title="([^"]+)"\n(.*?)```', page, flags=re.S)
    [rules] = re.findall(r"```toml\n(.*?)```", page, flags=re.S)
    [(call, output)] = re.findall(r"\$ (hookcode tools call .*)\n([^$`]*?)\n```", page)
    write_tool(project / Path(name).parent, Path(name).name, body)
    (project / "hookcode.toml").write_text(rules)
    proc = run_cli(hookcode_env.env, project, *shlex.split(call)[1:])
    assert (proc.returncode, proc.stdout) == (0, output + "\n"), proc.stderr
    listed = run_cli(hookcode_env.env, project, "tools", "list", "--json")
    [entry] = [t for t in json.loads(listed.stdout) if t["name"] == "bump"]
    assert entry["plugin"] == "local_tools"
