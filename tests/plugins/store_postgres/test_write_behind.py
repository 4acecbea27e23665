"""Tool parts written behind (hookcode_store_postgres.behind): ``save_tool_part`` returns before
its part is committed, and yet every other call of the store, in any thread or process that
asks after it, finds the part; a part the server never took fails the next call; the queue is
bounded; closing commits it. On real servers (the shared test cluster, or a cluster of the
test's own where it is stopped)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from typing import Any

import psycopg
import pytest
from hookcode.store import StoreError, ToolPartRecord
from hookcode_store_postgres.behind import CAPACITY
from hookcode_store_postgres.postgres_store import PostgresStore

PASSWORD = "Behind-pw-41c9"


def _part(id: str, session_id: str, state: str = "running", output: str | None = None) -> Any:
    return ToolPartRecord(id=id, session_id=session_id, tool="t", state=state, output=output)


def _locked(url: str) -> psycopg.Connection:
    """A connection of the test's own holding ``tool_parts`` locked against every write (its
    transaction open until the caller commits)."""
    conn = psycopg.connect(url)
    conn.execute("LOCK TABLE tool_parts IN EXCLUSIVE MODE")
    return conn


def test_a_save_returns_before_the_commit_and_any_thread_reads_it_after(
    store: PostgresStore, postgres_url: str
) -> None:
    session = store.create_session(project="p", directory="/d")
    lock = _locked(postgres_url)  # the writer cannot commit until the test lets it
    try:
        started = time.monotonic()
        store.save_tool_part(_part("call_1", session.id, "completed", "done"))
        assert time.monotonic() - started < 1  # queued: not waiting for the lock
        seen: list[Any] = []
        reader = threading.Thread(target=lambda: seen.append(store.get_tool_part("call_1")))
        reader.start()
        reader.join(0.5)
        assert reader.is_alive()  # its read waits for the part saved before it
    finally:
        lock.commit()
        lock.close()
    reader.join(10)
    assert not reader.is_alive()
    assert seen == [_part("call_1", session.id, "completed", "done")]
    # a read right after a save, in another thread, with no lock in the way
    store.save_tool_part(_part("call_2", session.id))
    found: list[Any] = []
    other = threading.Thread(target=lambda: found.append(store.tool_parts(session.id)))
    other.start()
    other.join(10)
    assert [p.id for p in found[0]] == ["call_1", "call_2"]


def test_every_other_call_waits_for_the_queue(store: PostgresStore, postgres_url: str) -> None:
    session = store.create_session(project="p", directory="/d")
    store.save_tool_part(_part("call_1", session.id, "completed"))
    assert store.counts()["tool_parts"] == 1
    store.save_tool_part(_part("call_2", session.id, "completed"))
    # a transaction block starts after the queue is committed
    with store.transaction(), psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT count(*) FROM tool_parts").fetchone() == (2,)
    store.save_tool_part(_part("call_3", session.id, "completed"))
    exported = store.export_session(session.id)
    assert exported is not None and [p["id"] for p in exported.tool_parts] == [
        "call_1",
        "call_2",
        "call_3",
    ]


def test_inside_a_transaction_a_save_joins_it(store: PostgresStore, postgres_url: str) -> None:
    session = store.create_session(project="p", directory="/d")
    with pytest.raises(RuntimeError), store.transaction():
        store.save_tool_part(_part("call_1", session.id))
        assert store.get_tool_part("call_1") is not None  # written in the block, at once
        raise RuntimeError("roll back")
    store.flush()
    assert store.get_tool_part("call_1") is None  # rolled back with the block


def test_many_quick_saves_keep_the_order_and_the_last_state(
    store: PostgresStore, postgres_url: str
) -> None:
    session = store.create_session(project="p", directory="/d")
    ids = [f"call_{n:03d}" for n in range(60)]
    for round in range(20):  # each part saved 20 times, the others in between
        for id in ids if round % 2 == 0 else reversed(ids):
            store.save_tool_part(_part(id, session.id, "running", f"{id} round {round}"))
    for n in range(500):  # one part, very quickly
        store.save_tool_part(_part("call_hot", session.id, "running", f"hot {n}"))
    store.save_tool_part(_part("call_hot", session.id, "completed", "hot done"))
    store.flush()
    with psycopg.connect(postgres_url) as conn:  # as another process sees it
        rows = conn.execute(
            "SELECT id, state, output FROM tool_parts WHERE session_id = %s ORDER BY seq",
            [session.id],
        ).fetchall()
    assert [r[0] for r in rows] == [*ids, "call_hot"]  # the order of the first saves
    assert rows[:-1] == [(id, "running", f"{id} round 19") for id in ids]
    assert rows[-1] == ("call_hot", "completed", "hot done")


def test_a_full_queue_holds_the_saver_back(store: PostgresStore, postgres_url: str) -> None:
    session = store.create_session(project="p", directory="/d")
    done = 0

    def save() -> None:
        nonlocal done
        for n in range(CAPACITY + 1):
            store.save_tool_part(_part(f"call_{n}", session.id))
            done += 1

    lock = _locked(postgres_url)
    try:
        saver = threading.Thread(target=save)
        saver.start()
        deadline = time.monotonic() + 20
        while done < CAPACITY and time.monotonic() < deadline:
            time.sleep(0.01)
        saver.join(0.5)
        assert saver.is_alive() and done == CAPACITY  # the last one waits for room
    finally:
        lock.commit()
        lock.close()
    saver.join(20)
    assert not saver.is_alive() and done == CAPACITY + 1
    assert len(store.tool_parts(session.id)) == CAPACITY + 1


def test_a_part_the_server_never_took_fails_every_later_call(private_cluster: Any) -> None:
    """Sticky: every later call, in every thread, raises the failure (raised once, a lease's
    renewal thread, which reports a store error and goes on, could take it and the run would
    go on without the result); close raises it too and still closes."""
    url = private_cluster.url.replace("postgres@", f"postgres:{PASSWORD}@")
    store = PostgresStore(url, retry_seconds=1)
    try:
        session = store.create_session(project="p", directory="/d")
        store.save_tool_part(_part("call_ok", session.id, "completed"))
        store.flush()
        private_cluster.halt()
        started = time.monotonic()
        store.save_tool_part(_part("call_lost", session.id, "completed", "result"))
        assert time.monotonic() - started < 1  # queued, the server is not asked yet
        with pytest.raises(StoreError) as caught:
            store.flush()
        message = str(caught.value)
        assert message.startswith(f"PostgreSQL store {store.location} unreachable for 1 s: ")
        assert message.endswith("tool part(s) not saved: call_lost")
        assert PASSWORD not in message and "\n" not in message
        private_cluster.resume()

        # from then on every call raises it, the server back or not, in any thread
        seen: list[str] = []

        def other_thread() -> None:
            try:
                store.renew_session_lock(session.id)
            except StoreError as exc:
                seen.append(str(exc))

        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join(30)
        assert seen == [message]
        for call in (
            store.flush,
            lambda: store.get_session(session.id),
            lambda: store.save_tool_part(_part("call_next", session.id, "completed")),
        ):
            with pytest.raises(StoreError) as again:
                call()
            assert str(again.value) == message
        with pytest.raises(StoreError) as at_close:
            store.close()
        assert str(at_close.value) == message
        with pytest.raises(StoreError):  # closed (and failed)
            store.get_session(session.id)
    finally:
        store.close()
    # nothing after the failure was written; another store (the session run again) goes on
    fresh = PostgresStore(url)
    try:
        assert [p.id for p in fresh.tool_parts(session.id)] == ["call_ok"]
    finally:
        fresh.close()


def test_a_refused_part_is_lost_alone(postgres_url: str) -> None:
    """A batch the server refuses (one part's session is gone) is written part by part: the
    others are kept, the error names the refused one."""
    store = PostgresStore(postgres_url)
    session = store.create_session(project="p", directory="/d")
    lock = _locked(postgres_url)
    try:  # the three parts wait behind the lock, to be written as one batch
        store.save_tool_part(_part("call_1", session.id))
        store.save_tool_part(_part("call_orphan", "ses_gone"))
        store.save_tool_part(_part("call_3", session.id))
    finally:
        lock.commit()
        lock.close()
    with pytest.raises(StoreError, match=r"not saved: call_orphan$"):
        store.flush()
    with pytest.raises(StoreError, match=r"not saved: call_orphan$"):
        store.close()  # closed all the same
    fresh = PostgresStore(postgres_url)  # this store stays failed (sticky): read with another
    try:
        assert [p.id for p in fresh.tool_parts(session.id)] == ["call_1", "call_3"]
    finally:
        fresh.close()


def test_close_commits_the_queue_for_the_next_process(postgres_url: str) -> None:
    store = PostgresStore(postgres_url)
    session = store.create_session(project="p", directory="/d")
    for n in range(300):
        store.save_tool_part(_part(f"call_{n:03d}", session.id, "completed", str(n)))
    store.close()
    script = textwrap.dedent(
        f"""
        from hookcode_store_postgres.postgres_store import PostgresStore
        store = PostgresStore({postgres_url!r})
        parts = store.tool_parts({session.id!r})
        print(len(parts), parts[-1].id, parts[-1].output)
        store.close()
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split() == ["300", "call_299", "299"]


def test_tools_call_stores_its_part_before_it_exits(hookcode_env: Any, postgres_url: str) -> None:
    """``hookcode tools call``: one call and the process ends; its part is committed."""
    hookcode_env.env["HOOKCODE_LOAD_PLUGINS"] = "policy_rules,tool_read,store_postgres"
    hookcode_env.env["HOOKCODE_STORE"] = postgres_url
    (hookcode_env.project / "a.txt").write_text("hello\n")
    done = subprocess.run(
        [sys.executable, "-m", "hookcode", "-C", str(hookcode_env.project), "tools", "call",
         "read", '{"filePath": "a.txt"}'],
        capture_output=True, text=True, env=hookcode_env.env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute("SELECT tool, state FROM tool_parts").fetchall()
    assert rows == [("read", "completed")]
