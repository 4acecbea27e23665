"""The Chat Completions wire format: request bodies, SSE parsing and stream assembly.

Pure functions and one small state machine (:class:`StreamAssembler`), no HTTP: the
provider feeds it the chunks it reads and forwards the events it returns.

Tool calls arrive as ``delta.tool_calls[]`` fragments keyed by ``index``; only the first
fragment of a call carries its ``id`` and ``name``, the ``arguments`` strings are
concatenated. Fragments of several calls may interleave, so no call is complete before the
choice's ``finish_reason`` arrives: then every call ends (its arguments parsed, or the raw
string when they are not valid JSON, so the pipeline tells the model), except with
``finish_reason: "length"``, where none of them runs.
"""

from __future__ import annotations

import base64
import json
import random
import urllib.parse
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hookcode.providers import (
    Finish,
    Message,
    ReasoningDelta,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolInputDelta,
    Usage,
)

__all__ = [
    "FINISH_REASONS",
    "Prices",
    "StreamAssembler",
    "build_body",
    "build_messages",
    "build_tools",
    "error_message",
    "parse_data",
    "sse_events",
]

#: Chat Completions finish reasons -> hookcode's
FINISH_REASONS = {
    "tool_calls": "tool-calls",
    "function_call": "tool-calls",  # the legacy name
    "stop": "stop",
    "length": "length",
    "content_filter": "content-filter",
}

#: request keys the provider owns: ``params["options"]`` cannot replace them
OWN_KEYS = frozenset({"model", "messages", "stream", "stream_options", "tools"})


# ----------------------------------------------------------------------------- request


def build_tools(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """hookcode tool definitions -> ``[{"type": "function", "function": {...}}]``."""
    out = []
    for tool in tools:
        parameters = tool.get("parameters") or {"type": "object", "properties": {}}
        out.append(
            {
                "type": "function",
                "function": {
                    "name": tool["name"],
                    "description": tool.get("description") or "",
                    "parameters": parameters,
                },
            }
        )
    return out


def _arguments(value: Any) -> str:
    """A tool_use input as the JSON string the API expects (a raw string stays as it was)."""
    if isinstance(value, str):
        return value
    return json.dumps(value if value is not None else {}, ensure_ascii=False)


def _media_part(attachment: Mapping[str, Any]) -> dict[str, Any] | None:
    """An attachment (``{"mime", "url", "filename"}``) as a content part: images as
    ``image_url``, PDFs as ``file``, text data URLs as text; None for anything else."""
    mime = str(attachment.get("mime") or "")
    url = str(attachment.get("url") or "")
    name = attachment.get("filename")
    if not url:
        return None
    if mime.startswith("image/"):
        return {"type": "image_url", "image_url": {"url": url}}
    if mime == "application/pdf":
        return {"type": "file", "file": {"filename": str(name or "document.pdf"), "file_data": url}}
    if mime.startswith("text/") and url.startswith("data:"):
        header, _, payload = url.partition(",")
        try:
            if header.endswith(";base64"):
                text = base64.b64decode(payload).decode("utf-8", "replace")
            else:
                text = urllib.parse.unquote(payload)
        except ValueError:
            return None
        label = f"{name}:\n" if name else ""
        return {"type": "text", "text": f"{label}{text}"}
    return None


def _user_content(blocks: Sequence[Mapping[str, Any]]) -> str | list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "text":
            if block.get("text"):
                parts.append({"type": "text", "text": str(block["text"])})
        elif kind in ("image", "file", "attachment"):
            media = _media_part(block)
            if media is not None:
                parts.append(media)
    if all(part["type"] == "text" for part in parts):
        return "\n\n".join(part["text"] for part in parts)
    return parts


def build_messages(system: Sequence[str], messages: Sequence[Message]) -> list[dict[str, Any]]:
    """hookcode's provider-neutral history -> Chat Completions ``messages``.

    * the system prompt parts become one ``system`` message;
    * an assistant turn carries its text as ``content`` (null when it only calls tools) and
      its calls as ``tool_calls`` with the arguments as a JSON **string**; reasoning is not
      sent back (Chat Completions has no field for it);
    * each tool result becomes a ``tool`` message; Chat Completions takes no media there, so
      the results' attachments (images, PDFs) go into one synthetic ``user`` message after
      the results, each announced by the call it came from (reference/agent-loop.md §8).
    """
    out: list[dict[str, Any]] = []
    prompt = "\n\n".join(part for part in system if part and part.strip())
    if prompt:
        out.append({"role": "system", "content": prompt})
    for message in messages:
        if message.role == "user":
            content = _user_content(message.content)
            if content:
                _append_user(out, content)
        elif message.role == "assistant":
            text = "".join(
                str(b.get("text") or "") for b in message.content if b.get("type") == "text"
            )
            calls = [
                {
                    "id": str(b.get("id")),
                    "type": "function",
                    "function": {
                        "name": str(b.get("name")),
                        "arguments": _arguments(b.get("input")),
                    },
                }
                for b in message.content
                if b.get("type") == "tool_use"
            ]
            if not text and not calls:
                continue
            entry: dict[str, Any] = {"role": "assistant", "content": text or None}
            if calls:
                entry["tool_calls"] = calls
            out.append(entry)
        elif message.role == "tool":
            media: list[dict[str, Any]] = []
            for block in message.content:
                if block.get("type") != "tool_result":
                    continue
                output = block.get("output")
                text = output if isinstance(output, str) else json.dumps(output, default=str)
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": str(block.get("id")),
                        "content": text or "(no output)",
                    }
                )
                for attachment in block.get("attachments") or []:
                    part = _media_part(attachment)
                    if part is None:
                        continue
                    name = attachment.get("filename")
                    label = f" ({name})" if name else ""
                    media.append(
                        {
                            "type": "text",
                            "text": f"Attachment of tool call {block.get('id')}{label}:",
                        }
                    )
                    media.append(part)
            if media:
                _append_user(out, media)
    return out


