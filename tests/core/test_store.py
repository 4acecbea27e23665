"""The SQLite store: CRUD, ordering, migrations, WAL, threads, processes and kill -9."""

from __future__ import annotations

import hashlib
import os
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import hookcode
import hookcode.store.store as store_module
import pytest
from hookcode.store import (
    MIGRATIONS,
    ApprovalRecord,
    SQLiteStore,
    StoreError,
    ToolPartRecord,
)
from hookcode.store.database import split_statements

CORE_DIR = Path(hookcode.__file__).resolve().parents[1]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "hookcode.db"


@pytest.fixture
def store(db_path: Path):
    st = SQLiteStore(db_path)
    yield st
    st.close()


def integrity(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()


def run_python(code: str, *args: str, stdin: int | None = None) -> subprocess.Popen:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(CORE_DIR), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        env=env,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


# -- opening -----------------------------------------------------------------------------------


def test_creates_parent_dirs_and_schema(db_path: Path, store: SQLiteStore) -> None:
    assert db_path.is_file()
    assert store.path == db_path
    assert store.version == len(MIGRATIONS)


def test_pragmas(db_path: Path, store: SQLiteStore) -> None:
    conn = store._conn
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    # WAL is a property of the file: a fresh connection sees it too
    other = sqlite3.connect(db_path)
    assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    other.close()


def test_memory_store() -> None:
    st = SQLiteStore(":memory:")
    assert st.path == ":memory:"
    s = st.create_session(project="p", directory="/d")
    assert st.get_session(s.id) == s
    st.close()


def test_not_a_database_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(StoreError, match=r"bad\.db"):
        SQLiteStore(bad)


def test_writes_are_visible_at_once_to_another_connection(
    db_path: Path, store: SQLiteStore
) -> None:
    s = store.create_session(project="p", directory="/d", title="t")
    other = sqlite3.connect(db_path)
    assert other.execute("SELECT title FROM sessions WHERE id = ?", (s.id,)).fetchone() == ("t",)
    other.close()


def test_close_is_idempotent_and_context_manager(db_path: Path) -> None:
    with SQLiteStore(db_path) as st:
        st.create_session(project="p", directory="/d")
    st.close()
    with pytest.raises(StoreError):
        st.list_sessions()


def test_checkpoints_run_on_a_thread_of_their_own(db_path: Path, store: SQLiteStore) -> None:
    # the committing connection never checkpoints (a commit that did would pay for it) ...
    assert store._conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    session = store.create_session(project="p", directory="/d")
    size_before = db_path.stat().st_size
    wal = db_path.with_name(db_path.name + "-wal")
    for i in range(store_module.CHECKPOINT_EVERY * 3):
        store.save_tool_part(
            ToolPartRecord(
                id=f"call_{i:05d}",
                session_id=session.id,
                tool="t",
                state="completed",
                output="x" * 200,
            )
        )
    # ... the store's checkpoint thread copies the WAL into the database file meanwhile
    deadline = time.monotonic() + 10
    while db_path.stat().st_size <= size_before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert db_path.stat().st_size > size_before
    thread = store._checkpointer._thread  # type: ignore[union-attr]
    assert thread.is_alive() and thread.daemon
    store.close()
    assert not thread.is_alive()  # stopped by close, which checkpoints the rest
    assert not wal.exists() or wal.stat().st_size == 0
    assert integrity(db_path) == "ok"
    with SQLiteStore(db_path) as again:
        assert len(again.tool_parts(session.id)) == store_module.CHECKPOINT_EVERY * 3


def test_a_store_with_few_commits_starts_no_thread(store: SQLiteStore) -> None:
    store.create_session(project="p", directory="/d")
    assert store._checkpointer is None


# -- sessions ----------------------------------------------------------------------------------


def test_session_crud(store: SQLiteStore, db_path: Path) -> None:
    s = store.create_session(project="proj", directory="/w", title="hello", model="m/x")
    assert s.id.startswith("ses_")
    assert s.agent == "build" and s.parent_id is None
    assert s.created == s.updated
    assert (s.cost, s.tokens_in, s.tokens_out) == (0.0, 0, 0)
    assert store.get_session(s.id) == s
    assert store.get_session("ses_missing") is None

    store.update_session(s.id, title="renamed", agent="plan", cost=0.25, tokens_in=10, tokens_out=3)
    got = store.get_session(s.id)
    assert got is not None
    assert (got.title, got.agent, got.cost, got.tokens_in, got.tokens_out) == (
        "renamed",
        "plan",
        0.25,
        10,
        3,
    )
    assert got.updated >= s.updated and got.created == s.created

    custom = store.create_session(project="proj", directory="/w", id="ses_custom")
    assert custom.id == "ses_custom"

    store.close()
    reopened = SQLiteStore(db_path)
    assert reopened.get_session(s.id) == got
    reopened.delete_session(s.id)
    assert reopened.get_session(s.id) is None
    reopened.close()


def test_update_session_errors(store: SQLiteStore) -> None:
    s = store.create_session(project="p", directory="/d")
    with pytest.raises(ValueError, match="bogus"):
        store.update_session(s.id, bogus=1)
    with pytest.raises(ValueError):
        store.update_session(s.id, id="other")
    with pytest.raises(StoreError, match="ses_nope"):
        store.update_session("ses_nope", title="x")
    assert store.get_session(s.id) == s


def test_update_session_bumps_updated(store: SQLiteStore) -> None:
    s = store.create_session(project="p", directory="/d")
    time.sleep(0.002)
    store.update_session(s.id, title="x")
    got = store.get_session(s.id)
    assert got is not None and got.updated > s.updated


def test_list_sessions_order_and_filters(store: SQLiteStore) -> None:
    a = store.create_session(project="p1", directory="/a", title="a")
    b = store.create_session(project="p1", directory="/a", title="b")
    c = store.create_session(project="p2", directory="/c", title="c")
    child = store.create_session(project="p1", directory="/a", title="child", parent_id=a.id)

    ids = lambda records: [r.id for r in records]  # noqa: E731
    assert ids(store.list_sessions()) == [child.id, c.id, b.id, a.id]
    assert ids(store.list_sessions("p1")) == [child.id, b.id, a.id]
    assert ids(store.list_sessions("p1", parent=False)) == [b.id, a.id]
    assert ids(store.list_sessions("p1", parent=True)) == [child.id]
    assert ids(store.list_sessions("p1", limit=2)) == [child.id, b.id]
    assert store.list_sessions("nope") == []

    store.update_session(a.id, updated=time.time() + 10)  # a becomes the newest
    assert ids(store.list_sessions("p1", parent=False)) == [a.id, b.id]
    assert ids(store.list_sessions("p1", parent=False, limit=1)) == [a.id]


def test_create_session_with_unknown_parent_fails(store: SQLiteStore) -> None:
    with pytest.raises(StoreError):
        store.create_session(project="p", directory="/d", parent_id="ses_missing")
    assert store.list_sessions() == []


def test_delete_session_cascades(store: SQLiteStore) -> None:
    s = store.create_session(project="p", directory="/d")
    keep = store.create_session(project="p", directory="/d")
    child = store.create_session(project="p", directory="/d", parent_id=s.id)
    store.save_tool_part(ToolPartRecord(id="call_1", session_id=s.id, tool="read", state="running"))
    store.save_tool_part(ToolPartRecord(id="call_2", session_id=keep.id, tool="read", state="done"))
    store.save_tool_part(
        ToolPartRecord(id="call_3", session_id=child.id, tool="ls", state="running")
    )
    project_wide = store.add_approval(project="p", permission="bash", pattern="ls *")
    store.add_approval(project="p", permission="edit", pattern="*", session_id=s.id)
    kept = store.add_approval(project="p", permission="edit", pattern="*", session_id=keep.id)

    store.delete_session(s.id)

    assert store.get_session(s.id) is None
    assert store.get_session(child.id) is None
    assert store.tool_parts(s.id) == []
    assert store.get_tool_part("call_1") is None and store.get_tool_part("call_3") is None
    assert store.get_tool_part("call_2") is not None
    assert store.approvals(project="p", session_id=s.id) == [project_wide]
    assert store.approvals(project="p", session_id=keep.id) == [project_wide, kept]
    store.delete_session("ses_missing")  # no error


# -- tool parts --------------------------------------------------------------------------------


def test_tool_part_roundtrip_and_upsert(store: SQLiteStore) -> None:
    s = store.create_session(project="p", directory="/d")
    part = ToolPartRecord(
        id="call_a",
        session_id=s.id,
        tool="bash",
        state="pending",
        input={"command": "ls", "nested": [1, 2.5, None, "é"]},
        message_id="msg_1",
    )
    store.save_tool_part(part)
    assert store.get_tool_part("call_a") == part
    store.save_tool_part(ToolPartRecord(id="call_b", session_id=s.id, tool="read", state="pending"))

    done = ToolPartRecord(
        id="call_a",
        session_id=s.id,
        tool="bash",
        state="completed",
        input={"command": "ls"},
        message_id="msg_1",
        output="a\nb\n",
        title="ls",
        metadata={"exit": 0, "truncated": False},
        attachments=[{"mime": "image/png", "url": "data:..."}],
        time_start=1.5,
        time_end=2.5,
    )
    store.save_tool_part(done)
    assert store.get_tool_part("call_a") == done
    # the upsert keeps the first position
    assert [p.id for p in store.tool_parts(s.id)] == ["call_a", "call_b"]
    assert store.get_tool_part("call_missing") is None
    assert store.tool_parts("ses_other") == []


def test_tool_part_defaults_roundtrip(store: SQLiteStore) -> None:
    s = store.create_session(project="p", directory="/d")
    part = ToolPartRecord(id="c", session_id=s.id, tool="t", state="error", error="boom")
    store.save_tool_part(part)
    got = store.get_tool_part("c")
    assert got == part
    assert got is not None and got.input is None and got.metadata == {} and got.attachments == []


def test_tool_part_for_unknown_session_fails(store: SQLiteStore, db_path: Path) -> None:
    with pytest.raises(StoreError, match=db_path.name):
        store.save_tool_part(ToolPartRecord(id="c", session_id="ses_x", tool="t", state="pending"))
    assert store.get_tool_part("c") is None


def test_tool_parts_insertion_order(store: SQLiteStore) -> None:
    s = store.create_session(project="p", directory="/d")
    names = [f"call_{n}" for n in ("z", "a", "m", "b")]
    for name in names:
        store.save_tool_part(ToolPartRecord(id=name, session_id=s.id, tool="t", state="pending"))
    assert [p.id for p in store.tool_parts(s.id)] == names


def test_mark_interrupted(store: SQLiteStore) -> None:
    s = store.create_session(project="p", directory="/d")
    other = store.create_session(project="p", directory="/d")
    states = {"c1": "pending", "c2": "running", "c3": "completed", "c4": "error"}
    for cid, state in states.items():
        store.save_tool_part(
            ToolPartRecord(id=cid, session_id=s.id, tool="t", state=state, time_start=1.0)
        )
    store.save_tool_part(ToolPartRecord(id="o1", session_id=other.id, tool="t", state="running"))

    before = time.time()
    assert store.mark_interrupted(s.id) == 2
    for cid in ("c1", "c2"):
        part = store.get_tool_part(cid)
        assert part is not None
        assert part.state == "error" and part.error == "Tool execution aborted"
        assert part.time_end is not None and part.time_end >= before
        assert part.time_start == 1.0
    c3 = store.get_tool_part("c3")
    assert c3 is not None and c3.state == "completed" and c3.error is None
    c4 = store.get_tool_part("c4")
    assert c4 is not None and c4.error is None and c4.time_end is None
    o1 = store.get_tool_part("o1")
    assert o1 is not None and o1.state == "running"

    assert store.mark_interrupted(s.id) == 0
    assert store.mark_interrupted(other.id, "process died") == 1
    o1 = store.get_tool_part("o1")
    assert o1 is not None and o1.error == "process died"


# -- approvals ---------------------------------------------------------------------------------


def test_approvals_scope_order_and_dedup(store: SQLiteStore) -> None:
    s1 = store.create_session(project="p", directory="/d")
    s2 = store.create_session(project="p", directory="/d")
    sess_a = store.add_approval(project="p", permission="edit", pattern="*", session_id=s1.id)
    proj_a = store.add_approval(project="p", permission="bash", pattern="git *")
    sess_b = store.add_approval(project="p", permission="bash", pattern="ls *", session_id=s1.id)
    proj_b = store.add_approval(project="p", permission="read", pattern="*.env")
    other_sess = store.add_approval(project="p", permission="edit", pattern="*", session_id=s2.id)
    other_proj = store.add_approval(project="q", permission="bash", pattern="git *")

    assert isinstance(proj_a, ApprovalRecord)
    assert proj_a.id.startswith("apr_") and proj_a.session_id is None
    assert sess_a.session_id == s1.id

    # duplicates return the existing row
    assert store.add_approval(project="p", permission="bash", pattern="git *") == proj_a
    assert (
        store.add_approval(project="p", permission="edit", pattern="*", session_id=s1.id) == sess_a
    )

    assert store.approvals(project="p") == [proj_a, proj_b]
    assert store.approvals(project="p", session_id=s1.id) == [proj_a, proj_b, sess_a, sess_b]
    assert store.approvals(project="p", session_id=s2.id) == [proj_a, proj_b, other_sess]
    assert store.approvals(project="q") == [other_proj]
    assert store.approvals(project="none") == []

    assert store.remove_approval(proj_b.id) is True
    assert store.remove_approval(proj_b.id) is False
    assert store.approvals(project="p") == [proj_a]

    assert store.clear_approvals(project="p", session_id=s1.id) == 2
    assert store.approvals(project="p", session_id=s1.id) == [proj_a]
    assert store.approvals(project="p", session_id=s2.id) == [proj_a, other_sess]
    assert store.clear_approvals(project="p") == 1
    assert store.approvals(project="p", session_id=s2.id) == [other_sess]
    assert store.approvals(project="q") == [other_proj]


def test_session_approval_for_unknown_session_fails(store: SQLiteStore) -> None:
    with pytest.raises(StoreError):
        store.add_approval(project="p", permission="edit", pattern="*", session_id="ses_x")


# -- migrations --------------------------------------------------------------------------------


def test_split_statements() -> None:
    script = """
        CREATE TABLE a (x TEXT DEFAULT ';');
        CREATE TRIGGER t AFTER INSERT ON a BEGIN
            UPDATE a SET x = 'y;z';
        END;
        -- trailing comment
        INSERT INTO a VALUES ('1')
    """
    statements = split_statements(script)
    assert len(statements) == 3
    assert statements[1].startswith("CREATE TRIGGER") and statements[1].endswith("END;")
    assert statements[2] == "-- trailing comment\n        INSERT INTO a VALUES ('1')"


def test_reopen_at_current_version_applies_nothing(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    st = SQLiteStore(db_path)
    s = st.create_session(project="p", directory="/d")
    st.close()
    # were any migration re-run, this would fail
    monkeypatch.setattr(store_module, "MIGRATIONS", ["THIS IS NOT SQL"] * len(MIGRATIONS))
    st = SQLiteStore(db_path)
    assert st.version == len(MIGRATIONS)
    assert st.get_session(s.id) == s
    st.close()


def test_upgrade_applies_new_migrations(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a database of the foundation's schema (version 1), written the way that code wrote it
    monkeypatch.setattr(store_module, "MIGRATIONS", MIGRATIONS[:1])
    st = SQLiteStore(db_path)
    assert st.version == 1
    st._conn.execute(
        "INSERT INTO sessions (id, project, directory, title, agent, created, updated) "
        "VALUES ('ses_old', 'p', '/d', 'old', 'build', 1.0, 2.0)"
    )
    st.close()

    added = [
        """
        CREATE TABLE notes (
            id TEXT PRIMARY KEY,
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            content TEXT NOT NULL
        );
        INSERT INTO notes SELECT id || '_t', id, 'migrated' FROM sessions;
        """,
        "ALTER TABLE notes ADD COLUMN done INTEGER NOT NULL DEFAULT 0;",
    ]
    monkeypatch.setattr(store_module, "MIGRATIONS", [*MIGRATIONS, *added])
    st = SQLiteStore(db_path)
    assert st.version == len(MIGRATIONS) + 2
    rows = st._conn.execute("SELECT id, session_id, content, done FROM notes").fetchall()
    assert rows == [("ses_old_t", "ses_old", "migrated", 0)]
    old = st.get_session("ses_old")
    assert old is not None and old.title == "old" and old.tokens_cache_read == 0
    st.delete_session("ses_old")  # the new table cascades too
    assert st._conn.execute("SELECT count(*) FROM notes").fetchone()[0] == 0
    st.close()


def test_failed_migration_rolls_back(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    SQLiteStore(db_path).close()
    broken = "CREATE TABLE extra (x INTEGER); INSERT INTO nowhere VALUES (1);"
    monkeypatch.setattr(store_module, "MIGRATIONS", [*MIGRATIONS, broken])
    with pytest.raises(StoreError, match=db_path.name):
        SQLiteStore(db_path)
    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "extra" not in tables
    conn.close()


def test_newer_database_raises(db_path: Path) -> None:
    SQLiteStore(db_path).close()
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 5}")
    conn.close()
    with pytest.raises(StoreError, match=re.escape(str(db_path))) as info:
        SQLiteStore(db_path)
    assert "newer" in str(info.value)


def test_nested_writes_share_one_transaction(store: SQLiteStore) -> None:
    with pytest.raises(RuntimeError), store._write():
        store.create_session(project="p", directory="/d", id="ses_1")
        with store._write():
            store.create_session(project="p", directory="/d", id="ses_2")
        raise RuntimeError
    assert store.list_sessions() == []
    with store._write():
        store.create_session(project="p", directory="/d", id="ses_1")
        store.create_session(project="p", directory="/d", id="ses_2")
    assert len(store.list_sessions()) == 2


# -- concurrency -------------------------------------------------------------------------------


def test_threads_share_one_store(store: SQLiteStore) -> None:
    sessions = [store.create_session(project="p", directory="/d") for _ in range(8)]
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            sid = sessions[n].id
            for i in range(200):
                store.save_tool_part(
                    ToolPartRecord(id=f"t{n}_{i}", session_id=sid, tool="t", state="running")
                )
                if i % 50 == 0:
                    store.tool_parts(sid)
                    store.update_session(sid, tokens_in=i)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for n, s in enumerate(sessions):
        assert [p.id for p in store.tool_parts(s.id)] == [f"t{n}_{i}" for i in range(200)]


WRITER = """
import sys
from pathlib import Path
from hookcode.store import SQLiteStore, ToolPartRecord

path, name, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
store = SQLiteStore(path)
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


def test_processes_write_concurrently(db_path: Path) -> None:
    # the database does not exist yet: both processes also race to create and migrate it
    db_path.parent.mkdir(parents=True)
    count = 300
    procs = [run_python(WRITER, str(db_path), name, str(count)) for name in ("a", "b", "c")]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert out.strip() == "done"

    assert integrity(db_path) == "ok"
    st = SQLiteStore(db_path)
    for name in ("a", "b", "c"):
        parts = st.tool_parts("ses_" + name)
        assert [p.id for p in parts] == [f"{name}_{i}" for i in range(count)]
        assert [p.input for p in parts] == [{"i": i} for i in range(count)]
    # each pattern was approved by all three processes, stored once
    assert len(st.approvals(project="p")) == len(range(0, count, 25))
    st.close()


KILLED_WRITER = """
import hashlib, sys
from pathlib import Path
from hookcode.store import SQLiteStore, ToolPartRecord

store = SQLiteStore(Path(sys.argv[1]))
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
def test_kill_9_leaves_a_consistent_database(db_path: Path) -> None:
    SQLiteStore(db_path).close()
    proc = run_python(KILLED_WRITER, str(db_path))
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.strip() == "ready", proc.stderr.read() if proc.stderr else ""
    time.sleep(0.3)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    assert integrity(db_path) == "ok"
    st = SQLiteStore(db_path)
    parts = st.tool_parts("ses_k")
    assert len(parts) > 20
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
    assert st.mark_interrupted("ses_k") in (0, 1)
    st.close()


# -- the agent loop's tables (migration 2) ------------------------------------------------------


def _message(store: SQLiteStore, session_id: str, id: str, role: str = "user", **data) -> None:
    store.save_message({"id": id, "session_id": session_id, "role": role, "created": 1.0, **data})


def test_messages_and_parts_round_trip_in_order(store: SQLiteStore) -> None:
    s = store.create_session(project="p", directory="/d")
    _message(store, s.id, "msg_1", text_ignored=None)
    store.save_part(
        {"id": "p1", "session_id": s.id, "message_id": "msg_1", "type": "text", "text": "hi"}
    )
    _message(store, s.id, "msg_2", "assistant", agent="build", tokens={"input": 3})
    store.save_part(
        {
            "id": "p2",
            "session_id": s.id,
            "message_id": "msg_2",
            "type": "reasoning",
            "text": "hmm",
            "signature": "sig",
        }
    )
    store.save_tool_part(
        ToolPartRecord(
            id="call_1", session_id=s.id, tool="read", state="pending", message_id="msg_2"
        )
    )
    store.save_part(
        {"id": "p3", "session_id": s.id, "message_id": "msg_2", "type": "tool", "call_id": "call_1"}
    )
    store.save_part(
        {"id": "p4", "session_id": s.id, "message_id": "msg_2", "type": "text", "text": "partial"}
    )
    # updates keep each part's place
    store.save_part(
        {
            "id": "p4",
            "session_id": s.id,
            "message_id": "msg_2",
            "type": "text",
            "text": "partial, then whole",
        }
    )
    store.set_tool_raw("call_1", '{"filePath": "a"}')
    store.save_tool_part(
        ToolPartRecord(
            id="call_1",
            session_id=s.id,
            tool="read",
            state="completed",
            input={"filePath": "a"},
            output="text",
            title="a",
            message_id="msg_2",
            time_start=1.0,
            time_end=2.0,
        )
    )
    store.set_compacted(["call_1"], when=5.0)
    messages = store.messages(s.id)
    assert [m["id"] for m in messages] == ["msg_1", "msg_2"]
    assert messages[1]["agent"] == "build" and messages[1]["tokens"] == {"input": 3}
    parts = messages[1]["parts"]
    assert [p["id"] for p in parts] == ["p2", "p3", "p4"]
    assert parts[0] == {"id": "p2", "type": "reasoning", "text": "hmm", "signature": "sig"}
    tool = parts[1]
    assert tool["call_id"] == "call_1" and tool["tool"] == "read"
    assert tool["state"]["status"] == "completed" and tool["state"]["output"] == "text"
    assert tool["state"]["raw"] == '{"filePath": "a"}'
    assert tool["state"]["time"] == {"start": 1.0, "end": 2.0, "compacted": 5.0}
    assert parts[2]["text"] == "partial, then whole"
    store.delete_part("p4")
    assert len(store.messages(s.id)[1]["parts"]) == 2


def test_recover_session_marks_what_a_dead_process_left(store: SQLiteStore) -> None:
    s = store.create_session(project="p", directory="/d")
    _message(store, s.id, "msg_a", "assistant", completed=None)
    _message(store, s.id, "msg_b", "assistant", completed=3.0, error=None)
    for state, id in (("pending", "c1"), ("running", "c2"), ("completed", "c3")):
        store.save_tool_part(
            ToolPartRecord(id=id, session_id=s.id, tool="t", state=state, metadata={"k": 1})
        )
    assert store.recover_session(s.id) == 2
    parts = {p.id: p for p in store.tool_parts(s.id)}
    assert parts["c1"].error == parts["c2"].error == "Tool execution aborted"
    assert parts["c2"].metadata == {"k": 1, "interrupted": True}
    assert parts["c3"].state == "completed" and "interrupted" not in parts["c3"].metadata
    by_id = {m["id"]: m for m in store.messages(s.id)}
    assert by_id["msg_a"]["error"] == "interrupted" and by_id["msg_a"]["completed"]
    assert by_id["msg_b"]["error"] is None and by_id["msg_b"]["completed"] == 3.0
    assert store.recover_session(s.id) == 0


def test_session_usage_rolls_up(store: SQLiteStore) -> None:
    s = store.create_session(project="p", directory="/d")
    store.add_session_usage(s.id, cost=0.5, tokens_in=10, tokens_out=2, tokens_cache_read=4)
    store.add_session_usage(s.id, cost=0.25, tokens_in=5, tokens_reasoning=1)
    got = store.get_session(s.id)
    assert got is not None
    assert (
        got.cost,
        got.tokens_in,
        got.tokens_out,
        got.tokens_reasoning,
        got.tokens_cache_read,
    ) == (0.75, 15, 2, 1, 4)
    with pytest.raises(ValueError):
        store.add_session_usage(s.id, bogus=1)


def test_session_locks(store: SQLiteStore) -> None:
    from hookcode.store import SessionBusy

    s = store.create_session(project="p", directory="/d")
    store.lock_session(s.id)
    store.lock_session(s.id)  # the same process again: fine
    assert store.session_lock(s.id) == (os.getpid(), __import__("socket").gethostname())
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with pytest.raises(SessionBusy, match=f"pid {os.getpid()}"):
            store.lock_session(s.id, pid=sleeper.pid)
        store.unlock_session(s.id)
        store.lock_session(s.id, pid=sleeper.pid)
        with pytest.raises(SessionBusy, match=f"pid {sleeper.pid}"):
            store.lock_session(s.id)
        store.unlock_session(s.id)  # not ours: nothing happens
        assert store.session_lock(s.id) == (sleeper.pid, __import__("socket").gethostname())
    finally:
        sleeper.kill()
        sleeper.wait()
    assert store.session_lock(s.id) is None  # dead holders do not count
    store.lock_session(s.id)  # and are taken over
    store.unlock_session(s.id)
    assert store.session_lock(s.id) is None


def test_state_todos_and_cascades(store: SQLiteStore) -> None:
    s = store.create_session(project="p", directory="/d")
    child = store.create_session(project="p", directory="/d", parent_id=s.id)
    store.set_state(s.id, "provider:x", {"positions": {"*": 2}})
    assert store.get_state(s.id, "provider:x") == {"positions": {"*": 2}}
    assert store.get_state(s.id, "missing") is None
    store.set_todos(s.id, [{"content": "a"}, {"id": "t2", "content": "b", "status": "done"}])
    assert store.todos(s.id) == [
        {"id": "1", "content": "a", "status": "pending", "priority": "medium"},
        {"id": "t2", "content": "b", "status": "done", "priority": "medium"},
    ]
    store.set_todos(s.id, [{"content": "only"}])
    assert [t["content"] for t in store.todos(s.id)] == ["only"]
    _message(store, s.id, "msg_1")
    store.save_part({"id": "p1", "session_id": s.id, "message_id": "msg_1", "type": "text"})
    store.lock_session(s.id)
    assert [c.id for c in store.children(s.id)] == [child.id]
    assert store.latest_session("p").id == s.id  # type: ignore[union-attr]
    store.delete_session(s.id)
    for table in ("messages", "parts", "todos", "session_state", "session_locks", "sessions"):
        assert store._conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0, table


MESSAGE_WRITER = """
import sys
from pathlib import Path
from hookcode.store import SQLiteStore

path, name, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
store = SQLiteStore(path)
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


def test_processes_write_messages_concurrently(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    procs = [run_python(MESSAGE_WRITER, str(db_path), n, "150") for n in ("a", "b", "c")]
    for proc in procs:
        _out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    assert integrity(db_path) == "ok"
    st = SQLiteStore(db_path)
    try:
        for name in ("a", "b", "c"):
            messages = st.messages("ses_" + name)
            assert [m["parts"][0]["text"] for m in messages] == ["x" * i for i in range(150)]
            session = st.get_session("ses_" + name)
            assert session is not None and session.tokens_in == 150
    finally:
        st.close()


def test_the_sqlite_store_is_a_store(store: SQLiteStore) -> None:
    from hookcode.store import Store

    typed: Store = store  # pyright checks every method's signature here
    assert isinstance(typed, Store)
    assert typed.location == str(store.path)


# -- hosts and users, leases -------------------------------------------------------------------


def test_sessions_record_host_and_user_and_filter_by_host(store: SQLiteStore) -> None:
    import getpass
    import json
    import socket

    here = store.create_session(project="p", directory="/d")
    assert (here.host, here.user) == (socket.gethostname(), getpass.getuser())
    assert store.get_session(here.id) == here
    assert here.to_dict()["host"] == socket.gethostname()
    assert here.to_dict()["user"] == getpass.getuser()
    store._conn.execute(
        "INSERT INTO sessions (id, project, directory, agent, created, updated, host, user) "
        "VALUES ('ses_far', 'p', '/d', 'build', 1, 1, 'far-away', 'ann')"
    )
    store._conn.execute(
        "INSERT INTO sessions (id, project, directory, agent, created, updated) "
        "VALUES ('ses_old', 'p', '/d', 'build', 0, 0)"
    )
    assert [s.id for s in store.list_sessions("p", host=socket.gethostname())] == [here.id]
    assert [s.id for s in store.list_sessions("p", host="far-away")] == ["ses_far"]
    assert len(store.list_sessions("p")) == 3
    rows = [json.loads(row) for row in store.sessions_json("p")]

    def untimed(data: dict) -> dict:  # SQLite prints times with 15 digits
        return {k: v for k, v in data.items() if k not in ("created", "updated")}

    assert [untimed(r) for r in rows] == [untimed(s.to_dict()) for s in store.list_sessions("p")]
    assert rows[1]["host"] == "far-away" and rows[1]["user"] == "ann"
    assert "host" not in rows[2] and "user" not in rows[2]  # an older session: neither
    assert [json.loads(r)["id"] for r in store.sessions_json("p", host="far-away")] == ["ses_far"]


def _foreign_lock(store: SQLiteStore, session_id: str, host: str, expires: float | None) -> None:
    """A lease row as another machine leaves it (pid 1 there)."""
    store._conn.execute(
        "INSERT OR REPLACE INTO session_locks (session_id, pid, host, acquired, expires) "
        "VALUES (?, 1, ?, ?, ?)",
        (session_id, host, time.time() - 1, expires),
    )


def test_leases_expire_and_are_taken_over(store: SQLiteStore) -> None:
    import socket

    from hookcode.store import LEASE_TTL, SessionBusy

    s = store.create_session(project="p", directory="/d")
    me = (os.getpid(), socket.gethostname())
    # another machine's live lease: busy, naming the machine
    _foreign_lock(store, s.id, "other-host", time.time() + 60)
    with pytest.raises(SessionBusy, match="pid 1 on other-host") as caught:
        store.lock_session(s.id)
    assert (caught.value.pid, caught.value.host) == (1, "other-host")
    assert store.session_lock(s.id) == (1, "other-host")
    store.unlock_session(s.id, pid=1)  # the same pid, but not this host's: nothing happens
    assert store.session_lock(s.id) == (1, "other-host")
    # ... expired: free, and taken over
    _foreign_lock(store, s.id, "other-host", time.time() - 0.001)
    assert store.session_lock(s.id) is None
    store.lock_session(s.id)
    assert store.session_lock(s.id) == me
    # a lock from before leases (no expiry) lasts LEASE_TTL from when it was taken
    store._conn.execute(
        "UPDATE session_locks SET pid = 1, host = 'other-host', acquired = ?, expires = NULL",
        (time.time() - 1,),
    )
    with pytest.raises(SessionBusy):
        store.lock_session(s.id)
    store._conn.execute("UPDATE session_locks SET acquired = ?", (time.time() - LEASE_TTL - 1,))
    store.lock_session(s.id)
    assert store.session_lock(s.id) == me


def test_an_expired_live_lease_is_taken_over_and_its_renewal_fails(store: SQLiteStore) -> None:
    import socket

    from hookcode.store import SessionBusy

    s = store.create_session(project="p", directory="/d")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        store.lock_session(s.id, pid=sleeper.pid, ttl=60)
        with pytest.raises(SessionBusy, match=f"pid {sleeper.pid}"):
            store.lock_session(s.id)
        assert store.renew_session_lock(s.id, pid=sleeper.pid, ttl=0) is True  # expires now
        assert store.session_lock(s.id) is None  # alive, but its lease ran out
        store.lock_session(s.id)  # taken over
        assert store.session_lock(s.id) == (os.getpid(), socket.gethostname())
        assert store.renew_session_lock(s.id, pid=sleeper.pid) is False
        with pytest.raises(SessionBusy, match=f"pid {os.getpid()}"):
            store.lock_session(s.id, pid=sleeper.pid)
        assert store.renew_session_lock(s.id) is True
        store.lock_session(s.id)  # the holder again: renewed
        store.unlock_session(s.id)
        assert store.session_lock(s.id) is None
        assert store.renew_session_lock(s.id) is False  # released: nothing to renew
    finally:
        sleeper.kill()
        sleeper.wait()


LOCK_RACER = """
import sys
from pathlib import Path
from hookcode.store import SQLiteStore, SessionBusy

store = SQLiteStore(Path(sys.argv[1]))
print("ready", flush=True)
sys.stdin.readline()  # go
try:
    store.lock_session(sys.argv[2])
except SessionBusy as exc:
    print("busy", exc.pid, flush=True)
else:
    print("won", flush=True)
sys.stdin.readline()  # hold the lease until the other has tried
store.close()
"""


def test_two_processes_racing_for_one_lease_one_wins(db_path: Path) -> None:
    with SQLiteStore(db_path) as st:
        session = st.create_session(project="p", directory="/d")
    for _round in range(5):
        racers = [
            run_python(LOCK_RACER, str(db_path), session.id, stdin=subprocess.PIPE)
            for _ in range(2)
        ]
        try:
            for proc in racers:
                assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
            for proc in racers:
                assert proc.stdin is not None
                proc.stdin.write("go\n")
                proc.stdin.flush()
            answers = []
            for proc in racers:
                assert proc.stdout is not None
                answers.append(proc.stdout.readline().split())
            winners = [
                proc for proc, answer in zip(racers, answers, strict=True) if answer == ["won"]
            ]
            assert len(winners) == 1, answers
            loser = next(a for a in answers if a[0] == "busy")
            assert int(loser[1]) == winners[0].pid
        finally:
            for proc in racers:
                _out, err = proc.communicate("done\n", timeout=60)
                assert proc.returncode == 0, err


# -- moving data between stores ----------------------------------------------------------------


def _fill(store: SQLiteStore) -> tuple[str, str]:
    """A parent session with a child, messages, parts, tool parts, todos, state, approvals."""
    parent = store.create_session(project="p", directory="/d", title="parent")
    child = store.create_session(project="p", directory="/d", parent_id=parent.id)
    for session in (parent.id, child.id):
        for i in range(3):
            mid = f"{session}_m{i}"
            _message(store, session, mid, "assistant" if i % 2 else "user", n=i, nested={"a": [i]})
            store.save_part(
                {
                    "id": f"{mid}_p",
                    "session_id": session,
                    "message_id": mid,
                    "type": "text",
                    "text": f"part {i} \u00e9",
                }
            )
            store.save_tool_part(
                ToolPartRecord(
                    id=f"{mid}_call",
                    session_id=session,
                    tool="read",
                    state="completed",
                    input={"filePath": f"f{i}"},
                    message_id=mid,
                    output="out",
                    title="t",
                    metadata={"k": i},
                    attachments=[{"a": 1}],
                    time_start=1.0,
                    time_end=2.0,
                )
            )
            store.save_part(
                {
                    "id": f"{mid}_tool",
                    "session_id": session,
                    "message_id": mid,
                    "type": "tool",
                    "call_id": f"{mid}_call",
                }
            )
        store.set_tool_raw(f"{session}_m0_call", '{"filePath": "f0"}')
        store.set_compacted([f"{session}_m1_call"], when=7.0)
        store.set_todos(session, [{"content": "a"}, {"id": "t2", "content": "b", "status": "done"}])
        store.set_state(session, "provider:x", {"positions": {"*": 2}})
        store.set_state(session, "other", [1, "two"])
    store.add_session_usage(parent.id, cost=0.25, tokens_in=5, tokens_out=3)
    store.add_approval(project="p", permission="bash", pattern="git *", directory="/d")
    store.add_approval(project="p", permission="edit", pattern="*", session_id=parent.id)
    store.add_approval(project="q", permission="read", pattern="*.env", directory="/e")
    return parent.id, child.id


def _copy(source: SQLiteStore, target: SQLiteStore) -> None:
    for record in source.approval_records():
        if record.session_id is None:
            target.import_approval(record)
    for id in source.session_ids():
        data = source.export_session(id)
        assert data is not None
        target.import_session(data)
    for record in source.approval_records():
        if record.session_id is not None:
            target.import_approval(record)


def test_export_import_into_another_file_gives_equal_data(tmp_path: Path) -> None:
    source = SQLiteStore(tmp_path / "a.db")
    target = SQLiteStore(f"{tmp_path}/b.db")
    try:
        parent, child = _fill(source)
        assert source.session_ids() == [parent, child]
        exported = source.export_session(parent)
        assert exported is not None
        assert [m["id"] for m in exported.messages] == [f"{parent}_m{i}" for i in range(3)]
        assert exported.messages[1]["data"]["nested"] == {"a": [1]}
        assert exported.tool_parts[0]["raw"] == '{"filePath": "f0"}'
        assert exported.tool_parts[1]["compacted"] == 7.0
        assert exported.state == {"other": [1, "two"], "provider:x": {"positions": {"*": 2}}}
        assert exported.counts() == {
            "messages": 3,
            "parts": 6,
            "tool_parts": 3,
            "todos": 2,
            "session_state": 2,
        }
        assert source.export_session("ses_missing") is None
        for _twice in range(2):  # idempotent
            _copy(source, target)
            for id in (parent, child):
                assert target.get_session(id) == source.get_session(id)
                assert target.messages(id) == source.messages(id)
                assert target.tool_parts(id) == source.tool_parts(id)
                assert target.todos(id) == source.todos(id)
                assert target.get_state(id, "provider:x") == source.get_state(id, "provider:x")
                assert target.export_session(id) == source.export_session(id)
            assert target.counts() == source.counts()
            assert target.approval_records() == source.approval_records()
        assert source.counts() == {
            "sessions": 2,
            "messages": 6,
            "parts": 12,
            "tool_parts": 6,
            "approvals": 3,
            "todos": 4,
            "session_state": 4,
        }
        # a changed source session replaces the target's copy whole
        source.set_todos(parent, [{"content": "only"}])
        source.delete_part(f"{parent}_m2_p")
        data = source.export_session(parent)
        assert data is not None
        target.import_session(data)
        assert target.export_session(parent) == source.export_session(parent)
        assert target.counts() == source.counts()
        assert [c.id for c in target.children(parent)] == [child]  # children stay
    finally:
        source.close()
        target.close()


def test_session_ids_put_parents_first() -> None:
    from hookcode.store.store import parents_first

    rows = [("c", "b"), ("a", None), ("b", "a"), ("d", None), ("e", "c")]
    assert parents_first(rows) == ["a", "b", "c", "d", "e"]
    assert parents_first([("x", "gone")]) == ["x"]  # a parent not listed: not waited for


def test_approvals_remember_their_directory(store: SQLiteStore) -> None:
    a = store.add_approval(project="git:1", permission="bash", pattern="ls", directory="/one")
    b = store.add_approval(project="git:1", permission="bash", pattern="ls", directory="/two")
    assert a.id != b.id and (a.directory, b.directory) == ("/one", "/two")
    again = store.add_approval(project="git:1", permission="bash", pattern="ls", directory="/one")
    assert again == a
    assert store.approvals(project="git:1") == [a, b]
    assert store.approval_records() == [a, b]
    store.import_approval(a)  # as it is: nothing changes
    assert store.approval_records() == [a, b]
    # an approval with the same meaning under another id is replaced by the imported one
    from dataclasses import replace

    moved = replace(a, id="apr_from_elsewhere", created=1.0)
    store.import_approval(moved)
    assert store.approval_records() == [moved, b]  # creation order


def test_rekey_project_moves_sessions_and_approvals(store: SQLiteStore) -> None:
    s = store.create_session(project="/work/repo", directory="/work/repo")
    kept = store.add_approval(
        project="/work/repo", permission="bash", pattern="ls", directory="/work/repo"
    )
    store.add_approval(project="git:abc", permission="bash", pattern="ls", directory="/work/repo")
    store.add_approval(project="/work/repo", permission="edit", pattern="*", session_id=s.id)
    # the session and the session approval move; the duplicate project approval is kept once
    assert store.rekey_project("/work/repo", "git:abc") == 2
    assert store.get_session(s.id).project == "git:abc"  # type: ignore[union-attr]
    assert store.approvals(project="/work/repo") == []
    moved = store.approvals(project="git:abc", session_id=s.id)
    assert [(r.permission, r.session_id) for r in moved] == [("bash", None), ("edit", s.id)]
    assert kept.id not in {r.id for r in moved}  # the duplicate was kept once
    assert store.rekey_project("/work/repo", "git:abc") == 0


def test_migration_4_keeps_older_approvals_and_locks(db_path: Path) -> None:
    import getpass
    import socket

    conn = sqlite3.connect(db_path.parent.mkdir(parents=True) or db_path)
    for number in range(3):
        conn.executescript(MIGRATIONS[number])
    conn.execute("PRAGMA user_version = 3")
    conn.execute(
        "INSERT INTO sessions (id, project, directory, agent, created, updated) "
        "VALUES ('ses_1', '/w', '/w', 'build', 1, 1)"
    )
    conn.execute(
        "INSERT INTO approvals (id, project, session_id, permission, pattern, created) "
        "VALUES ('apr_1', '/w', NULL, 'bash', 'ls', 1)"
    )
    conn.execute(
        "INSERT INTO session_locks (session_id, pid, host, acquired) "
        "VALUES ('ses_1', 1, 'other-host', ?)",
        (time.time(),),
    )
    conn.commit()
    conn.close()
    with SQLiteStore(db_path) as st:
        assert st.version == len(MIGRATIONS) == 4
        [record] = st.approval_records()
        assert (record.id, record.directory) == ("apr_1", "/w")
        session = st.get_session("ses_1")
        assert session is not None  # made on this machine: a SQLite store is one machine's
        assert (session.host, session.user) == (socket.gethostname(), getpass.getuser())
        assert st.session_lock("ses_1") == (1, "other-host")  # held: within LEASE_TTL
