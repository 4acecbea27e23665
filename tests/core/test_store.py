"""What is the SQLite store's own: its file, pragmas, WAL and checkpoints, the ``:memory:``
store, its migrations. What every store does (sessions, parts, approvals, locks, processes,
kill -9) is tests/store_contract, run against SQLite and PostgreSQL alike."""

from __future__ import annotations

import os
import re
import socket
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import hookcode.store.store as store_module
import pytest
from hookcode.store import (
    MIGRATIONS,
    SQLiteStore,
    StoreError,
    ToolPartRecord,
)
from hookcode.store.database import split_statements


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


def test_a_context_manager_closes_it(db_path: Path) -> None:
    with SQLiteStore(db_path) as st:
        st.create_session(project="p", directory="/d")
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


def test_the_sqlite_store_is_a_store(store: SQLiteStore) -> None:
    from hookcode.store import Store

    typed: Store = store  # pyright checks every method's signature here
    assert isinstance(typed, Store)
    assert typed.location == str(store.path)


# -- leases from before migration 4, project ids ---------------------------------------------


def test_a_lock_from_before_leases_lasts_lease_ttl_from_when_it_was_taken(
    store: SQLiteStore,
) -> None:
    """A lock row migration 4 found has no expiry: it counts as LEASE_TTL from ``acquired``."""
    from hookcode.store import LEASE_TTL, SessionBusy

    s = store.create_session(project="p", directory="/d")
    store._conn.execute(
        "INSERT INTO session_locks (session_id, pid, host, acquired, expires) "
        "VALUES (?, 1, 'other-host', ?, NULL)",
        (s.id, time.time() - 1),
    )
    with pytest.raises(SessionBusy, match="pid 1 on other-host"):
        store.lock_session(s.id)
    store._conn.execute("UPDATE session_locks SET acquired = ?", (time.time() - LEASE_TTL - 1,))
    store.lock_session(s.id)
    assert store.session_lock(s.id) == (os.getpid(), socket.gethostname())


def test_session_ids_put_parents_first() -> None:
    from hookcode.store import parents_first

    rows = [("c", "b"), ("a", None), ("b", "a"), ("d", None), ("e", "c")]
    assert parents_first(rows) == ["a", "b", "c", "d", "e"]
    assert parents_first([("x", "gone")]) == ["x"]  # a parent not listed: not waited for


def _plans(store: SQLiteStore, *calls: Callable[[], object]) -> list[list[str]]:
    """The query plan of each statement the store runs for ``calls`` (as SQLite reports
    ``EXPLAIN QUERY PLAN``: one detail line per step)."""
    statements: list[str] = []
    store._conn.set_trace_callback(statements.append)
    try:
        for call in calls:
            call()
    finally:
        store._conn.set_trace_callback(None)
    return [
        [row[3] for row in store._conn.execute(f"EXPLAIN QUERY PLAN {sql}")] for sql in statements
    ]


def test_sessions_list_reads_this_projects_sessions_on_this_host_by_one_index(
    store: SQLiteStore,
) -> None:
    """``sessions list``: the project and host filter and the order come from
    sessions_project_host_updated, never a scan of every session or a sort."""
    for project in ("p", "p", "q"):
        store.create_session(project=project, directory="/d")
    here = socket.gethostname()
    listing = (
        lambda: store.list_sessions("p", conversations=True, host=here),
        lambda: store.sessions_json("p", conversations=True, host=here),
    )
    for plan in _plans(store, *listing):
        assert plan == [
            "SEARCH sessions USING INDEX sessions_project_host_updated (project=? AND host=?)"
        ]
    # --all-hosts: this project's sessions, by their own index
    for plan in _plans(store, lambda: store.sessions_json("p", conversations=True)):
        assert plan[0] == "SEARCH sessions USING INDEX sessions_project_updated (project=?)"


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
