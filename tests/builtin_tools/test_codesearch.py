"""The codesearch tool (reference/tools.md §14) against a local fake of Exa's MCP endpoint.

The Exa client itself (data lines, errors, endpoint) is websearch's and is tested there; these
tests cover what codesearch adds and check that it goes through the same client."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

import pytest
from exa_fake import enabled_runtime, failed, ok, result
from hookcode.testing import ReplyWith, invoke_tool
from http_fakes import hang, reply, sse

SNIPPETS = "## useState\n```js\nconst [x, setX] = useState(0)\n```"
NO_RESULTS = (
    "No code snippets or documentation found. Please try a different query, be more specific "
    "about the library or programming pattern, or check if the library name is correct."
)


def code_search(runtime: Any, query: str = "React useState hook examples", **args: Any) -> Any:
    return invoke_tool(runtime, "codesearch", {"query": query, **args})


def test_listed_but_refused_until_enabled(hookcode_env, exa):
    exa.route("/mcp", sse(result(SNIPPETS)))
    runtime = hookcode_env.runtime(HOOKCODE_EXA_URL=exa.url("/mcp"))
    assert "codesearch" in runtime.registry.entries

    message = failed(code_search(runtime))

    assert message == (
        "The codesearch tool is disabled: it sends the query to Exa's hosted search service "
        f"({exa.url('/mcp')}). To enable it, set HOOKCODE_ENABLE_EXA=1 in the environment, "
        "or add `exa = true` under `[experimental]` in hookcode.toml."
    )
    assert exa.requests == []


def test_enabled_by_config(hookcode_env, exa):
    exa.route("/mcp", sse(result(SNIPPETS)))
    hookcode_env.write_config({"experimental": {"exa": True}})
    runtime = hookcode_env.runtime(HOOKCODE_EXA_URL=exa.url("/mcp"))

    assert ok(code_search(runtime)).output == SNIPPETS


def test_one_json_rpc_call_with_the_default_token_count(hookcode_env, exa):
    exa.route("/mcp", sse(result(SNIPPETS)))

    outcome = code_search(enabled_runtime(hookcode_env, exa), "pandas filtering")

    res = ok(outcome)
    assert res.output == SNIPPETS
    assert res.title == "Code search: pandas filtering"
    (request,) = exa.requests
    assert request.headers["accept"] == "application/json, text/event-stream"
    assert request.json() == {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "get_code_context_exa",
            "arguments": {"query": "pandas filtering", "tokensNum": 5000},
        },
    }
    assert outcome.call.args == {"query": "pandas filtering", "tokensNum": 5000}


@pytest.mark.parametrize("tokens", [1000, 50000])
def test_token_count_bounds_are_inclusive(hookcode_env, exa, tokens):
    exa.route("/mcp", sse(result(SNIPPETS)))
    ok(code_search(enabled_runtime(hookcode_env, exa), tokensNum=tokens))
    assert exa.requests[0].json()["params"]["arguments"]["tokensNum"] == tokens


@pytest.mark.parametrize("tokens", [999, 50001])
def test_token_count_out_of_bounds_is_invalid(hookcode_env, exa, tokens):
    message = failed(code_search(enabled_runtime(hookcode_env, exa), tokensNum=tokens))
    assert message.startswith("The codesearch tool was called with invalid arguments: tokensNum:")
    assert exa.requests == []


def test_schema_shows_the_bounds(hookcode_env):
    tool = hookcode_env.runtime().registry.entries["codesearch"].tool
    schema = tool.parameters["properties"]["tokensNum"]
    assert (schema["minimum"], schema["maximum"], schema["default"]) == (1000, 50000, 5000)


def test_no_results(hookcode_env, exa):
    exa.route("/mcp", sse({"jsonrpc": "2.0", "id": 1, "result": {"content": []}}))
    assert ok(code_search(enabled_runtime(hookcode_env, exa))).output == NO_RESULTS


def test_http_error_quotes_status_and_body(hookcode_env, exa):
    exa.route("/mcp", reply(500, "internal trouble"))
    message = failed(code_search(enabled_runtime(hookcode_env, exa)))
    assert message == "Code search error (500): internal trouble"


def test_timeout(hookcode_env, exa, monkeypatch):
    import hookcode_tool_codesearch

    assert hookcode_tool_codesearch.TIMEOUT == 30.0
    monkeypatch.setattr(hookcode_tool_codesearch, "TIMEOUT", 0.5)
    exa.route("/mcp", hang)

    start = time.monotonic()
    assert failed(code_search(enabled_runtime(hookcode_env, exa))) == (
        "Code search request timed out"
    )
    assert time.monotonic() - start < 5


def test_asks_codesearch_with_the_query(hookcode_env, exa):
    exa.route("/mcp", sse(result(SNIPPETS)))
    hookcode_env.write_config({"permission": {"codesearch": "ask"}})
    asked = hookcode_env.register(ReplyWith("once"), "asked")

    ok(code_search(enabled_runtime(hookcode_env, exa), "q", tokensNum=2000))

    (request,) = asked.requests
    assert (request.permission, request.patterns, request.always) == ("codesearch", ["q"], ["*"])
    assert request.metadata == {"query": "q", "tokensNum": 2000}


def test_shares_the_exa_client_with_websearch():
    import hookcode_tool_codesearch
    import hookcode_tool_websearch

    assert hookcode_tool_codesearch.exa is hookcode_tool_websearch.exa


def test_importing_the_plugin_imports_no_http_client():
    code = (
        "import sys, hookcode_tool_codesearch\n"
        "print(sorted({'httpx', 'pydantic'} & set(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
