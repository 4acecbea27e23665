"""hookcode's provider-neutral request -> the body of an Anthropic Messages API request.

Standard library only (no SDK): the body is plain JSON-compatible dicts, so it can be built and
checked without the network.

Messages
    ``user`` and ``tool`` messages become user turns, ``assistant`` messages assistant turns;
    consecutive turns of one role are merged, and in a user turn the ``tool_result`` blocks come
    first (the API wants every ``tool_use`` answered in the very next user turn, before any
    text). ``reasoning`` blocks with a signature go back as ``thinking`` blocks (a ``redacted``
    one as ``redacted_thinking``); reasoning without a signature (another provider's) is dropped.
    Tool-result attachments (images, PDFs, text) are sent as content blocks inside the
    ``tool_result``. A trailing assistant message (the loop's step-limit instruction) is sent
    as user text: Anthropic would read it as a prefill. When no tools are offered but the
    history has calls, stub definitions of those tools are sent with ``tool_choice: none``
    (the API wants every tool of the history defined).

Prompt caching
    ``cache_control: {"type": "ephemeral"}`` on the last system block, the last tool and the
    last block of each of the last two messages: four breakpoints, the API's maximum.

Thinking (``params["options"]["thinking"]``, set by an agent's ``options`` or ``chat_params``)
    * an int N, or ``{"budget_tokens": N}``: extended thinking, ``{"type": "enabled",
      "budget_tokens": N}`` (N >= 1024; ``max_tokens`` is raised above N when needed);
    * ``True``: extended thinking with a budget of 8000 tokens;
    * ``"adaptive"`` or ``{"type": "adaptive", ...}`` (newer models), ``"disabled"`` / ``False``;
    * any other dict with a ``type`` is sent as it is.
    With thinking on, ``temperature``, ``top_p`` and ``top_k`` are not sent (the API rejects
    them). ``options["effort"]`` (``low`` .. ``max``) is sent as ``output_config.effort``.
    Models that think adaptively (the 5.x family; ``AnthropicModel.thinking``) reject budgets,
    ``disabled`` and sampling parameters: a budget becomes ``{"type": "adaptive"}``,
    ``disabled`` becomes ``between_tools``, and no sampling parameter is sent.

Other params
    ``max_tokens`` (default: the model's output limit capped at 32000, 8192 for an unknown
    model); ``temperature``, and ``top_p`` only when no temperature is set (newer models reject
    both); ``options["top_k"]``, ``options["stop_sequences"]``, ``options["cache"] = False``
    (no cache breakpoints for this request).
"""

from __future__ import annotations

import json
from typing import Any

from hookcode.providers import Message, ModelRequest

__all__ = [
    "DEFAULT_THINKING_BUDGET",
    "IMAGE_TYPES",
    "attachment_block",
    "build_body",
    "convert_messages",
    "thinking_config",
]

DEFAULT_THINKING_BUDGET = 8000
MIN_THINKING_BUDGET = 1024
IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
EPHEMERAL = {"type": "ephemeral"}
#: blocks that may not carry a cache_control breakpoint
_NO_CACHE = frozenset({"thinking", "redacted_thinking"})
_ANY_OBJECT: dict[str, Any] = {"type": "object", "properties": {}}


# ---------------------------------------------------------------------------------------------
# content blocks
# ---------------------------------------------------------------------------------------------


def _split_data_url(url: str) -> tuple[str, str] | None:
    """``data:image/png;base64,AAAA`` -> ("image/png", "AAAA"); None for other URLs."""
    if not url.startswith("data:"):
        return None
    header, sep, data = url[5:].partition(",")
    if not sep or ";base64" not in header:
        return None
    return header.split(";", 1)[0], data


