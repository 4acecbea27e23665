"""For the MCP tests: test servers over HTTP run as real processes (tests/plugins/mcp_servers/),
and the ``hookcode`` CLI run in a test's isolated world."""

from __future__ import annotations

import os
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SERVERS = Path(__file__).resolve().parent.parent / "plugins" / "mcp_servers"
#: seconds a server may take to print its port (a loaded 2-core machine importing the SDK)
STARTUP = 60


def serve(script: str, *args: str) -> Iterator[str]:
    """Run ``mcp_servers/<script>`` with ``args`` until the generator is closed; yields its
    MCP endpoint's URL once it printed ``PORT <n>`` (``/sse`` with ``--sse``, else ``/mcp``).
    Wrap it in :func:`contextlib.contextmanager` for a ``with`` block."""
    proc = subprocess.Popen(
        [sys.executable, str(SERVERS / script), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], STARTUP)
        line = proc.stdout.readline() if ready else ""
        if not line.startswith("PORT "):
            pytest.fail(f"the test server {script} did not start: {line!r}")
        path = "/sse" if "--sse" in args else "/mcp"
        yield f"http://127.0.0.1:{int(line.split()[1])}{path}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def run_hookcode(
    env: Any, *args: str, timeout: float, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m hookcode ARGS`` in ``env``'s project with ``env.env`` (a HookcodeEnv), none
    of the developer's ``HOOKCODE_*`` variables nor their ``BROWSER``; ``stdin``: its input."""
    full = {k: v for k, v in os.environ.items() if not k.startswith(("HOOKCODE_", "BROWSER"))}
    full.update(env.env)
    return subprocess.run(
        [sys.executable, "-m", "hookcode", *args],
        cwd=env.project,
        env=full,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
