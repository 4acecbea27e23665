"""provider_openai (plugins/provider_openai): OpenAI-compatible Chat Completions over httpx,
driven against a real local HTTP server speaking the wire format (fake_openai.py), at the
provider level and through the whole agent loop (run_session and `hookcode run`)."""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_openai import (
    Drop,
    Error,
    FakeOpenAI,
    Json,
    Stream,
    call,
    calls,
    chunk,
    error_body,
    text_reply,
    tool_reply,
    usage_chunk,
)
from helpers.fakedist import run_cli
from hookcode import hookimpl
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

PLUGINS = "provider_openai,policy_rules,tool_read,tool_write"
TOOLS = [
    {
        "name": "read",
        "description": "Read a file.",
        "parameters": {
            "type": "object",
            "properties": {"filePath": {"type": "string"}},
            "required": ["filePath"],
        },
    },
    {
        "name": "glob",
        "description": "Find files.",
        "parameters": {"type": "object", "properties": {"pattern": {"type": "string"}}},
    },
]
# a 1x1 PNG
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


@pytest.fixture
def fake(tmp_path: Path):
    with FakeOpenAI(log=tmp_path / "requests.jsonl") as server:
        yield server


@pytest.fixture
def env(hookcode_env: Any) -> Any:
    for key in [k for k in hookcode_env.env if k.startswith("OPENAI_") or k == "LOCAL_KEY"]:
        del hookcode_env.env[key]
    hookcode_env.env["HOOKCODE_LOAD_PLUGINS"] = PLUGINS
    return hookcode_env


def local_config(fake: FakeOpenAI, extra: str = "", models: str = '["m"]') -> str:
    return (
        f'[provider.local]\ntype = "openai"\nbase_url = "{fake.base_url}"\nmodels = {models}\n'
        f"max_retries = 2\n{extra}"
    )


def provider(env: Any, fake: FakeOpenAI, extra: str = "", name: str = "local", **runtime_env: str):
    env.write_config(local_config(fake, extra))
    return env.runtime(**runtime_env).providers()[name]


def request(model: str = "m", text: str = "hi", **kwargs: Any) -> ModelRequest:
    messages = kwargs.pop("messages", None) or [Message("user", [{"type": "text", "text": text}])]
    return ModelRequest(
        model=model,
        system=kwargs.pop("system", ["You are a test."]),
        messages=messages,
        tools=kwargs.pop("tools", TOOLS),
        params=kwargs.pop(
            "params", {"temperature": None, "top_p": None, "max_tokens": None, "options": {}}
        ),
    )


def collect(prov: Any, req: ModelRequest | None = None) -> list[Any]:
    async def go() -> list[Any]:
        return [event async for event in prov.stream(req or request())]

    return asyncio.run(go())


def kinds(events: list[Any]) -> list[type]:
    return [type(e) for e in events]


def ends(events: list[Any]) -> list[ToolCallEnd]:
    return [e for e in events if isinstance(e, ToolCallEnd)]


# ============================================================================ streaming


def test_two_interleaved_parallel_calls_of_the_reference_stream(env, fake):
    fake.script(
        "m",
        Stream(
            [
                chunk({"role": "assistant", "content": ""}),
                chunk({"content": "Reading."}),
                calls(call(0, "call_a", "read", "")),
                calls(call(0, arguments='{"filePath":')),
                calls(call(1, "call_b", "glob", '{"pattern":"*.py"}')),
                calls(call(0, arguments='"a.txt"}')),
                chunk({}, "tool_calls"),
                usage_chunk(100, 20, cached=40, reasoning=5),
            ]
        ),
    )
    events = collect(provider(env, fake))
    assert events[0] == TextDelta("Reading.")
    assert events[1:6] == [
        ToolCallStart("call_a", "read"),
        ToolInputDelta("call_a", '{"filePath":'),
        ToolCallStart("call_b", "glob"),
        ToolInputDelta("call_b", '{"pattern":"*.py"}'),
        ToolInputDelta("call_a", '"a.txt"}'),
    ]
    # no call ends before the finish_reason: then both, in order
    assert events[6:8] == [
        ToolCallEnd("call_a", "read", {"filePath": "a.txt"}),
        ToolCallEnd("call_b", "glob", {"pattern": "*.py"}),
    ]
    finish = events[8]
    assert isinstance(finish, Finish) and finish.reason == "tool-calls"
    assert (finish.usage.input, finish.usage.cache_read, finish.usage.output) == (60, 40, 20)
    assert finish.usage.reasoning == 5
    assert len(events) == 9

    (sent,) = fake.requests
    assert sent["path"] == "/v1/chat/completions"
    assert "authorization" not in sent["headers"]  # a local server with no key configured
    body = sent["body"]
    assert body["model"] == "m"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [
        {"role": "system", "content": "You are a test."},
        {"role": "user", "content": "hi"},
    ]
    assert body["tools"][0] == {
        "type": "function",
        "function": {
            "name": "read",
            "description": "Read a file.",
            "parameters": TOOLS[0]["parameters"],
        },
    }
    assert "temperature" not in body and "max_tokens" not in body


