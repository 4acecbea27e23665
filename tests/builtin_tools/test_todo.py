"""The todowrite and todoread tools (reference/tools.md §17)."""

from __future__ import annotations

import json

from hookcode.testing import invoke_tool

ITEMS = [
    {"content": "Read the code", "status": "completed", "priority": "high"},
    {"content": "Write the fix", "status": "in_progress", "priority": "medium"},
    {"content": "Drop the hack", "status": "cancelled", "priority": "low"},
    {"content": "Run the tests", "status": "pending", "priority": "low"},
]


def runtime(env):
    return env.runtime(HOOKCODE_LOAD_PLUGINS="policy_rules,tool_todo")


def test_todowrite_stores_the_list_publishes_and_answers_json(hookcode_env):
    rt = runtime(hookcode_env)
    events = []
    rt.events.subscribe(events.append)
    session = rt.create_session(title="t", agent="build")

    outcome = invoke_tool(rt, "todowrite", {"todos": ITEMS}, session_id=session.id)

    assert outcome.error is None, outcome.error_text
    assert outcome.result.output == json.dumps(ITEMS, indent=2)
    assert outcome.result.title == "3 todos"  # everything not completed, cancelled included
    assert outcome.result.metadata["todos"] == ITEMS
    stored = rt.store.todos(session.id)
    assert [{k: t[k] for k in ("content", "status", "priority")} for t in stored] == ITEMS
    updated = [e for e in events if e.type == "todo.updated"]
    assert len(updated) == 1
    assert updated[0].properties["session_id"] == session.id
    assert updated[0].properties["todos"] == ITEMS


def test_todoread_returns_the_stored_list_in_the_same_format(hookcode_env):
    rt = runtime(hookcode_env)
    session = rt.create_session(title="t", agent="build")
    empty = invoke_tool(rt, "todoread", {}, session_id=session.id)
    assert empty.result.output == "[]"
    assert empty.result.title == "0 todos"
    invoke_tool(rt, "todowrite", {"todos": ITEMS}, session_id=session.id)

    outcome = invoke_tool(rt, "todoread", {}, session_id=session.id)

    assert outcome.result.output == json.dumps(ITEMS, indent=2)
    assert outcome.result.title == "3 todos"
    assert outcome.result.metadata["todos"] == ITEMS


def test_todowrite_replaces_the_previous_list(hookcode_env):
    rt = runtime(hookcode_env)
    session = rt.create_session(title="t", agent="build")
    invoke_tool(rt, "todowrite", {"todos": ITEMS}, session_id=session.id)
    done = [{"content": "All done", "status": "completed", "priority": "high"}]

    outcome = invoke_tool(rt, "todowrite", {"todos": done}, session_id=session.id)

    assert outcome.result.title == "0 todos"
    assert invoke_tool(rt, "todoread", {}, session_id=session.id).result.metadata["todos"] == done


def test_more_than_one_in_progress_is_an_error_and_nothing_is_stored(hookcode_env):
    rt = runtime(hookcode_env)
    session = rt.create_session(title="t", agent="build")
    items = [
        {"content": "a", "status": "in_progress", "priority": "high"},
        {"content": "b", "status": "in_progress", "priority": "high"},
    ]

    outcome = invoke_tool(rt, "todowrite", {"todos": items}, session_id=session.id)

    assert outcome.error_text == (
        'At most one todo may be in_progress at a time; 2 are: "a", "b". '
        "Keep one in_progress and set the others to pending."
    )
    assert rt.store.todos(session.id) == []


def test_status_and_priority_are_validated_as_enums(hookcode_env):
    rt = runtime(hookcode_env)
    bad = {"todos": [{"content": "a", "status": "doing", "priority": "urgent"}]}

    outcome = invoke_tool(rt, "todowrite", bad)

    text = outcome.error_text
    assert text.startswith("The todowrite tool was called with invalid arguments: ")
    assert "todos.0.status" in text and "todos.0.priority" in text
    assert "'pending', 'in_progress', 'completed' or 'cancelled'" in text


def test_todo_tools_are_hidden_from_the_general_subagent(hookcode_env):
    rt = runtime(hookcode_env)
    names = {d["name"] for d in rt.registry.definitions("general")}
    assert "todowrite" not in names and "todoread" not in names
    assert {"todowrite", "todoread"} <= {d["name"] for d in rt.registry.definitions("build")}
