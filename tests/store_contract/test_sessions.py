"""Sessions: create, read, update, list, delete (with what hangs off them), usage roll-ups."""

from __future__ import annotations

import time

import pytest
from helpers.stores import Backend
from hookcode.store import Store, StoreError, ToolPartRecord


def test_session_crud(backend: Backend, store: Store) -> None:
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
    reopened = backend.open()
    try:
        assert reopened.get_session(s.id) == got
        reopened.delete_session(s.id)
        assert reopened.get_session(s.id) is None
    finally:
        reopened.close()


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
    with pytest.raises(ValueError):
        store.add_session_usage(s.id, bogus=1)


def test_ties_in_updated_order_by_id_as_code_points(store: Store) -> None:
    ids = lambda records: [r.id for r in records]  # noqa: E731
    for id in ("ses_b", "ses_B", "ses_a", "ses_\u00e9"):
        store.create_session(project="p", directory="/d", id=id)
        store.update_session(id, updated=5.0)
    # descending by id compared by code points, whatever the database's collation
    assert ids(store.list_sessions("p")) == ["ses_\u00e9", "ses_b", "ses_a", "ses_B"]
    assert ids(store.sessions_by_prefix("ses_")) == ["ses_B", "ses_a", "ses_b", "ses_\u00e9"]
    assert ids(store.sessions_by_prefix("ses_b")) == ["ses_b"]
    assert ids(store.sessions_by_prefix("ses_", limit=2)) == ["ses_B", "ses_a"]
    assert store.sessions_by_prefix("zzz") == []


def test_latest_session_skips_children_and_tool_calls(store: Store) -> None:
    a = store.create_session(project="p", directory="/d")
    store.create_session(project="p", directory="/d", parent_id=a.id)
    store.create_session(project="p", directory="/d", origin="tools call")
    latest = store.latest_session("p")
    assert latest is not None and latest.id == a.id
    assert store.latest_session("other") is None
    assert [s.id for s in store.list_sessions("p", conversations=True)] == [
        s.id for s in store.list_sessions("p") if s.origin is None
    ]
