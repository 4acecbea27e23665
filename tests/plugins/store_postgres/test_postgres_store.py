"""The PostgreSQL store keeps the Store protocol with the SQLite store's semantics: every
behaviour of tests/core/test_store.py that is not SQLite plumbing, against a real server.

The tests take a ``store`` and, where they must arrange rows as another machine leaves them,
``sql`` (a connection of their own): plain functions, ready to join a contract suite run
against every store."""

from __future__ import annotations

import getpass
import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import replace
from typing import Any

import pytest
from hookcode.store import (
    LEASE_TTL,
    ApprovalRecord,
    SessionBusy,
    Store,
    StoreError,
    ToolPartRecord,
)
from hookcode_store_postgres import schema
from hookcode_store_postgres.postgres_store import PostgresStore


def ids(records: list[Any]) -> list[str]:
    return [r.id for r in records]


def _message(store: Store, session_id: str, id: str, role: str = "user", **data: Any) -> None:
    store.save_message({"id": id, "session_id": session_id, "role": role, "created": 1.0, **data})


# -- opening -----------------------------------------------------------------------------------


def test_the_postgres_store_is_a_store(store: PostgresStore, postgres_url: str) -> None:
    typed: Store = store  # pyright checks every method's signature here
    assert isinstance(typed, Store)
    assert typed.location == postgres_url  # no password in it to mask
    assert typed.version == len(schema.MIGRATIONS)
    assert postgres_url.rpartition("/")[2] in repr(store)


def test_close_is_idempotent_and_context_manager(postgres_url: str) -> None:
    with PostgresStore(postgres_url) as st:
        st.create_session(project="p", directory="/d")
    st.close()
    with pytest.raises(StoreError, match="closed"):
        st.list_sessions()


def test_writes_are_visible_at_once_to_another_connection(store: PostgresStore, sql: Any) -> None:
    s = store.create_session(project="p", directory="/d", title="t")
    assert sql.execute("SELECT title FROM sessions WHERE id = %s", [s.id]).fetchone() == ("t",)


# -- sessions ----------------------------------------------------------------------------------


def test_session_crud(store: PostgresStore, postgres_url: str) -> None:
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
    with pytest.raises(StoreError, match="ses_custom"):
        store.create_session(project="proj", directory="/w", id="ses_custom")

    store.close()
    with PostgresStore(postgres_url) as reopened:
        assert reopened.get_session(s.id) == got
        reopened.delete_session(s.id)
        assert reopened.get_session(s.id) is None


def test_update_session_errors(store: Store) -> None:
    s = store.create_session(project="p", directory="/d")
    with pytest.raises(ValueError, match="bogus"):
        store.update_session(s.id, bogus=1)
    with pytest.raises(ValueError):
        store.update_session(s.id, id="other")
    with pytest.raises(StoreError, match="ses_nope"):
        store.update_session("ses_nope", title="x")
    assert store.get_session(s.id) == s


def test_update_session_bumps_updated(store: Store) -> None:
    s = store.create_session(project="p", directory="/d")
    time.sleep(0.002)
    store.update_session(s.id, title="x")
    got = store.get_session(s.id)
    assert got is not None and got.updated > s.updated


def test_list_sessions_order_and_filters(store: Store) -> None:
    a = store.create_session(project="p1", directory="/a", title="a")
    b = store.create_session(project="p1", directory="/a", title="b")
    c = store.create_session(project="p2", directory="/c", title="c")
    child = store.create_session(project="p1", directory="/a", title="child", parent_id=a.id)

    assert ids(store.list_sessions()) == [child.id, c.id, b.id, a.id]
    assert ids(store.list_sessions("p1")) == [child.id, b.id, a.id]
    assert ids(store.list_sessions("p1", parent=False)) == [b.id, a.id]
    assert ids(store.list_sessions("p1", parent=True)) == [child.id]
    assert ids(store.list_sessions("p1", limit=2)) == [child.id, b.id]
    assert store.list_sessions("nope") == []

    store.update_session(a.id, updated=time.time() + 10)  # a becomes the newest
    assert ids(store.list_sessions("p1", parent=False)) == [a.id, b.id]
    assert ids(store.list_sessions("p1", parent=False, limit=1)) == [a.id]


