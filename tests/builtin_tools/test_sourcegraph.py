"""The sourcegraph tool (reference/tools.md §26) against a local fake GraphQL endpoint."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hookcode.testing import ReplyWith, invoke_tool
from http_fakes import FakeServer, hang, reply

GRAPHQL = (
    "query Search($query: String!) { search(query: $query, version: V2, patternType: keyword) "
    "{ results { matchCount, limitHit, resultCount, approximateResultCount, missing { name }, "
    "timedout { name }, indexUnavailable, results { __typename, ... on FileMatch { repository "
    "{ name }, file { path, url, content }, lineMatches { preview, lineNumber, "
    "offsetAndLengths } } } } } }"
)
CONTENT = "".join(f"line {n}\n" for n in range(1, 31))  # "line 1" .. "line 30"
TOKEN = "sgp_secret_token_0123456789"


def file_match(
    repo: str, path: str, line_numbers: list[int], content: str | None = CONTENT
) -> dict[str, Any]:
    """A FileMatch; ``line_numbers`` are the API's 0-based ones."""
    return {
        "__typename": "FileMatch",
        "repository": {"name": repo},
        "file": {"path": path, "url": f"/{repo}/-/blob/{path}", "content": content},
        "lineMatches": [
            {"preview": f"line {n + 1}", "lineNumber": n, "offsetAndLengths": [[0, 4]]}
            for n in line_numbers
        ],
    }


def answer(
    *results: dict[str, Any], match_count: int | None = None, limit_hit: bool = False
) -> dict[str, Any]:
    return {
        "data": {
            "search": {
                "results": {
                    "matchCount": match_count if match_count is not None else len(results),
                    "limitHit": limit_hit,
                    "resultCount": len(results),
                    "approximateResultCount": str(len(results)),
                    "missing": [],
                    "timedout": [],
                    "indexUnavailable": False,
                    "results": list(results),
                }
            }
        }
    }


@pytest.fixture
def sg() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


def runtime_for(hookcode_env: Any, sg: FakeServer, **env: str) -> Any:
    return hookcode_env.runtime(HOOKCODE_SOURCEGRAPH_URL=sg.base, **env)


def serve(sg: FakeServer, body: dict[str, Any]) -> None:
    sg.route("/.api/graphql", reply(200, json.dumps(body), content_type="application/json"))


def search(runtime: Any, query: str = "fmt.Println", **args: Any) -> Any:
    return invoke_tool(runtime, "sourcegraph", {"query": query, **args})


def ok(outcome: Any) -> Any:
    assert outcome.error is None, outcome.error_text
    return outcome.result


def failed(outcome: Any) -> str:
    assert outcome.error is not None, outcome.result
    return outcome.error_text


def test_request_body_and_headers(hookcode_env, sg):
    serve(sg, answer())

    outcome = search(runtime_for(hookcode_env, sg), "repo:^github\\.com/golang/go$ lang:go Print")

    ok(outcome)
    (request,) = sg.requests
    assert request.method == "POST"
    assert request.path == "/.api/graphql"  # appended to an endpoint with no path
    assert request.headers["content-type"] == "application/json"
    assert "authorization" not in request.headers
    assert request.json() == {
        "query": GRAPHQL,
        "variables": {"query": "repo:^github\\.com/golang/go$ lang:go Print"},
    }
    assert outcome.call.args == {
        "query": "repo:^github\\.com/golang/go$ lang:go Print",
        "count": 10,
        "context_window": 10,
        "timeout": 30.0,
    }


def test_an_endpoint_with_a_path_is_used_as_is(hookcode_env, sg):
    sg.route("/custom/graphql", reply(200, json.dumps(answer()), content_type="application/json"))
    runtime = hookcode_env.runtime(HOOKCODE_SOURCEGRAPH_URL=sg.url("/custom/graphql"))

    ok(search(runtime))

    assert [r.path for r in sg.requests] == ["/custom/graphql"]


