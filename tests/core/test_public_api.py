"""The public surface of ``hookcode`` (like httpx's tests/test_exported_members.py), and
start-up hygiene: importing hookcode, its plugins and listing tools stays light."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import json
import subprocess
import sys
import textwrap
from pathlib import Path
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
        def register_tools(register):
            register(count)

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


# ------------------------------------------------------------------------------ private names
# Tools, plugins and libraries use core through its public surface only: no ``_private`` name
# or module of core, no name a core module leaves out of its ``__all__``, no submodule of a
# core package (``hookcode.cli``, ``hookcode.testing``) that the package does not export; and
# no private attribute of a core object (``ctx._x``, ``runtime._x``, ``getattr(ctx, "_x")``).

ROOT = Path(__file__).resolve().parents[2]
#: the sources checked: every package of a tool, a plugin or a library
SOURCES = sorted(
    p for kind in ("builtin_tools", "plugins", "libs") for p in (ROOT / kind).rglob("*.py")
)
#: names that stand for core objects wherever they appear (a tool's context, the runtime)
CORE_OBJECTS = frozenset({"ctx", "runtime"})


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def _module_problem(module: str) -> str | None:
    """Why importing the core module ``module`` (``hookcode...``) reaches past the public
    surface, or None: a private segment, or a submodule its package does not export (the
    modules directly under ``hookcode`` are public; each names its public names in ``__all__``)."""
    parts = module.split(".")
    if any(_private(part) for part in parts):
        return f"private module {module}"
    for depth in range(2, len(parts)):
        package = ".".join(parts[:depth])
        exported = getattr(importlib.import_module(package), "__all__", ())
        if parts[depth] not in exported:
            return f"{module} is internal to {package} (not in its __all__)"
    return None


def _name_problem(module: str, name: str) -> str | None:
    """Why ``from module import name`` (a core module) reaches past the public surface."""
    if _private(name):
        return f"private name {module}.{name}"
    if _is_module(f"{module}.{name}"):
        return _module_problem(f"{module}.{name}")
    problem = _module_problem(module)
    if problem is not None:
        return problem
    exported = getattr(importlib.import_module(module), "__all__", None)
    if exported is not None and name not in exported:
        return f"{module}.{name} is not in {module}.__all__"
    return None


def _is_core(module: str | None) -> bool:
    return module is not None and (module == "hookcode" or module.startswith("hookcode."))


def _annotation_names(node: ast.expr | None) -> set[str]:
    """The identifiers an annotation (an expression or a string) mentions."""
    if node is None:
        return set()
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return set()
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
    }


def _chain(node: ast.expr) -> list[str] | None:
    """``a.b.c`` as ["a", "b", "c"]; None for anything that is not a plain chain of names."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def private_reaches(source: str) -> list[tuple[int, str]]:
    """(line, what) for each place ``source`` reaches a private or internal name of core."""
    tree = ast.parse(source)
    found: list[tuple[int, str]] = []
    modules: dict[str, str] = {}  # local name -> core module it is bound to
    core_types: set[str] = set()  # local names of classes imported from core
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _is_core(alias.name):
                    problem = _module_problem(alias.name)
                    if problem:
                        found.append((node.lineno, problem))
                    if alias.asname:
                        modules[alias.asname] = alias.name
                    else:
                        modules[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and _is_core(node.module):
            assert node.module is not None
            for alias in node.names:
                problem = _name_problem(node.module, alias.name)
                if problem:
                    found.append((node.lineno, problem))
                local = alias.asname or alias.name
                if _is_module(f"{node.module}.{alias.name}"):
                    modules[local] = f"{node.module}.{alias.name}"
                elif alias.name[:1].isupper():
                    core_types.add(local)
    # names bound to core objects: ctx, runtime, and parameters annotated with a core class
    objects = set(CORE_OBJECTS)
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and _annotation_names(node.annotation) & core_types:
            objects.add(node.arg)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            chain = _chain(node)
            if chain is None:
                continue
            if chain[0] in modules:
                found.append(
                    (node.lineno, f"private name {modules[chain[0]]}.{'.'.join(chain[1:])}")
                )
            elif any(part in objects for part in chain[:-1]):
                found.append((node.lineno, f"private attribute {'.'.join(chain)}"))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr", "setattr", "delattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _private(node.args[1].value)
        ):
            chain = _chain(node.args[0])
            if chain is not None and (chain[0] in modules or any(p in objects for p in chain)):
                found.append(
                    (node.lineno, f"private attribute {'.'.join(chain)}.{node.args[1].value}")
                )
    return sorted(found)


def test_the_private_name_check_finds_each_kind_of_reach() -> None:
    source = textwrap.dedent(
        """
        import hookcode
        import hookcode.cli.state
        from hookcode import tools
        from hookcode.tools import _NAME_RE, Tool, ToolContext
        from hookcode.process import guardian
        from hookcode.tools import _normpath as normpath
        from hookcode.tools import ReadRules, _last_rule

        def run(ctx, other: ToolContext, x: "Tool | None", plain):
            hookcode.tools._NAME_RE
            tools._ARGS_SECTION
            ctx._validated
            ctx.runtime._store
            other._loop
            x._model
            getattr(ctx, "_tool_obj", None)
            plain._fine
            self._fine
            ctx.__class__
        """
    )
    whats = [what for _, what in private_reaches(source)]
    assert whats == [
        "hookcode.cli.state is internal to hookcode.cli (not in its __all__)",
        "private name hookcode.tools._NAME_RE",
        "hookcode.process.guardian is not in hookcode.process.__all__",
        "private name hookcode.tools._normpath",
        "private name hookcode.tools._last_rule",
        "private name hookcode.tools._NAME_RE",
        "private name hookcode.tools._ARGS_SECTION",
        "private attribute ctx._validated",
        "private attribute ctx.runtime._store",
        "private attribute other._loop",
        "private attribute x._model",
        "private attribute ctx._tool_obj",
    ]


def test_tools_plugins_and_libraries_use_only_public_names_of_core() -> None:
    assert len(SOURCES) > 50, "the tools', plugins' and libraries' sources were not found"
    problems = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for path in SOURCES
        for line, what in private_reaches(path.read_text())
    ]
    assert problems == [], "\n".join(problems)
