"""Language servers from PyPI for the lsp tests and benchmark, each in its own virtual
environment (never in the project's dependency set; offline-testing.md §5), and from npm
(typescript-language-server with the typescript it drives), each in its own prefix.

The environments live under ``$HOOKCODE_TEST_LSP_DIR`` (default
``~/.cache/hookcode-test-lsp/<name>``) and are reused across runs: built once (uv, else
``python -m venv`` + pip), then found by a marker file naming what was installed, so a change
of the package spec rebuilds them. A file lock keeps parallel runs from building one twice.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from helpers.venv import COMPILED, compile_bytecode

__all__ = ["CACHE", "NPM_SERVERS", "SERVERS", "InstallFailed", "server_command"]

#: name -> (pip requirements, console script, arguments)
SERVERS: dict[str, tuple[tuple[str, ...], str, tuple[str, ...]]] = {
    "basedpyright": (("basedpyright>=1.25",), "basedpyright-langserver", ("--stdio",)),
    "jedi-language-server": (("jedi-language-server>=0.41",), "jedi-language-server", ()),
    # diagnostics come from its pyflakes plugin: without the extra pylsp publishes none
    "pylsp": (("python-lsp-server[pyflakes]>=1.12",), "pylsp", ()),
}
#: name -> (npm packages, pinned; the script in node_modules/.bin; arguments)
NPM_SERVERS: dict[str, tuple[tuple[str, ...], str, tuple[str, ...]]] = {
    # Microsoft's pyright itself (basedpyright is a fork), on the system's node
    "pyright": (("pyright@1.1.414",), "pyright-langserver", ("--stdio",)),
    "typescript-language-server": (
        ("typescript-language-server@4.4.1", "typescript@5.9.3"),
        "typescript-language-server",
        ("--stdio",),
    ),
}
#: taken at import, before any test points HOME at a temporary directory
_ENV = {
    k: v
    for k, v in os.environ.items()
    if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME") and not k.startswith("HOOKCODE_")
}
CACHE = Path(
    os.environ.get("HOOKCODE_TEST_LSP_DIR") or Path.home() / ".cache" / "hookcode-test-lsp"
)
INSTALL_TIMEOUT = 600


class InstallFailed(Exception):
    """The server could not be installed (no network, no uv or pip, a failing build)."""


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run(cmd: list[str]) -> None:
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, env=_ENV
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InstallFailed(f"{' '.join(cmd)}: {exc}") from None
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        raise InstallFailed(f"{' '.join(cmd)} exited {proc.returncode}: " + " | ".join(tail))


def _npm_command(name: str) -> list[str]:
    """An npm server, installed with ``npm install --prefix`` under the cache."""
    packages, script, args = NPM_SERVERS[name]
    prefix = CACHE / name
    exe = prefix / "node_modules" / ".bin" / script
    marker = prefix / ".hookcode-installed"
    spec = " ".join(packages)
    if marker.is_file() and marker.read_text() == spec and exe.is_file():
        return [str(exe), *args]
    npm = shutil.which("npm", path=_ENV.get("PATH"))
    if npm is None or shutil.which("node", path=_ENV.get("PATH")) is None:
        raise InstallFailed(f"{name}: node and npm are needed (Debian: apt-get install nodejs npm)")
    with _locked(CACHE / f".{name}.lock"):
        if marker.is_file() and marker.read_text() == spec and exe.is_file():
            return [str(exe), *args]
        shutil.rmtree(prefix, ignore_errors=True)
        prefix.mkdir(parents=True)
        _run([npm, "install", "--no-audit", "--no-fund", "--prefix", str(prefix), *packages])
        if not exe.is_file():
            raise InstallFailed(f"{name}: {exe} missing after the install")
        marker.write_text(spec)
    return [str(exe), *args]


def server_command(name: str) -> list[str]:
    """The command that starts server ``name`` over stdio (its venv or npm prefix built if
    needed)."""
    if name in NPM_SERVERS:
        return _npm_command(name)
    requirements, script, args = SERVERS[name]
    venv = CACHE / name
    exe = venv / "bin" / script
    marker = venv / ".hookcode-installed"
    spec = " ".join(requirements)
    compiled = venv / COMPILED
    if marker.is_file() and marker.read_text() == spec and exe.is_file() and compiled.exists():
        return [str(exe), *args]
    with _locked(CACHE / f".{name}.lock"):
        if marker.is_file() and marker.read_text() == spec and exe.is_file():
            compile_bytecode(venv, venv / "bin" / "python")
            return [str(exe), *args]
        shutil.rmtree(venv, ignore_errors=True)
        uv = shutil.which("uv", path=_ENV.get("PATH"))
        python = venv / "bin" / "python"
        if uv:
            _run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)])
            _run([uv, "pip", "install", "--quiet", "--python", str(python), *requirements])
        else:
            _run([sys.executable, "-m", "venv", str(venv)])
            _run([str(python), "-m", "pip", "install", "--quiet", *requirements])
        if not exe.is_file():
            raise InstallFailed(f"{name}: {exe} missing after the install")
        marker.write_text(spec)
        compile_bytecode(venv, python)
    return [str(exe), *args]
