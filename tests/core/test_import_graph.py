"""No import circle in core (issue 17, item 6).

Every import counts: at module level, inside functions and under ``TYPE_CHECKING`` (a type
import is a dependency too; where a low module only needs a type, it names a Protocol, see
:mod:`hookcode.protocols` and :class:`hookcode.tools.Host`). ``from package import name`` is an
import of the submodule when ``name`` is one, else of the package. The modules of
``core/hookcode`` import downwards only: no two of them reach each other.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import hookcode

CORE = Path(hookcode.__file__).parent


def modules(root: Path) -> dict[str, Path]:
    """{dotted name: file} of every module of the package at ``root``."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imported(name: str, path: Path, known: Mapping[str, Path]) -> set[str]:
    """The modules of ``known`` that the module ``name`` imports, anywhere in its file."""
    is_package = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            submodules = {f"{source}.{a.name}" for a in node.names} & known.keys()
            out.update(submodules)
            if len(submodules) < len(node.names):
                out.add(source)
    return {module for module in out if module in known and module != name}


def import_graph(root: Path) -> dict[str, set[str]]:
    known = modules(root)
    return {name: imported(name, path, known) for name, path in known.items()}


def circles(graph: Mapping[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def successors(node: str) -> Iterator[str]:
        return iter(sorted(graph[node]))

    for start in sorted(graph):
        if start in index:
            continue
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        work = [(start, successors(start))]
        while work:
            node, todo = work[-1]
            for nxt in todo:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, successors(nxt)))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(component)
    return found


def ties(graph: Mapping[str, set[str]], circle: set[str]) -> str:
    return "\n".join(f"  {name} -> {sorted(graph[name] & circle)}" for name in sorted(circle))


def test_core_has_no_import_circle() -> None:
    graph = import_graph(CORE)
    found = circles(graph)
    shown = "\n\n".join(ties(graph, circle) for circle in found)
    assert not found, (
        "an import circle in core; import downwards only (a type a low module needs: "
        f"a Protocol, see hookcode.protocols):\n{shown}"
    )


def test_every_kind_of_import_counts(tmp_path: Path) -> None:
    """The graph sees imports under TYPE_CHECKING, inside functions and relative ones, and
    tells a submodule from a name of its package."""
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "from pkg.low import helper\n",
        "low.py": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n"
            "    from pkg.high import High\n"
            "def helper() -> None: ...\n"
        ),
        "high.py": "def make():\n    from .low import helper\n    return helper\n",
        "apart.py": "from pkg import low\n",
        "sub/__init__.py": "",
        "sub/leaf.py": "from .. import apart\nfrom pkg import helper\n",
    }
    for name, text in files.items():
        (package / name).write_text(text, encoding="utf-8")
    graph = import_graph(package)
    assert graph["pkg.low"] == {"pkg.high"}
    assert graph["pkg.high"] == {"pkg.low"}
    assert graph["pkg.apart"] == {"pkg.low"}
    assert graph["pkg.sub.leaf"] == {"pkg.apart", "pkg"}
    assert circles(graph) == [{"pkg.low", "pkg.high"}]
