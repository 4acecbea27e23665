"""Commits and transactions: a write is visible to another connection when its call returns;
``transaction()`` groups writes (nested, rolled back together); one store shared by threads;
closing."""

from __future__ import annotations

import threading

import pytest
from helpers.stores import Backend
from hookcode.store import Store, StoreError, ToolPartRecord


def test_the_store_is_a_store(store: Store) -> None:
    assert isinstance(store, Store)
    assert store.version >= 1


def test_writes_are_visible_at_once_to_another_connection(backend: Backend, store: Store) -> None:
    s = store.create_session(project="p", directory="/d", title="t")
    other = backend.open()
    try:
        got = other.get_session(s.id)
        assert got is not None and got.title == "t"
        store.update_session(s.id, title="t2")
        again = other.get_session(s.id)
        assert again is not None and again.title == "t2"
    finally:
        other.close()


def test_close_is_idempotent_and_a_closed_store_refuses(backend: Backend) -> None:
    store = backend.open()
    store.create_session(project="p", directory="/d")
    store.close()
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.list_sessions()


def test_nested_writes_share_one_transaction(backend: Backend, store: Store) -> None:
    with pytest.raises(RuntimeError), store.transaction():
        store.create_session(project="p", directory="/d", id="ses_1")
        with store.transaction():
            store.create_session(project="p", directory="/d", id="ses_2")
        raise RuntimeError
    assert store.list_sessions() == []
    with store.transaction():
        store.create_session(project="p", directory="/d", id="ses_1")
        store.create_session(project="p", directory="/d", id="ses_2")
    other = backend.open()
    try:
        assert len(other.list_sessions()) == 2
    finally:
        other.close()


def test_a_transaction_is_invisible_to_others_until_it_ends(backend: Backend, store: Store) -> None:
    other = backend.open()
    try:
        with store.transaction():
            store.create_session(project="p", directory="/d", id="ses_1")
            assert [s.id for s in store.list_sessions()] == ["ses_1"]  # its own writes
            assert other.list_sessions() == []
        assert [s.id for s in other.list_sessions()] == ["ses_1"]
    finally:
        other.close()


def test_threads_share_one_store(store: Store) -> None:
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
                    with store.transaction():  # a thread's transaction among the others' writes
                        store.set_state(sid, "k", i)
                        store.add_session_usage(sid, tokens_out=1)
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
        assert store.get_state(s.id, "k") == 150
        session = store.get_session(s.id)
        assert session is not None and session.tokens_out == 4
