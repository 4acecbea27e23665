"""The ``sourcegraph`` tool: public code search through Sourcegraph's GraphQL API
(reference/tools.md §26, from the Go reference).

* The endpoint is ``HOOKCODE_SOURCEGRAPH_URL`` (default the public instance); one given with no
  path gets ``/.api/graphql`` appended. ``SRC_ACCESS_TOKEN``, when set, is sent as
  ``Authorization: token ...`` and never shown.
* ``count`` (default 10) is capped at 20, ``timeout`` (default 30 s) at 120 s; ``context_window``
  lines (default 10) are shown either side of each match, from the file's content (or only the
  preview line when the API sent no content). Line numbers are the API's 0-based ones + 1.
* A GraphQL ``errors`` array and an HTTP status other than 200 are error results.

Only the standard library and hookcode are imported here; httpx when a search is made.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from hookcode import ToolContext, ToolError, ToolResult, hookimpl, tool

__all__ = [
    "DEFAULT_URL",
    "GRAPHQL_QUERY",
    "format_results",
    "graphql_endpoint",
    "sourcegraph",
]

DEFAULT_URL = "https://sourcegraph.com/.api/graphql"
URL_ENV = "HOOKCODE_SOURCEGRAPH_URL"
TOKEN_ENV = "SRC_ACCESS_TOKEN"
DEFAULT_COUNT, MAX_COUNT = 10, 20
DEFAULT_CONTEXT = 10
DEFAULT_TIMEOUT, MAX_TIMEOUT = 30.0, 120.0
#: the largest answer read (20 results may carry whole files)
MAX_RESPONSE_SIZE = 20 * 1024 * 1024
ERROR_BODY_LIMIT = 64 * 1024

GRAPHQL_QUERY = (
    "query Search($query: String!) { search(query: $query, version: V2, patternType: keyword) "
    "{ results { matchCount, limitHit, resultCount, approximateResultCount, missing { name }, "
    "timedout { name }, indexUnavailable, results { __typename, ... on FileMatch { repository "
    "{ name }, file { path, url, content }, lineMatches { preview, lineNumber, "
    "offsetAndLengths } } } } } }"
)

NO_RESULTS = "No results found. Try a different query."

DESCRIPTION = """\
Search code across public repositories using Sourcegraph's GraphQL API.

WHEN TO USE THIS TOOL:
- When you need code examples or implementations from public repositories
- To research how others solved a similar problem, or how a library is used in practice

HOW TO USE:
- Give a query in Sourcegraph's query syntax (below)
- Optionally: how many results to show (count, default 10, at most 20), how many lines of
  context to show around each match (context_window, default 10) and a timeout in seconds
  (default 30, at most 120)

QUERY SYNTAX:
- Basic search: "fmt.Println" finds that text
- File filters: "file:.go fmt.Println" limits to Go files
- Repository filters: "repo:^github\\.com/golang/go$ fmt.Println" limits to one repository
- Language filters: "lang:go fmt.Println" limits to Go code
- Boolean operators: "fmt.Println AND log.Fatal", "a OR b", "a NOT b", "(a OR b) AND c"
- Regular expressions: "fmt\\.(Print|Printf|Println)" with patternType:regexp
- Quoted strings: "\\"exact phrase\\"" for an exact phrase
- Exclusions: "-file:test", "-repo:forks"
- Symbols: "type:symbol" finds definitions (functions, classes, ...)
- Other types: "type:file", "type:path" (file names), "type:diff", "type:commit"
- Result selection: "select:repo", "select:file", "select:symbol"
- Result control: "count:100", "timeout:30s", "case:yes" (case-sensitive)
- Branches: "repo:org/repo@branch" or "repo:org/repo rev:branch"

EXAMPLES:
- "file:.go context.WithTimeout" - Go code using context.WithTimeout
- "lang:typescript useState type:symbol" - TypeScript symbols named like useState
- "repo:^github\\.com/kubernetes/kubernetes$ pod list type:file" - Kubernetes files about pod
  listing
- "repo:^github\\.com/golang/go$ lang:go \\"func Print\\"" - Print functions in Go's standard
  library
- "file:.py pandas.DataFrame -file:test" - DataFrame usage in Python, tests excluded

LIMITATIONS:
- Only public repositories (unless SRC_ACCESS_TOKEN grants more on your instance)
- Rate limits may apply; complex queries take longer
- At most 20 results are shown per query