def test_delta_edge_cases(env, fake):
    fake.script(
        "m",
        Stream(
            [
                # "tool_calls": [] beside the role
                chunk({"role": "assistant", "content": None, "tool_calls": []}),
                # two entries with the same index in one chunk: id/name, then the first arguments
                calls(call(0, "call_x", "read"), call(0, arguments='{"file')),
                # a call of choice index 1 (never asked for): ignored
                calls(call(0, "call_other", "glob", "{}"), index=1),
                # two argument fragments for one index in one chunk
                calls(call(0, arguments='Path":'), call(0, arguments='"b.txt"}')),
                # the second call's first fragment comes with its arguments and an empty content
                chunk({"content": "", "tool_calls": [call(1, "call_y", "glob", "")]}),
                chunk({}, "tool_calls", index=1),  # choice 1's finish does not end choice 0
                calls(call(1, arguments="")),
                chunk({}, "tool_calls"),
                usage_chunk(10, 5),
            ]
        ),
    )
    events = collect(provider(env, fake))
    starts = [e for e in events if isinstance(e, ToolCallStart)]
    assert starts == [ToolCallStart("call_x", "read"), ToolCallStart("call_y", "glob")]
    deltas = [e.text for e in events if isinstance(e, ToolInputDelta) and e.id == "call_x"]
    assert deltas == ['{"file', 'Path":', '"b.txt"}']
    # empty arguments are an empty object
    assert ends(events) == [
        ToolCallEnd("call_x", "read", {"filePath": "b.txt"}),
        ToolCallEnd("call_y", "glob", {}),
    ]
    assert not [e for e in events if isinstance(e, TextDelta)]
    assert isinstance(events[-1], Finish) and events[-1].reason == "tool-calls"


def test_finish_reason_length_cuts_every_call(env, fake):
    fake.script(
        "m",
        Stream(
            [
                chunk({"role": "assistant", "content": ""}),
                calls(call(0, "call_1", "glob", '{"pattern":"*"}')),
                calls(call(1, "call_2", "read", '{"filePath": "lo')),
                chunk({}, "length"),
                usage_chunk(50, 4096),
            ]
        ),
    )
    events = collect(provider(env, fake))
    assert [e.id for e in events if isinstance(e, ToolCallStart)] == ["call_1", "call_2"]
    # even the call whose arguments look complete is not run: nothing proves it
    assert ends(events) == []
    assert isinstance(events[-1], Finish) and events[-1].reason == "length"
    assert events[-1].usage.output == 4096


def test_malformed_arguments_end_with_the_raw_string(env, fake):
    fake.script(
        "m", tool_reply([("call_1", "read", '{"filePath": "a.txt"'), ("call_2", "glob", "[1, 2]")])
    )
    events = collect(provider(env, fake))
    assert ends(events) == [
        ToolCallEnd("call_1", "read", '{"filePath": "a.txt"'),
        ToolCallEnd("call_2", "glob", "[1, 2]"),
    ]


@pytest.mark.parametrize(
    ("wire", "ours"),
    [
        ("stop", "stop"),
        ("length", "length"),
        ("content_filter", "content-filter"),
        ("tool_calls", "tool-calls"),
        ("something_new", "something_new"),
    ],
)
def test_finish_reason_mapping(env, fake, wire, ours):
    fake.script("m", Stream([chunk({"role": "assistant", "content": "ok"}), chunk({}, wire)]))
    events = collect(provider(env, fake))
    assert events == [TextDelta("ok"), Finish(ours)]


def test_stop_after_tool_calls_still_runs_them(env, fake):
    # some servers (older Ollama) say "stop" after tool calls
    fake.script("m", tool_reply([("call_1", "glob", {"pattern": "*"})], finish="stop"))
    events = collect(provider(env, fake))
    assert ends(events) == [ToolCallEnd("call_1", "glob", {"pattern": "*"})]
    assert events[-1].reason == "tool-calls"


def test_reasoning_and_usage_in_the_finish_chunk(env, fake):
    fake.script(
        "m",
        Stream(
            [
                chunk({"role": "assistant", "reasoning_content": "Think"}),
                chunk({"reasoning_content": "ing."}),
                chunk({"content": "Done."}),
                chunk({}, "stop", usage={"prompt_tokens": 7, "completion_tokens": 3}),
            ]
        ),
    )
    events = collect(provider(env, fake))
    assert events[:3] == [ReasoningDelta("Think"), ReasoningDelta("ing."), TextDelta("Done.")]
    assert events[3].usage.input == 7 and events[3].usage.output == 3


def test_usage_cost_from_configured_prices(env, fake):
    fake.script("m", text_reply("hi", usage=(1_000_000, 0)))
    fake.script(
        "m",
        Stream(
            [
                chunk({"content": "x"}),
                chunk({}, "stop"),
                usage_chunk(2_000_000, 1_000_000, cached=1_000_000),
            ]
        ),
    )
    prov = provider(
        env, fake, "[provider.local.prices.m]\ninput = 2.0\noutput = 8.0\ncached_input = 0.5\n"
    )
    assert collect(prov)[-1].usage.cost == pytest.approx(2.0)
    # 1M uncached input at 2.0 + 1M cached at 0.5 + 1M output at 8.0
    assert collect(prov)[-1].usage.cost == pytest.approx(10.5)
    assert prov.models()[0].cost_in == 2.0