def test_ties_in_updated_order_by_id_as_code_points(store: Store) -> None:
    for id in ("ses_b", "ses_B", "ses_a", "ses_\u00e9"):
        store.create_session(project="p", directory="/d", id=id)
        store.update_session(id, updated=5.0)
    # descending by id as SQLite compares it (code points), whatever the database's locale
    assert ids(store.list_sessions("p")) == ["ses_\u00e9", "ses_b", "ses_a", "ses_B"]
    assert ids(store.sessions_by_prefix("ses_")) == ["ses_B", "ses_a", "ses_b", "ses_\u00e9"]
    assert ids(store.sessions_by_prefix("ses_b")) == ["ses_b"]
    assert ids(store.sessions_by_prefix("ses_", limit=2)) == ["ses_B", "ses_a"]
    assert store.sessions_by_prefix("zzz") == []


def test_create_session_with_unknown_parent_fails(store: Store) -> None:
    with pytest.raises(StoreError):
        store.create_session(project="p", directory="/d", parent_id="ses_missing")
    assert store.list_sessions() == []


def test_delete_session_cascades(store: Store) -> None:
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


def test_sessions_record_host_and_user_and_filter_by_host(store: Store, sql: Any) -> None:
    here = store.create_session(project="p", directory="/d")
    assert (here.host, here.user) == (socket.gethostname(), getpass.getuser())
    assert store.get_session(here.id) == here
    sql.execute(
        'INSERT INTO sessions (id, project, directory, agent, created, updated, host, "user") '
        "VALUES ('ses_far', 'p', '/d', 'build', 1, 1, 'far-away', 'ann')"
    )
    sql.execute(
        "INSERT INTO sessions (id, project, directory, agent, created, updated) "
        "VALUES ('ses_old', 'p', '/d', 'build', 0, 0)"
    )
    assert ids(store.list_sessions("p", host=socket.gethostname())) == [here.id]
    assert ids(store.list_sessions("p", host="far-away")) == ["ses_far"]
    assert len(store.list_sessions("p")) == 3
    rows = [json.loads(row) for row in store.sessions_json("p")]
    assert rows == [s.to_dict() for s in store.list_sessions("p")]
    assert rows[1]["host"] == "far-away" and rows[1]["user"] == "ann"
    assert "host" not in rows[2] and "user" not in rows[2]  # an older session: neither
    assert [json.loads(r)["id"] for r in store.sessions_json("p", host="far-away")] == ["ses_far"]


def test_sessions_json_is_to_dict_as_python_writes_it(store: Store) -> None:
    a = store.create_session(project="p", directory="/d", title='quo"te \u00e9\n\x01')
    b = store.create_session(project="p", directory="/d", parent_id=a.id, origin="tools call")
    store.update_session(a.id, cost=1.0, model="m/x")
    store.update_session(b.id, cost=0.000015)
    expected = [
        json.dumps(s.to_dict(), ensure_ascii=False, separators=(",", ":"))
        for s in store.list_sessions("p")
    ]
    assert store.sessions_json("p") == expected  # key order, floats, escapes: all Python's
    assert [json.loads(r)["id"] for r in store.sessions_json("p", conversations=True)] == [a.id]


def test_session_usage_rolls_up(store: Store) -> None:
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
    store.add_session_usage(s.id, tokens_in=2**40)  # bigint counters
    assert store.get_session(s.id).tokens_in == 15 + 2**40  # type: ignore[union-attr]
    with pytest.raises(ValueError):
        store.add_session_usage(s.id, bogus=1)


# -- tool parts --------------------------------------------------------------------------------


def test_tool_part_roundtrip_and_upsert(store: Store) -> None:
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
    assert [p.id for p in store.tool_parts(s.id)] == ["call_a", "call_b"]  # keeps its place
    assert store.get_tool_part("call_missing") is None
    assert store.tool_parts("ses_other") == []


def test_tool_part_defaults_roundtrip(store: Store) -> None:
    s = store.create_session(project="p", directory="/d")
    part = ToolPartRecord(id="c", session_id=s.id, tool="t", state="error", error="boom")
    store.save_tool_part(part)
    got = store.get_tool_part("c")
    assert got == part
    assert got is not None and got.input is None and got.metadata == {} and got.attachments == []


def test_tool_part_for_unknown_session_fails(store: Store) -> None:
    with pytest.raises(StoreError, match="PostgreSQL store"):
        store.save_tool_part(ToolPartRecord(id="c", session_id="ses_x", tool="t", state="pending"))
    assert store.get_tool_part("c") is None