def _append_user(out: list[dict[str, Any]], content: str | list[dict[str, Any]]) -> None:
    """Append a user message; one right after another user message (the attachments of tool
    results) is merged into it, so the results' media come first."""
    if out and out[-1]["role"] == "user":
        previous = out[-1]["content"]
        parts = [{"type": "text", "text": previous}] if isinstance(previous, str) else previous
        parts += [{"type": "text", "text": content}] if isinstance(content, str) else content
        out[-1]["content"] = parts
        return
    out.append({"role": "user", "content": content})


def build_body(
    model: str,
    system: Sequence[str],
    messages: Sequence[Message],
    tools: Sequence[Mapping[str, Any]],
    params: Mapping[str, Any],
    *,
    max_tokens_key: str = "max_tokens",
) -> dict[str, Any]:
    """The JSON body of one streaming ``POST /chat/completions``."""
    body: dict[str, Any] = {
        "model": model,
        "messages": build_messages(system, messages),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if tools:
        body["tools"] = build_tools(tools)
    for key in ("temperature", "top_p"):
        if params.get(key) is not None:
            body[key] = params[key]
    if params.get("max_tokens") is not None:
        body[max_tokens_key] = params["max_tokens"]
    options = params.get("options") or {}
    if isinstance(options, Mapping):
        for key, value in options.items():
            if key not in OWN_KEYS:
                body[key] = value
    return body


# ----------------------------------------------------------------------------- errors


def error_message(status: int, raw: bytes) -> str:
    """The server's message from an error body (``{"error": {"message"}}`` and the variants
    compatible servers use), else a short excerpt of the body."""
    text = raw.decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    message = None
    kind = None
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict):
            message = error.get("message") or error.get("detail")
            kind = error.get("type") or error.get("code")
        elif isinstance(error, str):
            message = error
        if message is None and isinstance(data.get("detail"), str):
            message = data["detail"]
        if message is None and isinstance(data.get("message"), str):
            message = data["message"]
    if not message:
        message = " ".join(text.split())[:300] or "(empty body)"
    prefix = f"HTTP {status}"
    if isinstance(kind, str) and kind:
        prefix += f" {kind}"
    return f"{prefix}: {message}"


# ----------------------------------------------------------------------------- SSE


