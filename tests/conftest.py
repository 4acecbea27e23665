"""Fixtures every test directory shares."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest
from hookcode.testing import missing

ROOT = Path(__file__).resolve().parents[1]
#: the workspace's own sources (editable installs): compiled beside the installed packages
SOURCES = ("core", "libs", "builtin_tools", "plugins")


def pytest_configure(config: pytest.Config) -> None:
    """Compile the environment's packages and the workspace's sources to bytecode, in the
    controlling process (not in each xdist worker), once per state of ``uv.lock`` (a marker in
    the environment records it). Under ``PYTHONDONTWRITEBYTECODE`` (set on this machine and
    common in CI) every process the tests start (the CLI, MCP and language servers run from
    this environment) would otherwise compile pydantic, mcp, rich and hookcode from source
    again; a source edited since is compiled in memory as usual, a cost of one file. Not
    ``[tool.uv] compile-bytecode``: that makes every ``uv run`` re-check thousands of files,
    which a user's ``uv run hookcode`` would pay too. A failure only costs that time again."""
    if hasattr(config, "workerinput"):
        return
    lock = ROOT / "uv.lock"
    marker = Path(sys.prefix) / ".hookcode-tests-compiled"
    try:
        state = hashlib.sha256(lock.read_bytes()).hexdigest()
        if marker.is_file() and marker.read_text() == state:
            return
        paths = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
        paths.update(str(ROOT / name) for name in SOURCES)
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", "-j", "0", *sorted(paths)],
            capture_output=True,
            timeout=600,
            check=False,
        )
        marker.write_text(state)
    except (OSError, subprocess.TimeoutExpired):
        pass


@pytest.fixture
def rg() -> str:
    """The rg binary (hookcode-ripgrep's pinned ripgrep wheel) that glob, grep and list run;
    missing, the test fails in CI and skips elsewhere."""
    from hookcode_ripgrep import RipgrepMissing, find_rg

    try:
        return find_rg()
    except RipgrepMissing as exc:
        missing(str(exc))


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The URL of a PostgreSQL server's ``postgres`` database (superuser, loopback): CI's
    cluster (``HOOKCODE_TEST_POSTGRES_URL``), or one started for this test process and
    stopped at its end. Missing PostgreSQL fails the test in CI and skips it elsewhere."""
    from helpers import postgres

    try:
        with postgres.server() as url:
            yield url
    except postgres.PostgresMissing as exc:  # raised on entering, before any test ran
        missing(str(exc))


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A fresh, empty PostgreSQL database for this test (dropped after it); its URL."""
    from helpers import postgres

    with postgres.database(postgres_server) as url:
        yield url