def test_a_server_that_ignores_stream(env, fake):
    fake.script(
        "m",
        Json(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "choices": [
                    {
                        "index": 0,
                        "message": {
                            "role": "assistant",
                            "content": None,
                            "tool_calls": [
                                {
                                    "id": "call_1",
                                    "type": "function",
                                    "function": {"name": "glob", "arguments": '{"pattern": "*"}'},
                                },
                                {
                                    "id": "call_2",
                                    "type": "function",
                                    "function": {"name": "read", "arguments": '{"filePath": "a"}'},
                                },
                            ],
                        },
                        "finish_reason": "tool_calls",
                    }
                ],
                "usage": {"prompt_tokens": 5, "completion_tokens": 6},
            }
        ),
    )
    events = collect(provider(env, fake))
    assert ends(events) == [
        ToolCallEnd("call_1", "glob", {"pattern": "*"}),
        ToolCallEnd("call_2", "read", {"filePath": "a"}),
    ]
    assert events[-1] == Finish("tool-calls", events[-1].usage) and events[-1].usage.output == 6


def test_sse_comments_and_no_space_after_data(env, fake):
    fake.script(
        "m",
        Stream(
            [
                ": OPENROUTER PROCESSING\n\n",
                'data:{"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n',
                'data: {"choices":[{"index":0,"delta":{"content":"b"}}]}\r\n\r\n',
                chunk({}, "stop"),
            ]
        ),
    )
    events = collect(provider(env, fake))
    assert events == [TextDelta("a"), TextDelta("b"), Finish("stop")]


def test_sse_a_last_event_without_a_blank_line_and_another_content_type(env, fake):
    last = 'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}'
    fake.script("m", Stream([chunk({"content": "a"}), last], done=False))
    fake.script(
        "m", Stream([chunk({"content": "b"}), chunk({}, "stop")], content_type="text/plain")
    )
    prov = provider(env, fake)
    assert collect(prov) == [TextDelta("a"), Finish("stop")]
    assert collect(prov) == [TextDelta("b"), Finish("stop")]


# ============================================================================ errors


def test_one_request_per_reply_errors_say_whether_to_retry(env, fake):
    fake.script(
        "m",
        Error(
            429,
            error_body("Rate limit reached", "requests", "rate_limit_exceeded"),
            {"retry-after-ms": "250"},
        ),
        Error(503, error_body("overloaded", "server_error"), {"retry-after": "0.5"}),
        Error(500, error_body("boom", "server_error")),
        text_reply("hello"),
    )
    prov = provider(env, fake)
    expected = [
        (0.25, "provider 'local': HTTP 429 requests: Rate limit reached"),
        (0.5, "provider 'local': HTTP 503 server_error: overloaded"),
        (None, "provider 'local': HTTP 500 server_error: boom"),
    ]
    for count, (wait, message) in enumerate(expected, 1):
        (error,) = collect(prov)
        assert (error.retryable, error.retry_after, error.message) == (True, wait, message)
        assert len(fake.requests) == count  # the next try is the loop's
    events = collect(prov)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "hello"
    assert fake.requests[0]["body"] == fake.requests[3]["body"]


def test_the_server_delay_is_passed_to_the_loop(env, fake):
    fake.script("m", Error(429, error_body("slow down"), {"retry-after": "7"}))
    fake.script("m", Error(503, error_body("busy"), {"x-should-retry": "false"}))
    env.write_config(local_config(fake).replace("max_retries = 2", "max_retries = 0"))
    prov = env.runtime().providers()["local"]
    (first,) = collect(prov)
    assert first.retryable and first.retry_after == 7.0
    (second,) = collect(prov)
    assert not second.retryable and "busy" in second.message
    assert len(fake.requests) == 2


def test_max_retries_zero(env, fake):
    fake.script("m", Error(500, error_body("boom", "server_error")), text_reply("never"))
    env.write_config(local_config(fake).replace("max_retries = 2", "max_retries = 0"))
    events = collect(env.runtime().providers()["local"])
    assert len(fake.requests) == 1
    assert isinstance(events[0], StreamError) and "boom" in events[0].message


def test_error_body_is_surfaced_and_not_retried(env, fake):
    fake.script(
        "m",
        Error(
            400,
            error_body(
                "Invalid schema for function 'read': 'filePath' is not valid.",
                "invalid_request_error",
            ),
        ),
    )
    (error,) = collect(provider(env, fake))
    assert isinstance(error, StreamError) and not error.retryable
    assert "HTTP 400 invalid_request_error: Invalid schema for function 'read'" in error.message
    assert len(fake.requests) == 1


def test_error_body_variants_of_compatible_servers(env, fake):
    fake.script("m", Error(404, {"error": "model 'm' not found, try pulling it first"}))
    fake.script(
        "m",
        Error(400, {"object": "error", "message": "context too long", "type": "BadRequestError"}),
    )
    fake.script("m", Error(422, b"not json at all"))
    prov = provider(env, fake)
    assert "model 'm' not found" in collect(prov)[0].message
    assert "context too long" in collect(prov)[0].message
    assert "not json at all" in collect(prov)[0].message


