"""``uv tool install hookcode`` and ``pip install hookcode`` (what ``pipx`` runs), from the
wheels this workspace builds, the way a user installs them.

Once per module every distribution's wheel is built (``uv build --all-packages``), with the
example tool pack's. Our own packages come only from those wheels (``--find-links``; none of
them is on the package index); their third-party dependencies come from the index, pinned to
``uv.lock``. The installed executable then runs from outside the workspace.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from helpers.venv import EXPORT, INSTALL_TIMEOUT, check, clean_env, find_uv, run

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
PACK = ROOT / "examples" / "hookcode-pack-textstats"
BIN = "Scripts" if os.name == "nt" else "bin"


class Wheels:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.dir = root / "wheels"
        self.constraints = root / "constraints.txt"


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Wheels:
    built = Wheels(tmp_path_factory.mktemp("install"))
    uv, env = find_uv(), clean_env()
    check(
        [*uv, "build", "--all-packages", "--wheel", "--out-dir", built.dir],
        env=env,
        cwd=ROOT,
        timeout=INSTALL_TIMEOUT,
    )
    check([*uv, "build", "--wheel", "--out-dir", built.dir, PACK], env=env, cwd=ROOT)
    check([*uv, *EXPORT, "--output-file", built.constraints], env=env, cwd=ROOT)
    names = {w.name.split("-")[0] for w in built.dir.glob("*.whl")}
    assert {"hookcode", "hookcode_core", "hookcode_tool_bash", "hookcode_pack_textstats"} <= names
    return built


def project_dir(root: Path) -> Path:
    project = root / "project"
    project.mkdir()
    (project / "a.txt").write_text("one two\n")
    return project


def user_env(root: Path, **extra: str) -> dict[str, str]:
    """A user's environment outside the workspace: its own home, config and data."""
    (root / "home").mkdir(exist_ok=True)
    return clean_env(
        HOME=str(root / "home"),
        XDG_CONFIG_HOME=str(root / "config"),
        XDG_DATA_HOME=str(root / "xdg-data"),
        HOOKCODE_DATA_DIR=str(root / "data"),
        **extra,
    )


def test_uv_tool_install_hookcode_with_a_pack(wheels: Wheels, tmp_path: Path) -> None:
    """``uv tool install hookcode --with <pack>``: the umbrella's ``hookcode`` executable, the
    default plugins and the pack's tools."""
    tools, bin_dir = tmp_path / "tools", tmp_path / "bin"
    env = user_env(tmp_path, UV_TOOL_DIR=str(tools), UV_TOOL_BIN_DIR=str(bin_dir))
    install = check(
        [
            *find_uv(),
            "tool",
            "install",
            "hookcode",
            "--with",
            "hookcode-pack-textstats",
            "--find-links",
            wheels.dir,
            "--constraints",
            wheels.constraints,
            "--python",
            sys.executable,
        ],
        env=env,
        cwd=tmp_path,  # never the workspace: uv would build the project found there
        timeout=INSTALL_TIMEOUT,
    )
    assert "Installed 1 executable: hookcode" in install.stderr, install.stderr
    hookcode = bin_dir / ("hookcode.exe" if os.name == "nt" else "hookcode")
    project = project_dir(tmp_path)

    helped = run([hookcode, "--help"], env=env, cwd=project)
    assert helped.returncode == 0, helped.stderr
    assert "hookcode: a plugin-first framework for AI coding agents." in helped.stdout
    listed = run([hookcode, "tools", "list", "--json"], env=env, cwd=project)
    assert listed.returncode == 0, listed.stderr
    found = {t["name"]: t["distribution"] for t in json.loads(listed.stdout)}
    assert found["read"] == "hookcode-tool-read"
    assert found["bash"] == "hookcode-tool-bash"
    assert found["wordcount"] == "hookcode-pack-textstats"
    # the code that ran is the installed wheels', not this checkout's
    [python] = (tools / "hookcode" / BIN).glob("python")
    where = run([python, "-c", "import hookcode; print(hookcode.__file__)"], env=env, cwd=project)
    assert Path(where.stdout.strip()).is_relative_to(tools), where


def test_pip_install_hookcode_into_a_fresh_venv(wheels: Wheels, tmp_path: Path) -> None:
    """``pip install hookcode`` in a fresh venv (what ``pipx install hookcode`` does, which
    then exposes the console scripts of the package named: the umbrella's own); then a plugin
    uninstalled with its section kept in hookcode.toml is a warning, not an error."""
    env = user_env(tmp_path)
    venv = tmp_path / "venv"
    check([sys.executable, "-m", "venv", venv], env=env, cwd=tmp_path)
    python = venv / BIN / "python"
    check(
        [
            python,
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            # pip would compile every module it installs (about 12 s of CPU); the commands
            # below compile what they import
            "--no-compile",
            "--find-links",
            wheels.dir,
            "--constraint",
            wheels.constraints,
            "hookcode",
        ],
        env=env,
        cwd=tmp_path,
        timeout=INSTALL_TIMEOUT,
    )
    scripts = run(
        [
            python,
            "-c",
            "from importlib.metadata import distribution as d; "
            "print([e.name for e in d('hookcode').entry_points if e.group == 'console_scripts'])",
        ],
        env=env,
        cwd=tmp_path,
    )
    assert scripts.stdout.strip() == "['hookcode']", scripts  # what pipx exposes
    hookcode = venv / BIN / "hookcode"
    project = project_dir(tmp_path)
    helped = run([hookcode, "--help"], env=env, cwd=project)
    assert helped.returncode == 0, helped.stderr
    listed = run([hookcode, "tools", "list"], env=env, cwd=project)
    assert listed.returncode == 0, listed.stderr
    assert "bash" in listed.stdout and "read" in listed.stdout

    # uninstall a plugin, keep its section: every command still works, with a warning
    check([python, "-m", "pip", "uninstall", "-y", "hookcode-tool-bash"], env=env, cwd=tmp_path)
    (project / "hookcode.toml").write_text("[tool.bash]\nmax_timeout = 60000\n")
    listed = run([hookcode, "tools", "list"], env=env, cwd=project)
    assert listed.returncode == 0, listed.stderr
    assert "read" in listed.stdout and "bash" not in listed.stdout.split()
    assert (
        f"config key 'tool.bash' in {(project / 'hookcode.toml').resolve()} is not used: "
        "hookcode-tool-bash, whose plugin reads it, is not installed" in listed.stderr
    )
    assert "unknown key" not in listed.stderr
