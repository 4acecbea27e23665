"""provider_anthropic (plugins/provider_anthropic) against a fake Anthropic server driven by the
real ``anthropic`` SDK (tests/plugins/fake_anthropic.py; offline-testing.md §1): the stream
mapping, thinking, tool results with attachments, prompt caching, usage and cost, errors and
retries, base URLs and credentials; then the whole loop (``run_session`` and ``hookcode run``)
with real tools."""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import struct
import subprocess
import sys
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_anthropic import SSE as Sse
from fake_anthropic import (
    ApiError,
    FakeAnthropic,
    error_event,
    load_sse,
    message_events,
    redacted_thinking,
    reply,
    text,
    thinking,
    tool_use,
)
from helpers.fakedist import run_cli
from hookcode.auth import Credentials
from hookcode.errors import ConfigError
from hookcode.providers import (
    Finish,
    Message,
    ModelRequest,
    ReasoningDelta,
    StreamError,
    TextDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolInputDelta,
)
from hookcode.session import CUT_OFF, run_session
from hookcode_provider_anthropic import DEFAULT_MODEL_ID, auth
from hookcode_provider_anthropic._config import AnthropicConfig
from hookcode_provider_anthropic._provider import AnthropicProvider, normalize_base_url
from hookcode_provider_anthropic.convert import build_body, thinking_config
from hookcode_provider_anthropic.models import MODELS, lookup_model

KEY = "sk-ant-test-0123456789abcdef"
LOGIN = "set ANTHROPIC_API_KEY or run `hookcode auth login anthropic`"
READ_TOOL = {
    "name": "read",
    "description": "Read a file",
    "parameters": {
        "type": "object",
        "properties": {"filePath": {"type": "string"}},
        "required": ["filePath"],
    },
}
PNG = (
    b"\x89PNG\r\n\x1a\n"
    + (lambda c, d: struct.pack(">I", len(d)) + c + d + struct.pack(">I", zlib.crc32(c + d)))(
        b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    )
    + (lambda c, d: struct.pack(">I", len(d)) + c + d + struct.pack(">I", zlib.crc32(c + d)))(
        b"IDAT", zlib.compress(b"\x00\xff\x00\x00")
    )
    + (lambda c: struct.pack(">I", 0) + c + struct.pack(">I", zlib.crc32(c)))(b"IEND")
)


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        server.keys = {KEY}
        yield server


def provider(
    fake: FakeAnthropic | None = None,
    tmp: Path | None = None,
    *,
    env: dict[str, str] | None = None,
    **settings: Any,
) -> AnthropicProvider:
    base = {"ANTHROPIC_API_KEY": KEY}
    if fake is not None:
        base["ANTHROPIC_BASE_URL"] = fake.url
    path = (tmp or Path("/nonexistent")) / "auth.json"
    return AnthropicProvider(
        AnthropicConfig(**settings), Credentials(path, env if env is not None else base)
    )


def request(
    *messages: Message, model: str = "test-model", tools=(READ_TOOL,), **params
) -> ModelRequest:
    return ModelRequest(
        model=model,
        system=["You are a test.", "<env>\n  Working directory: /p\n</env>"],
        messages=list(messages) or [Message("user", [{"type": "text", "text": "show README"}])],
        tools=list(tools),
        params={"temperature": None, "top_p": None, "max_tokens": None, "options": {}, **params},
    )


def collect(p: AnthropicProvider, req: ModelRequest) -> list[Any]:
    async def go() -> list[Any]:
        return [event async for event in p.stream(req)]

    return asyncio.run(go())


def finish_of(events: list[Any]) -> Finish:
    found = [e for e in events if isinstance(e, Finish)]
    assert len(found) == 1, events
    return found[0]


# ---------------------------------------------------------------------------------------------
# streaming
# ---------------------------------------------------------------------------------------------


def test_recorded_text_then_tool_stream_and_the_request_sent(fake: FakeAnthropic) -> None:
    fake.script("claude-sonnet-5-5", load_sse("text_then_tool", path="/p/README.md"))
    events = collect(provider(fake), request(model="claude-sonnet-5-5"))
    kinds = [type(e).__name__ for e in events]
    assert kinds == [
        "TextDelta",
        "TextDelta",
        "ToolCallStart",
        "ToolInputDelta",
        "ToolInputDelta",
        "ToolCallEnd",
        "Finish",
    ]
    assert (
        "".join(e.text for e in events if isinstance(e, TextDelta)) == "I'll read the file first."
    )
    end = next(e for e in events if isinstance(e, ToolCallEnd))
    assert (end.id, end.name, end.input) == (
        "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
        "read",
        {"filePath": "/p/README.md"},
    )
    finish = finish_of(events)
    assert finish.reason == "tool-calls"
    usage = finish.usage
    assert (usage.input, usage.output, usage.cache_read, usage.cache_write) == (2712, 71, 0, 1450)
    # claude-sonnet-5-5: $2 in, $10 out, $2.50 cache writes
    assert usage.cost == pytest.approx((2712 * 2 + 71 * 10 + 1450 * 2.5) / 1e6)

    [sent] = fake.requests
    assert sent["path"] == "/v1/messages"
    assert sent["headers"]["authorization"] == f"Bearer {KEY}"  # SDK 2.x
    assert sent["headers"]["anthropic-version"]
    body = sent["body"]
    assert body["stream"] is True and body["model"] == "claude-sonnet-5-5"
    assert body["max_tokens"] == 32000  # the model's 128K output limit, capped
    assert body["system"] == [
        {"type": "text", "text": "You are a test."},
        {
            "type": "text",
            "text": "<env>\n  Working directory: /p\n</env>",
            "cache_control": {"type": "ephemeral"},
        },
    ]
    assert body["tools"] == [
        {
            "name": "read",
            "description": "Read a file",
            "input_schema": READ_TOOL["parameters"],
            "cache_control": {"type": "ephemeral"},
        }
    ]
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "show README", "cache_control": {"type": "ephemeral"}}
            ],
        }
    ]
    assert "temperature" not in body and "thinking" not in body


