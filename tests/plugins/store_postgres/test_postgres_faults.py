"""Faults: the server restarting under writes, staying down past the retry bound, a password
that must never show, libpq options (TLS) passed through, migrations that fail or find a newer
database. The tests that stop or restart a server use a cluster of their own."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import pytest
from hookcode.store import StoreError, ToolPartRecord
from hookcode_store_postgres import database, schema
from hookcode_store_postgres.postgres_store import PostgresStore

PASSWORD = "s3cr@t/pw"  # percent-encoded in the URL
ENCODED = "s3cr%40t%2Fpw"


def _with_user(url: str, user: str, password: str) -> str:
    """``url`` (``postgresql://postgres@host:port/db``) as ``user:password``."""
    return url.replace("postgres@", f"{user}:{password}@", 1)


def _create_user(url: str) -> None:
    """The role ``bob`` with :data:`PASSWORD` (the test cluster trusts loopback connections,
    so the password only has to be in the URL, where it must never be shown from)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE ROLE bob LOGIN SUPERUSER PASSWORD 's3cr@t/pw'")


# -- the server restarting ---------------------------------------------------------------------


def test_writes_survive_a_server_restart(private_cluster: Any) -> None:
    """A writer thread keeps writing while the server restarts under it (it stops only 50
    writes after the restart is over): every write returns, retried on a fresh connection,
    and every one is stored."""
    store = PostgresStore(private_cluster.url)
    try:
        session = store.create_session(project="p", directory="/d")
        writing, restarted = threading.Event(), threading.Event()
        written: list[int] = []
        errors: list[BaseException] = []

        def write() -> None:
            after = 0
            try:
                while after < 50:
                    i = len(written)
                    store.save_tool_part(
                        ToolPartRecord(id=f"c{i}", session_id=session.id, tool="t", state="running")
                    )
                    store.update_session(session.id, tokens_in=i + 1)  # idempotent
                    written.append(i)
                    writing.set()
                    after += restarted.is_set()
            except BaseException as exc:
                errors.append(exc)
                writing.set()

        writer = threading.Thread(target=write)
        writer.start()
        assert writing.wait(60)
        before = len(written)
        private_cluster.restart()
        restarted.set()
        writer.join(60)
        assert not writer.is_alive()
        assert errors == []
        assert before < len(written)
        assert [p.id for p in store.tool_parts(session.id)] == [f"c{i}" for i in written]
        got = store.get_session(session.id)
        assert got is not None and got.tokens_in == len(written)
    finally:
        store.close()


def test_a_write_waits_out_a_server_down_for_seconds(private_cluster: Any) -> None:
    """Down for 4 s (longer than the pool's own first reconnection backoffs, about 1 s then
    2 s: its next try comes 4 s later): a write made meanwhile returns once the server is back,
    within the bound, and is stored."""
    store = PostgresStore(private_cluster.url)
    try:
        session = store.create_session(project="p", directory="/d")
        private_cluster.halt()
        done: list[float] = []
        errors: list[BaseException] = []

        def write() -> None:
            started = time.monotonic()
            try:
                store.update_session(session.id, title="written while down")
            except BaseException as exc:
                errors.append(exc)
            done.append(time.monotonic() - started)

        writer = threading.Thread(target=write)
        writer.start()
        time.sleep(4)  # the outage this test is about
        assert not done  # still waiting for the server
        private_cluster.resume()
        writer.join(database.RETRY_SECONDS + 10)
        assert errors == []
        assert done and done[0] < database.RETRY_SECONDS
        assert store.get_session(session.id).title == "written while down"  # type: ignore[union-attr]
    finally:
        store.close()


def test_a_transaction_is_retried_only_before_its_first_statement(private_cluster: Any) -> None:
    store = PostgresStore(private_cluster.url)
    try:
        store.create_session(project="p", directory="/d", id="ses_1")  # a pooled connection
        private_cluster.restart()  # ... now dead: the block's first statement gets a new one
        with store.transaction():
            store.create_session(project="p", directory="/d", id="ses_2")
            store.create_session(project="p", directory="/d", id="ses_3")
        assert {s.id for s in store.list_sessions()} == {"ses_1", "ses_2", "ses_3"}

        # lost half-way: the caller owns the block, so it fails and nothing of it is written
        with (
            pytest.raises(StoreError, match="lost inside a transaction") as caught,
            store.transaction(),
        ):
            store.create_session(project="p", directory="/d", id="ses_4")
            private_cluster.restart()
            store.create_session(project="p", directory="/d", id="ses_5")
        assert "\n" not in str(caught.value)
        assert {s.id for s in store.list_sessions()} == {"ses_1", "ses_2", "ses_3"}
    finally:
        store.close()


def test_a_server_down_past_the_bound_is_one_clear_error_without_the_password(
    private_cluster: Any, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    _create_user(private_cluster.url)
    url = _with_user(private_cluster.url, "bob", ENCODED) + "?application_name=hookcode-test"
    caplog.set_level(logging.DEBUG)
    bound = 1.0  # a bound of the caller's (HOOKCODE_STORE_RETRY_SECONDS; default 10 s)
    store = PostgresStore(url, retry_seconds=bound)
    try:
        masked = url.replace(ENCODED, "***")
        assert store.location == masked
        for shown in (store.location, repr(store)):
            assert PASSWORD not in shown and ENCODED not in shown
        session = store.create_session(project="p", directory="/d")
        private_cluster.stop()
        started = time.monotonic()
        with pytest.raises(StoreError) as caught:
            store.update_session(session.id, title="never")
        elapsed = time.monotonic() - started
        message = str(caught.value)
        assert message.startswith(f"PostgreSQL store {masked} unreachable for {bound:g} s: ")
        assert "\n" not in message
        assert bound <= elapsed < bound + 10
        # opening fails the same way
        with pytest.raises(StoreError, match="unreachable") as at_open:
            PostgresStore(url, retry_seconds=bound)
        out, err = capfd.readouterr()
        for text in (message, str(at_open.value), caplog.text, out, err, repr(caught.value)):
            assert PASSWORD not in text and ENCODED not in text, text
    finally:
        store.close()


# -- URLs and libpq options --------------------------------------------------------------------


def test_libpq_options_reach_the_server(postgres_url: str) -> None:
    for sslmode in ("disable", "prefer"):
        name = f"hookcode-{sslmode}"
        url = f"{postgres_url}?sslmode={sslmode}&application_name={name}&connect_timeout=7"
        with PostgresStore(url) as store:
            assert store.location == url

            def seen(conn: Any) -> tuple[Any, ...]:
                return conn.execute(
                    "SELECT a.application_name, s.ssl FROM pg_stat_activity a "
                    "JOIN pg_stat_ssl s ON s.pid = a.pid WHERE a.pid = pg_backend_pid()"
                ).fetchone()

            assert store.run(seen) == (name, False)  # the test server speaks no TLS


def test_sslmode_require_against_a_server_without_tls_fails_clearly(postgres_url: str) -> None:
    started = time.monotonic()
    with pytest.raises(StoreError) as caught:
        PostgresStore(f"{postgres_url}?sslmode=require")
    assert time.monotonic() - started < database.RETRY_SECONDS  # no retry mends it
    message = str(caught.value)
    assert message.startswith(f"PostgreSQL store {postgres_url}?sslmode=require: cannot connect")
    assert "SSL" in message and "\n" not in message


def test_a_bad_url_is_a_store_error_without_the_password(postgres_url: str) -> None:
    url = _with_user(postgres_url, "bob", ENCODED) + "?nonsense_option=1"
    with pytest.raises(StoreError) as caught:
        PostgresStore(url)
    message = str(caught.value)
    assert "nonsense_option" in message
    assert PASSWORD not in message and ENCODED not in message


def test_an_unknown_database_is_not_retried(postgres_url: str) -> None:
    missing = postgres_url.rpartition("/")[0] + "/no_such_database"
    started = time.monotonic()
    with pytest.raises(StoreError, match="no_such_database"):
        PostgresStore(missing)
    assert time.monotonic() - started < database.RETRY_SECONDS


# -- migrations --------------------------------------------------------------------------------


def test_reopen_at_current_version_applies_nothing(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with PostgresStore(postgres_url) as st:
        s = st.create_session(project="p", directory="/d")
    # were any migration re-run, this would fail
    monkeypatch.setattr(schema, "MIGRATIONS", ["THIS IS NOT SQL"] * len(schema.MIGRATIONS))
    with PostgresStore(postgres_url) as st:
        assert st.version == len(schema.MIGRATIONS)
        assert st.get_session(s.id) == s


def test_upgrade_applies_new_migrations(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch, sql: Any
) -> None:
    original = list(schema.MIGRATIONS)
    with PostgresStore(postgres_url) as st:
        st.create_session(project="p", directory="/d", id="ses_old")
    added = [
        """
        CREATE TABLE notes (
            id text PRIMARY KEY,
            session_id text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            content text NOT NULL
        );
        INSERT INTO notes SELECT id || '_t', id, 'migrated' FROM sessions;
        """,
        "ALTER TABLE notes ADD COLUMN done integer NOT NULL DEFAULT 0;",
    ]
    monkeypatch.setattr(schema, "MIGRATIONS", [*original, *added])
    with PostgresStore(postgres_url) as st:
        assert st.version == len(original) + 2
        rows = sql.execute("SELECT id, session_id, content, done FROM notes").fetchall()
        assert rows == [("ses_old_t", "ses_old", "migrated", 0)]
        st.delete_session("ses_old")  # the new table cascades too
        assert sql.execute("SELECT count(*) FROM notes").fetchone()[0] == 0


def test_failed_migration_rolls_back(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch, sql: Any
) -> None:
    PostgresStore(postgres_url).close()
    broken = "CREATE TABLE extra (x integer); INSERT INTO nowhere VALUES (1);"
    monkeypatch.setattr(schema, "MIGRATIONS", [*schema.MIGRATIONS, broken])
    with pytest.raises(StoreError, match="nowhere") as caught:
        PostgresStore(postgres_url)
    assert str(caught.value).startswith(f"PostgreSQL store {postgres_url}: ")
    version = sql.execute("SELECT version FROM hookcode_schema WHERE component = 'store'")
    assert version.fetchone()[0] == len(schema.MIGRATIONS) - 1
    assert sql.execute("SELECT to_regclass('extra')").fetchone()[0] is None


def test_newer_database_raises_naming_both_versions(postgres_url: str, sql: Any) -> None:
    PostgresStore(postgres_url).close()
    newer = len(schema.MIGRATIONS) + 5
    sql.execute("UPDATE hookcode_schema SET version = %s WHERE component = 'store'", [newer])
    with pytest.raises(StoreError) as caught:
        PostgresStore(postgres_url)
    message = str(caught.value)
    assert postgres_url in message and "newer" in message
    assert f"version {newer}" in message and f"({len(schema.MIGRATIONS)})" in message
