"""Tool parts: the record of each call, upserted in place, in order; interrupted calls."""

from __future__ import annotations

import time

import pytest
from helpers.stores import Backend
from hookcode.store import Store, StoreError, ToolPartRecord


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
    # the upsert keeps the first position
    assert [p.id for p in store.tool_parts(s.id)] == ["call_a", "call_b"]
    assert store.get_tool_part("call_missing") is None
    assert store.tool_parts("ses_other") == []


def test_tool_part_defaults_roundtrip(store: Store) -> None:
    s = store.create_session(project="p", directory="/d")
    part = ToolPartRecord(id="c", session_id=s.id, tool="t", state="error", error="boom")
    store.save_tool_part(part)
    got = store.get_tool_part("c")
    assert got == part
    assert got is not None and got.input is None and got.metadata == {} and got.attachments == []


def test_tool_part_for_unknown_session_fails(backend: Backend, store: Store) -> None:
    with pytest.raises(StoreError, match=backend.name) as caught:
        store.save_tool_part(ToolPartRecord(id="c", session_id="ses_x", tool="t", state="pending"))
        store.flush()  # a store writing tool parts behind raises the failure here
    if backend.kind == "postgres":
        # written behind, the failure stays: every later call raises it, close too (which
        # closes all the same); another store sees nothing was written
        with pytest.raises(StoreError) as again:
            store.get_tool_part("c")
        assert str(again.value) == str(caught.value)
        with pytest.raises(StoreError):
            store.close()
        other = backend.open()
        try:
            assert other.get_tool_part("c") is None
        finally:
            other.close()
    else:  # written at once: the store goes on
        assert store.get_tool_part("c") is None
        store.flush()


def test_tool_parts_insertion_order(store: Store) -> None:
    s = store.create_session(project="p", directory="/d")
    names = [f"call_{n}" for n in ("z", "a", "m", "b")]
    for name in names:
        store.save_tool_part(ToolPartRecord(id=name, session_id=s.id, tool="t", state="pending"))
    assert [p.id for p in store.tool_parts(s.id)] == names


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


def test_a_saved_part_is_there_for_the_next_call_in_any_thread(store: Store) -> None:
    """However a store writes a tool part (at once, or behind), the next call that asks for
    it finds it, whichever thread asks; flush() returns with everything committed."""
    import threading

    s = store.create_session(project="p", directory="/d")
    for n in range(50):
        store.save_tool_part(ToolPartRecord(id=f"c{n}", session_id=s.id, tool="t", state="x"))
        found: list[ToolPartRecord | None] = []
        reader = threading.Thread(
            target=lambda n=n, found=found: found.append(store.get_tool_part(f"c{n}"))
        )
        reader.start()
        reader.join(30)
        assert found and found[0] is not None and found[0].id == f"c{n}"
    store.save_tool_part(ToolPartRecord(id="c0", session_id=s.id, tool="t", state="completed"))
    store.flush()
    assert store.counts()["tool_parts"] == 50
    assert [p.state for p in store.tool_parts(s.id)] == ["completed"] + ["x"] * 49
