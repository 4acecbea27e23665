"""The workspace's shape: the umbrella depends on every default plugin (and offers the optional
ones as extras), and each member is packaged the same way (one `hookcode` entry point named
`<kind>_<name>`)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MEMBERS = sorted(
    [*ROOT.glob("builtin_tools/*/pyproject.toml"), *ROOT.glob("plugins/*/pyproject.toml")]
)


def _load(path: Path) -> dict:
    return tomllib.loads(path.read_text())


#: members the umbrella offers as an extra instead of installing them by default
OPTIONAL = {"postgres": "hookcode-store-postgres"}


def test_umbrella_depends_on_every_member_with_a_workspace_source():
    root = _load(ROOT / "pyproject.toml")
    deps = set(root["project"]["dependencies"])
    extras = root["project"].get("optional-dependencies", {})
    assert extras == {extra: [name] for extra, name in OPTIONAL.items()}
    sources = root["tool"]["uv"]["sources"]
    names = {_load(p)["project"]["name"] for p in MEMBERS}
    assert names, "no members found"
    assert names | {"hookcode-core"} == deps | set(OPTIONAL.values())
    assert not deps & set(OPTIONAL.values())
    for name in deps | set(OPTIONAL.values()):
        assert sources.get(name) == {"workspace": True}, name


@pytest.mark.parametrize("pyproject", MEMBERS, ids=lambda p: p.parent.name)
def test_member_packaging(pyproject: Path):
    data = _load(pyproject)
    project = data["project"]
    folder = pyproject.parent
    kind_dir = folder.parent.name  # builtin_tools or plugins
    entry_points = project["entry-points"]["hookcode"]
    assert len(entry_points) == 1, entry_points
    ((ep_name, module),) = entry_points.items()
    if kind_dir == "builtin_tools":
        assert project["name"] == f"hookcode-tool-{folder.name.replace('_', '-')}"
        assert ep_name == f"tool_{folder.name}"
        assert module == f"hookcode_tool_{folder.name}"
    else:
        assert project["name"] == f"hookcode-{folder.name.replace('_', '-')}"
        assert ep_name == folder.name
        assert module == f"hookcode_{folder.name}"
    assert (folder / module).is_dir(), f"{module} package missing in {folder}"
    assert project["requires-python"] == ">=3.11"
    assert "hookcode-core" in project["dependencies"]
    assert data["build-system"]["build-backend"] == "hatchling.build"


LIBRARIES = sorted(ROOT.glob("libs/*/pyproject.toml"))


def test_every_member_folder_is_a_workspace_member():
    members = _load(ROOT / "pyproject.toml")["tool"]["uv"]["workspace"]["members"]
    assert members == ["core", "libs/*", "builtin_tools/*", "plugins/*"]
    assert LIBRARIES, "no libraries found"


@pytest.mark.parametrize("pyproject", LIBRARIES, ids=lambda p: p.parent.name)
def test_library_packaging(pyproject: Path):
    """A library (libs/<name>) is code tools share that core does not need: distribution
    ``hookcode-<name>``, module ``hookcode_<name>``, no entry point (it is not a plugin), a
    workspace source, and the tools that use it depend on it."""
    data = _load(pyproject)
    project = data["project"]
    folder = pyproject.parent
    assert project["name"] == f"hookcode-{folder.name.replace('_', '-')}"
    assert (folder / f"hookcode_{folder.name}").is_dir()
    assert "entry-points" not in project
    assert project["requires-python"] == ">=3.11"
    assert "hookcode-core" in project["dependencies"]
    assert data["build-system"]["build-backend"] == "hatchling.build"
    sources = _load(ROOT / "pyproject.toml")["tool"]["uv"]["sources"]
    assert sources.get(project["name"]) == {"workspace": True}


def test_ripgrep_is_a_library_of_the_search_tools_not_of_core():
    core = _load(ROOT / "core" / "pyproject.toml")["project"]["dependencies"]
    assert not [d for d in core if d.startswith("ripgrep")]
    assert not (ROOT / "core" / "hookcode" / "ripgrep.py").exists()
    for tool in ("glob", "grep", "list"):
        deps = _load(ROOT / "builtin_tools" / tool / "pyproject.toml")["project"]["dependencies"]
        assert "hookcode-ripgrep" in deps, tool
        assert not [d for d in deps if d.startswith("ripgrep")], tool  # pinned in one place
    assert (
        "ripgrep==14.1.0" in _load(ROOT / "libs/ripgrep/pyproject.toml")["project"]["dependencies"]
    )


def test_own_sections_name_the_distribution_that_claims_each():
    """Core's table of the sections of hookcode's own distributions (a section left behind by
    an uninstalled one is a warning naming it) is exactly what their ``config_schema`` claim."""
    import importlib

    from hookcode.config import OWN_SECTIONS

    claimed: dict[str, str] = {}
    for pyproject in MEMBERS:
        project = _load(pyproject)["project"]
        (module,) = project["entry-points"]["hookcode"].values()
        config_schema = getattr(importlib.import_module(module), "config_schema", None)
        if config_schema is not None:
            claimed.update(dict.fromkeys(config_schema(), project["name"]))
    assert claimed == OWN_SECTIONS
