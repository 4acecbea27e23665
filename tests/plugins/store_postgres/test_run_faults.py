"""A real ``hookcode run`` on the PostgreSQL store when the server fails under it (issue 21,
item 7), on a cluster of the test's own (``private_cluster``, never the shared one): restarted
while the run makes several tool calls, the run completes and every result is stored; stopped
for longer than the store's retry bound, the step fails with a clear error and exit status,
what had completed is in the store, and the session resumes once the server is back."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import postgres
from hookcode_store_postgres.postgres_store import PostgresStore

STEPS = 6


def _world(hookcode_env: Any, url: str, turns: list[Any]) -> dict[str, str]:
    script = Path(hookcode_env.root) / "script.json"
    script.write_text(json.dumps(turns))
    return {**hookcode_env.env, "HOOKCODE_STORE": url, "HOOKCODE_SCRIPT": str(script)}


def _bash(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "bash", "args": {"command": command, "description": "step"}}]}


def _start(env: dict[str, str], cwd: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "hookcode.cli", "run", "-m", "scripted/x", "--yes", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_parts(
    url: str, proc: subprocess.Popen[str], states: list[str], timeout: float = 60
) -> str:
    """The session id once its tool parts are in ``states`` (polled through a store of the
    test's own)."""
    store = PostgresStore(url)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                out, err = proc.communicate()
                pytest.fail(f"hookcode exited early ({proc.returncode}): {out} {err}")
            for session in store.list_sessions():
                if [p.state for p in store.tool_parts(session.id)] == states:
                    return session.id
            time.sleep(0.05)
    finally:
        store.close()
    pytest.fail(f"the tool parts were never {states}")


def test_a_run_survives_a_server_restart_and_stores_every_result(
    hookcode_env: Any, private_cluster: Any
) -> None:
    turns = [_bash(f"sleep 0.3; echo step {i}") for i in range(STEPS)]
    env = _world(hookcode_env, private_cluster.url, [*turns, {"text": "all steps done"}])
    proc = _start(env, hookcode_env.project, "several steps")
    try:
        session_id = _wait_for_parts(
            private_cluster.url, proc, ["completed", "completed", "running"]
        )
        private_cluster.restart()  # every connection is cut, mid-run
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "all steps done" in out
    store = PostgresStore(private_cluster.url)
    try:
        parts = store.tool_parts(session_id)
        assert [p.state for p in parts] == ["completed"] * STEPS
        assert [(p.output or "").strip() for p in parts] == [f"step {i}" for i in range(STEPS)]
        messages = store.messages(session_id)
        assert [m["role"] for m in messages] == ["user"] + ["assistant"] * (STEPS + 1)
        assert store.session_lock(session_id) is None
    finally:
        store.close()


def test_a_server_down_past_the_retry_bound_fails_the_step_clearly(
    hookcode_env: Any, private_cluster: Any
) -> None:
    go = Path(hookcode_env.root) / "go"  # the second call ends once the test creates it
    second = f'until [ -e "{go}" ]; do sleep 0.01; done; echo second'
    turns = [_bash("echo first"), _bash(second), {"text": "never"}]
    env = _world(hookcode_env, private_cluster.url, turns)
    bound = 1.0  # an operator's HOOKCODE_STORE_RETRY_SECONDS (default RETRY_SECONDS, 10 s)
    env["HOOKCODE_STORE_RETRY_SECONDS"] = f"{bound:g}"
    proc = _start(env, hookcode_env.project, "two steps")
    try:
        session_id = _wait_for_parts(private_cluster.url, proc, ["completed", "running"])
        # the first call has completed and the second is running: the server goes away for
        # longer than the store retries
        postgres.pause(private_cluster.directory)
        started = time.monotonic()
        go.touch()
        out, err = proc.communicate(timeout=bound * 6 + 60)
        elapsed = time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 1, (out, err)
    assert "never" not in out
    assert f"unreachable for {bound:g} s" in err
    assert private_cluster.url.rpartition("/")[0] in err  # names the store
    assert elapsed >= bound
    assert "Traceback" not in err

    postgres.resume(private_cluster.directory)
    store = PostgresStore(private_cluster.url)
    try:
        first, second = store.tool_parts(session_id)
        assert (first.state, (first.output or "").strip()) == ("completed", "first")
        assert second.state == "running"  # its result never reached the store, and it said so
    finally:
        store.close()
    # the session resumes once the server is back: the lost call is marked, not forgotten
    # (the scripted model's position in its turns is the session's, in the store: 2)
    env = _world(hookcode_env, private_cluster.url, [*turns[:2], {"text": "back again"}])
    resumed = subprocess.run(
        [sys.executable, "-m", "hookcode.cli", "run", "--session", session_id, "--yes", "go on"],
        cwd=hookcode_env.project,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "back again" in resumed.stdout and "marked aborted" in resumed.stderr
    store = PostgresStore(private_cluster.url)
    try:
        first, second = store.tool_parts(session_id)
        assert first.state == "completed"
        assert second.state == "error" and second.error == "Tool execution aborted"
    finally:
        store.close()
