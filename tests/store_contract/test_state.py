"""Per-session state and todos, and what deleting a session takes with it."""

from __future__ import annotations

from hookcode.store import Store


def test_state_todos_and_cascades(store: Store) -> None:
    s = store.create_session(project="p", directory="/d")
    child = store.create_session(project="p", directory="/d", parent_id=s.id)
    store.set_state(s.id, "provider:x", {"positions": {"*": 2}})
    assert store.get_state(s.id, "provider:x") == {"positions": {"*": 2}}
    assert store.get_state(s.id, "missing") is None
    store.set_state(s.id, "provider:x", [1, "two"])  # replaced
    assert store.get_state(s.id, "provider:x") == [1, "two"]
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
    store.save_message({"id": "msg_1", "session_id": s.id, "role": "user", "created": 1.0})
    store.save_part({"id": "p1", "session_id": s.id, "message_id": "msg_1", "type": "text"})
    store.lock_session(s.id)
    assert store.counts() == {
        "sessions": 2,
        "messages": 1,
        "parts": 1,
        "tool_parts": 0,
        "approvals": 0,
        "todos": 1,
        "session_state": 1,
    }
    assert [c.id for c in store.children(s.id)] == [child.id]
    latest = store.latest_session("p")
    assert latest is not None and latest.id == s.id
    store.delete_session(s.id)
    assert store.get_session(s.id) is None and store.get_session(child.id) is None
    assert store.messages(s.id) == [] and store.todos(s.id) == []
    assert store.get_state(s.id, "provider:x") is None
    assert store.session_lock(s.id) is None
    assert store.list_sessions() == []
    assert set(store.counts().values()) == {0}
