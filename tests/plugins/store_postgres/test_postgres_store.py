"""What the PostgreSQL store does beyond the store contract (tests/store_contract, run against
every store): its class and schema version, the SQL it stores, the server's clock for leases, a
failed statement dooming its transaction, and the places where it is stricter than the SQLite
store (each test says why the contract cannot ask it of every store).

The tests take a ``store`` and, where they look at or arrange rows as another machine leaves
them, ``sql`` (a connection of their own)."""

from __future__ import annotations

import json
import os
import socket
import threading
from typing import Any

import pytest
from hookcode.store import LEASE_TTL, SessionBusy, Store, StoreError, ToolPartRecord
from hookcode_store_postgres import schema
from hookcode_store_postgres.postgres_store import PostgresStore

# -- the class ---------------------------------------------------------------------------------


def test_the_postgres_store_is_a_store(store: PostgresStore, postgres_url: str) -> None:
    typed: Store = store  # pyright checks every method's signature here
    assert isinstance(typed, Store)
    assert typed.location == postgres_url  # no password in it to mask
    assert typed.version == len(schema.MIGRATIONS)
    assert postgres_url.rpartition("/")[2] in repr(store)


def test_a_context_manager_closes_it(postgres_url: str) -> None:
    with PostgresStore(postgres_url) as st:
        st.create_session(project="p", directory="/d")
    with pytest.raises(StoreError, match="closed"):
        st.list_sessions()


# -- stricter than the SQLite store ------------------------------------------------------------


def test_a_taken_session_id_is_refused_naming_it(store: Store) -> None:
    """Only PostgreSQL: SQLite's message names the file and the constraint, not the id."""
    store.create_session(project="p", directory="/d", id="ses_custom")
    with pytest.raises(StoreError, match="ses_custom"):
        store.create_session(project="p", directory="/d", id="ses_custom")


def test_sessions_json_is_to_dict_as_python_writes_it(store: Store) -> None:
    """Only PostgreSQL: SQLite's ``json_object`` writes times to 15 significant digits, Python
    to 17 (the contract's test_sessions_json_is_to_dict allows for it)."""
    a = store.create_session(project="p", directory="/d", title='quo"te \u00e9\n\x01')
    b = store.create_session(project="p", directory="/d", parent_id=a.id, origin="tools call")
    store.update_session(a.id, cost=1.0, model="m/x")
    store.update_session(b.id, cost=0.000015)
    expected = [
        json.dumps(s.to_dict(), ensure_ascii=False, separators=(",", ":"))
        for s in store.list_sessions("p")
    ]
    assert store.sessions_json("p") == expected  # key order, floats, escapes: all Python's


def test_nul_is_made_storable(store: Store) -> None:
    """Only PostgreSQL: its text cannot hold a NUL character, so NUL becomes ``?`` as a lone
    surrogate does (the contract checks lone surrogates); SQLite keeps a NUL as written."""
    s = store.create_session(project="p", directory="/d", title="a\x00b")
    assert s.title == "a?b" and store.get_session(s.id) == s
    part = ToolPartRecord(
        id="c", session_id=s.id, tool="t", state="completed", input={"nul": "a\x00b"},
        output="out\x00put",
    )  # fmt: skip
    store.save_tool_part(part)
    got = store.get_tool_part("c")
    assert got is not None
    assert got.input == {"nul": "a\x00b"}  # JSON escapes NUL itself: kept
    assert got.output == "out?put"
    store.set_tool_raw("c", "raw\x00")
    store.save_message({"id": "msg_1", "session_id": s.id, "role": "user", "created": 1.0})
    store.save_part(
        {"id": "p1", "session_id": s.id, "message_id": "msg_1", "type": "text", "text": "\x00"}
    )
    store.set_state(s.id, "k\x00", "v")
    assert store.get_state(s.id, "k?") == "v"
    store.set_todos(s.id, [{"content": "todo\x00"}])
    assert store.todos(s.id)[0]["content"] == "todo?"
    approval = store.add_approval(project="p", permission="bash", pattern="ls\x00")
    assert approval.pattern == "ls?"
    with store.transaction():  # inside a transaction too
        store.save_tool_part(ToolPartRecord(id="c2", session_id=s.id, tool="t", state="x",
                                            output="\x00"))  # fmt: skip
    c2 = store.get_tool_part("c2")
    assert c2 is not None and c2.output == "?"
    (message,) = store.messages(s.id)
    assert message["parts"][0]["text"] == "\x00"  # in JSON: kept