def test_multi_tool_turn_each_call_ends_at_its_block_stop(fake: FakeAnthropic) -> None:
    fake.script(
        "test-model",
        reply(
            text("Reading both."),
            tool_use("toolu_A", "read", {"filePath": "a.txt"}),
            tool_use("toolu_B", "read", {"filePath": "b.txt", "limit": 20}),
        ),
    )
    events = collect(provider(fake), request())
    tool_events = [
        (type(e).__name__, e.id)
        for e in events
        if isinstance(e, ToolCallStart | ToolInputDelta | ToolCallEnd)
    ]
    # A ends (its block stopped) before B starts; every fragment of A comes before A's end
    assert tool_events.index(("ToolCallEnd", "toolu_A")) < tool_events.index(
        ("ToolCallStart", "toolu_B")
    )
    assert tool_events[0] == ("ToolCallStart", "toolu_A")
    assert tool_events[-1] == ("ToolCallEnd", "toolu_B")
    ends = [e for e in events if isinstance(e, ToolCallEnd)]
    assert [e.input for e in ends] == [{"filePath": "a.txt"}, {"filePath": "b.txt", "limit": 20}]
    raw = "".join(e.text for e in events if isinstance(e, ToolInputDelta) and e.id == "toolu_B")
    assert json.loads(raw) == {"filePath": "b.txt", "limit": 20}
    assert finish_of(events).reason == "tool-calls"


def test_max_tokens_cut_inside_a_tool_input_never_ends_that_call(fake: FakeAnthropic) -> None:
    fake.script(
        "test-model",
        reply(
            tool_use("toolu_ok", "read", {"filePath": "a.txt"}),
            tool_use(
                "toolu_cut", "write", '{"filePath": "big.txt", "content": "line 1\\nline', open=True
            ),
        ),
    )
    events = collect(provider(fake), request())
    assert [e.id for e in events if isinstance(e, ToolCallStart)] == ["toolu_ok", "toolu_cut"]
    assert [e.id for e in events if isinstance(e, ToolCallEnd)] == ["toolu_ok"]
    assert any(isinstance(e, ToolInputDelta) and e.id == "toolu_cut" for e in events)
    assert finish_of(events).reason == "length"


def test_stop_reasons_and_refusal(fake: FakeAnthropic) -> None:
    fake.script(
        "test-model",
        reply(text("done")),
        reply(text("x"), stop_reason="stop_sequence"),
        reply(text("I can't help with"), stop_reason="refusal"),
        reply(stop_reason="refusal"),
    )
    p = provider(fake)
    assert finish_of(collect(p, request())).reason == "stop"
    assert finish_of(collect(p, request())).reason == "stop"
    events = collect(p, request())
    assert finish_of(events).reason == "refusal"
    said = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert said.startswith("I can't help with\n\n[The model declined") and "refusal" in said
    events = collect(p, request())
    assert finish_of(events).reason == "refusal"
    assert "declined" in "".join(e.text for e in events if isinstance(e, TextDelta))


def test_thinking_streamed_and_sent_back_with_its_signature(fake: FakeAnthropic) -> None:
    fake.script(
        "test-model",
        reply(
            thinking("The user wants README; read it.", signature="sig-abc123"),
            redacted_thinking("REDACTED-DATA"),
            tool_use("toolu_T", "read", {"filePath": "README.md"}),
        ),
        reply(text("It says hello.")),
        reply(text("again")),
    )
    p = provider(fake)
    first = request(options={"thinking": {"budget_tokens": 2000}}, temperature=0.3, top_p=0.9)
    events = collect(p, first)
    reasoning = [e for e in events if isinstance(e, ReasoningDelta)]
    assert "".join(e.text for e in reasoning) == "The user wants README; read it."
    assert [e.signature for e in reasoning if e.signature] == ["sig-abc123"]
    assert reasoning[-1] == ReasoningDelta("", redacted="REDACTED-DATA")  # a block of its own
    body = fake.requests[0]["body"]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2000}
    assert body["max_tokens"] > 2000
    assert "temperature" not in body and "top_p" not in body  # the API rejects them with thinking

    # the next step: the history keeps the reasoning block (with its signature)
    history = [
        Message("user", [{"type": "text", "text": "show README"}]),
        Message(
            "assistant",
            [
                {
                    "type": "reasoning",
                    "text": "The user wants README; read it.",
                    "signature": "sig-abc123",
                },
                {
                    "type": "tool_use",
                    "id": "toolu_T",
                    "name": "read",
                    "input": {"filePath": "README.md"},
                },
            ],
        ),
        Message(
            "tool",
            [
                {
                    "type": "tool_result",
                    "id": "toolu_T",
                    "output": "hello",
                    "is_error": False,
                    "attachments": [],
                }
            ],
        ),
    ]
    events = collect(p, request(*history, options={"thinking": 2000}))
    assert finish_of(events).reason == "stop"
    sent = fake.requests[1]["body"]["messages"][1]["content"]
    assert sent[0] == {
        "type": "thinking",
        "thinking": "The user wants README; read it.",
        "signature": "sig-abc123",
    }
    assert sent[1]["type"] == "tool_use"

    # a history that lost the reasoning (the loop keeps only text and calls): the provider
    # puts back the thinking blocks of the reply that made the call, redacted one included
    history[1] = Message("assistant", [history[1].content[1]])
    events = collect(p, request(*history, options={"thinking": 2000}))
    assert not [e for e in events if isinstance(e, StreamError)], events
    sent = fake.requests[2]["body"]["messages"][1]["content"]
    assert [b["type"] for b in sent] == ["thinking", "redacted_thinking", "tool_use"]
    assert sent[0]["signature"] == "sig-abc123" and sent[1]["data"] == "REDACTED-DATA"