def test_tool_parts_insertion_order(store: Store) -> None:
    s = store.create_session(project="p", directory="/d")
    names = [f"call_{n}" for n in ("z", "a", "m", "b")]
    for name in names:
        store.save_tool_part(ToolPartRecord(id=name, session_id=s.id, tool="t", state="pending"))
    assert [p.id for p in store.tool_parts(s.id)] == names


def test_json_is_kept_exactly(store: Store, sql: Any) -> None:
    """Key order and numbers as written: the history sent back to providers depends on it."""
    s = store.create_session(project="p", directory="/d")
    value = {"z": 1, "a": [1.0, 2, 1e-07, 12345678901234567890], "m": {"b": None, "a": "é"}}
    store.save_tool_part(
        ToolPartRecord(id="c", session_id=s.id, tool="t", state="running", input=value)
    )
    got = store.get_tool_part("c")
    assert got is not None
    assert json.dumps(got.input) == json.dumps(value)
    stored = sql.execute("SELECT input FROM tool_parts WHERE id = 'c'").fetchone()[0]
    assert stored == json.dumps(value, ensure_ascii=False)
    _message(store, s.id, "msg_1", "assistant", zeta=1.5, alpha={"y": 2, "x": 1})
    message = store.messages(s.id)[0]
    assert list(message) == ["id", "session_id", "role", "created", "zeta", "alpha", "parts"]
    assert list(message["alpha"]) == ["y", "x"]


def test_text_postgresql_cannot_hold_is_made_storable(store: Store) -> None:
    """A NUL character and a lone surrogate (no PostgreSQL text holds them) become ``?``,
    never failing the write, in plain columns and in JSON alike."""
    s = store.create_session(project="p", directory="/d", title="a\x00b\udcffc")
    assert s.title == "a?b?c" and store.get_session(s.id) == s
    part = ToolPartRecord(
        id="c",
        session_id=s.id,
        tool="t",
        state="completed",
        input={"text": "x\udcffy", "nul": "a\x00b"},
        output="out\x00put\udcff",
        error=None,
    )
    store.save_tool_part(part)
    got = store.get_tool_part("c")
    assert got is not None
    assert got.input == {"text": "x?y", "nul": "a\x00b"}  # JSON escapes NUL itself: kept
    assert got.output == "out?put?"
    store.set_tool_raw("c", "raw\x00\udcff")
    _message(store, s.id, "msg_1", text="m\udcff")
    store.save_part(
        {"id": "p1", "session_id": s.id, "message_id": "msg_1", "type": "text", "text": "\x00"}
    )
    store.set_state(s.id, "k\x00", "v\udcff")
    store.set_todos(s.id, [{"content": "todo\x00\udcff"}])
    assert store.todos(s.id)[0]["content"] == "todo??"
    approval = store.add_approval(project="p", permission="bash", pattern="ls\x00\udcff")
    assert approval.pattern == "ls??"
    with store.transaction():  # inside a transaction too
        store.save_tool_part(replace(part, id="c2", output="\x00"))
    assert store.get_tool_part("c2").output == "?"  # type: ignore[union-attr]
    messages = store.messages(s.id)
    assert messages[0]["text"] == "m?" and messages[0]["parts"][0]["text"] == "\x00"


def test_mark_interrupted(store: Store) -> None:
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


def test_approvals_scope_order_and_dedup(store: Store) -> None:
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


def test_session_approval_for_unknown_session_fails(store: Store) -> None:
    with pytest.raises(StoreError):
        store.add_approval(project="p", permission="edit", pattern="*", session_id="ses_x")


def test_approvals_remember_their_directory(store: Store) -> None:
    a = store.add_approval(project="git:1", permission="bash", pattern="ls", directory="/one")
    b = store.add_approval(project="git:1", permission="bash", pattern="ls", directory="/two")
    assert a.id != b.id and (a.directory, b.directory) == ("/one", "/two")
    again = store.add_approval(project="git:1", permission="bash", pattern="ls", directory="/one")
    assert again == a
    assert store.approvals(project="git:1") == [a, b]
    assert store.approval_records() == [a, b]
    store.import_approval(a)  # as it is: nothing changes
    assert store.approval_records() == [a, b]
    moved = replace(a, id="apr_from_elsewhere", created=1.0)
    store.import_approval(moved)  # the same meaning under another id: replaced
    assert store.approval_records() == [moved, b]  # creation order


