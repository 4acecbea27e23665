"""The HTTP side of ``webfetch``: one streamed GET under a deadline and a 5 MB cap.

Imported by the tool on first use (it imports httpx).
"""

from __future__ import annotations

import asyncio
import base64
from typing import TYPE_CHECKING, Protocol

import httpx
from hookcode import Attachment, ToolError, ToolResult
from hookcode.errors import ToolAborted

from hookcode_tool_webfetch import MAX_REDIRECTS, MAX_RESPONSE_SIZE

if TYPE_CHECKING:
    from hookcode import AbortSignal

BROWSER_USER_AGENT = (
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/143.0.0.0 Safari/537.36"
)
#: sent once more after a Cloudflare challenge (its bot check trips on a browser UA that does
#: not come with a browser's TLS fingerprint)
PLAIN_USER_AGENT = "hookcode"

ACCEPT = {
    "markdown": "text/markdown;q=1.0, text/x-markdown;q=0.9, text/plain;q=0.8, "
    "text/html;q=0.7, */*;q=0.1",
    "text": "text/plain;q=1.0, text/markdown;q=0.9, text/html;q=0.8, */*;q=0.1",
    "html": "text/html;q=1.0, application/xhtml+xml;q=0.9, text/plain;q=0.8, "
    "text/markdown;q=0.7, */*;q=0.1",
}

TOO_LARGE = "Response too large (exceeds 5MB limit)"
HTML_TYPES = ("text/html", "application/xhtml+xml")
NOT_IMAGES = ("image/svg+xml", "image/vnd.fastbidsheet")


class _Sink(Protocol):
    def write(self, chunk: bytes) -> None: ...


async def fetch(url: str, format: str, timeout: float, abort: AbortSignal) -> ToolResult:
    """Fetch ``url`` and render it in ``format``; every failure is a :class:`ToolError`.

    The deadline covers the network (headers and body); converting HTML to markdown comes
    after it, in a worker thread."""
    try:
        async with asyncio.timeout(timeout):
            result, html = await _fetch(url, format, abort)
    except TimeoutError:
        raise ToolError(f"Request timed out after {timeout:g} seconds") from None
    except httpx.TooManyRedirects:
        raise ToolError(
            f"Too many redirects: {url} redirected more than {MAX_REDIRECTS} times"
        ) from None
    except httpx.UnsupportedProtocol as exc:
        raise ToolError(
            f"Request to {url} failed: {exc} (only http:// and https:// URLs are fetched)"
        ) from None
    except httpx.HTTPError as exc:
        raise ToolError(f"Request to {url} failed: {_describe(exc)}") from None
    if html is not None:
        from hookcode_tool_webfetch.convert import html_to_markdown

        result.output = await asyncio.to_thread(html_to_markdown, html)
    return result


async def _fetch(url: str, format: str, abort: AbortSignal) -> tuple[ToolResult, str | None]:
    headers = {
        "User-Agent": BROWSER_USER_AGENT,
        "Accept": ACCEPT[format],
        "Accept-Language": "en-US,en;q=0.9",
    }
    async with httpx.AsyncClient(
        follow_redirects=True, max_redirects=MAX_REDIRECTS, timeout=None
    ) as client:
        response = await client.send(client.build_request("GET", url, headers=headers), stream=True)
        try:
            if response.status_code == 403 and response.headers.get("cf-mitigated") == "challenge":
                await response.aclose()
                retry = {**headers, "User-Agent": PLAIN_USER_AGENT}
                response = await client.send(
                    client.build_request("GET", url, headers=retry), stream=True
                )
            return await _read(url, format, response, abort)
        finally:
            await response.aclose()


async def _read(
    url: str, format: str, response: httpx.Response, abort: AbortSignal
) -> tuple[ToolResult, str | None]:
    """The result, and the page's HTML when it still has to become markdown."""
    if not response.is_success:
        raise ToolError(f"Request failed with status code: {response.status_code}")
    declared = response.headers.get("content-length", "")
    if declared.strip().isdigit() and int(declared) > MAX_RESPONSE_SIZE:
        raise ToolError(TOO_LARGE)

    content_type = response.headers.get("content-type", "")
    mime = content_type.split(";")[0].strip().lower()
    title = f"{url} ({content_type})"
    is_html = mime in HTML_TYPES

    if format == "text" and is_html:
        from hookcode_tool_webfetch.convert import VisibleText

        extractor = VisibleText()
        await _stream(response, extractor, abort)
        return ToolResult(title=title, output=extractor.result()), None

    body = bytearray()
    await _stream(response, body, abort)
    if mime.startswith("image/") and mime not in NOT_IMAGES:
        data = base64.b64encode(body).decode("ascii")
        del body
        return ToolResult(
            title=title,
            output="Image fetched successfully",
            attachments=[Attachment(mime=mime, url=f"data:{mime};base64,{data}")],
        ), None
    content = body.decode("utf-8-sig", errors="replace")
    del body
    if format == "markdown" and is_html:
        return ToolResult(title=title), content
    return ToolResult(title=title, output=content), None


async def _stream(response: httpx.Response, sink: bytearray | _Sink, abort: AbortSignal) -> None:
    """Copy the body into ``sink``, stopping as soon as it passes the cap or the call aborts."""
    total = 0
    write = sink.extend if isinstance(sink, bytearray) else sink.write
    async for chunk in response.aiter_bytes():
        if abort.is_set():
            raise ToolAborted()
        total += len(chunk)
        if total > MAX_RESPONSE_SIZE:
            raise ToolError(TOO_LARGE)
        write(chunk)


def _describe(exc: httpx.HTTPError) -> str:
    text = str(exc).strip()
    return text or type(exc).__name__