def test_401_names_the_key_variable_and_never_the_key(env, fake):
    secret = "sk-test-SECRET-0123456789"
    fake.script(
        "m",
        Error(
            401,
            error_body(
                f"Incorrect API key provided: {secret}.", "invalid_request_error", "invalid_api_key"
            ),
        ),
    )
    prov = provider(env, fake, 'api_key_env = "LOCAL_KEY"\n', LOCAL_KEY=secret)
    (error,) = collect(prov)
    assert error.message.startswith(
        "authentication failed: set LOCAL_KEY or run `hookcode auth login local`"
    )
    assert secret not in error.message and not error.retryable
    assert len(fake.requests) == 1
    assert fake.requests[0]["headers"]["authorization"] == f"Bearer {secret}"


def test_401_of_the_builtin_openai_provider(env, fake):
    fake.script("gpt-x", Error(401, error_body("You didn't provide an API key.")))
    rt = env.runtime(OPENAI_BASE_URL=fake.base_url)
    (error,) = collect(rt.providers()["openai"], request("gpt-x"))
    assert error.message.startswith(
        "authentication failed: set OPENAI_API_KEY or run `hookcode auth login openai`"
    )


def test_stream_cut_midway(env, fake):
    events = [
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": "Half"}),
        chunk({"content": " a reply"}),
        chunk({}, "stop"),
    ]
    fake.script("m", Stream(events, cut=2))  # connection closed, no finish, no [DONE]
    fake.script("m", Stream(events, cut=3, chunked=True))  # a broken chunked transfer
    prov = provider(env, fake)
    first = collect(prov)
    assert first[0] == TextDelta("Half")
    assert isinstance(first[-1], StreamError) and first[-1].retryable
    assert "ended before the reply was complete" in first[-1].message
    second = collect(prov)
    assert [e.text for e in second if isinstance(e, TextDelta)] == ["Half", " a reply"]
    assert isinstance(second[-1], StreamError) and "broke mid-reply" in second[-1].message
    assert not [e for e in first + second if isinstance(e, Finish)]
    assert len(fake.requests) == 2  # what was already streamed is never requested again


def test_a_dropped_connection_before_any_output_is_retryable(env, fake):
    fake.script("m", Drop(), text_reply("after the drop"))
    prov = provider(env, fake)
    (error,) = collect(prov)
    assert isinstance(error, StreamError) and error.retryable
    assert "cannot reach" in error.message and len(fake.requests) == 1
    events = collect(prov)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "after the drop"


def test_an_error_inside_the_stream(env, fake):
    fake.script(
        "m",
        Stream(
            [chunk({"content": "x"}), {"error": {"message": "upstream overloaded", "code": 502}}]
        ),
    )
    events = collect(provider(env, fake))
    assert events[0] == TextDelta("x")
    assert isinstance(events[1], StreamError) and "upstream overloaded" in events[1].message
    assert len(events) == 2


def test_unreachable_server(env, fake):
    url = fake.base_url
    fake.stop()
    env.write_config(f'[provider.gone]\nbase_url = "{url}"\nmax_retries = 1\n')
    (error,) = collect(env.runtime().providers()["gone"])
    assert isinstance(error, StreamError) and error.retryable
    assert error.message.startswith(f"cannot reach {url}/chat/completions: ")
    assert "attempts)" not in error.message  # no count of tries: the loop has its own


def test_no_key_for_openais_own_api_fails_at_once_naming_where_it_comes_from(env):
    """The built-in provider's default endpoint needs a key: without one nothing is sent
    (so nothing is retried) and the error names the variable and ``hookcode auth login``."""
    (error,) = collect(env.runtime().providers()["openai"], request("gpt-x"))
    assert isinstance(error, StreamError) and not error.retryable
    assert error.message == (
        "no API key for provider 'openai': set OPENAI_API_KEY or run `hookcode auth login openai`"
    )
    # a configured provider pointing at OpenAI's API needs one too
    env.write_config('[provider.mine]\nbase_url = "https://api.openai.com/v1/"\n')
    (error,) = collect(env.runtime().providers()["mine"], request("gpt-x"))
    assert error.message == (
        "no API key for provider 'mine': set api_key_env in [provider.mine] or run "
        "`hookcode auth login mine`"
    )


def test_hookcode_run_without_a_key_says_so_once_without_retrying(env):
    proc = run_cli(["run", "--model", "openai/gpt-x", "hi"], env=env.env, cwd=env.project)
    assert proc.returncode == 1
    assert "OPENAI_API_KEY" in proc.stderr and "hookcode auth login openai" in proc.stderr
    assert "retry" not in proc.stderr and "cannot reach" not in proc.stderr


def test_a_provider_without_base_url_says_so(env):
    env.write_config('[provider.nowhere]\nmodels = ["x"]\n')
    (error,) = collect(env.runtime().providers()["nowhere"], request("x"))
    assert "set base_url in [provider.nowhere]" in error.message


# ============================================================================ what is sent


