"""Moving data between stores (``hookcode store migrate``): a session exported from one store and
imported into another is equal there; importing again changes nothing; a changed session replaces
its copy whole; approvals keep their ids and times; ``counts()`` agree.

Each test moves data between the store under test and a SQLite store of its own, in both
directions, so PostgreSQL's export is checked against SQLite's import and the other way round."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from hookcode.store import SQLiteStore, Store, StoreError, ToolPartRecord


@pytest.fixture
def other(tmp_path: Path) -> Iterator[SQLiteStore]:
    """A second store, a SQLite file."""
    opened = SQLiteStore(tmp_path / "other" / "hookcode.db")
    try:
        yield opened
    finally:
        opened.close()


def _fill(store: Store) -> tuple[str, str]:
    """A parent session with a child, messages, parts, tool parts, todos, state, approvals."""
    parent = store.create_session(project="p", directory="/d", title="parent")
    child = store.create_session(project="p", directory="/d", parent_id=parent.id)
    for session in (parent.id, child.id):
        for i in range(3):
            mid = f"{session}_m{i}"
            store.save_message(
                {
                    "id": mid,
                    "session_id": session,
                    "role": "assistant" if i % 2 else "user",
                    "created": 1.0 + i,
                    "n": i,
                    "nested": {"a": [i]},
                }
            )
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


def _copy(source: Store, target: Store) -> None:
    """What ``hookcode store migrate`` does: project approvals, sessions (parents first), then
    the session approvals."""
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


def _assert_equal(source: Store, target: Store, ids: tuple[str, ...]) -> None:
    for id in ids:
        assert target.get_session(id) == source.get_session(id)
        assert target.messages(id) == source.messages(id)
        assert target.tool_parts(id) == source.tool_parts(id)
        assert target.todos(id) == source.todos(id)
        assert target.get_state(id, "provider:x") == source.get_state(id, "provider:x")
        assert target.export_session(id) == source.export_session(id)
    assert target.session_ids() == source.session_ids()
    assert target.counts() == source.counts()
    assert target.approval_records() == source.approval_records()


def test_export_holds_everything_in_order(store: Store) -> None:
    parent, child = _fill(store)
    assert store.session_ids() == [parent, child]
    exported = store.export_session(parent)
    assert exported is not None
    assert exported.session == store.get_session(parent)
    assert [m["id"] for m in exported.messages] == [f"{parent}_m{i}" for i in range(3)]
    assert exported.messages[1]["data"]["nested"] == {"a": [1]}
    assert [p["id"] for p in exported.parts] == [
        f"{parent}_m{i}_{kind}" for i in range(3) for kind in ("p", "tool")
    ]
    assert exported.tool_parts[0]["raw"] == '{"filePath": "f0"}'
    assert exported.tool_parts[1]["compacted"] == 7.0
    assert exported.tool_parts[2]["raw"] is None and exported.tool_parts[2]["compacted"] is None
    assert exported.todos == store.todos(parent)
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


@pytest.mark.parametrize("direction", ["from this store", "into this store"])
def test_a_copy_is_equal_and_copying_again_changes_nothing(
    store: Store, other: SQLiteStore, direction: str
) -> None:
    source, target = (store, other) if direction == "from this store" else (other, store)
    parent, child = _fill(source)
    for _twice in range(2):  # idempotent
        _copy(source, target)
        _assert_equal(source, target, (parent, child))
    # a changed source session replaces the target's copy whole
    source.set_todos(parent, [{"content": "only"}])
    source.delete_part(f"{parent}_m2_p")
    source.set_state(parent, "other", None)
    data = source.export_session(parent)
    assert data is not None
    target.import_session(data)
    assert target.export_session(parent) == source.export_session(parent)
    assert target.counts() == source.counts()
    assert [c.id for c in target.children(parent)] == [child]  # children stay


def test_approvals_remember_their_directory_and_import_keeps_ids(store: Store) -> None:
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
    moved = replace(a, id="apr_from_elsewhere", created=1.0)
    store.import_approval(moved)
    assert store.approval_records() == [moved, b]  # creation order


def test_import_session_is_one_transaction(store: Store) -> None:
    parent, _child = _fill(store)
    data = store.export_session(parent)
    assert data is not None
    broken = replace(data, parts=[*data.parts, {**data.parts[0], "message_id": "msg_missing"}])
    before = store.export_session(parent)
    with pytest.raises(StoreError):
        store.import_session(broken)
    assert store.export_session(parent) == before  # nothing half-written
