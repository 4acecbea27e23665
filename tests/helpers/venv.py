"""Build wheels and install them into a fresh virtual environment, the way a user would."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INSTALL_TIMEOUT = 300  # the package index is reached for the dependencies
EXPORT = ("export", "--frozen", "--no-hashes", "--no-emit-workspace", "--all-packages")


def find_uv() -> list[str]:
    """The uv command; there is always one (the tests run under ``uv run``)."""
    found = shutil.which("uv")
    if found:
        return [found]
    if importlib.util.find_spec("uv") is not None:  # uv installed from PyPI as a package
        return [sys.executable, "-m", "uv"]
    pytest.fail("uv is needed to build and install the example packages; none found on PATH")


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without hookcode's variables and without the workspace's
    virtualenv, plus ``extra``."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("HOOKCODE_")
        and key not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PYTEST_ADDOPTS")
    }
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra)
    return env


_LIB = "Lib" if os.name == "nt" else "lib"
#: a marker file in a cached venv whose modules are compiled to bytecode
COMPILED = ".hookcode-compiled"


def compile_bytecode(venv: Path, python: Path) -> None:
    """Compile ``venv``'s modules to bytecode once (marked by a file in it): under
    ``PYTHONDONTWRITEBYTECODE`` (common in CI) every process started from a cached venv would
    compile them again. A failure only costs that time again: it is not an error."""
    marker = venv / COMPILED
    if marker.exists():
        return
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        subprocess.run(
            [str(python), "-m", "compileall", "-q", "-j", "0", str(venv / _LIB)],
            capture_output=True,
            timeout=600,
        )
        marker.touch()


def run(cmd: list[str | Path], *, timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, **kwargs
    )


def check(cmd: list[str | Path], **kwargs) -> subprocess.CompletedProcess:
    proc = run(cmd, **kwargs)
    assert proc.returncode == 0, (
        f"{' '.join(map(str, cmd))} exited {proc.returncode}\n"
        f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    )
    return proc


@dataclass
class Installed:
    """The fresh environment with the three wheels installed."""

    root: Path
    bin: Path
    wheels: list[Path]

    def exe(self, name: str) -> Path:
        return self.bin / (f"{name}.exe" if os.name == "nt" else name)

    def hookcode(self, *args: str, project: Path, data: Path, **env: str):
        """Run the installed ``hookcode`` in ``project`` with an isolated data and config dir."""
        return run(
            [self.exe("hookcode"), *args],
            cwd=project,
            env=clean_env(
                HOOKCODE_DATA_DIR=str(data),
                HOME=str(self.root / "home"),
                XDG_CONFIG_HOME=str(self.root / "config"),
                XDG_DATA_HOME=str(self.root / "xdg-data"),
                **env,
            ),
        )


def install_wheels(
    root: Path, sources: list[Path], extra: tuple[str, ...] = ("pytest",)
) -> Installed:
    """Build a wheel of each source folder, make a venv under ``root`` and install the wheels
    (their dependencies pinned to uv.lock) plus ``extra``."""
    uv = find_uv()
    wheels_dir = root / "wheels"
    env = clean_env()
    for source in sources:
        check([*uv, "build", "--wheel", "--out-dir", wheels_dir, source], env=env, cwd=ROOT)
    wheels = sorted(wheels_dir.glob("*.whl"))
    constraints = root / "constraints.txt"  # the dependencies' versions from uv.lock
    check([*uv, *EXPORT, "--output-file", constraints], env=env, cwd=ROOT)
    venv = root / "venv"
    check([*uv, "venv", venv, "--python", sys.executable], env=env, cwd=root)
    bin_dir = venv / ("Scripts" if os.name == "nt" else "bin")
    python = bin_dir / ("python.exe" if os.name == "nt" else "python")
    check(
        [*uv, "pip", "install", "--python", python, "--constraint", constraints, *wheels, *extra],
        env=env,
        cwd=root,
        timeout=INSTALL_TIMEOUT,
    )
    (root / "home").mkdir(exist_ok=True)
    return Installed(root=root, bin=bin_dir, wheels=wheels)
