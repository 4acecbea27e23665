"""The websearch tool (reference/tools.md §14) against a local fake of Exa's MCP endpoint."""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
import time
from typing import Any

import pytest
from exa_fake import enabled_runtime, failed, ok, result
from hookcode.errors import PermissionRejected
from hookcode.testing import ReplyWith, invoke_tool
from http_fakes import FakeServer, hang, reply, sse

ANSWER = "Title: Result one\nURL: https://example.com/1\nText: all about it"


def disabled_message(tool: str) -> str:
    return (
        f"The {tool} tool is disabled: it sends the query to Exa's hosted search service "
        "(https://mcp.exa.ai/mcp). To enable it, set HOOKCODE_ENABLE_EXA=1 in the environment, "
        "or add `exa = true` under `[experimental]` in hookcode.toml."
    )


def search(runtime: Any, query: str = "python 3.14 release", **args: Any) -> Any:
    return invoke_tool(runtime, "websearch", {"query": query, **args})


# ---------------------------------------------------------------------------------------------
# disabled until enabled
# ---------------------------------------------------------------------------------------------


def test_listed_but_refused_until_enabled(hookcode_env, exa):
    exa.route("/mcp", sse(result(ANSWER)))
    runtime = hookcode_env.runtime(HOOKCODE_EXA_URL=exa.url("/mcp"))
    assert "websearch" in runtime.registry.entries

    message = failed(search(hookcode_env.runtime()))

    assert message == disabled_message("websearch")
    assert "HOOKCODE_ENABLE_EXA=1" in message and "[experimental]" in message
    assert exa.requests == []


@pytest.mark.parametrize("value", ["0", "", "no"])
def test_a_false_env_value_does_not_enable(hookcode_env, exa, value):
    exa.route("/mcp", sse(result(ANSWER)))
    runtime = hookcode_env.runtime(HOOKCODE_ENABLE_EXA=value, HOOKCODE_EXA_URL=exa.url("/mcp"))

    assert failed(search(runtime)).startswith("The websearch tool is disabled")
    assert exa.requests == []


def test_enabled_by_config(hookcode_env, exa):
    exa.route("/mcp", sse(result(ANSWER)))
    hookcode_env.write_config({"experimental": {"exa": True}})
    runtime = hookcode_env.runtime(HOOKCODE_EXA_URL=exa.url("/mcp"))

    assert ok(search(runtime)).output == ANSWER


def test_refusal_names_the_configured_endpoint(hookcode_env):
    runtime = hookcode_env.runtime(HOOKCODE_EXA_URL="http://127.0.0.1:9/mcp")
    assert "(http://127.0.0.1:9/mcp)" in failed(search(runtime))


# ---------------------------------------------------------------------------------------------
# the call
# ---------------------------------------------------------------------------------------------


def test_one_json_rpc_call_with_defaults_applied(hookcode_env, exa):
    exa.route("/mcp", sse(result(ANSWER)))

    outcome = search(enabled_runtime(hookcode_env, exa), "rust async")

    res = ok(outcome)
    assert res.output == ANSWER
    assert res.title == "Web search: rust async"
    (request,) = exa.requests
    assert request.method == "POST"
    assert request.path == "/mcp"
    assert request.headers["accept"] == "application/json, text/event-stream"
    assert request.headers["content-type"] == "application/json"
    assert "authorization" not in request.headers
    assert request.json() == {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "web_search_exa",
            "arguments": {
                "query": "rust async",
                "type": "auto",
                "numResults": 8,
                "livecrawl": "fallback",
            },
        },
    }
    assert outcome.call.args == {
        "query": "rust async",
        "numResults": 8,
        "livecrawl": "fallback",
        "type": "auto",
        "contextMaxCharacters": None,
    }


def test_every_parameter_is_passed_on(hookcode_env, exa):
    exa.route("/mcp", sse(result(ANSWER)))

    ok(
        search(
            enabled_runtime(hookcode_env, exa),
            "q",
            numResults=3,
            livecrawl="preferred",
            type="deep",
            contextMaxCharacters=2000,
        )
    )

    assert exa.requests[0].json()["params"]["arguments"] == {
        "query": "q",
        "type": "deep",
        "numResults": 3,
        "livecrawl": "preferred",
        "contextMaxCharacters": 2000,
    }