def test_history_echo_tool_results_and_images(env, fake):
    fake.script("m", text_reply("ok"))
    history = [
        Message("user", [{"type": "text", "text": "look at a.png"}]),
        Message(
            "assistant",
            [
                {"type": "reasoning", "text": "hidden"},
                {"type": "text", "text": "Reading."},
                {
                    "type": "tool_use",
                    "id": "call_a",
                    "name": "read",
                    "input": {"filePath": "a.png"},
                },
                {"type": "tool_use", "id": "call_b", "name": "glob", "input": '{"pattern": '},
            ],
        ),
        Message(
            "tool",
            [
                {
                    "type": "tool_result",
                    "id": "call_a",
                    "output": "Image read successfully",
                    "is_error": False,
                    "attachments": [
                        {
                            "mime": "image/png",
                            "url": "data:image/png;base64,AAAA",
                            "filename": "a.png",
                        }
                    ],
                },
                {
                    "type": "tool_result",
                    "id": "call_b",
                    "output": "invalid JSON",
                    "is_error": True,
                    "attachments": [],
                },
            ],
        ),
        Message("assistant", [{"type": "tool_use", "id": "call_c", "name": "glob", "input": {}}]),
        Message(
            "tool",
            [
                {
                    "type": "tool_result",
                    "id": "call_c",
                    "output": "",
                    "is_error": False,
                    "attachments": [],
                }
            ],
        ),
    ]
    collect(
        provider(env, fake),
        request(
            messages=history,
            system=["one", "two"],
            params={
                "temperature": 0.2,
                "top_p": None,
                "max_tokens": 100,
                "options": {"seed": 7, "model": "no"},
            },
        ),
    )
    body = fake.requests[0]["body"]
    assert body["messages"] == [
        {"role": "system", "content": "one\n\ntwo"},
        {"role": "user", "content": "look at a.png"},
        {
            "role": "assistant",
            "content": "Reading.",
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"filePath": "a.png"}'},
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "glob", "arguments": '{"pattern": '},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "Image read successfully"},
        {"role": "tool", "tool_call_id": "call_b", "content": "invalid JSON"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Attachment of tool call call_a (a.png):"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_c",
                    "type": "function",
                    "function": {"name": "glob", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_c", "content": "(no output)"},
    ]
    assert body["temperature"] == 0.2 and body["max_tokens"] == 100 and body["seed"] == 7
    assert body["model"] == "m" and "top_p" not in body


def test_attachments_merge_with_a_following_user_message(env, fake):
    fake.script("m", text_reply("ok"))
    text_file = "data:text/plain;base64," + base64.b64encode(b"plain words").decode()
    history = [
        Message("user", [{"type": "text", "text": "go"}]),
        Message("assistant", [{"type": "tool_use", "id": "c1", "name": "read", "input": {}}]),
        Message(
            "tool",
            [
                {
                    "type": "tool_result",
                    "id": "c1",
                    "output": "PDF read successfully",
                    "is_error": False,
                    "attachments": [
                        {"mime": "application/pdf", "url": "data:application/pdf;base64,JVBE"}
                    ],
                }
            ],
        ),
        Message(
            "user",
            [
                {"type": "text", "text": "and this file"},
                {"type": "file", "mime": "text/plain", "url": text_file, "filename": "n.txt"},
            ],
        ),
    ]
    collect(provider(env, fake), request(messages=history))
    messages = fake.requests[0]["body"]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "user"]
    assert messages[-1]["content"] == [
        {"type": "text", "text": "Attachment of tool call c1:"},
        {
            "type": "file",
            "file": {"filename": "document.pdf", "file_data": "data:application/pdf;base64,JVBE"},
        },
        {"type": "text", "text": "and this file\n\nn.txt:\nplain words"},
    ]


def test_authorization_header_from_env_stored_key_or_none(env, fake):
    for _ in range(3):
        fake.script("m", text_reply("ok"))
    env.write_config(
        local_config(fake, 'api_key_env = "LOCAL_KEY"\nheaders = { "X-Title" = "hookcode" }\n')
    )
    collect(env.runtime(LOCAL_KEY="sk-from-env-123").providers()["local"])
    rt = env.runtime()
    rt.credentials.set("local", "sk-stored-456")
    collect(rt.providers()["local"])
    rt.credentials.remove("local")
    collect(env.runtime().providers()["local"])
    headers = [r["headers"] for r in fake.requests]
    assert headers[0]["authorization"] == "Bearer sk-from-env-123"
    assert headers[1]["authorization"] == "Bearer sk-stored-456"
    assert "authorization" not in headers[2]
    assert all(h["x-title"] == "hookcode" for h in headers)
    assert headers[0]["content-type"] == "application/json"


def test_builtin_openai_provider_honours_env(env, fake):
    fake.script("gpt-x", text_reply("hi"))
    rt = env.runtime(OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="sk-openai-789")
    prov = rt.providers()["openai"]
    assert prov.name == "OpenAI"
    events = collect(prov, request("gpt-x", params={"max_tokens": 10, "options": {}}))
    assert events[-1].reason == "stop"
    sent = fake.requests[0]
    assert sent["headers"]["authorization"] == "Bearer sk-openai-789"
    assert sent["body"]["max_tokens"] == 10  # a compatible server: max_tokens
    # the default base URL is OpenAI's own, which wants max_completion_tokens
    default = env.runtime().providers()["openai"]
    assert default.settings.base_url == "https://api.openai.com/v1"
    assert default.settings.max_tokens_key == "max_completion_tokens"


