"""A local MCP server's whole process tree dies with it (docs/processes.md): the server runs
below the runtime's process guardian, so its children that left its process group (``setsid``,
a double fork) are killed when its session closes, and when hookcode is killed by SIGKILL."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import hookcode_mcp
import pytest
from hookcode.process import pid_alive
from hookcode.testing import invoke_tool

SERVERS = Path(__file__).parent / "mcp_servers"

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the process guardian's trees need Linux"
)

DRIVER = """
import sys, time
from hookcode.runtime import Runtime
from hookcode.testing import invoke_tool

rt = Runtime(cwd=sys.argv[1])
out = invoke_tool(rt, "forky_echo", {"text": "hi"})
assert out.ok, out.error_text
print("ready", flush=True)
time.sleep(120)
"""


def forky(hookcode_env: Any, out: Path) -> None:
    out.mkdir()
    hookcode_env.env["HOOKCODE_LOAD_PLUGINS"] = "mcp,policy_rules"
    command = [sys.executable, str(SERVERS / "forky_server.py"), str(out)]
    hookcode_env.write_config(
        f'[mcp.forky]\ncommand = {command!r}\n\n[permission]\n"forky_*" = "allow"\n'.replace(
            "'", '"'
        )
    )


def grandchildren(out: Path) -> list[int]:
    deadline = time.monotonic() + 10
    names = [out / "setsid", out / "double"]
    while not all(p.exists() for p in names) and time.monotonic() < deadline:
        time.sleep(0.02)
    return [int(p.read_text()) for p in names]


def gone(pids: list[int], timeout: float = 8) -> bool:
    deadline = time.monotonic() + timeout
    while any(pid_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not any(pid_alive(p) for p in pids)


def test_a_servers_setsid_and_double_forked_children_die_when_it_closes(
    hookcode_env: Any, tmp_path: Path
) -> None:
    forky(hookcode_env, tmp_path / "pids")
    runtime = hookcode_env.runtime()
    try:
        outcome = invoke_tool(runtime, "forky_echo", {"text": "hi"})
        assert outcome.ok and outcome.result.output == "hi", outcome.error_text
        pids = grandchildren(tmp_path / "pids")
        assert all(pid_alive(p) for p in pids)
        hookcode_mcp.close(runtime)
        assert gone(pids)
    finally:
        runtime.close()


def test_a_servers_escaped_children_die_with_a_killed_hookcode(
    hookcode_env: Any, tmp_path: Path
) -> None:
    forky(hookcode_env, tmp_path / "pids")
    (tmp_path / "driver.py").write_text(DRIVER)
    proc = subprocess.Popen(
        [sys.executable, str(tmp_path / "driver.py"), str(hookcode_env.project)],
        stdout=subprocess.PIPE,
        text=True,
        env=hookcode_env.env,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        pids = grandchildren(tmp_path / "pids")
        assert all(pid_alive(p) for p in pids)
    finally:
        proc.kill()
        proc.wait()
    assert gone(pids)
