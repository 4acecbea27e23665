"""hookcode-jsonl-log: an example hook plugin that logs every tool call as one JSON line.

Each finished call appends one line to the log, for example::

    {"time": "2025-06-01T12:00:00.123+00:00", "session_id": "ses_...", "call_id": "call_...",
     "parent_call_id": null, "tool": "wordcount", "agent": "build",
     "args": {"filePath": "a.txt"}, "ok": true, "title": "a.txt", "duration_ms": 1.734}

A failed call (invalid arguments, a refused permission, a blocked call, the tool's own error)
has ``"ok": false`` with ``"error"`` (the text the model reads) and ``"error_type"`` instead
of ``"title"``. ``duration_ms`` runs from ``tool_execute_before`` to the end of the call; it
is null for calls that failed before that hook (unknown tool, invalid arguments).

The log is ``$HOOKCODE_JSONL_LOG``, else ``<data dir>/tool-calls.jsonl``. A log that cannot
be written fails the call (hookcode fails tool calls closed when a hook raises), so no call
goes unrecorded.
"""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hookcode import hookimpl

if TYPE_CHECKING:
    from hookcode import ToolCall, ToolContext, ToolResult

__all__ = ["log_path"]

ENV = "HOOKCODE_JSONL_LOG"
DEFAULT_NAME = "tool-calls.jsonl"

_started: dict[str, float] = {}  # call_id -> time.perf_counter() in tool_execute_before
_lock = threading.Lock()


def log_path(ctx: ToolContext) -> Path:
    """Where the lines go: ``$HOOKCODE_JSONL_LOG`` or ``<data dir>/tool-calls.jsonl``."""
    configured = ctx.runtime.env.get(ENV)
    return Path(configured).expanduser() if configured else Path(ctx.data_dir) / DEFAULT_NAME


@hookimpl(tryfirst=True)
def tool_execute_before(call: ToolCall) -> None:
    # first of the before hooks, so the duration covers the others too
    _started[call.call_id] = time.perf_counter()


@hookimpl(trylast=True)
def tool_execute_after(call: ToolCall, result: ToolResult, ctx: ToolContext) -> None:
    # last of the after hooks, so the title is the one the model sees
    _write(ctx, call, ok=True, title=result.title)


@hookimpl(tryfirst=True)
def tool_execute_error(call: ToolCall, error: BaseException, ctx: ToolContext) -> None:
    # first of the error hooks: one that recovers the call stops the others
    kind = type(error).__name__
    _write(ctx, call, ok=False, error=str(error) or kind, error_type=kind)


def _write(ctx: ToolContext, call: ToolCall, **outcome: Any) -> None:
    started = _started.pop(call.call_id, None)
    duration = None if started is None else round((time.perf_counter() - started) * 1000, 3)
    record = {
        "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
        "session_id": call.session_id,
        "call_id": call.call_id,
        "parent_call_id": call.parent_call_id,
        "tool": call.tool,
        "agent": call.agent,
        "args": call.args,
        **outcome,
        "duration_ms": duration,
    }
    line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
    path = log_path(ctx)
    with _lock:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as fh:
            fh.write(line)
