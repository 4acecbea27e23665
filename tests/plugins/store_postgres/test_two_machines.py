"""Two machines sharing one PostgreSQL store (issue 21, items 3-5), with real ``hookcode``
processes and the scripted model: a session started on machine a continues on machine b (its
history from the store, b's own clone as the worktree); an approval remembered "always, this
project" on a applies on b's clone of the same repository when b trusts its folder;
``sessions list --all-hosts`` shows each machine's sessions with their host; two machines
continuing one session at once: one runs, the other is told the session is busy; a killed
machine's lease is taken over once it expires. (helpers.machines: what a machine is here.)"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time

import pytest
from helpers.hosts import on_host
from helpers.machines import Machine, bash, two_machines, write_script
from helpers.processes import wait_exit
from helpers.terminal import in_pty
from hookcode_store_postgres.postgres_store import PostgresStore


@pytest.fixture
def machines(tmp_path, postgres_url):
    return two_machines(tmp_path, postgres_url)


def test_a_session_started_on_one_machine_continues_on_another(machines, postgres_url):
    a, b, root_commit = machines
    turns = [
        bash("touch made-on-a.txt"),
        {"text": "made it on a"},
        bash("touch made-on-b.txt"),
        {"text": "made it on b"},
    ]
    for machine in (a, b):
        write_script(machine, turns)

    # machine a, in a terminal: the person allows the call "always, this project"
    code, output = in_pty(
        ["run", "-m", "scripted/x", "make a file"], a.env, a.project, replies=[("Allow?", "p")]
    )
    assert code == 0, output
    assert "made it on a" in output and (a.project / "made-on-a.txt").exists()
    store = PostgresStore(postgres_url)
    try:
        (session,) = store.list_sessions()
        assert session.project == f"git:{root_commit}"
        assert (session.host, session.directory) == (socket.gethostname(), str(a.project))
        (approval,) = store.approval_records()
        assert (approval.project, approval.permission) == (session.project, "bash")
        assert approval.directory == str(a.project)
    finally:
        store.close()

    # machine b continues it, headless: nobody to ask, the remembered approval answers
    done = b.run("run", "-c", "--session", session.id, "--non-interactive", "and now on b")
    assert done.returncode == 0, done.stderr
    assert "made it on b" in done.stdout
    assert (b.project / "made-on-b.txt").exists()  # b's clone is the worktree
    assert not (a.project / "made-on-b.txt").exists()
    assert not (b.project / "made-on-a.txt").exists()
    shown = b.run("sessions", "show", session.id, "--json")
    messages = json.loads(shown.stdout)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "assistant"] * 2
    texts = [p["text"] for m in messages for p in m["parts"] if p["type"] == "text"]
    assert texts == ["make a file", "made it on a", "and now on b", "made it on b"]
    tools = [p for m in messages for p in m["parts"] if p["type"] == "tool"]
    assert [t["state"]["input"]["command"] for t in tools] == [
        "touch made-on-a.txt",
        "touch made-on-b.txt",
    ]
    assert all(t["state"]["status"] == "completed" for t in tools)

    # each machine lists its own sessions; --all-hosts every machine's, with its host
    assert b.sessions() == []
    (listed,) = b.sessions("--all-hosts")
    assert (listed["id"], listed["host"]) == (session.id, socket.gethostname())
    assert [s["id"] for s in a.sessions()] == [session.id]
    text = b.run("sessions", "list", "--all-hosts")
    assert session.id in text.stdout and socket.gethostname() in text.stdout

    # the approval was given in another folder: on b it applies only where b trusts the folder
    b.world.trust(False)
    write_script(b, [bash("touch again.txt"), {"text": "never"}])
    refused = b.run("run", "-m", "scripted/x", "--non-interactive", "once more")
    assert refused.returncode == 1
    assert "refused tool calls" in refused.stderr and not (b.project / "again.txt").exists()


def _running_session(url: str, proc: subprocess.Popen[str], timeout: float = 60) -> str:
    """The id of the session whose tool call is running, once one is."""
    store = PostgresStore(url)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                out, err = proc.communicate()
                pytest.fail(f"hookcode exited early ({proc.returncode}): {out} {err}")
            for session in store.list_sessions():
                if any(p.state == "running" for p in store.tool_parts(session.id)):
                    return session.id
            time.sleep(0.05)
    finally:
        store.close()
    pytest.fail("no tool call started running")


#: polls the session's lease from machine b until it is free; prints how long that took
LEASE_WAITER = """
import sys, time
from hookcode_store_postgres.postgres_store import PostgresStore

store = PostgresStore(sys.argv[1])
started = time.monotonic()
while store.session_lock(sys.argv[2]) is not None:
    if time.monotonic() - started > float(sys.argv[3]):
        sys.exit("the lease never expired")
    time.sleep(0.1)
print(f"{time.monotonic() - started:.1f}")
store.close()
"""


def test_one_session_on_two_machines_at_once_one_is_busy_and_a_killed_ones_lease_expires(
    machines: tuple[Machine, Machine, str], postgres_url: str
) -> None:
    a, b, _root = machines
    ttl = 3.0  # a's lease: an operator's HOOKCODE_LEASE_SECONDS (default LEASE_TTL, 30 s)
    a.env["HOOKCODE_LEASE_SECONDS"] = f"{ttl:g}"
    write_script(a, [bash("sleep 120"), {"text": "never"}])
    write_script(b, [bash("sleep 120"), {"text": "b took over"}])
    first = a.start("run", "-m", "scripted/x", "--yes", "a long one")
    try:
        session_id = _running_session(postgres_url, first)
        busy = b.run("run", "--session", session_id, "--yes", "me too")
        assert busy.returncode == 1
        assert "busy" in busy.stderr
        assert f"pid {first.pid} on {socket.gethostname()}" in busy.stderr
    finally:
        first.send_signal(signal.SIGKILL)
        first.communicate(timeout=60)
    assert wait_exit(first.pid, 30)

    # a died without a word: b cannot see a's processes, so a's lease holds until it expires
    still = b.run("run", "--session", session_id, "--yes", "now?")
    assert still.returncode == 1 and "busy" in still.stderr
    waiter = subprocess.run(
        on_host(
            b.host,
            [sys.executable, "-c", LEASE_WAITER, postgres_url, session_id, str(ttl + 30)],
        ),
        capture_output=True,
        text=True,
        timeout=ttl + 60,
    )
    assert waiter.returncode == 0, waiter.stderr
    assert float(waiter.stdout) <= ttl + 5
    done = b.run("run", "--session", session_id, "--yes", "take it over")
    assert done.returncode == 0, done.stderr
    assert "b took over" in done.stdout and "marked aborted" in done.stderr
    store = PostgresStore(postgres_url)
    try:
        (part,) = store.tool_parts(session_id)
        assert part.state == "error" and part.error == "Tool execution aborted"
        assert store.session_lock(session_id) is None
    finally:
        store.close()
