"""A language server's whole process tree dies with it (docs/processes.md): the server runs
below the runtime's process guardian, so a child that left its process group (``setsid``, a
double fork) is killed when the server is shut down, and when hookcode is killed by SIGKILL.
A small real server (a Python script speaking LSP) that starts such children."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.fake_lsp import MESSAGE_LOOP, SHUTDOWN
from hookcode.process import pid_alive
from hookcode.testing import HookcodeEnv, invoke_tool
from hookcode_tool_lsp.manager import manager_for

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the process guardian's trees need Linux"
)

FORKY = (
    r"""
import json, subprocess, sys
out = sys.argv[1]
# children that leave the server's process group: a setsid one and a double-forked one
subprocess.Popen(["setsid", "sh", "-c", f"echo $$ > {out}/setsid.tmp; "
                  f"mv {out}/setsid.tmp {out}/setsid; exec sleep 301"])
subprocess.Popen(["sh", "-c", f"(sh -c 'echo $$ > {out}/double.tmp; "
                  f"mv {out}/double.tmp {out}/double; exec sleep 302' &) &"])
"""
    + MESSAGE_LOOP
    + r"""    if method == "initialize":
        send({"jsonrpc": "2.0", "id": message["id"],
              "result": {"capabilities": {"textDocumentSync": 1}}})
    elif method in ("textDocument/didOpen", "textDocument/didChange"):
        doc = message["params"]["textDocument"]
        send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
              "params": {"uri": doc["uri"], "version": doc.get("version"), "diagnostics": []}})
"""
    + SHUTDOWN
)

DRIVER = """
import sys, time
from hookcode.runtime import Runtime
from hookcode.testing import invoke_tool

rt = Runtime(cwd=sys.argv[1])
out = invoke_tool(rt, "write", {"filePath": "a.py", "content": "x = 1\\n"})
assert out.error is None, out.error_text
print("ready", flush=True)
time.sleep(120)
"""


def forky_env(root: Path) -> tuple[HookcodeEnv, Path]:
    env = HookcodeEnv(root)
    script, out = root / "forky.py", root / "pids"
    script.write_text(FORKY)
    out.mkdir()
    env.write_config(
        {
            "lsp": {
                "servers": {
                    "forky": {
                        "command": [sys.executable, str(script), str(out)],
                        "extensions": [".py"],
                    },
                }
            }
        }
    )
    return env, out


def grandchildren(out: Path) -> list[int]:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        names = [out / "setsid", out / "double"]
        if all(p.exists() for p in names):
            return [int(p.read_text()) for p in names]
        time.sleep(0.02)
    raise AssertionError(f"the server's children did not start: {sorted(out.iterdir())}")


def gone(pids: list[int], timeout: float = 5) -> bool:
    deadline = time.monotonic() + timeout
    while any(pid_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not any(pid_alive(p) for p in pids)


def test_a_servers_setsid_and_double_forked_children_die_when_it_is_closed(tmp_path):
    env, out = forky_env(tmp_path)
    rt = env.runtime()
    try:
        assert invoke_tool(rt, "write", {"filePath": "a.py", "content": "x = 1\n"}).error is None
        pids = grandchildren(out)
        assert all(pid_alive(p) for p in pids)
        manager_for(rt).close_now()
        assert gone(pids)
    finally:
        rt.close()


def test_a_servers_escaped_children_die_with_a_killed_hookcode(tmp_path):
    env, out = forky_env(tmp_path)
    (tmp_path / "driver.py").write_text(DRIVER)
    proc = subprocess.Popen(
        [sys.executable, str(tmp_path / "driver.py"), str(env.project)],
        stdout=subprocess.PIPE,
        text=True,
        env=env.env,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        pids = grandchildren(out)
        assert all(pid_alive(p) for p in pids)
    finally:
        proc.kill()
        proc.wait()
    assert gone(pids)
