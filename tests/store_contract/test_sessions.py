"""Sessions: create, read, update, list, delete (with what hangs off them), usage roll-ups,
moving a project's sessions to a new project key."""

from __future__ import annotations

import json
import time
from typing import Protocol, runtime_checkable

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
    with pytest.raises(StoreError):  # an id taken: refused
        store.create_session(project="proj", directory="/w", id="ses_custom")

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
    store.add_session_usage(s.id, tokens_in=2**40)  # 64-bit counters
    again = store.get_session(s.id)
    assert again is not None and again.tokens_in == 15 + 2**40
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


@runtime_checkable
class Rekeys(Protocol):
    """A store that moves a project's rows to a new key: optional in the protocol (the runtime
    asks ``getattr(store, "rekey_project", None)``), and every store hookcode ships has it."""

    def rekey_project(self, old: str, new: str) -> int: ...


def test_rekey_project_moves_sessions_and_approvals(store: Store) -> None:
    assert isinstance(store, Rekeys)
    s = store.create_session(project="/work/repo", directory="/work/repo")
    kept = store.add_approval(
        project="/work/repo", permission="bash", pattern="ls", directory="/work/repo"
    )
    store.add_approval(project="git:abc", permission="bash", pattern="ls", directory="/work/repo")
    store.add_approval(project="/work/repo", permission="edit", pattern="*", session_id=s.id)
    # the session and the session approval move; the duplicate project approval is kept once
    assert store.rekey_project("/work/repo", "git:abc") == 2
    moved_session = store.get_session(s.id)
    assert moved_session is not None and moved_session.project == "git:abc"
    assert store.approvals(project="/work/repo") == []
    moved = store.approvals(project="git:abc", session_id=s.id)
    assert [(r.permission, r.session_id) for r in moved] == [("bash", None), ("edit", s.id)]
    assert kept.id not in {r.id for r in moved}
    assert store.rekey_project("/work/repo", "git:abc") == 0


def test_sessions_json_is_to_dict(store: Store) -> None:
    """``sessions list --json`` rows: :meth:`SessionRecord.to_dict`, key for key in its order,
    text escaped as JSON (times to 15 significant digits: SQLite writes its REALs so)."""
    a = store.create_session(project="p", directory="/d", title='quo"te \u00e9\n\x01')
    b = store.create_session(project="p", directory="/d", parent_id=a.id, origin="tools call")
    store.update_session(a.id, cost=1.0, model="m/x")
    store.update_session(b.id, cost=0.000015)
    rows = [json.loads(row) for row in store.sessions_json("p")]
    records = [s.to_dict() for s in store.list_sessions("p")]
    assert [list(row) for row in rows] == [list(record) for record in records]
    for row, record in zip(rows, records, strict=True):
        for key, value in record.items():
            exact = key not in ("created", "updated")
            assert row[key] == (value if exact else pytest.approx(value, abs=1e-5))
    assert [json.loads(r)["id"] for r in store.sessions_json("p", conversations=True)] == [a.id]
