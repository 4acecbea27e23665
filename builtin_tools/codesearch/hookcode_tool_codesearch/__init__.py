"""The ``codesearch`` tool: code context from Exa's hosted endpoint (reference/tools.md §14).

Listed always; calls are refused, naming how to enable them, until ``HOOKCODE_ENABLE_EXA=1``
or ``[experimental] exa = true``. The Exa client is ``websearch``'s
(:mod:`hookcode_tool_websearch.exa`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from hookcode import ToolContext, ToolResult, hookimpl, tool
from hookcode_tool_websearch import ENABLE_ENV, Range

__all__ = ["DEFAULT_TOKENS", "TIMEOUT", "codesearch"]

DEFAULT_TOKENS = 5000
#: seconds before the search fails with "Code search request timed out"
TIMEOUT = 30.0
NO_RESULTS = (
    "No code snippets or documentation found. Please try a different query, be more specific "
    "about the library or programming pattern, or check if the library name is correct."
)

DESCRIPTION = f"""\
- Search and get relevant context for any programming task using Exa Code API
- Provides the highest quality and freshest context for libraries, SDKs, and APIs
- Use this tool for ANY question or task related to programming
- Returns comprehensive code examples, documentation, and API reference
- Optimized for finding specific programming patterns and solutions
- Disabled until the user enables it ({ENABLE_ENV}=1 or `exa = true` under [experimental])

Usage notes:
  - Adjustable token count (1000-50000) for focused or comprehensive results
  - Default 5000 tokens provides good balance for most use cases
  - Use this tool when you need information about a specific library, API, or framework
  - Best for finding code examples, implementation patterns, and usage guidance"""


@tool(
    name="codesearch",
    description=DESCRIPTION,
    asks_permission=True,
    aliases={"tokens_num": "tokensNum"},
)
async def codesearch(
    ctx: ToolContext,
    query: Annotated[
        str,
        "Search query to find relevant context for APIs, Libraries, and SDKs. For example, "
        "'React useState hook examples', 'Python pandas dataframe filtering', 'Express.js "
        "middleware', 'Next js partial prerendering configuration'",
    ],
    tokens_num: Annotated[
        int,
        "Number of tokens to return (1000-50000). Default is 5000 tokens. Adjust this value "
        "based on how much context you need - use lower values for focused queries and higher "
        "values for comprehensive documentation.",
        Range(ge=1000, le=50000),
    ] = DEFAULT_TOKENS,
) -> ToolResult:
    from hookcode_tool_websearch import exa

    exa.require_enabled(ctx, "codesearch")
    await ctx.ask("codesearch", [query], ["*"], metadata={"query": query, "tokensNum": tokens_num})
    text = await exa.call(
        ctx,
        "get_code_context_exa",
        {"query": query, "tokensNum": tokens_num},
        timeout=TIMEOUT,
        error="Code search error",
        timed_out="Code search request timed out",
    )
    return ToolResult(title=f"Code search: {query}", output=text if text else NO_RESULTS)


@hookimpl
def register_tools(register: Callable[..., None]) -> None:
    register(codesearch)


def __getattr__(name: str) -> Any:
    if name == "exa":  # websearch's client, imported when first used
        import importlib

        return importlib.import_module("hookcode_tool_websearch.exa")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