def attachment_block(attachment: dict[str, Any]) -> dict[str, Any]:
    """An attachment ``{mime, url, filename}`` as an Anthropic content block."""
    mime = str(attachment.get("mime") or "").lower()
    url = str(attachment.get("url") or "")
    name = attachment.get("filename") or ""
    inline = _split_data_url(url)
    if inline is not None:
        mime = mime or inline[0]
    if mime in IMAGE_TYPES or (mime.startswith("image/") and inline is None):
        if inline is not None:
            source = {"type": "base64", "media_type": mime, "data": inline[1]}
        elif url.startswith(("http://", "https://")):
            source = {"type": "url", "url": url}
        else:
            return _unsupported(name, mime)
        return {"type": "image", "source": source}
    if mime == "application/pdf":
        if inline is not None:
            source = {"type": "base64", "media_type": mime, "data": inline[1]}
        elif url.startswith(("http://", "https://")):
            source = {"type": "url", "url": url}
        else:
            return _unsupported(name, mime)
        block: dict[str, Any] = {"type": "document", "source": source}
        if name:
            block["title"] = str(name)
        return block
    if mime.startswith("text/") and inline is not None:
        import base64

        try:
            text = base64.b64decode(inline[1]).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return _unsupported(name, mime)
        block = {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": text},
        }
        if name:
            block["title"] = str(name)
        return block
    return _unsupported(name, mime)


def _unsupported(name: str, mime: str) -> dict[str, Any]:
    label = f"{name} " if name else ""
    return {"type": "text", "text": f"[attachment {label}({mime or 'unknown type'}) not sent]"}


def _tool_result(block: dict[str, Any]) -> dict[str, Any]:
    output = block.get("output")
    text = output if isinstance(output, str) else json.dumps(output, default=str)
    out: dict[str, Any] = {"type": "tool_result", "tool_use_id": str(block.get("id", ""))}
    attachments = [a for a in block.get("attachments") or [] if isinstance(a, dict)]
    if attachments:
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        content += [attachment_block(a) for a in attachments]
        out["content"] = content
    elif text:
        out["content"] = text
    if block.get("is_error"):
        out["is_error"] = True
    return out


def _user_block(block: dict[str, Any]) -> dict[str, Any] | None:
    kind = block.get("type")
    if kind == "text":
        text = block.get("text") or ""
        return {"type": "text", "text": text} if text else None
    if kind == "tool_result":
        return _tool_result(block)
    if kind in ("image", "file", "attachment", "document") and block.get("url"):
        return attachment_block(block)
    return None


def _assistant_block(block: dict[str, Any]) -> dict[str, Any] | None:
    kind = block.get("type")
    if kind == "text":
        text = block.get("text") or ""
        return {"type": "text", "text": text} if text else None
    if kind == "reasoning":
        if block.get("redacted"):
            return {"type": "redacted_thinking", "data": str(block["redacted"])}
        signature = block.get("signature")
        if not signature:
            return None  # another provider's reasoning: the API would reject it
        return {"type": "thinking", "thinking": block.get("text") or "", "signature": signature}
    if kind == "tool_use":
        value = block.get("input")
        if not isinstance(value, dict):
            value = {} if value in (None, "") else {"input": value}
        return {
            "type": "tool_use",
            "id": str(block.get("id", "")),
            "name": str(block.get("name", "")),
            "input": value,
        }
    return None


# ---------------------------------------------------------------------------------------------
# messages
# ---------------------------------------------------------------------------------------------


def convert_messages(messages: list[Message], thinking_for: Any = None) -> list[dict[str, Any]]:
    """Anthropic ``messages``. ``thinking_for(tool_use_id)`` may return the thinking blocks of
    the reply that made that call, for an assistant message that lost them."""
    out: list[dict[str, Any]] = []
    for message in messages:
        role = "assistant" if message.role == "assistant" else "user"
        convert = _assistant_block if role == "assistant" else _user_block
        blocks = [b for b in (convert(dict(block)) for block in message.content) if b]
        if role == "assistant" and thinking_for is not None:
            has_thinking = any(b["type"] in _NO_CACHE for b in blocks)
            first_call = next((b["id"] for b in blocks if b["type"] == "tool_use"), None)
            if not has_thinking and first_call:
                blocks = list(thinking_for(first_call) or []) + blocks
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    for turn in out:
        if turn["role"] == "user":
            # tool results first, in call order (a stable sort keeps the rest in order)
            turn["content"].sort(key=lambda b: 0 if b["type"] == "tool_result" else 1)
    return out


def _mark_last(blocks: list[dict[str, Any]]) -> bool:
    for block in reversed(blocks):
        if block.get("type") not in _NO_CACHE:
            block["cache_control"] = dict(EPHEMERAL)
            return True
    return False


# ---------------------------------------------------------------------------------------------
# params
# ---------------------------------------------------------------------------------------------


