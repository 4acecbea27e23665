"""The ``todowrite`` and ``todoread`` tools: the session's todo list (reference/tools.md §17).

todowrite replaces the session's list in the store (``todos`` table, ordered) and publishes
``todo.updated``; todoread returns the stored list. Both answer with the list as 2-space JSON,
title ``<k> todos`` (k = items not completed) and metadata ``todos``. ``status`` and
``priority`` are validated as enums, and at most one item may be ``in_progress``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hookcode import Tool, ToolContext, ToolError, ToolResult, hookimpl

STATUSES = ("pending", "in_progress", "completed", "cancelled")
PRIORITIES = ("high", "medium", "low")

WRITE_DESCRIPTION = """\
Use this tool to create and manage a structured task list for your current coding session.
This helps you track progress, organize complex tasks, and demonstrate thoroughness to the user.

When to use it:
- Complex multi-step tasks (3 or more distinct steps)
- When the user provides multiple tasks, or explicitly asks for a todo list
- After receiving new instructions: capture the requirements as todos
- When you start a task: mark it in_progress BEFORE beginning work (only one at a time)
- When you finish a task: mark it completed and add any follow-up tasks you discovered

When NOT to use it: a single straightforward task, trivial tasks, purely conversational requests.

Task states: pending (not started), in_progress (working on it now; at most ONE at a time),
completed (finished successfully), cancelled (no longer needed).
Each call replaces the whole list: always send every item, in order."""

READ_DESCRIPTION = """\
Use this tool to read your todo list for the current session: check it at the start of a
conversation, before starting new tasks, when unsure what to do next and after completing
tasks. It takes no parameters and returns the list with each item's status and priority."""


def _item_model() -> Any:
    from typing import Literal

    from pydantic import BaseModel, Field

    class TodoItem(BaseModel):
        content: str = Field(description="Brief description of the task", min_length=1)
        status: Literal["pending", "in_progress", "completed", "cancelled"] = Field(
            description="Current status of the task: pending, in_progress, completed, cancelled"
        )
        priority: Literal["high", "medium", "low"] = Field(
            description="Priority level of the task: high, medium, low"
        )

    return TodoItem


def _plain(todos: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"content": t["content"], "status": t["status"], "priority": t["priority"]} for t in todos
    ]


def _result(todos: list[dict[str, Any]]) -> ToolResult:
    import json

    items = _plain(todos)
    open_items = sum(1 for t in items if t["status"] != "completed")
    return ToolResult(
        title=f"{open_items} todos",
        output=json.dumps(items, indent=2, ensure_ascii=False),
        metadata={"todos": items},
    )


class TodoWrite(Tool):
    name = "todowrite"
    description = WRITE_DESCRIPTION

    def _build_model(self) -> Any:
        from pydantic import BaseModel, ConfigDict, Field

        item = _item_model()

        class TodowriteArgs(BaseModel):
            model_config = ConfigDict(extra="forbid")
            todos: list[item] = Field(description="The updated todo list")  # type: ignore[valid-type]

        self.Args = TodowriteArgs  # type: ignore[misc]
        return TodowriteArgs

    def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        todos = [t.model_dump() for t in args.todos]
        running = [t["content"] for t in todos if t["status"] == "in_progress"]
        if len(running) > 1:
            import json

            raise ToolError(
                f"At most one todo may be in_progress at a time; {len(running)} are: "
                + ", ".join(json.dumps(c, ensure_ascii=False) for c in running)
                + ". Keep one in_progress and set the others to pending."
            )
        # stored like every other part of a session: known secrets redacted
        ctx.runtime.store.set_todos(ctx.session_id, ctx.runtime.secrets.redact_value(todos))
        ctx.publish("todo.updated", todos=_plain(todos))
        return _result(todos)


class TodoRead(Tool):
    name = "todoread"
    description = READ_DESCRIPTION

    def _build_model(self) -> Any:
        from pydantic import BaseModel, ConfigDict

        class TodoreadArgs(BaseModel):
            model_config = ConfigDict(extra="forbid")

        self.Args = TodoreadArgs  # type: ignore[misc]
        return TodoreadArgs

    def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        return _result(ctx.runtime.store.todos(ctx.session_id))


@hookimpl
def register_tools(register: Callable[..., None]) -> None:
    register(TodoWrite(), TodoRead())
