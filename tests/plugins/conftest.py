"""Fixtures shared by the plugins' tests.

``mcp_venv``: a virtual environment holding real MCP servers from PyPI (mcp-server-time,
mcp-server-git), never the project's own environment (offline-testing.md §0, §4). It is taken
from ``HOOKCODE_TEST_MCP_VENV`` when set, else built once with ``uv venv`` + ``uv pip install``
under ``$XDG_CACHE_HOME/hookcode-test-mcp`` (``~/.cache``) and reused by later runs. A venv
that cannot be had fails the tests in CI (``CI`` set) and skips them elsewhere.

``mcp_filesystem_server``, ``mcp_everything_server``: the commands of the real
``@modelcontextprotocol/server-filesystem`` and ``server-everything``
from npm (pinned), installed once with ``npm install`` under the same cache directory; no
node/npm, or a failed install, fails the tests in CI and skips them elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hookcode.testing import missing

#: what the MCP servers' venv holds (they need mcp>=2.3,<3 themselves)
MCP_SERVER_PACKAGES = ("mcp-server-time", "mcp-server-git")
MCP_SERVER_MODULES = ("mcp_server_time", "mcp_server_git")
BUILD_TIMEOUT = 600
STAMP = ".hookcode-test-ready"


def _cache_root() -> Path:
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "hookcode-test-mcp"


def _python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _works(python: Path) -> bool:
    if not python.exists():
        return False
    probe = subprocess.run(
        [str(python), "-c", "import " + ", ".join(MCP_SERVER_MODULES)],
        capture_output=True,
        timeout=60,
    )
    return probe.returncode == 0


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock (parallel test processes build the venv once)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            yield
            return
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _build(venv: Path) -> str | None:
    """Build the venv at ``venv`` (through a temporary sibling); an error text on failure."""
    from helpers.venv import clean_env, find_uv

    uv = find_uv()
    staging = venv.with_name(venv.name + f".building-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    env = clean_env()
    steps = [
        [*uv, "venv", "--quiet", "--python", sys.executable, str(staging)],
        [*uv, "pip", "install", "--quiet", "--python", str(_python(staging)), *MCP_SERVER_PACKAGES],
    ]
    for step in steps:
        try:
            proc = subprocess.run(
                step, capture_output=True, text=True, timeout=BUILD_TIMEOUT, env=env
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            shutil.rmtree(staging, ignore_errors=True)
            return f"{' '.join(step)}: {exc}"
        if proc.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
            return f"{' '.join(step)} exited {proc.returncode}: " + " | ".join(tail)
    if not _works(_python(staging)):
        shutil.rmtree(staging, ignore_errors=True)
        return f"the servers do not import in {staging}"
    shutil.rmtree(venv, ignore_errors=True)
    staging.rename(venv)
    (venv / STAMP).write_text(" ".join(MCP_SERVER_PACKAGES) + "\n")
    return None


@pytest.fixture(scope="session")
def mcp_venv() -> Path:
    """The python of a venv with mcp-server-time and mcp-server-git installed."""
    configured = os.environ.get("HOOKCODE_TEST_MCP_VENV")
    if configured:
        python = _python(Path(configured))
        if not _works(python):
            missing(f"HOOKCODE_TEST_MCP_VENV={configured} has no working {MCP_SERVER_PACKAGES}")
        return python
    from helpers.venv import compile_bytecode

    root = _cache_root()
    venv = root / "venv"
    with _locked(root / ".lock"):
        stamp = venv / STAMP
        wanted = " ".join(MCP_SERVER_PACKAGES) + "\n"
        if stamp.exists() and stamp.read_text() == wanted and _works(_python(venv)):
            compile_bytecode(venv, _python(venv))
            return _python(venv)
        error = _build(venv)
        if error is None:
            compile_bytecode(venv, _python(venv))
    if error is not None:
        missing(f"could not build the MCP servers' virtual environment: {error}")
    return _python(venv)


#: the filesystem MCP server from npm, pinned (its tools name their paths `path`, `paths`,
#: `source`, `destination`: what core's path checks of MCP arguments are tried on)
FILESYSTEM_SERVER = "@modelcontextprotocol/server-filesystem@2026.8.31"


def _npm_server(spec: str, package: str, folder: str) -> list[str]:
    """``[node, .../<package>/dist/index.js]`` of npm package ``spec`` (``name@version``),
    installed once with ``npm install --prefix`` into ``folder`` of the cache directory (one
    folder a package: one package's install never removes another's)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        missing(f"node and npm are needed for {package}")
    root = _cache_root() / folder
    entry = root / "node_modules" / package / "dist" / "index.js"
    stamp = root / STAMP
    with _locked(_cache_root() / ".npm-lock"):
        if not (entry.exists() and stamp.exists() and stamp.read_text() == spec):
            root.mkdir(parents=True, exist_ok=True)
            try:
                proc = subprocess.run(
                    [npm, "install", "--no-audit", "--no-fund", "--prefix", str(root), spec],
                    capture_output=True, text=True, timeout=BUILD_TIMEOUT,
                )  # fmt: skip
            except (OSError, subprocess.TimeoutExpired) as exc:
                missing(f"npm install {spec} failed: {exc}")
            if proc.returncode != 0 or not entry.exists():
                tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-5:])
                missing(f"npm install {spec} exited {proc.returncode}: {tail}")
            stamp.write_text(spec)
    return [node, str(entry)]


@pytest.fixture(scope="session")
def mcp_filesystem_server() -> list[str]:
    """``[node, .../server-filesystem/dist/index.js]``: append the allowed directories."""
    return _npm_server(FILESYSTEM_SERVER, "@modelcontextprotocol/server-filesystem", "npm")


#: the MCP reference server from npm, pinned: tools (an image, a tool that needs MCP tasks),
#: resources (text blobs among them) and prompts, over stdio, SSE and streamable HTTP
EVERYTHING_SERVER = "@modelcontextprotocol/server-everything@2026.8.31"


@pytest.fixture(scope="session")
def mcp_everything_server() -> list[str]:
    """``[node, .../server-everything/dist/index.js]``: append ``stdio`` or
    ``streamableHttp`` (which listens on ``$PORT``)."""
    return _npm_server(
        EVERYTHING_SERVER, "@modelcontextprotocol/server-everything", "npm-everything"
    )