# ============================================================================ config


class FakeAnthropic:
    """Stands in for the Anthropic plugin: claims [provider.anthropic] by name."""

    def __init__(self) -> None:
        from pydantic import BaseModel, ConfigDict

        class AnthropicSection(BaseModel):
            model_config = ConfigDict(extra="forbid")
            base_url: str | None = None
            thinking_budget: int = 0

        self.section = AnthropicSection

    @hookimpl
    def config_schema(self):
        return {"provider.anthropic": self.section}


def test_provider_star_coexists_with_a_claim_by_name(env, fake):
    env.register(FakeAnthropic(), "fake_anthropic")
    env.write_config(
        '[provider.anthropic]\nbase_url = "http://127.0.0.1:1"\nthinking_budget = 2048\n\n'
        + local_config(fake)
    )
    rt = env.runtime()
    assert type(rt.config.section("provider.anthropic")).__name__ == "AnthropicSection"
    assert rt.config.section("provider.anthropic").thinking_budget == 2048
    assert type(rt.config.section("provider.local")).__name__ == "OpenAIProviderConfig"
    assert rt.config_owners["provider.*"] == "provider_openai"
    assert rt.config_owners["provider.anthropic"] == "fake_anthropic"
    providers = rt.providers()
    assert "anthropic" not in providers
    assert {"openai", "local"} <= set(providers)
    assert [m.id for m in providers["local"].models()] == ["m"]


def test_coexists_with_the_real_anthropic_plugin(env, fake):
    pytest.importorskip("hookcode_provider_anthropic")
    env.env["HOOKCODE_LOAD_PLUGINS"] = PLUGINS + ",provider_anthropic"
    env.write_config(
        '[provider.anthropic]\nbase_url = "http://127.0.0.1:1"\n\n' + local_config(fake)
    )
    rt = env.runtime()
    if rt.config_owners.get("provider.anthropic") != "provider_anthropic":
        pytest.skip("the anthropic plugin claims no [provider.anthropic] section")
    assert rt.config_owners["provider.*"] == "provider_openai"
    assert type(rt.config.section("provider.local")).__name__ == "OpenAIProviderConfig"
    providers = rt.providers()
    assert {"openai", "local", "anthropic"} <= set(providers)
    assert type(providers["anthropic"]).__module__.startswith("hookcode_provider_anthropic")


def test_provider_anthropic_without_its_plugin_is_not_taken(env):
    env.write_config('[provider.anthropic]\nbase_url = "http://127.0.0.1:1"\n')
    assert "anthropic" not in env.runtime().providers()
    # unless it says so
    env.write_config('[provider.anthropic]\ntype = "openai"\nbase_url = "http://127.0.0.1:1"\n')
    assert "anthropic" in env.runtime().providers()


def test_tables_of_another_type_are_left_alone(env):
    env.write_config('[provider.bedrock]\ntype = "bedrock"\nregion = "eu-west-1"\n')
    rt = env.runtime()
    assert "bedrock" not in rt.providers()


def test_unknown_keys_are_config_errors(env):
    env.write_config('[provider.local]\ntype = "openai"\nbase_ulr = "http://x/v1"\n')
    with pytest.raises(ConfigError) as info:
        env.runtime()
    message = str(info.value)
    assert "provider.local" in message and "unknown key 'base_ulr'" in message
    assert "did you mean 'base_url'" in message
    env.write_config("[provider.local]\nmax_retries = -1\n")
    with pytest.raises(ConfigError, match="max_retries"):
        env.runtime()


def test_provider_openai_section_adjusts_the_builtin(env, fake):
    env.write_config(
        f'[provider.openai]\nbase_url = "{fake.base_url}"\napi_key_env = "MY_OPENAI"\nmodels = ["gpt-x"]\n'
    )
    prov = env.runtime().providers()["openai"]
    assert prov.settings.base_url == fake.base_url
    assert prov.settings.api_key_env == "MY_OPENAI"
    assert [m.id for m in prov.models()] == ["gpt-x"]


def test_config_schema_lists_the_section(env):
    from hookcode.config import json_schema

    rt = env.runtime()
    claimed = {}
    for _plugin, sections in rt.plugins.collect("config_schema"):
        claimed.update(sections)
    schema = json_schema(claimed)
    star = schema["properties"]["provider"]["additionalProperties"]["$ref"].rsplit("/", 1)[-1]
    fields = schema["$defs"][star]["properties"]
    assert {"type", "base_url", "api_key_env", "models", "headers", "prices", "max_retries"} <= set(
        fields
    )
    assert "Environment variable" in fields["api_key_env"]["description"]


def test_auth_methods(env):
    env.write_config(
        '[provider.router]\nbase_url = "https://openrouter.ai/api/v1"\napi_key_env = "OPENROUTER_API_KEY"\n'
        '[provider.ollama]\nbase_url = "http://127.0.0.1:11434/v1"\n'
    )
    rt = env.runtime()
    methods = [m for _p, items in rt.plugins.collect("auth", config=rt.config) for m in items]
    by = {(m.provider, m.type): m for m in methods}
    assert by[("openai", "env")].env == ["OPENAI_API_KEY"]
    assert ("openai", "api") in by
    assert by[("router", "env")].env == ["OPENROUTER_API_KEY"]
    assert ("router", "api") in by and ("ollama", "api") in by
    assert ("ollama", "env") not in by