TIPS:
- Narrow with file extensions and repo: filters
- Use type:symbol to find where functions or classes are defined"""


@tool(name="sourcegraph", description=DESCRIPTION, asks_permission=True)
async def sourcegraph(
    ctx: ToolContext,
    query: Annotated[str, "The Sourcegraph search query"],
    count: Annotated[int, "Optional number of results to return (default: 10, max: 20)"] = (
        DEFAULT_COUNT
    ),
    context_window: Annotated[
        int, "The context around the match to return (default: 10 lines)"
    ] = DEFAULT_CONTEXT,
    timeout: Annotated[float, "Optional timeout in seconds (default: 30, max: 120)"] = (
        DEFAULT_TIMEOUT
    ),
) -> ToolResult:
    # out-of-range values are brought into range, as the reference does
    count = DEFAULT_COUNT if count <= 0 else min(count, MAX_COUNT)
    context_window = max(context_window, 0)
    timeout = DEFAULT_TIMEOUT if not timeout > 0 else min(timeout, MAX_TIMEOUT)
    await ctx.ask(
        "sourcegraph",
        [query],
        ["*"],
        metadata={
            "query": query,
            "count": count,
            "context_window": context_window,
            "timeout": timeout,
        },
    )
    answer = await _search(ctx, query, timeout)
    output, shown = format_results(answer, context_window, count)
    results = answer.get("data", {}).get("search", {}).get("results", {})
    return ToolResult(
        title=f"Sourcegraph: {query}",
        output=output,
        metadata={
            "count": shown,
            "matchCount": results.get("matchCount"),
            "limitHit": bool(results.get("limitHit")),
        },
    )


def graphql_endpoint(configured: str | None) -> str:
    """The GraphQL URL: ``configured`` as is, or with ``/.api/graphql`` when it has no path."""
    if not configured or not configured.strip():
        return DEFAULT_URL
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(configured.strip())
    if parts.path in ("", "/"):
        parts = parts._replace(path="/.api/graphql")
    return urlunsplit(parts)


async def _search(ctx: ToolContext, query: str, timeout: float) -> dict[str, Any]:
    import asyncio
    import json

    import httpx

    url = graphql_endpoint(ctx.runtime.env.get(URL_ENV))
    headers = {"Content-Type": "application/json", "User-Agent": "hookcode"}
    token = ctx.runtime.env.get(TOKEN_ENV, "").strip()
    if token:
        headers["Authorization"] = f"token {token}"
    body = json.dumps({"query": GRAPHQL_QUERY, "variables": {"query": query}})
    try:
        async with (
            asyncio.timeout(timeout),
            httpx.AsyncClient(timeout=None) as client,
            client.stream("POST", url, content=body, headers=headers) as response,
        ):
            if response.status_code != 200:
                text = (await _read(response, ERROR_BODY_LIMIT, cut=True)).strip()
                message = f"Request failed with status code: {response.status_code}"
                raise ToolError(f"{message}, response: {text}" if text else message)
            raw = await _read(response, MAX_RESPONSE_SIZE, cut=False)
    except TimeoutError:
        raise ToolError(f"Sourcegraph request timed out after {timeout:g} seconds") from None
    except httpx.HTTPError as exc:
        raise ToolError(
            f"Sourcegraph request to {url} failed: {str(exc) or type(exc).__name__}"
        ) from None
    try:
        answer = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ToolError(f"Sourcegraph sent an answer that is not JSON ({exc.msg})") from None
    if not isinstance(answer, dict):
        raise ToolError("Sourcegraph sent an answer that is not a JSON object")
    errors = answer.get("errors")
    if isinstance(errors, list) and errors:
        lines = ["## Sourcegraph API Error", ""]
        for error in errors:
            message = error.get("message") if isinstance(error, dict) else error
            lines.append(f"- {message}")
        raise ToolError("\n".join(lines))
    return answer


async def _read(response: Any, limit: int, *, cut: bool) -> str:
    """The body as text, at most ``limit`` bytes: cut there, or refused when ``cut`` is false."""
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > limit:
            if not cut:
                raise ToolError(f"Sourcegraph's answer is too large (over {limit // 2**20} MB)")
            del body[limit:]
            break
    return body.decode("utf-8", errors="replace")


def format_results(answer: dict[str, Any], context_window: int, count: int) -> tuple[str, int]:
    """The model-facing text of a search answer, and how many file matches it shows."""
    data = answer.get("data")
    search = data.get("search") if isinstance(data, dict) else None
    results = search.get("results") if isinstance(search, dict) else None
    if not isinstance(results, dict):
        raise ToolError("Invalid response format: missing data.search.results")
    match_count = int(results.get("matchCount") or 0)
    result_count = int(results.get("resultCount") or 0)
    out = [
        "# Sourcegraph Search Results",
        "",
        f"Found {match_count} matches across {result_count} results",
    ]
    if results.get("limitHit"):
        out.append("(Result limit reached, try a more specific query)")
    out.append("")

    shown = 0
    for item in results.get("results") or []:
        if shown >= count:
            break
        if not isinstance(item, dict) or item.get("__typename") != "FileMatch":
            continue
        repository, file = item.get("repository"), item.get("file")
        if not isinstance(repository, dict) or not isinstance(file, dict):
            continue
        shown += 1
        out += [f"## Result {shown}: {repository.get('name', '')}/{file.get('path', '')}", ""]
        if file.get("url"):
            out += [f"URL: {file['url']}", ""]
        content = file.get("content")
        lines = _lines(content) if isinstance(content, str) and content else None
        for match in item.get("lineMatches") or []:
            if isinstance(match, dict):
                out += [*_snippet(match, lines, context_window), ""]
    if shown == 0:
        out.append(NO_RESULTS)
    return "\n".join(out).rstrip() + "\n", shown


def _lines(content: str) -> list[str]:
    lines = content.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the file's final newline ends the last line; it does not start another
    return [line.removesuffix("\r") for line in lines]


def _snippet(match: dict[str, Any], lines: list[str] | None, context_window: int) -> list[str]:
    """A fenced block of numbered lines around one line match (1-based numbers)."""
    number = int(match.get("lineNumber") or 0) + 1
    preview = str(match.get("preview") or "").rstrip("\r\n")
    block = ["```"]
    if lines is None or number > len(lines):
        block.append(f"{number}| {preview}")
    else:
        first = max(1, number - context_window)
        last = min(len(lines), number + context_window)
        block += [f"{n}| {lines[n - 1]}" for n in range(first, last + 1)]
    block.append("```")
    return block


@hookimpl
def register_tools(register: Callable[..., None]) -> None:
    register(sourcegraph)