def test_bad_parameters_are_invalid_arguments(hookcode_env, exa):
    runtime = enabled_runtime(hookcode_env, exa)
    assert failed(search(runtime, type="slow")).startswith(
        "The websearch tool was called with invalid arguments: type:"
    )
    assert "numResults" in failed(search(runtime, numResults=0))
    assert exa.requests == []


def test_the_first_data_line_with_content_wins(hookcode_env, exa):
    exa.route(
        "/mcp",
        sse(
            ": a comment\n\n",
            "data: not json\n\n",
            {"jsonrpc": "2.0", "method": "notifications/progress", "params": {}},
            {"jsonrpc": "2.0", "id": 1, "result": {"content": []}},
            result("the first"),
            result("the second"),
        ),
    )
    assert ok(search(enabled_runtime(hookcode_env, exa))).output == "the first"


def test_a_plain_json_answer_on_one_data_line(hookcode_env, exa):
    # the reference reads the answer as text and only looks at `data: ` lines
    exa.route(
        "/mcp",
        reply(200, "data: " + json.dumps(result("plain")) + "\n", content_type="application/json"),
    )
    assert ok(search(enabled_runtime(hookcode_env, exa))).output == "plain"


def test_no_results(hookcode_env, exa):
    exa.route("/mcp", sse({"jsonrpc": "2.0", "id": 1, "result": {"content": []}}))
    res = ok(search(enabled_runtime(hookcode_env, exa), "zzz"))
    assert res.output == "No search results found. Please try a different query."
    assert res.title == "Web search: zzz"


def test_http_error_quotes_status_and_body(hookcode_env, exa):
    exa.route("/mcp", reply(429, "rate limited, slow down"))
    message = failed(search(enabled_runtime(hookcode_env, exa)))
    assert message == "Search error (429): rate limited, slow down"


def test_json_rpc_error_and_mcp_error_result_are_errors(hookcode_env, exa):
    exa.route("/mcp", sse({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "bad"}}))
    runtime = enabled_runtime(hookcode_env, exa)
    assert failed(search(runtime)) == "Search error: bad"

    exa.route("/mcp", sse(result("quota exceeded", isError=True)))
    assert failed(search(runtime)) == "Search error: quota exceeded"


def test_timeout(hookcode_env, exa, monkeypatch):
    import hookcode_tool_websearch

    assert hookcode_tool_websearch.TIMEOUT == 25.0
    monkeypatch.setattr(hookcode_tool_websearch, "TIMEOUT", 0.5)
    exa.route("/mcp", hang)

    start = time.monotonic()
    assert failed(search(enabled_runtime(hookcode_env, exa))) == "Search request timed out"
    assert time.monotonic() - start < 5


def test_unreachable_endpoint(hookcode_env):
    with FakeServer() as gone:
        url = gone.url("/mcp")
    runtime = hookcode_env.runtime(HOOKCODE_ENABLE_EXA="1", HOOKCODE_EXA_URL=url)
    assert failed(search(runtime)).startswith(f"Search error: could not reach {url}: ")


def test_asks_websearch_with_the_query(hookcode_env, exa):
    exa.route("/mcp", sse(result(ANSWER)))
    hookcode_env.write_config({"permission": {"websearch": "ask"}})
    asked = hookcode_env.register(ReplyWith("once"), "asked")

    ok(search(enabled_runtime(hookcode_env, exa), "the query"))

    (request,) = asked.requests
    assert (request.permission, request.patterns, request.always) == (
        "websearch",
        ["the query"],
        ["*"],
    )
    assert request.metadata["numResults"] == 8


def test_rejected_search_sends_nothing(hookcode_env, exa):
    exa.route("/mcp", sse(result(ANSWER)))
    hookcode_env.write_config({"permission": {"websearch": "ask"}})
    hookcode_env.register(ReplyWith("reject"), "rejects")

    assert isinstance(search(enabled_runtime(hookcode_env, exa)).error, PermissionRejected)
    assert exa.requests == []


def test_description_mentions_the_current_year(hookcode_env):
    runtime = hookcode_env.runtime()
    description = runtime.registry.entries["websearch"].tool.description
    assert f"The current year is {datetime.date.today().year}." in description
    assert "HOOKCODE_ENABLE_EXA=1" in description


def test_default_endpoint_is_exa():
    from hookcode_tool_websearch import exa

    assert exa.DEFAULT_URL == "https://mcp.exa.ai/mcp"


def test_importing_the_plugin_imports_no_http_client():
    code = (
        "import sys, hookcode_tool_websearch\n"
        "print(sorted({'httpx', 'pydantic'} & set(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
