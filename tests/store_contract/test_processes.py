"""Several processes on one store at once, and a process killed mid-write (kill -9)."""

from __future__ import annotations

import hashlib
import os
import signal
import sqlite3
import sys
import time

import pytest
from helpers.processes import wait_exit
from helpers.stores import Backend, run_python
from hookcode.store import Store

WRITER = """
import sys
from helpers.stores import open_store
from hookcode.store import ToolPartRecord

url, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
store = open_store(url)
session = store.create_session(project="p", directory="/d", title=name, id="ses_" + name)
for i in range(count):
    store.save_tool_part(
        ToolPartRecord(id=f"{name}_{i}", session_id=session.id, tool="t", state="running",
                       input={"i": i})
    )
    if i % 25 == 0:
        store.add_approval(project="p", permission="bash", pattern=f"cmd {i}")
        store.update_session(session.id, tokens_out=i)
store.close()
print("done")
"""


def integrity(backend: Backend) -> None:
    """The SQLite file passes ``PRAGMA integrity_check`` (PostgreSQL keeps its own)."""
    if backend.kind == "sqlite":
        conn = sqlite3.connect(backend.url.removeprefix("sqlite://"))
        try:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        finally:
            conn.close()


def test_processes_write_concurrently(backend: Backend) -> None:
    # nothing is set up yet: the processes also race to create and migrate the database
    count = 300
    procs = [run_python(WRITER, backend.url, name, str(count)) for name in ("a", "b", "c")]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert out.strip() == "done"

    integrity(backend)
    st = backend.open()
    try:
        for name in ("a", "b", "c"):
            parts = st.tool_parts("ses_" + name)
            assert [p.id for p in parts] == [f"{name}_{i}" for i in range(count)]
            assert [p.input for p in parts] == [{"i": i} for i in range(count)]
        # each pattern was approved by all three processes, stored once
        assert len(st.approvals(project="p")) == len(range(0, count, 25))
    finally:
        st.close()


MESSAGE_WRITER = """
import sys
from helpers.stores import open_store

url, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
store = open_store(url)
session = store.create_session(project="p", directory="/d", id="ses_" + name)
for i in range(count):
    mid = f"{name}_m{i}"
    store.save_message({"id": mid, "session_id": session.id, "role": "user", "created": i})
    store.save_part({"id": f"{name}_p{i}", "session_id": session.id, "message_id": mid,
                     "type": "text", "text": "x" * i})
    store.add_session_usage(session.id, tokens_in=1, cost=0.001)
store.close()
print("done")
"""


def test_processes_write_messages_concurrently(backend: Backend, store: Store) -> None:
    procs = [run_python(MESSAGE_WRITER, backend.url, n, "150") for n in ("a", "b", "c")]
    for proc in procs:
        _out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    integrity(backend)
    for name in ("a", "b", "c"):
        messages = store.messages("ses_" + name)
        assert [m["parts"][0]["text"] for m in messages] == ["x" * i for i in range(150)]
        session = store.get_session("ses_" + name)
        assert session is not None and session.tokens_in == 150


KILLED_WRITER = """
import hashlib, sys
from helpers.stores import open_store
from hookcode.store import ToolPartRecord

store = open_store(sys.argv[1])
session = store.create_session(project="p", directory="/d", id="ses_k")
i = 0
while True:
    body = (f"{i}:" * (1 + i % 500))
    part = ToolPartRecord(id=f"k_{i}", session_id=session.id, tool="t", state="running",
                          input={"i": i})
    store.save_tool_part(part)
    part.state = "completed"
    part.output = body
    part.metadata = {"sha": hashlib.sha256(body.encode()).hexdigest(), "len": len(body)}
    part.time_end = 1.0
    store.save_tool_part(part)
    if i == 20:
        print("ready", flush=True)
    i += 1
"""


@pytest.mark.skipif(sys.platform == "win32", reason="needs SIGKILL")
def test_kill_9_leaves_a_consistent_store(backend: Backend, store: Store) -> None:
    proc = run_python(KILLED_WRITER, backend.url)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.strip() == "ready", proc.stderr.read() if proc.stderr else ""
    # killed in the middle of its writes: wait until it has written more, then kill
    while len(store.tool_parts("ses_k")) < 60:
        assert proc.poll() is None
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    assert wait_exit(proc.pid, 30)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    integrity(backend)
    parts = store.tool_parts("ses_k")
    assert len(parts) >= 60
    assert [p.id for p in parts] == [f"k_{i}" for i in range(len(parts))]
    for i, part in enumerate(parts):
        assert part.input == {"i": i}
        if part.state == "running":
            # only the very last call may have been caught between its two writes
            assert i == len(parts) - 1
            assert part.output is None and part.metadata == {}
            continue
        assert part.state == "completed"
        assert part.output is not None
        assert part.metadata == {
            "sha": hashlib.sha256(part.output.encode()).hexdigest(),
            "len": len(part.output),
        }
        assert part.output == f"{i}:" * (1 + i % 500)
    # the store is still writable, and the loop's clean-up works on it
    assert store.mark_interrupted("ses_k") in (0, 1)
