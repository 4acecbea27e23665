"""Context management: pruning old tool outputs, and when compaction is due.

Pruning (reference/agent-loop.md §7) runs after the loop: walking back from the newest message,
skipping the two most recent user turns, tool outputs beyond the newest :data:`PRUNE_PROTECT`
estimated tokens are marked compacted, but only when the prunable total exceeds
:data:`PRUNE_MINIMUM`. The outputs of tools declared ``prunable = False`` (skill: the
instructions it loaded) are never pruned. A compacted output is sent to the model as
``[Old tool result content cleared]`` without its attachments.

Compaction: when the conversation nears the model's context window (the last reply's token
usage plus an estimate of what was added since, against the window minus the output reserve),
the hidden ``compaction`` agent summarises the history; the summary replaces everything
before it and the loop goes on. The ``compaction`` agent's prompt (``agent`` hook or
``[agent.compaction] prompt``), and the ``system_prompt`` / ``chat_params`` hooks (called with
that agent) shape the request.

``[experimental] compaction = {auto = true, prune = true, reserved = 20000}`` switches either
off, or sets the tokens kept free below the window (default: the model's output limit,
at most 32 000).
"""

from __future__ import annotations

from collections.abc import Container
from typing import TYPE_CHECKING, Any

from hookcode.messages import (
    CompactionPart,
    SessionMessage,
    ToolPart,
    estimate_tokens,
)

if TYPE_CHECKING:
    from hookcode.providers import ModelInfo

__all__ = [
    "COMPACTION_PROMPT",
    "CONTINUE_TEXT",
    "PRUNE_MINIMUM",
    "PRUNE_PROTECT",
    "SUMMARY_REQUEST",
    "context_tokens",
    "overflows",
    "prunable",
    "settings",
]

PRUNE_PROTECT = 40_000
PRUNE_MINIMUM = 20_000
OUTPUT_RESERVE_MAX = 32_000

COMPACTION_PROMPT = (
    "You are a helpful AI assistant tasked with summarizing conversations. When asked to "
    "summarize, provide a detailed but concise summary of the conversation. Focus on "
    "information that would be helpful for continuing the conversation, including: what was "
    "done, what is currently being worked on, which files are being modified, what needs to "
    "be done next, key user requests, constraints or preferences that should persist, and "
    "important technical decisions and why they were made. Your summary should be "
    "comprehensive enough to provide context but concise enough to be quickly understood."
)
SUMMARY_REQUEST = (
    "Provide a detailed prompt for continuing our conversation above. Focus on information "
    "that would be helpful for continuing the conversation, including what we did, what we're "
    "doing, which files we're working on, and what we're going to do next, considering that "
    "the new session will not have access to our conversation."
)
CONTINUE_TEXT = "Continue if you have next steps."


def settings(config: Any) -> dict[str, Any]:
    """``[experimental] compaction`` with defaults: ``auto``, ``prune``, ``reserved``."""
    raw = {}
    experimental = getattr(getattr(config, "core", None), "experimental", None) or {}
    if isinstance(experimental.get("compaction"), dict):
        raw = experimental["compaction"]
    return {
        "auto": bool(raw.get("auto", True)),
        "prune": bool(raw.get("prune", True)),
        "reserved": raw.get("reserved"),
    }


def prunable(messages: list[SessionMessage], kept: Container[str] = ()) -> list[ToolPart]:
    """The tool parts whose outputs pruning clears now (possibly none); the outputs of the
    tools named in ``kept`` are never cleared (``Registry.kept_outputs``)."""
    turns = 0
    total = 0
    pruned = 0
    found: list[ToolPart] = []
    for message in reversed(messages):
        if message.role == "user":
            turns += 1
        if turns < 2:
            continue
        if message.role == "assistant" and message.summary:
            break
        for part in reversed(message.parts):
            if not isinstance(part, ToolPart) or part.state.status != "completed":
                continue
            if part.tool in kept:
                continue
            if part.state.time.compacted:
                return _enough(found, pruned)
            estimate = estimate_tokens(part.state.output or "")
            total += estimate
            if total > PRUNE_PROTECT:
                pruned += estimate
                found.append(part)
    return _enough(found, pruned)


def _enough(found: list[ToolPart], pruned: int) -> list[ToolPart]:
    return found if pruned > PRUNE_MINIMUM else []


def context_tokens(messages: list[SessionMessage], fixed: int = 0) -> int:
    """Tokens the next request will use: the last reply's usage (input, output, cache) plus an
    estimate of everything added after it (its tool outputs, later messages); with no reply
    yet, an estimate of the whole visible history plus ``fixed`` (system prompt, tools).
    Read from the end, it stops at that reply: its cost does not grow with the history."""
    added = 0
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "assistant" and message.tokens.total > 0:
            added += sum(
                estimate_tokens(p.state.output or "")
                for p in message.tool_parts()
                if p.state.status == "completed" and not p.state.time.compacted
            )
            return message.tokens.total + added
        added += _estimate_message(message)
        if message.role == "assistant" and message.summary and not message.error:
            # the start of the visible history (visible_history): with the request for it
            before = messages[index - 1] if index > 0 else None
            if before is not None and any(isinstance(p, CompactionPart) for p in before.parts):
                added += _estimate_message(before)
            break
    return fixed + added


def _estimate_message(message: SessionMessage) -> int:
    size = 0
    for part in message.parts:
        if isinstance(part, ToolPart):
            size += estimate_tokens(part.state.input)
            if part.state.status == "completed" and not part.state.time.compacted:
                size += estimate_tokens(part.state.output or "")
            else:
                size += estimate_tokens(part.state.error or "")
        else:
            size += estimate_tokens(getattr(part, "text", "") or "")
    return size


def overflows(tokens: int, info: ModelInfo | None, reserved: int | None = None) -> bool:
    """Whether ``tokens`` come too close to the model's context window (unknown: never)."""
    if info is None or not info.context:
        return False
    reserve = (
        reserved
        if reserved is not None
        else min(info.output or OUTPUT_RESERVE_MAX, OUTPUT_RESERVE_MAX)
    )
    usable = info.context - reserve
    if usable <= 0:
        usable = int(info.context * 0.8)
    return tokens > usable