def test_fake_rejects_a_thinking_tool_turn_without_thinking(fake: FakeAnthropic) -> None:
    """The rule the memory above exists for: the fake answers 400 like the real API."""
    history = [
        Message("user", [{"type": "text", "text": "go"}]),
        Message("assistant", [{"type": "tool_use", "id": "toolu_X", "name": "read", "input": {}}]),
        Message(
            "tool",
            [
                {
                    "type": "tool_result",
                    "id": "toolu_X",
                    "output": "ok",
                    "is_error": False,
                    "attachments": [],
                }
            ],
        ),
    ]
    events = collect(provider(fake), request(*history, options={"thinking": True}))
    [error] = events
    assert isinstance(error, StreamError) and not error.retryable
    assert "must start with a thinking block" in error.message
    assert "request rejected (400 invalid_request_error)" in error.message


def test_tool_results_with_errors_and_attachments(fake: FakeAnthropic) -> None:
    fake.script("test-model", reply(text("ok")))
    png = base64.b64encode(PNG).decode()
    pdf = base64.b64encode(b"%PDF-1.4 fake").decode()
    history = [
        Message("user", [{"type": "text", "text": "look"}]),
        Message(
            "assistant",
            [
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "t1", "name": "read", "input": {"filePath": "x.png"}},
                {"type": "tool_use", "id": "t2", "name": "read", "input": {"filePath": "nope"}},
                {"type": "tool_use", "id": "t3", "name": "read", "input": {"filePath": "d.pdf"}},
            ],
        ),
        Message(
            "tool",
            [
                {
                    "type": "tool_result",
                    "id": "t1",
                    "output": "Image read successfully",
                    "is_error": False,
                    "attachments": [
                        {
                            "mime": "image/png",
                            "url": f"data:image/png;base64,{png}",
                            "filename": "x.png",
                        }
                    ],
                },
                {
                    "type": "tool_result",
                    "id": "t2",
                    "output": "File not found: nope",
                    "is_error": True,
                    "attachments": [],
                },
                {
                    "type": "tool_result",
                    "id": "t3",
                    "output": "PDF read successfully",
                    "is_error": False,
                    "attachments": [
                        {
                            "mime": "application/pdf",
                            "url": f"data:application/pdf;base64,{pdf}",
                            "filename": "d.pdf",
                        }
                    ],
                },
            ],
        ),
        Message("user", [{"type": "text", "text": "go on"}]),
    ]
    events = collect(provider(fake), request(*history))
    assert finish_of(events).reason == "stop"
    body = fake.requests[0]["body"]
    messages = body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    results = messages[2]["content"]
    assert results[0] == {
        "type": "tool_result",
        "tool_use_id": "t1",
        "content": [
            {"type": "text", "text": "Image read successfully"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}},
        ],
    }
    assert results[1] == {
        "type": "tool_result",
        "tool_use_id": "t2",
        "content": "File not found: nope",
        "is_error": True,
    }
    assert results[2]["content"][1] == {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": pdf},
        "title": "d.pdf",
    }
    # the user's text follows the results in the same turn, and carries a cache breakpoint
    assert results[3] == {"type": "text", "text": "go on", "cache_control": {"type": "ephemeral"}}
    # the last two messages get breakpoints: 1 system + 1 tools + 2 messages = 4
    assert messages[1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in messages[0]["content"][-1]


def test_step_limit_request_without_tools(fake: FakeAnthropic) -> None:
    """The loop's last request offers no tools and ends with an assistant instruction: the
    history's tools get stubs with tool_choice none, the instruction goes as user text."""
    fake.script("test-model", reply(text("Summary.")))
    history = [
        Message("user", [{"type": "text", "text": "go"}]),
        Message("assistant", [{"type": "tool_use", "id": "t1", "name": "read", "input": {}}]),
        Message(
            "tool",
            [
                {
                    "type": "tool_result",
                    "id": "t1",
                    "output": "x",
                    "is_error": False,
                    "attachments": [],
                }
            ],
        ),
        Message("assistant", [{"type": "text", "text": "Reply in text only."}]),
    ]
    events = collect(provider(fake), request(*history, tools=()))
    assert finish_of(events).reason == "stop"
    body = fake.requests[0]["body"]
    assert body["tool_choice"] == {"type": "none"}
    assert [t["name"] for t in body["tools"]] == ["read"]
    assert body["messages"][-1]["role"] == "user"
    assert body["messages"][-1]["content"][-1]["text"] == "Reply in text only."


def test_cache_can_be_turned_off(fake: FakeAnthropic) -> None:
    fake.script("*", reply(text("a")), reply(text("b")))
    collect(provider(fake, cache=False), request())
    collect(provider(fake), request(options={"cache": False}))
    for sent in fake.requests:
        assert "cache_control" not in json.dumps(sent["body"])


# ---------------------------------------------------------------------------------------------
# errors and retries
# ---------------------------------------------------------------------------------------------


def test_one_request_per_reply_the_sdk_never_retries(fake: FakeAnthropic) -> None:
    fake.script(
        "test-model",
        ApiError(529, "overloaded_error", "Overloaded", headers={"retry-after-ms": "1"}),
        reply(text("the next reply")),
    )
    [error] = collect(provider(fake), request())
    assert isinstance(error, StreamError) and error.retryable and error.retry_after == 0.001
    assert len(fake.requests) == 1  # the next try is the loop's
    assert fake.requests[0]["headers"]["x-stainless-retry-count"] == "0"


def test_529_429_and_5xx_are_retryable_errors_with_the_servers_wait(fake: FakeAnthropic) -> None:
    busy = ApiError(529, "overloaded_error", "Overloaded", headers={"retry-after-ms": "250"})
    limited = ApiError(429, "rate_limit_error", "Slow down", headers={"retry-after": "2"})
    broken = ApiError(500, "api_error", "Internal")
    never = ApiError(503, "api_error", "Down for good", headers={"x-should-retry": "false"})
    fake.script("test-model", busy, limited, broken, never)
    p = provider(fake)
    [error] = collect(p, request())
    assert (error.retryable, error.retry_after) == (True, 0.25)
    assert error.message == "Anthropic API overloaded: Overloaded (request-id req_fake0001)"
    [error] = collect(p, request())
    assert (error.retryable, error.retry_after) == (True, 2.0)
    assert error.message == "rate limited: Slow down (request-id req_fake0002)"
    [error] = collect(p, request())
    assert (error.retryable, error.retry_after) == (True, None)  # the loop's back-off
    assert error.message == "Anthropic API error 500: Internal (request-id req_fake0003)"
    [error] = collect(p, request())
    assert not error.retryable and "Down for good" in error.message
    assert len(fake.requests) == 4


def test_an_error_event_mid_stream_ends_the_step(fake: FakeAnthropic) -> None:
    events = message_events(text("Working on"), tool_use("toolu_E", "read", {"filePath": "a"}))
    cut = next(i for i, (name, _d) in enumerate(events) if name == "content_block_stop") + 1
    fake.script("test-model", Sse([*events[:cut], error_event("overloaded_error", "Overloaded")]))
    events_out = collect(provider(fake), request())
    assert "".join(e.text for e in events_out if isinstance(e, TextDelta)) == "Working on"
    assert isinstance(events_out[-1], StreamError)
    assert events_out[-1].message.startswith("overloaded_error: Overloaded")
    assert events_out[-1].retryable
    assert not [e for e in events_out if isinstance(e, Finish | ToolCallStart)]


def test_401_names_the_fix_and_never_the_key(fake: FakeAnthropic) -> None:
    bad = "sk-ant-wrong-key-999999"
    p = provider(fake, env={"ANTHROPIC_API_KEY": bad, "ANTHROPIC_BASE_URL": fake.url})
    [error] = collect(p, request())
    assert isinstance(error, StreamError) and not error.retryable
    assert error.message.startswith(f"authentication failed: {LOGIN}")
    assert bad not in error.message
    assert fake.requests[0]["headers"]["authorization"] == f"Bearer {bad}"


def test_missing_key_is_a_clear_error_before_any_request(
    fake: FakeAnthropic, tmp_path: Path
) -> None:
    p = provider(fake, tmp_path, env={"ANTHROPIC_BASE_URL": fake.url})
    [error] = collect(p, request())
    assert isinstance(error, StreamError)
    assert "ANTHROPIC_API_KEY" in error.message and "hookcode auth login anthropic" in error.message
    assert fake.requests == []


def test_stored_key_and_auth_token(fake: FakeAnthropic, tmp_path: Path) -> None:
    fake.script("*", reply(text("a")), reply(text("b")))
    p = provider(fake, tmp_path, env={"ANTHROPIC_BASE_URL": fake.url})
    p.credentials.set("anthropic", KEY)
    assert finish_of(collect(p, request())).reason == "stop"
    assert fake.requests[0]["headers"]["authorization"] == f"Bearer {KEY}"
    p = provider(fake, env={"ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_AUTH_TOKEN": KEY})
    assert finish_of(collect(p, request())).reason == "stop"
    # a custom key variable
    p = provider(fake, env={"ANTHROPIC_BASE_URL": fake.url, "MY_KEY": KEY}, api_key_env="MY_KEY")
    fake.script("*", reply(text("c")))
    assert finish_of(collect(p, request())).reason == "stop"


def test_bad_request_and_unreachable_server(fake: FakeAnthropic) -> None:
    p = provider(fake)
    [error] = collect(p, request(model="err-400"))
    assert (
        not error.retryable
        and "request rejected (400 invalid_request_error): scripted 400" in error.message
    )
    assert "request-id req_fake" in error.message
    [error] = collect(p, request(model="err-403"))
    assert error.message.startswith("permission denied")
    port = fake.url.rsplit(":", 1)[1]
    fake.stop()
    p = provider(
        None,
        env={"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}"},
        max_retries=0,
    )
    [error] = collect(p, request())
    assert error.retryable and error.message.startswith(
        "cannot reach the Anthropic API at http://127.0.0.1"
    )


def test_both_auth_header_styles_reach_the_fake(fake: FakeAnthropic) -> None:
    """SDK 0.x sends X-Api-Key, 2.x Authorization: Bearer: the fake takes both."""
    fake.script("*", reply(text("a")), reply(text("b")))
    payload = json.dumps(
        {
            "model": "m",
            "max_tokens": 5,
            "stream": True,
            "messages": [{"role": "user", "content": "hi"}],
        }
    ).encode()
    for header in ({"X-Api-Key": KEY}, {"Authorization": f"Bearer {KEY}"}):
        req = urllib.request.Request(
            f"{fake.url}/v1/messages",
            data=payload,
            headers={
                "anthropic-version": "2023-06-01",
                "content-type": "application/json",
                **header,
            },
        )
        with urllib.request.urlopen(req, timeout=10) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            assert b"event: message_stop" in response.read()
    req = urllib.request.Request(
        f"{fake.url}/v1/messages", data=payload, headers={"anthropic-version": "x"}
    )
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(req, timeout=10)
    assert info.value.code == 401


# ---------------------------------------------------------------------------------------------
# base URL, config, models, auth
# ---------------------------------------------------------------------------------------------


def test_base_url_sources(tmp_path: Path) -> None:
    with FakeAnthropic(prefix="/proxy/anthropic") as fake:
        fake.script("*", reply(text("a")), reply(text("b")), reply(text("c")))
        env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": fake.url + "/v1/"}
        collect(provider(env=env), request())  # a trailing /v1 is dropped
        collect(
            provider(
                env={"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"},
                base_url=fake.url,
            ),
            request(),
        )
        collect(provider(env={"ANTHROPIC_API_KEY": KEY}, base_url=fake.url + "/"), request())
        assert [r["path"] for r in fake.requests] == ["/proxy/anthropic/v1/messages"] * 3
    assert provider(env={}).base_url() == "https://api.anthropic.com"
    assert normalize_base_url(" https://h/x/v1/ ") == "https://h/x"


def test_config_section_default_model_and_auth(hookcode_env: Any, fake: FakeAnthropic) -> None:
    hookcode_env.env.pop("ANTHROPIC_API_KEY", None)
    hookcode_env.env.pop("ANTHROPIC_AUTH_TOKEN", None)
    rt = hookcode_env.runtime()
    assert rt.config.core.model is None  # no credential: core's "no model configured" error
    assert isinstance(rt.providers()["anthropic"], AnthropicProvider)
    rt = hookcode_env.runtime(ANTHROPIC_API_KEY=KEY)
    assert rt.config.core.model == DEFAULT_MODEL_ID == "anthropic/claude-sonnet-5-5"
    rt.credentials.set("anthropic", KEY)  # a key from `hookcode auth login` counts too
    assert hookcode_env.runtime().config.core.model == DEFAULT_MODEL_ID
    rt.credentials.remove("anthropic")

    hookcode_env.write_config(
        'model = "anthropic/claude-haiku-4-5"\n'
        "[provider.anthropic]\n"
        f'base_url = "{fake.url}"\nmax_retries = 0\ntimeout = 30\n'
        "[provider.anthropic.models.my-model]\ncost_in = 1.0\ncost_out = 2.0\noutput = 1000\n"
    )
    rt = hookcode_env.runtime(ANTHROPIC_API_KEY=KEY)
    assert rt.config.core.model == "anthropic/claude-haiku-4-5"
    p = rt.providers()["anthropic"]
    assert p.settings.max_retries == 0 and p.base_url() == fake.url
    mine = p.model_info("my-model")
    assert (mine.cost_in, mine.cost_out, mine.output) == (1.0, 2.0, 1000)
    assert "my-model" in {m.id for m in p.models()}
    assert p.build_body(request(model="my-model"))["max_tokens"] == 1000

    hookcode_env.write_config('[provider.anthropic]\nbase_url = "api.example.com"\n')
    with pytest.raises(ConfigError, match="base_url"):
        hookcode_env.runtime()
    hookcode_env.write_config("[provider.anthropic]\nbogus = 1\n")
    with pytest.raises(ConfigError, match="bogus"):
        hookcode_env.runtime()

    [method] = auth()
    assert (method.provider, method.type, method.env) == ("anthropic", "api", ["ANTHROPIC_API_KEY"])


def test_model_table_and_costs() -> None:
    sonnet = MODELS["claude-sonnet-4-5"]
    assert (sonnet.context, sonnet.output, sonnet.cost_in, sonnet.cost_out) == (
        200_000,
        64_000,
        3,
        15,
    )
    assert lookup_model("claude-sonnet-4-5-20250929") is sonnet
    assert lookup_model("claude-opus-4-20250514").id == "claude-opus-4-0"
    assert lookup_model("claude-3-5-haiku-latest").output == 8192
    unknown = lookup_model("test-model")
    assert unknown.cost(1000, 1000, 1000, 1000) == 0 and unknown.output is None
    assert sonnet.cost(1_000_000, 0, 1_000_000, 0) == pytest.approx(3 + 0.3)
    for model in MODELS.values():
        assert model.context and model.output and model.cost_out >= model.cost_in > 0


def test_thinking_options() -> None:
    assert thinking_config(None) is None
    assert thinking_config(True) == {"type": "enabled", "budget_tokens": 8000}
    assert thinking_config(100) == {"type": "enabled", "budget_tokens": 1024}
    assert thinking_config({"budget_tokens": 5000}) == {"type": "enabled", "budget_tokens": 5000}
    assert thinking_config("adaptive") == {"type": "adaptive"}
    assert thinking_config(False) == {"type": "disabled"}
    req = request(options={"thinking": 50_000, "effort": "high"}, max_tokens=1000)
    body = build_body(req, default_max_tokens=8192, model_output=64_000)
    assert body["thinking"]["budget_tokens"] < body["max_tokens"] <= 64_000
    assert body["output_config"] == {"effort": "high"}
    sampled = request(temperature=0.2, top_p=0.9, options={"top_k": 5, "stop_sequences": ["END"]})
    body = build_body(sampled, default_max_tokens=10)
    assert (body["temperature"], body["top_k"], body["stop_sequences"]) == (0.2, 5, ["END"])
    assert "top_p" not in body  # newer models reject temperature and top_p together
    # the 5.x models think adaptively and reject budgets, `disabled` and sampling parameters
    p = provider(env={"ANTHROPIC_API_KEY": KEY})
    body = p.build_body(
        request(model="claude-sonnet-5-5", temperature=0.2, options={"thinking": 4000, "top_k": 3})
    )
    assert body["thinking"] == {"type": "adaptive"}
    assert not {"temperature", "top_p", "top_k"} & set(body)
    assert body["max_tokens"] == 32000
    body = p.build_body(request(model="claude-opus-5-5", options={"thinking": False}))
    assert body["thinking"] == {"type": "between_tools"}
    body = p.build_body(
        request(model="claude-haiku-4-5", options={"thinking": False}, temperature=0)
    )
    assert body["thinking"] == {"type": "disabled"} and body["temperature"] == 0


# ---------------------------------------------------------------------------------------------
# the whole loop
# ---------------------------------------------------------------------------------------------


def loop_runtime(hookcode_env: Any, fake: FakeAnthropic) -> Any:
    return hookcode_env.runtime(ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=fake.url)


def test_run_session_reads_a_file_through_the_fake(hookcode_env: Any, fake: FakeAnthropic) -> None:
    target = hookcode_env.project / "notes.txt"
    target.write_text("alpha\nbeta\n")
    fake.script(
        "test-model",
        load_sse("text_then_tool", path=str(target)),
        reply(
            text("The file lists alpha and beta."),
            input_tokens=3000,
            output_tokens=12,
            cache_read=1450,
        ),
    )
    rt = loop_runtime(hookcode_env, fake)
    result = asyncio.run(run_session(rt, "what is in notes.txt?", model="anthropic/test-model"))
    assert result.error is None, result.error
    assert result.text == "The file lists alpha and beta." and result.steps == 2
    assert result.usage.input == 2712 + 3000 and result.usage.cache_read == 1450
    [outcome] = result.outcomes
    assert outcome.ok and "alpha" in outcome.result.output

    first, second = fake.bodies()
    assert {t["name"] for t in first["tools"]} >= {"read", "glob", "grep"}
    assert first["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assistant, results = second["messages"][1], second["messages"][2]
    assert assistant["role"] == "assistant"
    assert [b["type"] for b in assistant["content"]] == ["text", "tool_use"]
    assert assistant["content"][1]["input"]["filePath"] == str(target)
    [result_block] = results["content"]
    assert result_block["tool_use_id"] == "toolu_01T1x1fJ34qAmk2tNTrN7Up6"
    assert "alpha" in result_block["content"] and "is_error" not in result_block


def test_run_session_errors_images_and_thinking(hookcode_env: Any, fake: FakeAnthropic) -> None:
    (hookcode_env.project / "pixel.png").write_bytes(PNG)
    missing = hookcode_env.project / "missing.txt"
    fake.script(
        "test-model",
        reply(
            thinking("Two files to look at."),
            tool_use("toolu_img", "read", {"filePath": str(hookcode_env.project / "pixel.png")}),
            tool_use("toolu_err", "read", {"filePath": str(missing)}),
        ),
        reply(thinking("One is missing."), text("One image; the other file does not exist.")),
    )
    hookcode_env.write_config('[agent.build]\nprompt = "Be brief."\n')
    rt = loop_runtime(hookcode_env, fake)
    # extended thinking through chat_params options (an agent's options work the same way)
    from hookcode import hookimpl

    class Thinking:
        @hookimpl
        def chat_params(self, params: dict[str, Any]) -> None:
            params["options"]["thinking"] = {"budget_tokens": 4000}

    rt.plugins.register(Thinking(), "thinking")
    result = asyncio.run(run_session(rt, "look at both", model="anthropic/test-model"))
    assert result.error is None, result.error
    assert result.text == "One image; the other file does not exist."
    first, second = fake.bodies()
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 4000}
    assert first["system"][0]["text"] == "Be brief."
    assistant = second["messages"][1]["content"]
    assert assistant[0]["type"] == "thinking" and assistant[0]["signature"]
    image, error = second["messages"][2]["content"]
    assert image["tool_use_id"] == "toolu_img" and "is_error" not in image
    assert image["content"][1]["type"] == "image"
    assert image["content"][1]["source"]["data"] == base64.b64encode(PNG).decode()
    assert error["tool_use_id"] == "toolu_err" and error["is_error"] is True


def test_reasoning_is_kept_in_the_history_across_processes(
    hookcode_env: Any, fake: FakeAnthropic
) -> None:
    """Thinking blocks (signed, one after another, redacted, and signed with no text) are
    stored with the session, each as it came: a runtime that never saw the reply (another process: a provider with nothing
    remembered) sends them back as they came, as the API requires of a tool-use turn."""
    target = hookcode_env.project / "notes.txt"
    target.write_text("alpha\n")
    fake.script(
        "test-model",
        reply(
            thinking("Read the notes first.", signature="sig-one"),
            thinking("Then answer.", signature="sig-two"),  # a block of its own
            redacted_thinking("OPAQUE-DATA"),
            thinking("", signature="sig-empty"),
            tool_use("toolu_N", "read", {"filePath": str(target)}),
        ),
        ApiError(400, "invalid_request_error", "stop here"),  # the run ends after the call
        reply(text("The notes say alpha.")),
    )
    from hookcode import hookimpl

    class Thinking:
        @hookimpl
        def chat_params(self, params: dict[str, Any]) -> None:
            params["options"]["thinking"] = {"budget_tokens": 2000}

    first = loop_runtime(hookcode_env, fake)
    first.plugins.register(Thinking(), "thinking")
    result = asyncio.run(run_session(first, "read the notes", model="anthropic/test-model"))
    assert result.error is not None and "stop here" in result.error
    session_id = result.session_id
    first.close()

    second = loop_runtime(hookcode_env, fake)
    second.plugins.register(Thinking(), "thinking")
    session = second.store.get_session(session_id)
    assert session is not None
    result = asyncio.run(
        run_session(second, "go on", model="anthropic/test-model", session=session)
    )
    assert result.error is None, result.error
    assert result.text == "The notes say alpha."
    sent = fake.bodies()[-1]["messages"]
    assistant = next(m for m in sent if m["role"] == "assistant")["content"]
    assert assistant[:4] == [
        {"type": "thinking", "thinking": "Read the notes first.", "signature": "sig-one"},
        {"type": "thinking", "thinking": "Then answer.", "signature": "sig-two"},
        {"type": "redacted_thinking", "data": "OPAQUE-DATA"},
        {"type": "thinking", "thinking": "", "signature": "sig-empty"},
    ]
    [call] = assistant[4:]
    assert (call["type"], call["id"], call["name"]) == ("tool_use", "toolu_N", "read")
    from hookcode.cli.sessions import _render, session_export

    shown = _render(session_export(second.store, session_id) or {})
    assert "  (reasoning) Read the notes first." in shown
    assert "  (reasoning, redacted by the provider)" in shown
    assert "OPAQUE-DATA" not in shown and "sig-" not in shown
    second.close()


def test_the_history_carries_the_arguments_as_the_model_sent_them(
    hookcode_env: Any, fake: FakeAnthropic
) -> None:
    """read fills in ``offset`` and ``limit`` when it validates; the tool_use sent back (in the
    same run, and from the store in the next one) is exactly the model's input."""
    target = hookcode_env.project / "notes.txt"
    target.write_text("alpha\n")
    sent_input = {"filePath": str(target)}
    fake.script(
        "test-model",
        reply(tool_use("toolu_R", "read", sent_input)),
        reply(text("It says alpha.")),
        reply(text("Still alpha.")),
    )
    rt = loop_runtime(hookcode_env, fake)
    result = asyncio.run(run_session(rt, "read the notes", model="anthropic/test-model"))
    assert result.error is None, result.error
    [outcome] = result.outcomes
    assert outcome.call.args["offset"] is None  # the tool and hooks saw the validated ones
    session = rt.store.get_session(result.session_id)
    again = asyncio.run(run_session(rt, "and now?", model="anthropic/test-model", session=session))
    assert again.error is None, again.error
    for body in fake.bodies()[1:]:
        assistant = next(m for m in body["messages"] if m["role"] == "assistant")["content"]
        [call] = [b for b in assistant if b["type"] == "tool_use"]
        assert call["input"] == sent_input


def test_run_session_cut_off_call_is_not_run(hookcode_env: Any, fake: FakeAnthropic) -> None:
    target = hookcode_env.project / "out.txt"
    fake.script(
        "test-model",
        reply(
            text("Writing it."),
            tool_use(
                "toolu_cut",
                "write",
                '{"filePath": "' + str(target) + '", "content": "1\\n2\\n3',
                open=True,
            ),
        ),
    )
    rt = loop_runtime(hookcode_env, fake)
    events: list[tuple[str, dict[str, Any]]] = []
    result = asyncio.run(
        run_session(
            rt,
            "write it",
            model="anthropic/test-model",
            on_event=lambda k, d: events.append((k, d)),
        )
    )
    assert result.finish == "length" and result.steps == 1 and len(fake.requests) == 1
    assert not target.exists()
    # the call is reported as not run, with the loop's cut-off message
    assert any(CUT_OFF in json.dumps(data, default=str) for _kind, data in events)


def test_run_session_surfaces_provider_errors(hookcode_env: Any, fake: FakeAnthropic) -> None:
    rt = hookcode_env.runtime(ANTHROPIC_API_KEY="sk-ant-not-valid-000", ANTHROPIC_BASE_URL=fake.url)
    result = asyncio.run(run_session(rt, "hi", model="anthropic/test-model"))
    assert result.finish == "error" and LOGIN in (result.error or "")
    assert "sk-ant-not-valid-000" not in (result.error or "")


def gaps(fake: FakeAnthropic) -> list[float]:
    """Seconds between one request and the next."""
    times = [r["time"] for r in fake.requests]
    return [later - earlier for earlier, later in itertools.pairwise(times)]


def test_the_loop_retries_529_429_and_500_honouring_retry_after(
    hookcode_env: Any, fake: FakeAnthropic
) -> None:
    fake.script(
        "test-model",
        ApiError(529, "overloaded_error", "Overloaded", headers={"retry-after-ms": "300"}),
        ApiError(429, "rate_limit_error", "Slow down", headers={"retry-after": "0.4"}),
        ApiError(500, "api_error", "Internal", headers={"retry-after-ms": "200"}),
        reply(text("at last")),
    )
    events: list[tuple[str, dict[str, Any]]] = []
    result = asyncio.run(
        run_session(
            loop_runtime(hookcode_env, fake),
            "hi",
            model="anthropic/test-model",
            on_event=lambda kind, data: events.append((kind, data)),
        )
    )
    assert result.error is None and result.text == "at last"
    # exactly the loop's tries: no retry of the SDK's inside them
    assert len(fake.requests) == 4
    assert {r["headers"]["x-stainless-retry-count"] for r in fake.requests} == {"0"}
    waits = gaps(fake)
    assert waits[0] >= 0.3 and waits[1] >= 0.4 and waits[2] >= 0.2
    assert all(wait < 0.9 for wait in waits)  # the server's wait, not the loop's 1-2-4 s
    retries = [data for kind, data in events if kind == "retry"]
    assert [(r["attempt"], r["delay"]) for r in retries] == [(1, 0.3), (2, 0.4), (3, 0.2)]
    assert [r["error"] for r in retries] == [
        "Anthropic API overloaded: Overloaded (request-id req_fake0001)",
        "rate limited: Slow down (request-id req_fake0002)",
        "Anthropic API error 500: Internal (request-id req_fake0003)",
    ]


def test_the_loop_gives_up_after_its_attempts(hookcode_env: Any, fake: FakeAnthropic) -> None:
    from hookcode.session import RETRY_ATTEMPTS

    busy = ApiError(529, "overloaded_error", "Overloaded", headers={"retry-after-ms": "1"})
    fake.script("test-model", *[busy] * 10)
    result = asyncio.run(
        run_session(loop_runtime(hookcode_env, fake), "hi", model="anthropic/test-model")
    )
    assert len(fake.requests) == RETRY_ATTEMPTS + 1 == 5
    # one message, the provider's, with no count of tries nested in it
    assert (
        result.error
        == "model error: Anthropic API overloaded: Overloaded (request-id req_fake0005)"
    )

    hookcode_env.write_config("[provider.anthropic]\nmax_retries = 1\n")
    fake.requests.clear()
    result = asyncio.run(
        run_session(loop_runtime(hookcode_env, fake), "hi", model="anthropic/test-model")
    )
    assert len(fake.requests) == 2 and result.finish == "error"


def test_a_request_the_api_rejects_is_tried_once(hookcode_env: Any, fake: FakeAnthropic) -> None:
    result = asyncio.run(
        run_session(loop_runtime(hookcode_env, fake), "hi", model="anthropic/err-400")
    )
    assert len(fake.requests) == 1
    assert result.error is not None and "request rejected (400" in result.error


def test_hookcode_run_reports_retries_in_one_line_each(
    hookcode_env: Any, fake: FakeAnthropic
) -> None:
    fake.script(
        "test-model",
        ApiError(529, "overloaded_error", "Overloaded", headers={"retry-after-ms": "50"}),
        ApiError(429, "rate_limit_error", "Slow down", headers={"retry-after-ms": "50"}),
        reply(text("done")),
    )
    env = {**hookcode_env.env, "ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": fake.url}
    proc = run_cli(
        ["run", "--model", "anthropic/test-model", "hi"], env=env, cwd=hookcode_env.project
    )
    assert proc.returncode == 0, proc.stderr
    assert "done" in proc.stdout and len(fake.requests) == 3
    retry_lines = [line for line in proc.stderr.splitlines() if "retry" in line]
    assert retry_lines == [
        "model error (Anthropic API overloaded: Overloaded (request-id req_fake0001)); "
        "retry 1 in 0.05 s",
        "model error (rate limited: Slow down (request-id req_fake0002)); retry 2 in 0.05 s",
    ]
    assert "attempt" not in proc.stderr and "retries" not in proc.stderr


def test_hookcode_run_subprocess(hookcode_env: Any, fake: FakeAnthropic) -> None:
    target = hookcode_env.project / "hello.txt"
    target.write_text("hello from the project\n")
    fake.script(
        "test-model",
        load_sse("text_then_tool", path=str(target)),
        reply(text("It says hello.")),
    )
    env = {**hookcode_env.env, "ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": fake.url}
    env.pop("ANTHROPIC_AUTH_TOKEN", None)
    proc = run_cli(
        ["run", "--model", "anthropic/test-model", "what does hello.txt say?", "--yes"],
        env=env,
        cwd=hookcode_env.project,
    )
    assert proc.returncode == 0, proc.stderr
    assert "It says hello." in proc.stdout
    assert "-> read" in proc.stderr
    assert KEY not in proc.stdout + proc.stderr
    assert len(fake.requests) == 2
    assert fake.requests[1]["body"]["messages"][2]["content"][0]["tool_use_id"] == (
        "toolu_01T1x1fJ34qAmk2tNTrN7Up6"
    )


# ---------------------------------------------------------------------------------------------
# start-up cost
# ---------------------------------------------------------------------------------------------


def test_a_run_that_knows_its_provider_imports_the_sdk_in_the_background(
    hookcode_env: Any,
) -> None:
    code = """
import os, sys, threading
from pathlib import Path
from hookcode.agents import AgentSpec
from hookcode.plugins import create_plugins
from hookcode.runtime import Runtime
from hookcode.session import resolve_model
rt = Runtime(cwd=Path.cwd(), env=dict(os.environ), plugins=create_plugins(env=dict(os.environ)))
assert "anthropic" not in sys.modules
provider, name, _ = resolve_model(rt, "anthropic/claude-sonnet-4-5", AgentSpec(name="build"))
workers = [t for t in threading.enumerate() if t.name == "hookcode-import"]
for t in workers:
    t.join()
print(len(workers), "anthropic" in sys.modules, name)
"""
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env=hookcode_env.env,
        cwd=hookcode_env.project,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["1", "True", "claude-sonnet-4-5"]


def test_importing_and_loading_the_plugin_does_not_import_the_sdk(hookcode_env: Any) -> None:
    code = """
import sys
import hookcode_provider_anthropic as plugin
import hookcode_provider_anthropic._provider, hookcode_provider_anthropic.convert
import hookcode_provider_anthropic.events, hookcode_provider_anthropic.models
from hookcode.plugins import create_plugins
from hookcode.runtime import Runtime
import os
from pathlib import Path
rt = Runtime(cwd=Path.cwd(), env=dict(os.environ), plugins=create_plugins(env=dict(os.environ)))
providers = rt.providers()
assert "anthropic" in providers, providers
providers["anthropic"].models()
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("anthropic", "httpx", "httpx2", "httpcore", "httpcore2"))
print(",".join(heavy))
"""
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env=hookcode_env.env,
        cwd=hookcode_env.project,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""


# ---------------------------------------------------------------------------------------------
# the TLS context: one per process, made in the background by preload()
# ---------------------------------------------------------------------------------------------

TLS_SCRIPT = """
import ssl, sys, threading
from hookcode_provider_anthropic._provider import AnthropicProvider
from hookcode_provider_anthropic import tls

provider = AnthropicProvider()
provider.preload()
provider.preload()  # asked again: no second thread
workers = [t for t in threading.enumerate() if t.name == "hookcode-anthropic-tls"]
for t in workers:
    t.join()
made = tls._context  # made by the thread, before anyone asked for it
ctx = tls.ssl_context()
print(len(workers), made is ctx, ctx is tls.ssl_context(), ctx.verify_mode == ssl.CERT_REQUIRED,
      ctx.check_hostname)
"""


def test_preload_makes_one_tls_context_per_process_in_the_background() -> None:
    done = subprocess.run([sys.executable, "-c", TLS_SCRIPT], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "True", "True", "True", "True"]


def test_every_request_of_a_process_uses_the_one_tls_context(fake: FakeAnthropic) -> None:
    import anthropic
    from hookcode_provider_anthropic import tls

    seen: list[Any] = []
    original = anthropic.DefaultAsyncHttpxClient

    class Recording(original):  # the SDK's client, recording the context it was given
        def __init__(self, **kwargs: Any) -> None:
            seen.append(kwargs.get("verify"))
            super().__init__(**kwargs)

    fake.script("test-model", reply(text("one")), reply(text("two")))
    p = provider(fake)
    anthropic.DefaultAsyncHttpxClient = Recording  # type: ignore[misc]
    try:
        for _ in range(2):
            events = collect(p, request())
            assert any(isinstance(e, TextDelta) for e in events)
    finally:
        anthropic.DefaultAsyncHttpxClient = original  # type: ignore[misc]
    assert len(seen) == 2 and seen[0] is seen[1] is tls.ssl_context()