def test_rekey_project_moves_sessions_and_approvals(store: PostgresStore) -> None:
    s = store.create_session(project="/work/repo", directory="/work/repo")
    kept = store.add_approval(
        project="/work/repo", permission="bash", pattern="ls", directory="/work/repo"
    )
    store.add_approval(project="git:abc", permission="bash", pattern="ls", directory="/work/repo")
    store.add_approval(project="/work/repo", permission="edit", pattern="*", session_id=s.id)
    assert store.rekey_project("/work/repo", "git:abc") == 2
    assert store.get_session(s.id).project == "git:abc"  # type: ignore[union-attr]
    assert store.approvals(project="/work/repo") == []
    moved = store.approvals(project="git:abc", session_id=s.id)
    assert [(r.permission, r.session_id) for r in moved] == [("bash", None), ("edit", s.id)]
    assert kept.id not in {r.id for r in moved}
    assert store.rekey_project("/work/repo", "git:abc") == 0


# -- transactions ------------------------------------------------------------------------------


def test_nested_transactions_are_one(store: Store) -> None:
    with pytest.raises(RuntimeError), store.transaction():
        store.create_session(project="p", directory="/d", id="ses_1")
        with store.transaction():
            store.create_session(project="p", directory="/d", id="ses_2")
        raise RuntimeError
    assert store.list_sessions() == []
    with store.transaction():
        store.create_session(project="p", directory="/d", id="ses_1")
        store.create_session(project="p", directory="/d", id="ses_2")
        assert len(store.list_sessions()) == 2  # the block sees its own writes
    assert len(store.list_sessions()) == 2


def test_a_transaction_is_invisible_to_others_until_it_ends(store: Store, sql: Any) -> None:
    with store.transaction():
        store.create_session(project="p", directory="/d", id="ses_1")
        assert sql.execute("SELECT count(*) FROM sessions").fetchone()[0] == 0
    assert sql.execute("SELECT count(*) FROM sessions").fetchone()[0] == 1


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


def test_transactions_of_threads_are_their_own(store: Store) -> None:
    import threading

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
    assert ids(store.list_sessions()) == ["ses_other"]


# -- the agent loop's tables -------------------------------------------------------------------


def test_messages_and_parts_round_trip_in_order(store: Store) -> None:
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


def test_recover_session_marks_what_a_dead_process_left(store: Store) -> None:
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


def test_state_todos_and_cascades(store: Store, sql: Any) -> None:
    s = store.create_session(project="p", directory="/d")
    child = store.create_session(project="p", directory="/d", parent_id=s.id)
    store.set_state(s.id, "provider:x", {"positions": {"*": 2}})
    assert store.get_state(s.id, "provider:x") == {"positions": {"*": 2}}
    store.set_state(s.id, "provider:x", [1])
    assert store.get_state(s.id, "provider:x") == [1]
    assert store.get_state(s.id, "missing") is None
    store.set_todos(s.id, [{"content": "a"}, {"id": "t2", "content": "b", "status": "done"}])
    assert store.todos(s.id) == [
        {"id": "1", "content": "a", "status": "pending", "priority": "medium"},
        {"id": "t2", "content": "b", "status": "done", "priority": "medium"},
    ]
    store.set_todos(s.id, [{"content": "only"}])
    assert [t["content"] for t in store.todos(s.id)] == ["only"]
    store.set_todos(s.id, [])
    assert store.todos(s.id) == []
    store.set_todos(s.id, [{"content": "again"}])
    _message(store, s.id, "msg_1")
    store.save_part({"id": "p1", "session_id": s.id, "message_id": "msg_1", "type": "text"})
    store.lock_session(s.id)
    assert [c.id for c in store.children(s.id)] == [child.id]
    assert store.latest_session("p").id == s.id  # type: ignore[union-attr]
    store.delete_session(s.id)
    for table in ("messages", "parts", "todos", "session_state", "session_locks", "sessions"):
        assert sql.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0, table


def test_latest_session_skips_children_and_tool_calls(store: Store) -> None:
    a = store.create_session(project="p", directory="/d")
    store.create_session(project="p", directory="/d", parent_id=a.id)
    store.create_session(project="p", directory="/d", origin="tools call")
    assert store.latest_session("p").id == a.id  # type: ignore[union-attr]
    assert store.latest_session("other") is None


# -- leases ------------------------------------------------------------------------------------


