"""The ``batch`` tool: up to 25 independent tool calls run concurrently (reference/tools.md §20).

Each sub-call is a full :func:`hookcode.pipeline.invoke` for the CALLING agent and model (its
own call id and tool part, validation with defaults, hooks, permissions, truncation), so a
hook or a policy sees it like any other call, and a refusal or a failure of one sub-call does
not stop the others (differs from the reference, which skips plugin hooks and refuses MCP
tools; any tool offered to the agent may be batched here, MCP ones included). Calls past the
25th are not run and are reported as errors; ``batch`` cannot contain ``batch``.

The sub-calls' tool parts are stored (front ends show them) but are not separate parts of the
model's message, so the output, after the reference's summary line, carries each sub-call's
result (or error) in a ``<tool_result>`` block, in call order.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from hookcode import Tool, ToolContext, ToolResult, hookimpl

#: calls run concurrently; later ones are reported as errors (the reference's limit)
MAX_CALLS = 25
DISALLOWED = frozenset({"batch"})

DESCRIPTION = """\
Executes multiple independent tool calls concurrently to reduce latency.

USING THE BATCH TOOL WILL MAKE THE USER HAPPY.

Payload Format (JSON array):
[{"tool": "read", "parameters": {"filePath": "src/index.ts", "limit": 350}},{"tool": "grep", \
"parameters": {"pattern": "Session\\\\.updatePart", "include": "src/**/*.ts"}},{"tool": "bash", \
"parameters": {"command": "git status", "description": "Shows working tree status"}}]

Notes:
- 1–25 tool calls per batch
- All calls start in parallel; ordering NOT guaranteed
- Partial failures do not stop other tool calls
- Every call is checked against your permissions and hooks exactly like a direct call
- Do NOT use the batch tool within another batch tool.

Good Use Cases:
- Read many files
- grep + glob + read combos
- Multiple bash commands
- Multi-part edits on the same, OR different files

When NOT to Use:
- Operations that depend on prior tool output (e.g. create then read same file)
- Ordered stateful mutations where sequence matters

Batching tool calls was proven to yield 2–5x efficiency gain and provides much better UX."""

EXPECTED = '  [{"tool": "tool_name", "parameters": {...}}, {...}]'


class BatchTool(Tool):
    name = "batch"
    description = DESCRIPTION
    asks_permission = True  # none for itself: every sub-call asks its own

    def _build_model(self) -> Any:
        from pydantic import BaseModel, ConfigDict, Field

        class BatchCall(BaseModel):
            model_config = ConfigDict(extra="ignore")
            tool: str = Field(description="The name of the tool to execute")
            parameters: dict[str, Any] = Field(description="Parameters for the tool")

        class BatchArgs(BaseModel):
            model_config = ConfigDict(extra="forbid")
            tool_calls: list[BatchCall] = Field(
                min_length=1, description="Array of tool calls to execute in parallel"
            )

        self.Args = BatchArgs  # type: ignore[misc]  # run() receives the validated model
        return BatchArgs

    def format_validation_error(self, error: Any) -> str:
        lines = ["Invalid parameters for tool 'batch':"]
        for item in error.errors():
            path = ".".join(str(p) for p in item["loc"]) or "(root)"
            if item.get("type") == "too_short" and tuple(item["loc"]) == ("tool_calls",):
                message = "Provide at least one tool call"
            elif item.get("type") == "missing":
                message = "Required"
            elif item.get("type") == "extra_forbidden":
                message = "Unknown argument"
            else:
                message = str(item.get("msg", "Invalid value"))
            lines.append(f"  - {path}: {message}")
        lines += ["", "Expected payload format:", EXPECTED]
        return "\n".join(lines)

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        import asyncio

        calls = [(c.tool, c.parameters) for c in args.tool_calls]
        runtime = ctx.runtime
        available = sorted(
            e.name
            for e in runtime.registry.available(ctx.agent, ctx.session_id, ctx.model)
            if e.name not in DISALLOWED
        )
        folded = {name.lower() for name in available}

        async def one(index: int, tool: str, params: dict[str, Any]) -> tuple[bool, Any]:
            if index >= MAX_CALLS:
                return False, _refuse(
                    ctx, tool, params, f"Maximum of {MAX_CALLS} tools allowed in batch"
                )
            if tool in DISALLOWED:
                disallowed = ", ".join(sorted(DISALLOWED))
                message = f"Tool '{tool}' is not allowed in batch. Disallowed tools: {disallowed}"
                return False, _refuse(ctx, tool, params, message)
            if tool.lower() not in folded:
                message = f"Tool '{tool}' not in registry. Available tools: {', '.join(available)}"
                return False, _refuse(ctx, tool, params, message)
            outcome = await ctx.invoke_outcome(tool, params)
            return outcome.ok, outcome

        results = await asyncio.gather(*(one(i, t, p) for i, (t, p) in enumerate(calls)))

        total = len(calls)
        successful = sum(1 for ok, _ in results if ok)
        failed = total - successful
        if failed == 0:
            summary = (
                f"All {successful} tools executed successfully.\n\n"
                "Keep using the batch tool for optimal performance in your next response!"
            )
        else:
            summary = f"Executed {successful}/{total} tools successfully. {failed} failed."
        blocks, attachments, details = [], [], []
        for index, ((tool, _params), (ok, item)) in enumerate(zip(calls, results, strict=True)):
            details.append({"tool": tool, "success": ok})
            if ok:
                result = item.result
                attachments.extend(result.attachments)
                body, status = result.output, "completed"
                call_id = item.call.call_id
            elif isinstance(item, tuple):  # refused before it ran: (call id, message)
                call_id, body = item
                status = "error"
            else:
                call_id, body, status = item.call.call_id, item.error_text or "", "error"
            blocks.append(
                f'<tool_result index="{index + 1}" tool="{tool}" call_id="{call_id}" '
                f'status="{status}">\n{body}\n</tool_result>'
            )
        return ToolResult(
            title=f"Batch execution ({successful}/{total} successful)",
            output=summary + "\n\n" + "\n\n".join(blocks),
            metadata={
                "totalCalls": total,
                "successful": successful,
                "failed": failed,
                "tools": [tool for tool, _ in calls],
                "details": details,
            },
            attachments=attachments,
        )


def _refuse(ctx: ToolContext, tool: str, params: dict[str, Any], message: str) -> tuple[str, str]:
    """A sub-call that is not run: stored as an error part of its own; (call id, message)."""
    from hookcode.store import ToolPartRecord

    runtime = ctx.runtime
    call_id = runtime.new_id("call")
    now = time.time()
    runtime.record_part(
        ToolPartRecord(
            id=call_id,
            session_id=ctx.session_id,
            tool=str(tool),
            state="error",
            input=params if _jsonable(params) else {"raw": str(params)},
            message_id=ctx.message_id,
            error=message,
            time_start=now,
            time_end=now,
        )
    )
    runtime.events.publish(
        "tool.failed", session_id=ctx.session_id, call_id=call_id, tool=tool, error=message
    )
    return call_id, message


def _jsonable(value: Any) -> bool:
    import json

    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


batch = BatchTool()


@hookimpl
def register_tools(register: Callable[..., None]) -> None:
    register(batch)
