"""The history sent to providers, built at once (:func:`to_provider_messages`) and as it grows
(:class:`ProviderHistory`), and a stored history loaded back (``load_messages``)."""

from __future__ import annotations

import random
from typing import Any

from hookcode.messages import (
    CompactionPart,
    ProviderHistory,
    SessionMessage,
    TextPart,
    ToolPart,
    ToolState,
    to_provider_messages,
)
from hookcode.session import load_messages


def _plain(messages: list[Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    return [(m.role, m.content) for m in messages]


def _user(n: int, *, compaction: bool = False) -> SessionMessage:
    parts: list[Any] = [TextPart(id=f"u{n}", text=f"question {n}")]
    if compaction:
        parts = [CompactionPart(id=f"c{n}")]
    return SessionMessage(id=f"msg{n}", session_id="s", role="user", parts=parts)


def _assistant(n: int, *, done: bool = True, summary: bool = False) -> SessionMessage:
    status = "completed" if done else "running"
    return SessionMessage(
        id=f"msg{n}",
        session_id="s",
        role="assistant",
        completed=float(n) if done else None,
        summary=summary,
        parts=[
            TextPart(id=f"t{n}", text=f"answer {n}"),
            ToolPart(
                id=f"p{n}",
                call_id=f"call{n}",
                tool="read",
                state=ToolState(status=status, input={"n": n}, output=f"out {n}" if done else None),
            ),
        ],
    )


def test_a_growing_history_is_built_like_the_whole_and_converted_once() -> None:
    rng = random.Random(20)
    history = ProviderHistory()
    messages: list[SessionMessage] = []
    for n in range(300):
        roll = rng.random()
        if roll < 0.2:
            messages.append(_user(n))  # two users in a row merge
        elif roll < 0.23:
            messages += [_user(n, compaction=True), _assistant(n + 1000, summary=True)]
        else:
            messages.append(_assistant(n, done=rng.random() < 0.9))
        # an unfinished message is converted anew each time, and finishes later
        unfinished = [m for m in messages if m.role == "assistant" and m.completed is None]
        if unfinished and rng.random() < 0.3:
            message = unfinished[0]
            message.completed = 1.0
            message.tool_parts()[0].state.status = "completed"
        built = history.build(messages)
        assert _plain(built) == _plain(to_provider_messages(messages)), n
    # once kept, a finished message is not converted again: the same objects come back
    again = history.build(messages)
    assert all(a is b for a, b in zip(built[:-3], again[:-3], strict=True))
    # a finished message that changed (pruning) is seen after clear()
    messages[-1].tool_parts()[0].state.output = "changed"
    history.clear()
    assert _plain(history.build(messages)) == _plain(to_provider_messages(messages))
    # another list (a history loaded anew) starts over by itself
    copy = list(messages)
    assert _plain(history.build(copy)) == _plain(to_provider_messages(copy))


def test_a_stored_history_loads_whole_and_skips_what_is_not_a_part(hookcode_env: Any) -> None:
    rt = hookcode_env.runtime(HOOKCODE_LOAD_PLUGINS="")
    store = rt.store
    session = store.create_session(project="p", directory="p", title="t")
    for n in range(3):
        store.save_message({"id": f"m{n}", "session_id": session.id, "role": "user", "created": n})
        store.save_part(
            {
                "id": f"p{n}",
                "session_id": session.id,
                "message_id": f"m{n}",
                "type": "text",
                "text": f"hello {n}",
            }
        )
    store.save_part(
        {"id": "x", "session_id": session.id, "message_id": "m1", "type": "hologram", "data": 1}
    )
    loaded = load_messages(store, session.id)
    assert [[p.text for p in m.parts] for m in loaded] == [["hello 0"], ["hello 1"], ["hello 2"]]
    # a part of a known type that is not valid is left out, the rest still loads
    store.save_part({"id": "bad", "session_id": session.id, "message_id": "m2", "type": "file"})
    loaded = load_messages(store, session.id)
    assert [[p.id for p in m.parts] for m in loaded] == [["p0"], ["p1"], ["p2"]]


def test_context_tokens_reads_from_the_end_what_the_visible_history_holds() -> None:
    from hookcode.compaction import _estimate_message, context_tokens
    from hookcode.messages import visible_history

    def reference(messages: list[SessionMessage], fixed: int) -> int:  # the whole history read
        visible = visible_history(messages)
        for index in range(len(visible) - 1, -1, -1):
            message = visible[index]
            if message.role == "assistant" and message.tokens.total > 0:
                outputs = sum(
                    len(p.state.output or "") // 4 for p in message.tool_parts() if p.state.output
                )
                later = sum(_estimate_message(m) for m in visible[index + 1 :])
                return message.tokens.total + outputs + later
        return fixed + sum(_estimate_message(m) for m in visible)

    rng = random.Random(7)
    messages: list[SessionMessage] = []
    for n in range(200):
        roll = rng.random()
        if roll < 0.3:
            messages.append(_user(n))
        elif roll < 0.35:
            messages += [_user(n, compaction=True), _assistant(n + 1000, summary=True)]
        else:
            messages.append(_assistant(n))
            if rng.random() < 0.5:
                messages[-1].tokens.input = rng.randint(1, 5000)
        assert context_tokens(messages, 50) == reference(messages, 50), n