# ============================================================================ the whole loop


def loop_config(fake: FakeOpenAI) -> str:
    return local_config(fake) + '\n[permission]\n"*" = "allow"\n'


def test_run_session_with_the_read_tool(env, fake):
    (env.project / "notes.txt").write_text("the answer is 42\n")
    fake.script(
        "m",
        tool_reply(
            [("call_r", "read", {"filePath": "notes.txt"}), ("call_bad", "read", '{"filePath": ')],
            text="Let me read it.",
        ),
        text_reply("The answer is 42."),
    )
    env.write_config(loop_config(fake))
    rt = env.runtime()
    result = asyncio.run(run_session(rt, "what is the answer?", model="local/m"))
    assert result.error is None, result.error
    assert result.text == "The answer is 42."
    assert result.finish == "stop" and result.steps == 2
    assert result.usage.input == 30 and result.usage.output == 15

    first, second = fake.bodies()
    assert {t["function"]["name"] for t in first["tools"]} >= {"read", "write"}
    assert first["messages"][-1] == {"role": "user", "content": "what is the answer?"}
    messages = second["messages"]
    assistant = next(m for m in messages if m["role"] == "assistant")
    assert assistant["content"] == "Let me read it."
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_r", "call_bad"]
    echoed = json.loads(assistant["tool_calls"][0]["function"]["arguments"])
    assert echoed["filePath"] == "notes.txt"
    results = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    assert "the answer is 42" in results["call_r"]
    assert "not valid JSON" in results["call_bad"]  # the model is told what was wrong


def test_the_history_carries_the_arguments_as_the_model_sent_them(env, fake):
    """read fills in ``offset`` and ``limit`` when it validates; the call sent back (in the
    same run, and from the store in the next one) has exactly the model's arguments."""
    (env.project / "notes.txt").write_text("the answer is 42\n")
    fake.script(
        "m",
        tool_reply([("call_r", "read", {"filePath": "notes.txt"})]),
        text_reply("42."),
        text_reply("Still 42."),
    )
    env.write_config(loop_config(fake))
    rt = env.runtime()
    result = asyncio.run(run_session(rt, "what is the answer?", model="local/m"))
    assert result.error is None, result.error
    session = rt.store.get_session(result.session_id)
    again = asyncio.run(run_session(rt, "and now?", model="local/m", session=session))
    assert again.error is None, again.error
    for body in fake.bodies()[1:]:
        assistant = next(m for m in body["messages"] if m["role"] == "assistant")
        [sent] = assistant["tool_calls"]
        assert json.loads(sent["function"]["arguments"]) == {"filePath": "notes.txt"}


def test_run_session_moves_images_into_a_user_message(env, fake):
    (env.project / "pixel.png").write_bytes(PNG)
    fake.script(
        "m",
        tool_reply([("call_img", "read", {"filePath": "pixel.png"})]),
        text_reply("A single pixel."),
    )
    env.write_config(loop_config(fake))
    result = asyncio.run(run_session(env.runtime(), "describe pixel.png", model="local/m"))
    assert result.error is None and result.text == "A single pixel."
    messages = fake.bodies()[1]["messages"]
    roles = [m["role"] for m in messages]
    assert roles[-3:] == ["assistant", "tool", "user"]
    image_message = messages[-1]["content"]
    assert image_message[0]["type"] == "text" and "call_img" in image_message[0]["text"]
    assert image_message[1]["type"] == "image_url"
    assert image_message[1]["image_url"]["url"].startswith("data:image/png;base64,")


def test_run_session_length_cut_call_is_not_run(env, fake):
    target = env.project / "out.txt"
    fake.script(
        "m",
        Stream(
            [
                chunk({"role": "assistant", "content": "Writing."}),
                calls(call(0, "call_w", "write", '{"filePath": "out.txt", "content": "complete"}')),
                chunk({}, "length"),
                usage_chunk(10, 100),
            ]
        ),
    )
    env.write_config(loop_config(fake))
    rt = env.runtime()
    events: list[tuple[str, dict]] = []
    result = asyncio.run(
        run_session(rt, "write it", model="local/m", on_event=lambda k, d: events.append((k, d)))
    )
    assert result.finish == "length"
    assert not target.exists()
    assert not [d for k, d in events if k == "tool" and d.get("status") != "pending"]
    assert [d["error"] for k, d in events if k == "tool_result"] == [CUT_OFF]
    assert len(fake.requests) == 1


def test_run_session_reports_a_provider_error(env, fake):
    fake.script("m", Error(400, error_body("bad request: messages too long")))
    env.write_config(loop_config(fake))
    result = asyncio.run(run_session(env.runtime(), "hi", model="local/m"))
    assert result.finish == "error" and "messages too long" in (result.error or "")


