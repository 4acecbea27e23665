"""The ``websearch`` tool: a web search through Exa's hosted endpoint (reference/tools.md §14).

Listed always; calls are refused, naming how to enable them, until ``HOOKCODE_ENABLE_EXA=1``
or ``[experimental] exa = true`` (ARCHITECTURE.md, Settled points). The Exa client is
:mod:`hookcode_tool_websearch.exa`, shared with ``codesearch``.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Annotated, Any, Literal

from hookcode import ToolContext, ToolResult, hookimpl, tool

__all__ = ["DEFAULT_NUM_RESULTS", "TIMEOUT", "websearch"]

DEFAULT_NUM_RESULTS = 8
#: seconds before the search fails with "Search request timed out"
TIMEOUT = 25.0
NO_RESULTS = "No search results found. Please try a different query."
#: the variable that enables the Exa tools (``exa.ENABLE_ENV``; defined here, where the tools'
#: descriptions need it, so that loading the plugin does not import the client)
ENABLE_ENV = "HOOKCODE_ENABLE_EXA"


class Range:
    """``Annotated`` metadata bounding a number (``minimum``/``maximum`` in the JSON schema)
    without importing pydantic at module level."""

    def __init__(self, ge: float | None = None, le: float | None = None) -> None:
        self.ge, self.le = ge, le

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        schema = handler(source)
        if self.ge is not None:
            schema["ge"] = self.ge
        if self.le is not None:
            schema["le"] = self.le
        return schema


def __getattr__(name: str) -> Any:
    if name == "exa":  # the client, imported when first used
        import importlib

        return importlib.import_module("hookcode_tool_websearch.exa")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _description() -> str:
    year = datetime.date.today().year
    return f"""\
- Search the web using Exa AI - performs real-time web searches and can scrape content from \
specific URLs
- Provides up-to-date information for current events and recent data
- Supports configurable result counts and returns the content from the most relevant websites
- Use this tool for accessing information beyond knowledge cutoff
- Searches are performed automatically within a single API call
- Disabled until the user enables it ({ENABLE_ENV}=1 or `exa = true` under [experimental])

Usage notes:
  - Supports live crawling modes: fallback (backup if cached unavailable) or preferred \
(prioritize live crawling)
  - Search types: auto (balanced), fast (quick results), deep (comprehensive search)
  - Configurable context length for optimal LLM integration

The current year is {year}. You MUST use this year when searching for recent information or \
current events
- Example: If the current year is {year} and the user asks for "latest AI news", search for \
"latest AI news {year}", NOT "latest AI news {year - 1}\""""


@tool(
    name="websearch",
    description=_description(),
    asks_permission=True,
    aliases={"num_results": "numResults", "context_max_characters": "contextMaxCharacters"},
)
async def websearch(
    ctx: ToolContext,
    query: Annotated[str, "Websearch query"],
    num_results: Annotated[
        int, "Number of search results to return (default: 8)", Range(ge=1)
    ] = DEFAULT_NUM_RESULTS,
    livecrawl: Annotated[
        Literal["fallback", "preferred"],
        "Live crawl mode - 'fallback': use live crawling as backup if cached content "
        "unavailable, 'preferred': prioritize live crawling (default: 'fallback')",
    ] = "fallback",
    type: Annotated[
        Literal["auto", "fast", "deep"],
        "Search type - 'auto': balanced search (default), 'fast': quick results, "
        "'deep': comprehensive search",
    ] = "auto",
    context_max_characters: Annotated[
        int | None,
        "Maximum characters for context string optimized for LLMs (default: 10000)",
    ] = None,
) -> ToolResult:
    from hookcode_tool_websearch import exa

    exa.require_enabled(ctx, "websearch")
    await ctx.ask(
        "websearch",
        [query],
        ["*"],
        metadata={
            "query": query,
            "numResults": num_results,
            "livecrawl": livecrawl,
            "type": type,
            "contextMaxCharacters": context_max_characters,
        },
    )
    arguments: dict[str, Any] = {
        "query": query,
        "type": type,
        "numResults": num_results,
        "livecrawl": livecrawl,
    }
    if context_max_characters is not None:
        arguments["contextMaxCharacters"] = context_max_characters
    text = await exa.call(
        ctx,
        "web_search_exa",
        arguments,
        timeout=TIMEOUT,
        error="Search error",
        timed_out="Search request timed out",
    )
    return ToolResult(title=f"Web search: {query}", output=text if text else NO_RESULTS)


@hookimpl
def register_tools(register: Callable[..., None]) -> None:
    register(websearch)
