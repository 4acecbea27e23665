"""The session as a Claude-Code-style transcript, for hooks that read ``transcript_path``.

Claude Code hands its hooks the path of the session's transcript: JSON lines, one per message,
``{"type": "user" | "assistant", "message": {"role", "content": [blocks]}, "uuid",
"parentUuid", "sessionId", "timestamp", "cwd"}``. Hook scripts read it to find, say, what the
model said last or which files it touched. This module writes the same shape from hookcode's
store: text, thinking and ``tool_use`` blocks (Claude Code's tool names, inputs with their
snake_case twins) in assistant lines, each finished call's ``tool_result`` in a user line
after them.

The file is ``<data dir>/transcripts/<session id>.jsonl`` (mode 0600, in a 0700 directory,
every secret the runtime knows redacted), written whole (to a temporary file, then renamed)
before each hook run, so a hook never reads half of it.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hookcode.datadir import private_dir
from hookcode.fileio import atomic_write

from hookcode_shell_hooks.claude import claude_name, to_claude_input

__all__ = ["transcript_lines", "write_transcript"]


def write_transcript(runtime: Any, session_id: str, call: Any = None) -> str | None:
    """Write the transcript of ``session_id``; its path, or None when there is no such
    session or it cannot be written (a hook then gets ``transcript_path: null``). ``call``:
    the tool call a hook runs for, whose arguments the store may not have yet (its
    ``tool_use`` then shows them as the hook gets them)."""
    store = runtime.store
    if not session_id or store.get_session(session_id) is None:
        return None
    messages = store.messages(session_id)
    if call is not None:
        for message in messages:
            for part in message.get("parts") or []:
                state = part.get("state")
                if part.get("call_id") == call.call_id and state and not state.get("input"):
                    state["input"] = call.args
    registry = runtime.registry

    def tool_of(name: str) -> Any:
        entry = registry.get(name)
        return entry.tool if entry is not None else None

    # redacted like the session it comes from (the hook's call arguments, older sessions)
    lines = runtime.secrets.redact_value(
        transcript_lines(messages, session_id, str(runtime.cwd), tool_of)
    )
    data = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    target = Path(runtime.data_dir) / "transcripts" / f"{session_id}.jsonl"
    try:  # private, like the session it comes from (the store and the audit log)
        private_dir(target.parent)
        atomic_write(target, data.encode("utf-8"), mode=0o600)
    except OSError:
        return None
    return str(target)


def transcript_lines(
    messages: list[dict[str, Any]],
    session_id: str,
    cwd: str,
    tool_of: Callable[[str], Any] = lambda name: None,
) -> list[dict[str, Any]]:
    """The transcript lines of the store's ``messages`` (see :meth:`Store.messages`);
    ``tool_of(name)``: the tool object of that name, if any (an MCP tool's Claude Code name)."""
    out: list[dict[str, Any]] = []
    parent: str | None = None

    def line(kind: str, uuid: str, created: Any, message: dict[str, Any]) -> None:
        nonlocal parent
        out.append(
            {
                "type": kind,
                "uuid": uuid,
                "parentUuid": parent,
                "sessionId": session_id,
                "timestamp": _timestamp(created),
                "cwd": cwd,
                "message": message,
            }
        )
        parent = uuid

    for message in messages:
        parts = message.get("parts") or []
        if message.get("role") == "user":
            content = [block for block in map(_user_block, parts) if block is not None]
            if content:
                line(
                    "user",
                    message["id"],
                    message.get("created"),
                    {"role": "user", "content": content},
                )
            continue
        content, results = [], []
        for part in parts:
            block = _assistant_block(part, cwd, tool_of)
            if block is not None:
                content.append(block)
            result = _tool_result(part)
            if result is not None:
                results.append(result)
        if content:
            line(
                "assistant",
                message["id"],
                message.get("created"),
                {
                    "id": message["id"],
                    "type": "message",
                    "role": "assistant",
                    "model": message.get("model"),
                    "content": content,
                    "stop_reason": message.get("finish"),
                },
            )
        if results:
            line(
                "user",
                f"{message['id']}-results",
                message.get("completed") or message.get("created"),
                {"role": "user", "content": results},
            )
    return out


def _timestamp(created: Any) -> str | None:
    if not isinstance(created, int | float):
        return None
    moment = datetime.fromtimestamp(created, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _user_block(part: dict[str, Any]) -> dict[str, Any] | None:
    kind = part.get("type")
    if kind == "text" and part.get("text"):
        return {"type": "text", "text": part["text"]}
    if kind == "file":
        return {"type": "text", "text": f"[file {part.get('filename') or part.get('mime')}]"}
    return None


def _assistant_block(
    part: dict[str, Any], cwd: str, tool_of: Callable[[str], Any]
) -> dict[str, Any] | None:
    kind = part.get("type")
    if kind == "text" and part.get("text"):
        return {"type": "text", "text": part["text"]}
    if kind == "reasoning":
        if part.get("redacted"):
            return {"type": "redacted_thinking", "data": part["redacted"]}
        if part.get("text") or part.get("signature"):
            return {
                "type": "thinking",
                "thinking": part.get("text") or "",
                "signature": part.get("signature") or "",
            }
        return None
    if kind == "tool":
        state = part.get("state") or {}
        value = state.get("input")
        if not value and state.get("raw"):  # not validated yet (a PreToolUse hook runs now)
            with contextlib.suppress(ValueError):
                value = json.loads(state["raw"])
        name = str(part.get("tool"))
        return {
            "type": "tool_use",
            "id": part.get("call_id"),
            "name": claude_name(name, tool_of(name)),
            "input": to_claude_input(value if isinstance(value, dict) else {}, name, cwd),
        }
    return None


def _tool_result(part: dict[str, Any]) -> dict[str, Any] | None:
    if part.get("type") != "tool":
        return None
    state = part.get("state") or {}
    status = state.get("status")
    if status == "completed":
        return {
            "type": "tool_result",
            "tool_use_id": part.get("call_id"),
            "content": state.get("output") or "",
        }
    if status == "error":
        return {
            "type": "tool_result",
            "tool_use_id": part.get("call_id"),
            "content": state.get("error") or "error",
            "is_error": True,
        }
    return None  # pending or running: no result yet