def test_endpoint_resolution():
    from hookcode_tool_sourcegraph import graphql_endpoint

    assert graphql_endpoint(None) == "https://sourcegraph.com/.api/graphql"
    assert graphql_endpoint("") == "https://sourcegraph.com/.api/graphql"
    assert graphql_endpoint("https://sg.example") == "https://sg.example/.api/graphql"
    assert graphql_endpoint("https://sg.example/") == "https://sg.example/.api/graphql"
    assert graphql_endpoint("https://sg.example/x/graphql") == "https://sg.example/x/graphql"


def test_token_is_sent_and_never_shown(hookcode_env, sg):
    serve(sg, answer(file_match("github.com/a/b", "main.go", [4])))
    hookcode_env.write_config({"permission": {"sourcegraph": "ask"}})
    asked = hookcode_env.register(ReplyWith("once"), "asked")

    outcome = search(runtime_for(hookcode_env, sg, SRC_ACCESS_TOKEN=TOKEN))

    assert sg.requests[0].headers["authorization"] == f"token {TOKEN}"
    shown = json.dumps(outcome.to_dict()) + json.dumps(asked.requests[0].to_dict())
    assert TOKEN not in shown


def test_token_is_not_shown_in_errors(hookcode_env, sg):
    sg.route("/.api/graphql", reply(401, "bad credentials"))
    message = failed(search(runtime_for(hookcode_env, sg, SRC_ACCESS_TOKEN=TOKEN)))
    assert message == "Request failed with status code: 401, response: bad credentials"
    assert TOKEN not in message


def test_results_with_content_show_numbered_context(hookcode_env, sg):
    serve(
        sg,
        answer(
            file_match("github.com/a/b", "src/main.go", [4, 27]),
            {"__typename": "Repository", "name": "github.com/skipped/repo"},
            file_match("github.com/c/d", "x.go", [0]),
            match_count=3,
        ),
    )

    result = ok(search(runtime_for(hookcode_env, sg), context_window=2))

    assert result.output == (
        "# Sourcegraph Search Results\n"
        "\n"
        "Found 3 matches across 3 results\n"
        "\n"
        "## Result 1: github.com/a/b/src/main.go\n"
        "\n"
        "URL: /github.com/a/b/-/blob/src/main.go\n"
        "\n"
        "```\n3| line 3\n4| line 4\n5| line 5\n6| line 6\n7| line 7\n```\n"
        "\n"
        "```\n26| line 26\n27| line 27\n28| line 28\n29| line 29\n30| line 30\n```\n"
        "\n"
        "## Result 2: github.com/c/d/x.go\n"
        "\n"
        "URL: /github.com/c/d/-/blob/x.go\n"
        "\n"
        "```\n1| line 1\n2| line 2\n3| line 3\n```\n"
    )
    assert result.title == "Sourcegraph: fmt.Println"
    assert result.metadata == {"count": 2, "matchCount": 3, "limitHit": False, "truncated": False}


def test_the_match_line_is_the_api_line_plus_one(hookcode_env, sg):
    serve(sg, answer(file_match("r", "f", [9])))

    output = ok(search(runtime_for(hookcode_env, sg), context_window=0)).output

    assert "```\n10| line 10\n```" in output  # lineNumber 9 is the tenth line


def test_default_context_window_is_ten_lines(hookcode_env, sg):
    serve(sg, answer(file_match("r", "f", [14])))

    output = ok(search(runtime_for(hookcode_env, sg))).output

    numbered = [line for line in output.splitlines() if "| line " in line]
    assert numbered == [f"{n}| line {n}" for n in range(5, 26)]


def test_preview_only_when_there_is_no_content(hookcode_env, sg):
    serve(sg, answer(file_match("github.com/a/b", "f.py", [6, 11], content=None)))

    output = ok(search(runtime_for(hookcode_env, sg))).output

    assert output.endswith(
        "## Result 1: github.com/a/b/f.py\n\nURL: /github.com/a/b/-/blob/f.py\n\n"
        "```\n7| line 7\n```\n\n```\n12| line 12\n```\n"
    )