async def sse_events(lines: AsyncIterator[str]) -> AsyncIterator[tuple[str | None, str]]:
    """Server-sent events as ``(event name, data)``; comment lines are skipped. Servers that
    forget the blank line between events are tolerated by :func:`parse_data`; a last event
    with no blank line after it is still read, and so is a stream served under another
    content type than ``text/event-stream`` (httpx-sse 0.4 drops the one and refuses the
    other, which is why this parser is kept)."""
    event: str | None = None
    data: list[str] = []
    async for line in lines:
        if line == "":
            if data:
                yield event, "\n".join(data)
            event, data = None, []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
    if data:
        yield event, "\n".join(data)


def parse_data(data: str) -> list[Any] | None:
    """The JSON payload(s) of one event's data: one object, or one per line when a server ran
    several events together; None when it is not JSON."""
    try:
        return [json.loads(data)]
    except ValueError:
        pass
    lines = [line for line in data.split("\n") if line.strip()]
    if len(lines) < 2:
        return None
    try:
        return [json.loads(line) for line in lines if line.strip() != "[DONE]"]
    except ValueError:
        return None


# ----------------------------------------------------------------------------- assembly


@dataclass
class Prices:
    """USD per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cached_input: float | None = None


@dataclass
class _Call:
    slot: int
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    started: bool = False
    pending: list[str] = field(default_factory=list)  # fragments seen before the start


class StreamAssembler:
    """Turns Chat Completions chunks into hookcode stream events."""

    def __init__(self, prices: Prices | None = None) -> None:
        self.prices = prices
        self.calls: dict[int, _Call] = {}  # slot -> call, in order of first appearance
        self.by_index: dict[int, int] = {}  # the wire's index -> slot
        self.last_slot: int | None = None
        self.finish: str | None = None
        self.raw_finish: str | None = None
        self.usage: Usage | None = None
        self._generated = 0
        self._fresh = 0

    # -- tool calls ---------------------------------------------------------------------------
    def _slot_for(self, entry: Mapping[str, Any]) -> _Call:
        call_id = entry.get("id") or ""
        index = entry.get("index")
        if not isinstance(index, int):
            # no index (some servers): a known id, a new id, or the call last seen
            for call in self.calls.values():
                if call_id and call.id == call_id:
                    return call
            if not call_id and self.last_slot is not None:
                return self.calls[self.last_slot]
            self._fresh -= 1
            index = self._fresh  # a wire key of its own
        slot = self.by_index.get(index)
        if slot is not None:
            call = self.calls[slot]
            # a server that reuses one index for several calls: another id with a name
            # starts a new call
            function = entry.get("function")
            named = isinstance(function, Mapping) and bool(function.get("name"))
            if not (call_id and call.id and call_id != call.id and named):
                return call
        slot = len(self.calls)
        self.calls[slot] = _Call(slot)
        self.by_index[index] = slot
        return self.calls[slot]

    def _tool_deltas(self, entries: Sequence[Any]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        for entry in entries:
            if not isinstance(entry, Mapping):
                continue
            call = self._slot_for(entry)
            self.last_slot = call.slot
            function = entry.get("function") or {}
            if not isinstance(function, Mapping):
                function = {}
            if entry.get("id") and not call.id:
                call.id = str(entry["id"])
            if function.get("name") and not call.name:
                call.name = str(function["name"])
            fragment = function.get("arguments")
            if isinstance(fragment, dict):  # a server that sends the arguments as an object
                fragment = json.dumps(fragment)
            if isinstance(fragment, str) and fragment:
                call.arguments.append(fragment)
                if call.started:
                    events.append(ToolInputDelta(call.id, fragment))
                else:
                    call.pending.append(fragment)
            if not call.started and call.name:
                events += self._start(call)
        return events

    def _start(self, call: _Call) -> list[StreamEvent]:
        if not call.id:
            self._generated += 1
            call.id = f"call_{self._generated}_{random.getrandbits(32):08x}"
        call.started = True
        events: list[StreamEvent] = [ToolCallStart(call.id, call.name)]
        events += [ToolInputDelta(call.id, text) for text in call.pending]
        call.pending = []
        return events

    def _end_calls(self) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        for call in self.calls.values():
            if not call.started:
                if not call.name and not call.arguments:
                    continue
                events += self._start(call)
            raw = "".join(call.arguments)
            value: Any
            if not raw.strip():
                value = {}
            else:
                try:
                    value = json.loads(raw)
                except ValueError:
                    value = raw  # the pipeline reports the invalid JSON to the model
                if not isinstance(value, dict):
                    value = raw
            events.append(ToolCallEnd(call.id, call.name, value))
        return events

    # -- chunks -------------------------------------------------------------------------------
    def feed(self, chunk: Any) -> list[StreamEvent]:
        """The events for one chunk (a parsed ``data:`` payload)."""
        if not isinstance(chunk, Mapping):
            return []
        if chunk.get("error"):
            error = chunk["error"]
            message = error.get("message") if isinstance(error, Mapping) else str(error)
            return [StreamError(f"error in the stream: {message or error}", retryable=False)]
        if isinstance(chunk.get("usage"), Mapping):
            self.usage = self._usage(chunk["usage"])
        events: list[StreamEvent] = []
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, Mapping) or (choice.get("index") or 0) != 0:
                continue  # only the first choice is used (n > 1 is never asked for)
            delta = choice.get("delta") or choice.get("message") or {}
            if isinstance(delta, Mapping):
                events += self._delta(delta)
            reason = choice.get("finish_reason")
            if reason and self.finish is None:
                events += self._finish(str(reason))
        return events

    def _delta(self, delta: Mapping[str, Any]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        for key in ("reasoning_content", "reasoning"):
            value = delta.get(key)
            if isinstance(value, str) and value:
                events.append(ReasoningDelta(value))
                break
        content = delta.get("content")
        if isinstance(content, str) and content:
            events.append(TextDelta(content))
        refusal = delta.get("refusal")
        if isinstance(refusal, str) and refusal:
            events.append(TextDelta(refusal))
        entries = delta.get("tool_calls")
        if isinstance(entries, list) and entries:
            events += self._tool_deltas(entries)
        return events

    def _finish(self, reason: str) -> list[StreamEvent]:
        self.raw_finish = reason
        mapped = FINISH_REASONS.get(reason, reason)
        has_calls = any(call.name or call.arguments for call in self.calls.values())
        if mapped == "stop" and has_calls:
            mapped = "tool-calls"  # servers that say "stop" after tool calls (older Ollama)
        self.finish = mapped
        if mapped == "length":
            return []  # cut by the output limit: no call is provably complete, none runs
        return self._end_calls()

    def _usage(self, data: Mapping[str, Any]) -> Usage:
        def number(value: Any) -> int:
            return int(value) if isinstance(value, int | float) else 0

        prompt = number(data.get("prompt_tokens"))
        completion = number(data.get("completion_tokens"))
        prompt_details = data.get("prompt_tokens_details") or {}
        completion_details = data.get("completion_tokens_details") or {}
        cached = (
            number(prompt_details.get("cached_tokens"))
            if isinstance(prompt_details, Mapping)
            else 0
        )
        reasoning = (
            number(completion_details.get("reasoning_tokens"))
            if isinstance(completion_details, Mapping)
            else 0
        )
        usage = Usage(
            input=max(prompt - cached, 0),
            output=completion,
            cache_read=cached,
            reasoning=reasoning,
        )
        if self.prices is not None:
            cached_price = self.prices.cached_input
            if cached_price is None:
                cached_price = self.prices.input
            usage.cost = (
                usage.input * self.prices.input
                + usage.cache_read * cached_price
                + usage.output * self.prices.output
            ) / 1_000_000
        return usage

    def end(self, done: bool) -> list[StreamEvent]:
        """The closing events once the stream is over (``done``: ``data: [DONE]`` was seen)."""
        if self.finish is None:
            if not done:
                return [
                    StreamError(
                        "the model's stream ended before the reply was complete", retryable=True
                    )
                ]
            # [DONE] with no finish_reason: nothing says the calls are complete; none runs
            pending = any(call.name or call.arguments for call in self.calls.values())
            self.finish = "unknown" if pending else "stop"
        return [Finish(self.finish, self.usage or Usage())]