def gaps(fake: FakeOpenAI) -> list[float]:
    """Seconds between one request and the next."""
    times = [r["time"] for r in fake.requests]
    return [later - earlier for earlier, later in itertools.pairwise(times)]


def test_the_loop_retries_429_503_and_500_honouring_retry_after(env, fake):
    fake.script(
        "m",
        Error(429, error_body("Rate limit reached", "requests"), {"retry-after-ms": "300"}),
        Error(503, error_body("overloaded", "server_error"), {"retry-after": "0.4"}),
        Error(500, error_body("boom", "server_error"), {"retry-after-ms": "200"}),
        text_reply("at last"),
    )
    env.write_config(loop_config(fake).replace("max_retries = 2", "max_retries = 3"))
    events: list[tuple[str, dict[str, Any]]] = []
    result = asyncio.run(
        run_session(
            env.runtime(), "hi", model="local/m", on_event=lambda k, d: events.append((k, d))
        )
    )
    assert result.error is None and result.text == "at last"
    assert len(fake.requests) == 4  # exactly the loop's tries
    waits = gaps(fake)
    assert waits[0] >= 0.3 and waits[1] >= 0.4 and waits[2] >= 0.2
    assert all(wait < 0.9 for wait in waits)  # the server's wait, not the loop's 1-2-4 s
    retries = [d for k, d in events if k == "retry"]
    assert [(r["attempt"], r["delay"]) for r in retries] == [(1, 0.3), (2, 0.4), (3, 0.2)]
    assert retries[0]["error"] == "provider 'local': HTTP 429 requests: Rate limit reached"


def test_the_loop_gives_up_after_the_providers_max_retries(env, fake):
    for _ in range(6):
        fake.script("m", Error(429, error_body("Rate limit reached"), {"retry-after-ms": "1"}))
    env.write_config(loop_config(fake))  # max_retries = 2
    result = asyncio.run(run_session(env.runtime(), "hi", model="local/m"))
    assert len(fake.requests) == 3
    assert result.error == (
        "model error: provider 'local': HTTP 429 invalid_request_error: Rate limit reached"
    )


def test_without_max_retries_the_loop_tries_its_default(env, fake):
    from hookcode.session import RETRY_ATTEMPTS

    for _ in range(8):
        fake.script("m", Error(500, error_body("boom"), {"retry-after-ms": "1"}))
    env.write_config(loop_config(fake).replace("max_retries = 2\n", ""))
    result = asyncio.run(run_session(env.runtime(), "hi", model="local/m"))
    assert len(fake.requests) == RETRY_ATTEMPTS + 1 == 5
    assert result.error == ("model error: provider 'local': HTTP 500 invalid_request_error: boom")


def test_the_loop_retries_a_dropped_connection(env, fake):
    fake.script("m", Drop(), text_reply("after the drop"))
    env.write_config(loop_config(fake))
    result = asyncio.run(run_session(env.runtime(), "hi", model="local/m"))
    assert result.error is None and result.text == "after the drop"
    assert len(fake.requests) == 2


def test_a_rejected_request_is_tried_once(env, fake):
    fake.script("m", Error(400, error_body("bad request"), {"retry-after-ms": "1"}))
    env.write_config(loop_config(fake))
    result = asyncio.run(run_session(env.runtime(), "hi", model="local/m"))
    assert len(fake.requests) == 1 and "bad request" in (result.error or "")


def test_hookcode_run_subprocess(env, fake):
    (env.project / "hello.txt").write_text("hello from the file\n")
    fake.script(
        "m",
        tool_reply([("call_1", "read", {"filePath": "hello.txt"})], text="Reading."),
        text_reply("It says hello."),
    )
    env.write_config(local_config(fake))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "hookcode.cli",
            "run",
            "--model",
            "local/m",
            "what does hello.txt say?",
            "--yes",
        ],
        cwd=env.project,
        env=env.env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "It says hello." in proc.stdout
    assert "read" in proc.stderr
    assert len(fake.requests) == 2
    results = [m for m in fake.bodies()[1]["messages"] if m["role"] == "tool"]
    assert "hello from the file" in results[0]["content"]


# ============================================================================ start-up cost


def test_importing_the_plugin_imports_no_http_client():
    code = (
        "import sys, hookcode_provider_openai as p\n"
        "p.auth(None)\n"
        "heavy = [m for m in ('httpx', 'httpcore', 'pydantic', 'hookcode_provider_openai.client') "
        "if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""


def test_a_run_that_knows_its_provider_imports_httpx_in_the_background(env: Any) -> None:
    env.write_config('[provider.local]\ntype = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n')
    code = """
import os, sys, threading
from pathlib import Path
from hookcode.agents import AgentSpec
from hookcode.plugins import create_plugins
from hookcode.runtime import Runtime
from hookcode.session import resolve_model
rt = Runtime(cwd=Path.cwd(), env=dict(os.environ), plugins=create_plugins(env=dict(os.environ)))
assert "httpx" not in sys.modules
resolve_model(rt, "local/m", AgentSpec(name="build"))
workers = [t for t in threading.enumerate() if t.name == "hookcode-import"]
for t in workers:
    t.join()
print(len(workers), "httpx" in sys.modules)
"""
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env=env.env,
        cwd=env.project,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["1", "True"]
