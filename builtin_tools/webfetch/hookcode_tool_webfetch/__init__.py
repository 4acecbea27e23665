"""The ``webfetch`` tool: fetch a URL as markdown, text or html (reference/tools.md §13).

* http(s) only; ``webfetch`` is asked with the URL as its pattern.
* One GET with a browser-like User-Agent and an ``Accept`` preferring the requested format; a
  403 carrying ``cf-mitigated: challenge`` is retried once with a plain User-Agent. At most
  :data:`MAX_REDIRECTS` redirects are followed.
* ``timeout`` (default 30 s, at most 120 s) bounds the whole fetch, body included. The abort
  signal cancels the call (the pipeline races every call against it) and is also checked
  between chunks.
* The 5 MB cap holds while streaming: a declared ``Content-Length`` over it is refused before
  the body is read, and reading stops as soon as the body passes it. ``text`` of an HTML page
  is extracted as the chunks arrive (no tree); ``markdown`` builds a tree (markdownify).
* Images (not SVG) come back as a data-URL attachment.

Only the standard library and hookcode are imported here; httpx, BeautifulSoup and
markdownify are imported when a fetch needs them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Literal

from hookcode import ToolContext, ToolError, ToolResult, hookimpl, tool

__all__ = [
    "DEFAULT_TIMEOUT",
    "MAX_REDIRECTS",
    "MAX_RESPONSE_SIZE",
    "MAX_TIMEOUT",
    "webfetch",
]

MAX_RESPONSE_SIZE = 5 * 1024 * 1024
DEFAULT_TIMEOUT = 30.0
MAX_TIMEOUT = 120.0
MAX_REDIRECTS = 5

DESCRIPTION = """\
- Fetches content from a specified URL
- Takes a URL and optional format as input
- Fetches the URL content, converts to requested format (markdown by default)
- Returns the content in the specified format
- Use this tool when you need to retrieve and analyze web content

Usage notes:
  - IMPORTANT: if another tool is present that offers better web fetching capabilities, is more \
targeted to the task, or has fewer restrictions, prefer using that tool instead of this one.
  - The URL must be a fully-formed valid URL starting with http:// or https://
  - Format options: "markdown" (default), "text", or "html"
  - Responses larger than 5 MB are refused; at most 5 redirects are followed
  - Images are returned as attachments
  - This tool is read-only and does not modify any files
  - Large results are truncated; the full output is saved to a file you can read"""


@tool(name="webfetch", description=DESCRIPTION, asks_permission=True)
async def webfetch(
    ctx: ToolContext,
    url: Annotated[str, "The URL to fetch content from"],
    format: Annotated[
        Literal["text", "markdown", "html"],
        "The format to return the content in (text, markdown, or html). Defaults to markdown.",
    ] = "markdown",
    timeout: Annotated[
        float, "Optional timeout in seconds (default 30, max 120)"
    ] = DEFAULT_TIMEOUT,
) -> ToolResult:
    if not url.startswith(("http://", "https://")):
        raise ToolError("URL must start with http:// or https://")
    if not timeout > 0:
        raise ToolError(f"timeout must be a positive number of seconds, got {timeout:g}")
    await ctx.ask(
        "webfetch", [url], ["*"], metadata={"url": url, "format": format, "timeout": timeout}
    )
    from hookcode_tool_webfetch.fetch import fetch

    return await fetch(url, format, min(timeout, MAX_TIMEOUT), ctx.abort)


@hookimpl
def register_tools(register: Callable[..., None]) -> None:
    register(webfetch)