def test_limit_hit_is_said(hookcode_env, sg):
    serve(sg, answer(file_match("r", "f", [0]), match_count=500, limit_hit=True))

    output = ok(search(runtime_for(hookcode_env, sg))).output

    assert output.startswith(
        "# Sourcegraph Search Results\n\nFound 500 matches across 1 results\n"
        "(Result limit reached, try a more specific query)\n\n## Result 1: r/f\n"
    )


@pytest.mark.parametrize(("count", "shown"), [(3, 3), (None, 10), (20, 20), (50, 20), (0, 10)])
def test_count_limits_the_results_shown(hookcode_env, sg, count, shown):
    serve(sg, answer(*(file_match("r", f"f{i}", [0]) for i in range(25))))
    args = {} if count is None else {"count": count}

    result = ok(search(runtime_for(hookcode_env, sg), **args))

    assert result.output.count("## Result ") == shown
    assert f"## Result {shown}: r/f{shown - 1}\n" in result.output
    assert result.metadata["count"] == shown


def test_no_results(hookcode_env, sg):
    serve(sg, answer())

    output = ok(search(runtime_for(hookcode_env, sg))).output

    assert output == (
        "# Sourcegraph Search Results\n\nFound 0 matches across 0 results\n\n"
        "No results found. Try a different query.\n"
    )


def test_graphql_errors_are_an_error_result(hookcode_env, sg):
    serve(
        sg, {"errors": [{"message": "invalid query"}, {"message": "second problem"}], "data": None}
    )

    message = failed(search(runtime_for(hookcode_env, sg)))

    assert message == "## Sourcegraph API Error\n\n- invalid query\n- second problem"


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (500, "boom", "Request failed with status code: 500, response: boom"),
        (502, "", "Request failed with status code: 502"),
        (201, "{}", "Request failed with status code: 201, response: {}"),
    ],
)
def test_status_other_than_200_is_an_error_result(hookcode_env, sg, status, body, message):
    sg.route("/.api/graphql", reply(status, body))
    assert failed(search(runtime_for(hookcode_env, sg))) == message


def test_an_answer_without_results_is_an_error(hookcode_env, sg):
    serve(sg, {"data": {"search": None}})
    message = failed(search(runtime_for(hookcode_env, sg)))
    assert message == "Invalid response format: missing data.search.results"


def test_an_answer_that_is_not_json_is_an_error(hookcode_env, sg):
    sg.route("/.api/graphql", reply(200, "<html>login</html>", content_type="text/html"))
    assert failed(search(runtime_for(hookcode_env, sg))).startswith(
        "Sourcegraph sent an answer that is not JSON"
    )


def test_timeout(hookcode_env, sg):
    sg.route("/.api/graphql", hang)

    start = time.monotonic()
    message = failed(search(runtime_for(hookcode_env, sg), timeout=0.5))

    assert message == "Sourcegraph request timed out after 0.5 seconds"
    assert time.monotonic() - start < 5


def test_asks_sourcegraph_with_the_query(hookcode_env, sg):
    serve(sg, answer())
    hookcode_env.write_config({"permission": {"sourcegraph": "ask"}})
    asked = hookcode_env.register(ReplyWith("once"), "asked")

    ok(search(runtime_for(hookcode_env, sg), "lang:go x", count=50, timeout=500))

    (request,) = asked.requests
    assert (request.permission, request.patterns, request.always) == (
        "sourcegraph",
        ["lang:go x"],
        ["*"],
    )
    # brought into range before anything happens
    assert request.metadata == {
        "query": "lang:go x",
        "count": 20,
        "context_window": 10,
        "timeout": 120.0,
    }


def test_description_teaches_the_query_syntax(hookcode_env):
    description = hookcode_env.runtime().registry.entries["sourcegraph"].tool.description
    for syntax in ("file:", "repo:", "lang:", "type:symbol", " AND ", "count:"):
        assert syntax in description


def test_importing_the_plugin_imports_no_http_client():
    code = (
        "import sys, hookcode_tool_sourcegraph\n"
        "print(sorted({'httpx', 'pydantic'} & set(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
