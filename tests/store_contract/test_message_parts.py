"""Messages and their parts: stored in order, updated in place, tool parts joined in; what a
dead process left behind, recovered."""

from __future__ import annotations

import json
from typing import Any

from hookcode.store import Store, ToolPartRecord


def _message(store: Store, session_id: str, id: str, role: str = "user", **data: Any) -> None:
    store.save_message({"id": id, "session_id": session_id, "role": role, "created": 1.0, **data})


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
    # updates keep each part's place
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


def test_text_round_trips_exactly(store: Store) -> None:
    """Text comes back as written (a lone surrogate, which no UTF-8 database holds, as ``?``);
    JSON values as JSON values."""
    s = store.create_session(project="p", directory="/d", title="naïve ☃ \u00a0 \t tab")
    text = "line\r\nnul-free \u2028 emoji 🎉 and a lone \ud800 surrogate"
    _message(store, s.id, "msg_1", "user", note={"k": [1, 2.5, None, True, "é"]})
    store.save_part(
        {"id": "p1", "session_id": s.id, "message_id": "msg_1", "type": "text", "text": text}
    )
    store.save_tool_part(
        ToolPartRecord(id="c1", session_id=s.id, tool="t", state="completed", output=text)
    )
    got = store.get_session(s.id)
    assert got is not None and got.title == "naïve ☃ \u00a0 \t tab"
    (message,) = store.messages(s.id)
    assert message["note"] == {"k": [1, 2.5, None, True, "é"]}
    expected = text.replace("\ud800", "?")
    assert message["parts"][0]["text"] == expected
    part = store.get_tool_part("c1")
    assert part is not None and part.output == expected


def test_json_is_kept_exactly(store: Store) -> None:
    """Key order and numbers as written: the history sent back to providers depends on it."""
    s = store.create_session(project="p", directory="/d")
    value = {"z": 1, "a": [1.0, 2, 1e-07, 12345678901234567890], "m": {"b": None, "a": "é"}}
    store.save_tool_part(
        ToolPartRecord(id="c", session_id=s.id, tool="t", state="running", input=value)
    )
    got = store.get_tool_part("c")
    assert got is not None and json.dumps(got.input) == json.dumps(value)
    _message(store, s.id, "msg_1", "assistant", zeta=1.5, alpha={"y": 2, "x": 1})
    (message,) = store.messages(s.id)
    assert list(message) == ["id", "session_id", "role", "created", "zeta", "alpha", "parts"]
    assert list(message["alpha"]) == ["y", "x"]


def test_a_lone_surrogate_is_made_storable_everywhere(store: Store) -> None:
    """A lone surrogate (no UTF-8 database holds one) becomes ``?``, never failing the write:
    in plain columns and in JSON, inside a transaction too."""
    s = store.create_session(project="p", directory="/d", title="a\udcffb")
    assert s.title == "a?b" and store.get_session(s.id) == s
    part = ToolPartRecord(
        id="c", session_id=s.id, tool="t", state="completed", input={"text": "x\udcffy"},
        output="out\udcff",
    )  # fmt: skip
    store.save_tool_part(part)
    got = store.get_tool_part("c")
    assert got is not None and got.input == {"text": "x?y"} and got.output == "out?"
    store.set_tool_raw("c", "raw\udcff")
    _message(store, s.id, "msg_1", text="m\udcff")
    store.save_part(
        {"id": "p1", "session_id": s.id, "message_id": "msg_1", "type": "text", "text": "\udcff"}
    )
    store.set_state(s.id, "k\udcff", "v\udcff")
    assert store.get_state(s.id, "k?") == "v?"
    store.set_todos(s.id, [{"content": "todo\udcff"}])
    assert store.todos(s.id)[0]["content"] == "todo?"
    store.update_session(s.id, title="t\udcff")
    renamed = store.get_session(s.id)
    assert renamed is not None and renamed.title == "t?"
    approval = store.add_approval(project="p", permission="bash", pattern="ls\udcff")
    assert approval.pattern == "ls?" and store.approvals(project="p") == [approval]
    with store.transaction():
        store.save_tool_part(ToolPartRecord(id="c2", session_id=s.id, tool="t", state="x",
                                            output="\udcff"))  # fmt: skip
    c2 = store.get_tool_part("c2")
    assert c2 is not None and c2.output == "?"
    (message,) = store.messages(s.id)
    assert message["text"] == "m?" and message["parts"][0]["text"] == "?"
    exported = store.export_session(s.id)
    assert exported is not None and exported.tool_parts[0]["raw"] == "raw?"