def thinking_config(value: Any) -> dict[str, Any] | None:
    """``options["thinking"]`` -> the API's ``thinking`` object (None: leave it to the API)."""
    if value is None:
        return None
    if value is False or value == "disabled":
        return {"type": "disabled"}
    if value is True or value == "enabled":
        return {"type": "enabled", "budget_tokens": DEFAULT_THINKING_BUDGET}
    if isinstance(value, int):
        return {"type": "enabled", "budget_tokens": max(MIN_THINKING_BUDGET, value)}
    if isinstance(value, str):
        return {"type": value}
    if isinstance(value, dict):
        config = dict(value)
        if "budget_tokens" in config:
            config.setdefault("type", "enabled")
            config["budget_tokens"] = max(MIN_THINKING_BUDGET, int(config["budget_tokens"]))
        if "type" not in config:
            return None
        return config
    raise ValueError(f"options.thinking: expected a budget, true/false or a table, got {value!r}")


def build_body(
    request: ModelRequest,
    *,
    default_max_tokens: int,
    model_output: int | None = None,
    adaptive: bool = False,
    cache: bool = True,
    thinking_for: Any = None,
) -> dict[str, Any]:
    """The keyword arguments of ``client.messages.create`` (without ``stream``)."""
    params = request.params or {}
    options = dict(params.get("options") or {})
    body: dict[str, Any] = {"model": request.model}

    max_tokens = int(params.get("max_tokens") or options.get("max_tokens") or default_max_tokens)
    thinking: dict[str, Any] | None = thinking_config(options.get("thinking"))
    if adaptive and thinking:
        # the 5.x models think adaptively: no budgets, and `between_tools` is their "off"
        if thinking["type"] == "enabled":
            thinking = {"type": "adaptive", **{k: v for k, v in thinking.items() if k == "display"}}
        elif thinking["type"] == "disabled":
            thinking = {"type": "between_tools"}
    if thinking and thinking.get("type") == "enabled":
        budget = int(thinking["budget_tokens"])
        if budget >= max_tokens:
            max_tokens = budget + 4096
            if model_output and max_tokens > model_output:
                max_tokens = model_output
                thinking["budget_tokens"] = max(MIN_THINKING_BUDGET, max_tokens - 4096)
    body["max_tokens"] = max_tokens

    system = [{"type": "text", "text": part} for part in request.system if part and part.strip()]
    cache = cache and options.get("cache", True) is not False
    if system:
        if cache:
            _mark_last(system)
        body["system"] = system

    if request.tools:
        tools = [
            {
                "name": tool["name"],
                "description": tool.get("description") or "",
                "input_schema": tool.get("parameters") or {"type": "object", "properties": {}},
            }
            for tool in request.tools
        ]
        if cache:
            tools[-1]["cache_control"] = dict(EPHEMERAL)
        body["tools"] = tools

    messages = convert_messages(request.messages, thinking_for)
    if len(messages) > 1 and messages[-1]["role"] == "assistant":
        # a trailing assistant message (the loop's step-limit instruction) would be a prefill,
        # which thinking forbids and newer models reject: send its text as user text
        texts = [b for b in messages.pop()["content"] if b["type"] == "text"]
        if texts and messages[-1]["role"] == "user":
            messages[-1]["content"].extend(texts)
    used = sorted({b["name"] for m in messages for b in m["content"] if b["type"] == "tool_use"})
    if used and not request.tools:
        # the API wants every tool of the history defined: stubs, and no calls this time
        body["tools"] = [
            {"name": name, "description": "Not available now.", "input_schema": _ANY_OBJECT}
            for name in used
        ]
        body["tool_choice"] = {"type": "none"}
    if cache:
        for turn in messages[-2:]:
            _mark_last(turn["content"])
    body["messages"] = messages

    thinking_on = bool(thinking) and thinking.get("type") != "disabled"  # type: ignore[union-attr]
    if thinking:
        body["thinking"] = thinking
    if not thinking_on and not adaptive:
        if params.get("temperature") is not None:
            body["temperature"] = params["temperature"]
        elif params.get("top_p") is not None:
            body["top_p"] = params["top_p"]
        if options.get("top_k") is not None:
            body["top_k"] = int(options["top_k"])
    if options.get("effort"):
        body["output_config"] = {"effort": str(options["effort"])}
    if options.get("stop_sequences"):
        body["stop_sequences"] = [str(s) for s in options["stop_sequences"]]
    return body