def test_transactions_of_threads_are_their_own(store: Store) -> None:
    """Only PostgreSQL: each thread has a connection of its own, so another thread's calls
    run beside an open block, outside it. SQLite's store has one connection: another thread's
    call waits until the block ends (the contract's test_threads_share_one_store)."""
    started, finish = threading.Event(), threading.Event()
    seen: list[int] = []

    def other() -> None:
        started.wait()
        seen.append(len(store.list_sessions()))  # not inside the main thread's block
        store.create_session(project="p", directory="/d", id="ses_other")
        finish.set()

    thread = threading.Thread(target=other)
    thread.start()
    with pytest.raises(RuntimeError), store.transaction():
        store.create_session(project="p", directory="/d", id="ses_mine")
        started.set()
        assert finish.wait(30)
        raise RuntimeError
    thread.join()
    assert seen == [0]
    assert [s.id for s in store.list_sessions()] == ["ses_other"]


# -- PostgreSQL's own --------------------------------------------------------------------------


def test_json_is_stored_as_written(store: Store, sql: Any) -> None:
    """The column holds the text Python wrote (``json``, not ``jsonb``, which would reorder
    keys and rewrite numbers); the contract checks what comes back."""
    s = store.create_session(project="p", directory="/d")
    value = {"z": 1, "a": [1.0, 2, 1e-07, 12345678901234567890], "m": {"b": None, "a": "é"}}
    store.save_tool_part(
        ToolPartRecord(id="c", session_id=s.id, tool="t", state="running", input=value)
    )
    store.flush()  # written behind: committed once flush returns (read here past the store)
    stored = sql.execute("SELECT input FROM tool_parts WHERE id = 'c'").fetchone()[0]
    assert stored == json.dumps(value, ensure_ascii=False)


def test_a_failed_statement_dooms_its_transaction(store: Store) -> None:
    """PostgreSQL cannot go on after a failed statement: the block's end rolls it all back
    and says so, even when the caller caught the first error."""
    with pytest.raises(StoreError, match="rolled back"), store.transaction():
        store.create_session(project="p", directory="/d", id="ses_1")
        with pytest.raises(StoreError):
            store.create_session(project="p", directory="/d", parent_id="ses_missing")
        with pytest.raises(StoreError, match="failed earlier"):
            store.get_session("ses_1")
    assert store.list_sessions() == []
    store.create_session(project="p", directory="/d", id="ses_1")  # the store goes on


def _foreign_lock(sql: Any, session_id: str, host: str, expires_in: float) -> None:
    """A lease row as another machine leaves it (pid 1 there), expiring ``expires_in``
    seconds from now by the server's clock."""
    sql.execute(
        "INSERT INTO session_locks (session_id, pid, host, acquired, expires) VALUES "
        "(%s, 1, %s, extract(epoch FROM now()) - 1, extract(epoch FROM now()) + %s) "
        "ON CONFLICT (session_id) DO UPDATE SET pid = 1, host = excluded.host, "
        "acquired = excluded.acquired, expires = excluded.expires",
        [session_id, host, expires_in],
    )


def test_leases_expire_by_the_servers_clock_and_are_taken_over(store: Store, sql: Any) -> None:
    s = store.create_session(project="p", directory="/d")
    me = (os.getpid(), socket.gethostname())
    _foreign_lock(sql, s.id, "other-host", 60)
    with pytest.raises(SessionBusy, match="pid 1 on other-host") as caught:
        store.lock_session(s.id)
    assert (caught.value.pid, caught.value.host) == (1, "other-host")
    assert store.session_lock(s.id) == (1, "other-host")
    assert store.renew_session_lock(s.id, pid=1) is False  # not this host's
    _foreign_lock(sql, s.id, "other-host", -0.001)  # expired
    assert store.session_lock(s.id) is None
    store.lock_session(s.id)
    assert store.session_lock(s.id) == me
    held = sql.execute(
        "SELECT expires - extract(epoch FROM now()) FROM session_locks WHERE session_id = %s",
        [s.id],
    ).fetchone()[0]
    assert LEASE_TTL - 5 < held <= LEASE_TTL
