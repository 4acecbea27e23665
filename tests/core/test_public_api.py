"""The public surface of ``hookcode`` (like httpx's tests/test_exported_members.py), and
start-up hygiene: importing hookcode, its plugins and listing tools stays light."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import textwrap
from typing import Any

import hookcode
import pytest

REQUIRED = {
    "hookimpl",
    "tool",
    "Tool",
    "ToolContext",
    "ToolResult",
    "ToolBlocked",
    "ToolError",
    "PermissionDenied",
}
#: never imported at start-up (SDKs, HTTP clients, MCP, parsers)
HEAVY = ("httpx", "anthropic", "openai", "mcp", "tree_sitter")


def test_all_is_sorted() -> None:
    assert hookcode.__all__ == sorted(hookcode.__all__)
    assert len(set(hookcode.__all__)) == len(hookcode.__all__)


def test_all_has_the_essentials() -> None:
    assert set(hookcode.__all__) >= REQUIRED


@pytest.mark.parametrize("name", hookcode.__all__)
def test_every_name_is_importable(name: str) -> None:
    namespace: dict[str, Any] = {}
    exec(f"from hookcode import {name}", namespace)
    value = namespace[name]
    assert value is getattr(hookcode, name)
    if inspect.isclass(value) or inspect.isfunction(value):
        assert value.__module__.split(".")[0] == "hookcode", (name, value.__module__)


def test_dir_lists_every_exported_name() -> None:
    assert set(hookcode.__all__) <= set(dir(hookcode))


def test_unknown_names_raise_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        hookcode.no_such_name  # noqa: B018
    with pytest.raises(ImportError):
        exec("from hookcode import no_such_name", {})


def test_exports_are_the_real_objects() -> None:
    from hookcode import errors, plugins, tools

    assert hookcode.hookimpl is plugins.hookimpl
    assert hookcode.tool is tools.tool
    assert hookcode.Tool is tools.Tool
    assert hookcode.ToolBlocked is errors.ToolBlocked
    assert issubclass(hookcode.ToolBlocked, hookcode.ToolError)
    assert issubclass(hookcode.PermissionDenied, hookcode.ToolError)
    assert hookcode.hookimpl.project_name == "hookcode"


def test_star_import_gives_exactly_all() -> None:
    namespace: dict[str, Any] = {}
    exec("from hookcode import *", namespace)
    assert set(namespace) - {"__builtins__"} == set(hookcode.__all__)


# ------------------------------------------------------------------------------ start-up


def python(code: str, *args: str) -> Any:
    """Run ``code`` in a fresh interpreter; it prints one JSON value."""
    proc = subprocess.run(
        [sys.executable, *args, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def loaded(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in names)


def test_importing_hookcode_and_the_plugins_stays_light() -> None:
    modules, _ = python(
        """
        import json, sys
        from importlib.metadata import entry_points
        import hookcode_policy_rules, hookcode
        for ep in entry_points(group="hookcode"):  # every installed plugin module
            try:
                ep.load()
            except Exception:
                pass
        print(json.dumps(sorted(sys.modules)))
        """
    )
    assert "hookcode_policy_rules" in modules
    assert loaded(modules, HEAVY) == []


def test_decorating_a_tool_does_not_import_pydantic() -> None:
    (before, after), _ = python(
        """
        import json, sys
        import hookcode
        from hookcode import ToolContext, ToolResult, hookimpl, tool

        @tool
        def count(ctx: ToolContext, path: str, limit: int = 10) -> str:
            "Count things."
            return ""

        @hookimpl
        def tool():
            return [count]

        before = sorted(sys.modules)
        count.parameters  # the schema is built on first use, and only then
        print(json.dumps([before, sorted(sys.modules)]))
        """
    )
    assert loaded(before, ("pydantic", "pydantic_core", *HEAVY)) == []
    assert "pydantic" in after  # the check can see pydantic when it is there


def test_tools_list_does_not_import_heavy_modules(hookcode_env: Any) -> None:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "hookcode.cli", "tools", "list", "--json"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env=hookcode_env.env,
        cwd=hookcode_env.project,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    json.loads(proc.stdout)
    imported = [
        line.rsplit("|", 1)[-1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    ]
    assert "hookcode.cli" in imported  # importtime did report
    assert loaded(imported, HEAVY) == []