def test_session_locks(store: Store) -> None:
    s = store.create_session(project="p", directory="/d")
    store.lock_session(s.id)
    store.lock_session(s.id)  # the same process again: fine
    assert store.session_lock(s.id) == (os.getpid(), socket.gethostname())
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with pytest.raises(SessionBusy, match=f"pid {os.getpid()}"):
            store.lock_session(s.id, pid=sleeper.pid)
        store.unlock_session(s.id)
        store.lock_session(s.id, pid=sleeper.pid)
        with pytest.raises(SessionBusy, match=f"pid {sleeper.pid}"):
            store.lock_session(s.id)
        store.unlock_session(s.id)  # not ours: nothing happens
        assert store.session_lock(s.id) == (sleeper.pid, socket.gethostname())
    finally:
        sleeper.kill()
        sleeper.wait()
    assert store.session_lock(s.id) is None  # dead holders do not count
    store.lock_session(s.id)  # and are taken over
    store.unlock_session(s.id)
    assert store.session_lock(s.id) is None


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
    store.unlock_session(s.id, pid=1)  # the same pid, but not this host's: nothing happens
    assert store.session_lock(s.id) == (1, "other-host")
    assert store.renew_session_lock(s.id, pid=1) is False  # not this host's either
    _foreign_lock(sql, s.id, "other-host", -0.001)  # expired
    assert store.session_lock(s.id) is None
    store.lock_session(s.id)
    assert store.session_lock(s.id) == me
    held = sql.execute(
        "SELECT expires - extract(epoch FROM now()) FROM session_locks WHERE session_id = %s",
        [s.id],
    ).fetchone()[0]
    assert LEASE_TTL - 5 < held <= LEASE_TTL


def test_an_expired_live_lease_is_taken_over_and_its_renewal_fails(store: Store) -> None:
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


def test_locking_an_unknown_session_fails(store: Store) -> None:
    with pytest.raises(StoreError):
        store.lock_session("ses_missing")


# -- moving data between stores ----------------------------------------------------------------


def fill(store: Store) -> tuple[str, str]:
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


def copy(source: Store, target: Store) -> None:
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


def assert_equal_stores(source: Store, target: Store, sessions: tuple[str, ...]) -> None:
    for id in sessions:
        assert target.get_session(id) == source.get_session(id)
        assert target.messages(id) == source.messages(id)
        assert target.tool_parts(id) == source.tool_parts(id)
        assert target.todos(id) == source.todos(id)
        assert target.export_session(id) == source.export_session(id)
    assert target.counts() == source.counts()
    assert target.approval_records() == source.approval_records()


def test_export_and_import_between_postgres_and_sqlite(
    store: PostgresStore, tmp_path: Any, postgres_server: str
) -> None:
    from helpers import postgres
    from hookcode.store import SQLiteStore

    parent, child = fill(store)
    assert store.session_ids() == [parent, child]
    exported = store.export_session(parent)
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
    assert store.export_session("ses_missing") is None
    assert store.counts() == {
        "sessions": 2,
        "messages": 6,
        "parts": 12,
        "tool_parts": 6,
        "approvals": 3,
        "todos": 4,
        "session_state": 4,
    }
    lite = SQLiteStore(tmp_path / "copy.db")
    other_url = postgres.create_database(postgres_server)
    other = PostgresStore(other_url)
    try:
        for _twice in range(2):  # idempotent, both ways
            copy(store, lite)
            assert_equal_stores(store, lite, (parent, child))
            copy(lite, other)
            assert_equal_stores(lite, other, (parent, child))
        # a changed session replaces the target's copy whole; children stay
        store.set_todos(parent, [{"content": "only"}])
        store.delete_part(f"{parent}_m2_p")
        data = store.export_session(parent)
        assert data is not None
        other.import_session(data)
        assert other.export_session(parent) == store.export_session(parent)
        assert other.counts() == store.counts()
        assert [c.id for c in other.children(parent)] == [child]
    finally:
        lite.close()
        other.close()
        postgres.drop_database(postgres_server, other_url)


def test_import_session_is_one_transaction(store: PostgresStore) -> None:
    parent, _child = fill(store)
    data = store.export_session(parent)
    assert data is not None
    broken = replace(data, parts=[*data.parts, {**data.parts[0], "message_id": "msg_missing"}])
    before = store.export_session(parent)
    with pytest.raises(StoreError):
        store.import_session(broken)
    assert store.export_session(parent) == before  # nothing half-written
