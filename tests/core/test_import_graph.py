"""No import circle in core (issue 17, item 6).

Every import counts: at module level, inside functions and under ``TYPE_CHECKING`` (a type
import is a dependency too; where a low module only needs a type, it names a Protocol, see
:mod:`hookcode.protocols` and :class:`hookcode.tools.Host`). ``from package import name`` is an
import of the submodule when ``name`` is one, else of the package. The modules of
``core/hookcode`` import downwards only: no two of them reach each other.

The structure viewer draws core by rooms: a module directly under ``hookcode`` is one, and so is
each sub-package (``session/``, ``config/``, ``store/``, ``permission/``, ``cli/``, ``testing/``)
with everything in it. The rooms import downwards only too; how many floors they stack is
printed (``pytest -s``), not asserted.
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


def room_of(name: str, root: str, packages: set[str]) -> str:
    """The room of module ``name``: its top-level sub-package of ``root``, else itself."""
    parts = name.split(".")
    top = ".".join(parts[:2])
    return top if len(parts) > 1 and top in packages and top != root else name


def room_graph(graph: Mapping[str, set[str]], root: str, packages: set[str]) -> dict[str, set[str]]:
    """``graph`` with the modules of each sub-package merged into one node (edges inside a
    room dropped)."""
    rooms: dict[str, set[str]] = {}
    for name, targets in graph.items():
        here = room_of(name, root, packages)
        rooms.setdefault(here, set()).update(
            there for there in (room_of(t, root, packages) for t in targets) if there != here
        )
    return rooms


def floors(graph: Mapping[str, set[str]]) -> dict[str, int]:
    """{node: its floor} of an acyclic graph: 1 for a node that imports nothing of it, else one
    above the highest node it imports."""
    floor: dict[str, int] = {}
    for start in sorted(graph):
        work = [start]
        while work:
            node = work[-1]
            if node in floor:
                work.pop()
                continue
            waiting = [t for t in sorted(graph[node]) if t not in floor]
            if waiting:
                work.extend(waiting)
                continue
            floor[node] = 1 + max((floor[t] for t in graph[node]), default=0)
            work.pop()
    return floor


def packages_of(root: Path) -> set[str]:
    return {".".join(p.parent.relative_to(root.parent).parts) for p in root.rglob("__init__.py")}


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


def test_core_rooms_have_no_circle() -> None:
    """Each sub-package as one node, the way the structure viewer draws core: no circle between
    the rooms either (a package's modules may not reach a room that reaches the package)."""
    rooms = room_graph(import_graph(CORE), "hookcode", packages_of(CORE))
    found = circles(rooms)
    shown = "\n\n".join(ties(rooms, circle) for circle in found)
    assert not found, f"an import circle between core's rooms (sub-packages count as one):\n{shown}"
    floor = floors(rooms)
    top = max(floor.values())
    print(f"\ncore: {len(rooms)} rooms on {top} floors")
    for level in range(top, 0, -1):
        print(f"  {level:2d} " + " ".join(sorted(r for r, f in floor.items() if f == level)))


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


def test_rooms_merge_a_sub_package_and_count_floors() -> None:
    graph = {
        "pkg": {"pkg.sub"},
        "pkg.sub": {"pkg.sub.a"},
        "pkg.sub.a": {"pkg.sub.b", "pkg.low"},
        "pkg.sub.b": {"pkg.low"},
        "pkg.low": set(),
        "pkg.top": {"pkg.sub.b"},
    }
    rooms = room_graph(graph, "pkg", {"pkg", "pkg.sub"})
    assert rooms == {
        "pkg": {"pkg.sub"},
        "pkg.sub": {"pkg.low"},
        "pkg.low": set(),
        "pkg.top": {"pkg.sub"},
    }
    assert floors(rooms) == {"pkg.low": 1, "pkg.sub": 2, "pkg": 3, "pkg.top": 3}
    # two modules of one package, each reached by a module the other imports: a room circle
    graph["pkg.low"] = {"pkg.sub.b"}
    assert circles(room_graph(graph, "pkg", {"pkg", "pkg.sub"})) == [{"pkg.sub", "pkg.low"}]
