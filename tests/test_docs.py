"""The documentation stays true: generated pages match the code, every hook and config key is
documented, the site builds with --strict, and the tutorial works when followed literally."""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.venv import check, install_wheels

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _generate():
    spec = importlib.util.spec_from_file_location("docs_generate", DOCS / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generate():
    return _generate()


@pytest.fixture(scope="module")
def rendered(generate):
    return generate.render_all()


def test_generated_reference_pages_are_up_to_date(rendered):
    stale = [path.name for path, text in rendered.items()
             if not path.exists() or path.read_text() != text]
    assert not stale, f"run `uv run python docs/generate.py`: stale {stale}"


def test_every_hook_is_on_the_hook_reference(generate):
    from hookcode import hookspecs

    page = (DOCS / "reference" / "hooks.md").read_text()
    names = [n for n in dir(hookspecs) if hasattr(getattr(hookspecs, n), "hookcode_spec")]
    assert set(generate.hook_names()) == set(names)
    for name in names:
        assert f"### `{name}`" in page, f"hook {name} missing from docs/reference/hooks.md"


def test_every_core_config_key_is_on_the_config_reference():
    from hookcode.config import AgentConfig, CoreConfig, PluginsConfig, TruncationConfig

    page = (DOCS / "reference" / "config.md").read_text()
    keys = list(CoreConfig.model_fields)
    keys += [f"agent.NAME.{k}" for k in AgentConfig.model_fields]
    keys += [f"plugins.{k}" for k in PluginsConfig.model_fields]
    keys += [f"truncation.{k}" for k in TruncationConfig.model_fields]
    missing = [k for k in keys if f"| `{k}` |" not in page]
    assert not missing, f"undocumented config keys: {missing}"


def test_every_installed_tool_is_on_the_tools_reference(rendered):
    page = (DOCS / "reference" / "tools.md").read_text()
    names = re.findall(r"^## (\S+)$", page, flags=re.M)
    assert names, "no tools documented"
    assert [f"## {n}" for n in names] == re.findall(r"^## \S+$", page, flags=re.M)


def _pages() -> list[str]:
    nav = (ROOT / "mkdocs.yml").read_text()
    return re.findall(r":\s*(\S+\.md)\s*$", nav, flags=re.M)


def test_every_page_exists_and_is_linked_from_the_readme():
    readme = (ROOT / "README.md").read_text()
    pages = _pages()
    assert len(pages) >= 10
    for page in pages:
        assert (DOCS / page).is_file(), f"mkdocs.yml names a missing page: {page}"
        assert f"docs/{page}" in readme, f"README does not link docs/{page}"


def test_the_site_builds_strictly(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr


# ---------------------------------------------------------------------------------------------
# the tutorial, followed literally
# ---------------------------------------------------------------------------------------------

BLOCK = re.compile(r'^```(\w+)(?: title="([^"]+)")?\n(.*?)^```', re.M | re.S)


def tutorial_steps() -> tuple[dict[str, str], list[str]]:
    """(files by path, shell commands) in the order the tutorial gives them."""
    files: dict[str, str] = {}
    commands: list[str] = []
    for lang, title, body in BLOCK.findall((DOCS / "tool-packs.md").read_text()):
        if title:
            files[title] = body
        elif lang == "sh":
            commands += [line for line in body.splitlines() if line.strip()]
    return files, commands


@pytest.mark.slow
def test_the_tutorial_produces_a_working_tool_pack(tmp_path):
    files, commands = tutorial_steps()
    assert {"pyproject.toml", "hookcode_pack_wordcount/__init__.py",
            "tests/test_wordcount.py"} <= set(files)
    # hookcode-core brings the fixtures, not pytest: the reader installs it before the tests
    assert commands.index("pip install pytest") < commands.index("python -m pytest tests")
    pack = tmp_path / "hookcode-pack-wordcount"
    for name, text in files.items():
        (pack / name).parent.mkdir(parents=True, exist_ok=True)
        (pack / name).write_text(text)

    # `pip install .` next to hookcode: the core wheel (hookcode-core is not on PyPI yet)
    # and the pack's wheel, into a fresh environment
    installed = install_wheels(tmp_path / "env", [ROOT / "core", pack])
    env = {"PATH": f"{installed.bin}:/usr/bin:/bin", "HOME": str(tmp_path / "home"),
           "HOOKCODE_DATA_DIR": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    ran = []
    for command in commands:
        argv = shlex.split(command)
        if argv[:2] == ["pip", "install"]:
            continue  # done above, from the wheels
        if argv[0] == "python":
            argv[0] = str(installed.exe("python"))
        elif argv[0] == "hookcode":
            argv[0] = str(installed.exe("hookcode"))
        proc = check(argv, cwd=pack, env=env)
        ran.append((command, proc.stdout))
    assert any(c.startswith("python -m pytest") for c, _ in ran)
    listed = check([installed.exe("hookcode"), "tools", "list", "--json"], cwd=pack, env=env)
    tools = {t["name"]: t for t in json.loads(listed.stdout)}
    assert tools["wordcount"]["plugin"] == "tool_wordcount"
    assert tools["wordcount"]["distribution"] == "hookcode-pack-wordcount"
    called = dict(ran)["hookcode tools call wordcount '{\"filePath\": \"pyproject.toml\"}' --yes"]
    assert called.startswith("pyproject.toml: ")
