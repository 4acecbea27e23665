"""The webfetch tool (reference/tools.md §13) against a real local HTTP server."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest
from hookcode.errors import PermissionRejected, ToolAborted
from hookcode.testing import ReplyWith, invoke_tool
from http_fakes import FakeServer, Handler, hang, redirect, reply

MB = 1024 * 1024
TOO_LARGE = "Response too large (exceeds 5MB limit)"
ACCEPT = {
    "markdown": "text/markdown;q=1.0, text/x-markdown;q=0.9, text/plain;q=0.8, "
    "text/html;q=0.7, */*;q=0.1",
    "text": "text/plain;q=1.0, text/markdown;q=0.9, text/html;q=0.8, */*;q=0.1",
    "html": "text/html;q=1.0, application/xhtml+xml;q=0.9, text/plain;q=0.8, "
    "text/markdown;q=0.7, */*;q=0.1",
}
HTML = "text/html; charset=utf-8"

PAGE = """<!doctype html>
<html><head><title>Demo page</title><meta charset="utf-8">
<link rel="stylesheet" href="/x.css"><style>body { color: red }</style>
<script>var secret = "hidden js";</script></head>
<body><h1>Main title</h1>
<p>Some <em>emphasis</em>, some <strong>strong</strong> text &amp; an entity.</p>
<hr>
<h2>List</h2>
<ul><li>first</li><li>second</li></ul>
<pre><code>def f():
    return 1</code></pre>
<noscript>noscript text</noscript><iframe>iframe text</iframe><object>object text</object>
<embed src="x.swf"><p>The end.</p>
</body></html>"""

MARKDOWN = """\
Demo page

# Main title

Some *emphasis*, some **strong** text & an entity.

---

## List

- first
- second

```
def f():
    return 1
```

noscript textiframe textobject text

The end."""

# text nodes as they come (the newlines are the page's own), trimmed: as the reference does
TEXT = (
    "Demo page\n\n\nMain title\nSome emphasis, some strong text & an entity.\n\nList\n"
    "firstsecond\ndef f():\n    return 1\n\nThe end."
)


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


@pytest.fixture
def rt(hookcode_env: Any) -> Any:
    return hookcode_env.runtime()


def fetch(runtime: Any, url: str, **args: Any) -> Any:
    return invoke_tool(runtime, "webfetch", {"url": url, **args})


def ok(outcome: Any) -> Any:
    assert outcome.error is None, outcome.error_text
    return outcome.result


def failed(outcome: Any) -> str:
    assert outcome.error is not None, outcome.result
    return outcome.error_text


def blocks(size: int, block: bytes = b"x" * 65536) -> Iterator[bytes]:
    """``size`` bytes in 64 KB blocks, never all in memory."""
    while size > 0:
        yield block[:size]
        size -= len(block)


# ---------------------------------------------------------------------------------------------
# formats
# ---------------------------------------------------------------------------------------------


def test_markdown_is_the_default_and_converts_html(rt, server):
    url = server.route("/page", reply(200, PAGE, content_type=HTML))

    outcome = fetch(rt, url)

    result = ok(outcome)
    assert outcome.call.args == {"url": url, "format": "markdown", "timeout": 30.0}
    assert result.output == MARKDOWN
    assert "hidden js" not in result.output and "color: red" not in result.output
    assert result.title == f"{url} ({HTML})"
    assert result.metadata == {"truncated": False}
    assert result.attachments == []
    assert server.seen("/page")[0].headers["accept"] == ACCEPT["markdown"]


def test_text_keeps_only_visible_text(rt, server):
    url = server.route("/page", reply(200, PAGE, content_type=HTML))

    result = ok(fetch(rt, url, format="text"))

    assert result.output == TEXT
    for hidden in ("hidden js", "color: red", "noscript", "iframe", "object text"):
        assert hidden not in result.output
    assert server.seen("/page")[0].headers["accept"] == ACCEPT["text"]


def test_html_is_returned_as_received(rt, server):
    url = server.route("/page", reply(200, PAGE, content_type=HTML))

    result = ok(fetch(rt, url, format="html"))

    assert result.output == PAGE
    assert result.title == f"{url} ({HTML})"
    assert server.seen("/page")[0].headers["accept"] == ACCEPT["html"]


@pytest.mark.parametrize("format", ["markdown", "text", "html"])
def test_other_content_types_are_returned_as_received(rt, server, format):
    body = '  {"a": "<b>not html</b>"}\n'
    url = server.route("/data", reply(200, body, content_type="application/json"))

    result = ok(fetch(rt, url, format=format))

    assert result.output == body
    assert result.title == f"{url} (application/json)"


def test_body_is_utf8_with_bad_bytes_replaced_and_bom_dropped(rt, server):
    body = "\ufeffcafé ".encode() + b"\xff\xfe" + " ünïcode".encode()
    url = server.route("/u", reply(200, body, content_type="text/plain"))

    assert ok(fetch(rt, url)).output == "café \ufffd\ufffd ünïcode"


def test_html_text_is_decoded_across_chunk_boundaries(rt, server):
    # a multi-byte character split between two writes, and one entity split too
    def handle(h: Handler) -> None:
        h.head(200, content_type="text/html")
        h.stream([b"<p>caf\xc3", b"\xa9 &am", b"p; tea</p><script>x</scr", b"ipt>!"], delay=0.05)

    url = server.route("/split", handle)

    assert ok(fetch(rt, url, format="text")).output == "café & tea!"


def test_missing_content_type_is_as_received(rt, server):
    url = server.route("/raw", reply(200, "<h1>x</h1>", content_type=None))

    result = ok(fetch(rt, url))

    assert result.output == "<h1>x</h1>"
    assert result.title == f"{url} ()"


# ---------------------------------------------------------------------------------------------
# images
# ---------------------------------------------------------------------------------------------

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYPj/HwADAgH/ZqUyWwAAAABJRU5ErkJggg=="
)


def test_image_comes_back_as_an_attachment(rt, server):
    url = server.route("/pixel.png", reply(200, PNG, content_type="image/PNG; x=1"))

    result = ok(fetch(rt, url))

    assert result.output == "Image fetched successfully"
    assert result.title == f"{url} (image/PNG; x=1)"
    (attachment,) = result.attachments
    assert attachment.mime == "image/png"
    prefix = "data:image/png;base64,"
    assert attachment.url.startswith(prefix)
    assert base64.b64decode(attachment.url[len(prefix) :]) == PNG


@pytest.mark.parametrize("mime", ["image/svg+xml", "image/vnd.fastbidsheet"])
def test_svg_and_fbs_are_text(rt, server, mime):
    svg = '<svg xmlns="http://www.w3.org/2000/svg"><text>hi</text></svg>'
    url = server.route("/pic", reply(200, svg, content_type=mime))

    result = ok(fetch(rt, url))

    assert result.output == svg
    assert result.attachments == []


# ---------------------------------------------------------------------------------------------
# request, permission, bad input
# ---------------------------------------------------------------------------------------------


def test_request_headers(rt, server):
    url = server.route("/h", reply(200, "ok"))

    ok(fetch(rt, url, format="html", timeout=500))  # a timeout over the cap is accepted

    headers = server.seen("/h")[0].headers
    assert headers["user-agent"].startswith("Mozilla/5.0 (")
    assert "Chrome/" in headers["user-agent"]
    assert headers["accept-language"] == "en-US,en;q=0.9"


@pytest.mark.parametrize(
    "url",
    ["ftp://example.com/x", "file:///etc/passwd", "example.com", "//example.com", "HTTP:/x", ""],
)
def test_only_http_and_https_urls(hookcode_env, url):
    asked = hookcode_env.register(ReplyWith("once"), "asked")

    outcome = fetch(hookcode_env.runtime(), url)

    assert failed(outcome) == "URL must start with http:// or https://"
    assert asked.requests == []


@pytest.mark.parametrize("timeout", [0, -1])
def test_timeout_must_be_positive(rt, timeout):
    message = failed(fetch(rt, "http://127.0.0.1:9/", timeout=timeout))
    assert message == f"timeout must be a positive number of seconds, got {timeout}"


def test_format_must_be_known(rt):
    message = failed(fetch(rt, "http://127.0.0.1:9/", format="pdf"))
    assert message.startswith("The webfetch tool was called with invalid arguments: format:")


def test_asks_webfetch_with_the_url(hookcode_env, server):
    hookcode_env.write_config({"permission": {"webfetch": "ask"}})
    asked = hookcode_env.register(ReplyWith("once"), "asked")
    url = server.route("/p", reply(200, "fine"))

    ok(fetch(hookcode_env.runtime(), url, format="text"))

    (request,) = asked.requests
    assert request.permission == "webfetch"
    assert request.patterns == [url]
    assert request.always == ["*"]
    assert request.metadata == {"url": url, "format": "text", "timeout": 30.0}


def test_rejected_fetch_sends_nothing(hookcode_env, server):
    hookcode_env.write_config({"permission": {"webfetch": "ask"}})
    hookcode_env.register(ReplyWith("reject"), "rejects")
    url = server.route("/p", reply(200, "fine"))

    outcome = fetch(hookcode_env.runtime(), url)

    assert isinstance(outcome.error, PermissionRejected)
    assert server.requests == []


# ---------------------------------------------------------------------------------------------
# status codes, Cloudflare, redirects
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [404, 500, 204 + 100, 418])
def test_non_2xx_fails_with_the_status(rt, server, status):
    url = server.route("/s", reply(status, "body"))
    assert failed(fetch(rt, url)) == f"Request failed with status code: {status}"


def test_2xx_other_than_200_is_fine(rt, server):
    url = server.route("/created", reply(201, "made"))
    assert ok(fetch(rt, url)).output == "made"


def test_cloudflare_challenge_is_retried_once_with_a_plain_user_agent(rt, server):
    def handle(h: Handler) -> None:
        if h.headers["user-agent"].startswith("Mozilla/"):
            h.reply(403, "challenge", headers={"cf-mitigated": "challenge"})
        else:
            h.reply(200, "<p>through</p>", content_type="text/html")

    url = server.route("/cf", handle)

    result = ok(fetch(rt, url, format="text"))

    assert result.output == "through"
    first, second = server.seen("/cf")
    assert first.headers["user-agent"].startswith("Mozilla/")
    assert second.headers["user-agent"] == "hookcode"
    assert second.headers["accept"] == first.headers["accept"] == ACCEPT["text"]


def test_cloudflare_challenge_is_retried_only_once(rt, server):
    url = server.route("/cf", reply(403, "no", headers={"cf-mitigated": "challenge"}))

    assert failed(fetch(rt, url)) == "Request failed with status code: 403"
    assert len(server.seen("/cf")) == 2


def test_plain_403_is_not_retried(rt, server):
    url = server.route("/forbidden", reply(403, "no"))

    assert failed(fetch(rt, url)) == "Request failed with status code: 403"
    assert len(server.seen("/forbidden")) == 1


def test_redirects_are_followed_up_to_five(rt, server):
    for i in range(5):
        server.route(f"/r{i}", redirect(f"/r{i + 1}" if i < 4 else "/final", 301 + i % 2))
    server.route("/final", reply(200, "arrived"))

    result = ok(fetch(rt, server.url("/r0")))

    assert result.output == "arrived"
    assert result.title == f"{server.url('/r0')} (text/plain; charset=utf-8)"
    assert len(server.requests) == 6


def test_a_sixth_redirect_fails(rt, server):
    for i in range(6):
        server.route(f"/r{i}", redirect(f"/r{i + 1}"))
    server.route("/r6", reply(200, "never"))

    message = failed(fetch(rt, server.url("/r0")))

    assert message == f"Too many redirects: {server.url('/r0')} redirected more than 5 times"
    assert server.seen("/r6") == []


def test_redirect_loop_fails(rt, server):
    url = server.route("/loop", redirect("/loop"))
    assert "Too many redirects" in failed(fetch(rt, url))


def test_redirect_to_another_scheme_is_refused(rt, server):
    url = server.route("/away", redirect("file:///etc/passwd"))

    message = failed(fetch(rt, url))

    assert message.startswith(f"Request to {url} failed:")
    assert "only http:// and https:// URLs are fetched" in message


def test_connection_refused(rt):
    with FakeServer() as gone:
        url = gone.url("/x")
    message = failed(fetch(rt, url))
    assert message.startswith(f"Request to {url} failed: ")


# ---------------------------------------------------------------------------------------------
# the 5 MB cap, enforced while streaming
# ---------------------------------------------------------------------------------------------


def _peak_during(fn: Any) -> tuple[Any, int]:
    """``fn()`` and the peak of Python allocations (all threads) while it ran."""
    tracemalloc.start()
    try:
        value = fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return value, peak


def test_declared_50mb_is_refused_before_reading(rt, server):
    def handle(h: Handler) -> None:
        h.head(200, content_type="text/plain", length=50 * MB)
        h.stream(blocks(50 * MB))

    url = server.route("/big", handle)

    outcome, peak = _peak_during(lambda: fetch(rt, url))

    assert failed(outcome) == TOO_LARGE
    assert peak < 4 * MB, peak  # the body was never read
    assert server.disconnected("/big").wait(5)
    assert server.sent("/big") < 30 * MB  # what the sockets buffered, not the 50 MB


@pytest.mark.parametrize("format", ["markdown", "text", "html"])
def test_undeclared_50mb_stops_at_the_cap(rt, server, format):
    def handle(h: Handler) -> None:
        h.head(200, content_type="text/html")  # no Content-Length: read until close
        h.stream(blocks(50 * MB, b"<p>" + b"y" * 65533))

    url = server.route("/big", handle)

    start = time.monotonic()
    outcome, peak = _peak_during(lambda: fetch(rt, url, format=format))

    assert failed(outcome) == TOO_LARGE
    assert time.monotonic() - start < 20
    assert peak < 20 * MB, peak  # at most the 5 MB kept so far, plus a chunk or two
    assert server.disconnected("/big").wait(5)
    assert server.sent("/big") < 30 * MB


def test_a_lying_small_content_length_does_not_lift_the_cap(rt, server):
    def handle(h: Handler) -> None:
        h.head(200, content_type="text/plain", headers={"Content-Length": "10"})
        h.stream(blocks(20 * MB))

    url = server.route("/liar", handle)
    # httpx reads the declared 10 bytes only: the lie cuts the body short instead
    assert ok(fetch(rt, url)).output == "x" * 10


def test_exactly_5mb_is_accepted_and_pipeline_truncated(rt, server):
    line = b"z" * 1023 + b"\n"

    def handle(h: Handler) -> None:
        h.head(200, content_type="text/plain", length=5 * MB)
        h.stream(line for _ in range(5 * 1024))

    url = server.route("/five", handle)

    result = ok(fetch(rt, url))

    assert result.metadata["truncated"] is True
    assert os.path.getsize(result.metadata["outputPath"]) == 5 * MB
    assert result.output.startswith("z" * 1023 + "\n")


# ---------------------------------------------------------------------------------------------
# timeouts and abort
# ---------------------------------------------------------------------------------------------


def test_a_server_that_never_answers_times_out(rt, server):
    url = server.route("/silent", hang)

    start = time.monotonic()
    message = failed(fetch(rt, url, timeout=0.5))

    assert message == "Request timed out after 0.5 seconds"
    assert 0.4 < time.monotonic() - start < 5


def test_the_timeout_covers_the_body(rt, server):
    def handle(h: Handler) -> None:
        h.head(200, content_type="text/plain")
        h.stream([b"start"])
        h.hang()

    url = server.route("/stall", handle)

    start = time.monotonic()
    assert failed(fetch(rt, url, timeout=0.7)) == "Request timed out after 0.7 seconds"
    assert time.monotonic() - start < 5


def test_abort_mid_download(rt, server):
    from hookcode.pipeline import invoke
    from hookcode.tools import AbortSignal, ToolCall

    first_part = threading.Event()

    def trickle() -> Iterator[bytes]:
        yield b"a" * 100_000
        first_part.set()
        while True:
            yield b"b"

    def handle(h: Handler) -> None:
        h.head(200, content_type="text/plain")
        h.stream(trickle(), delay=0.02)

    url = server.route("/slow", handle)

    async def go() -> Any:
        session = rt.create_session(title="abort").id
        signal = AbortSignal()
        call = ToolCall(
            tool="webfetch", args={"url": url}, call_id=rt.new_id("call"), session_id=session
        )
        task = asyncio.ensure_future(invoke(rt, call, abort=signal))
        await asyncio.to_thread(first_part.wait, 10)
        await asyncio.sleep(0.2)
        signal.abort("user")
        return await task

    start = time.monotonic()
    outcome = asyncio.run(go())

    assert isinstance(outcome.error, ToolAborted)
    assert time.monotonic() - start < 5
    assert server.disconnected("/slow").wait(5)  # the connection was dropped, not drained


# ---------------------------------------------------------------------------------------------
# imports and the CLI
# ---------------------------------------------------------------------------------------------


def test_importing_the_plugin_imports_no_http_client_or_parser():
    code = (
        "import sys, hookcode_tool_webfetch\n"
        "heavy = {'httpx', 'bs4', 'markdownify', 'html.parser', 'pydantic'} & set(sys.modules)\n"
        "print(sorted(heavy))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_cli_tools_call_webfetch(hookcode_env, server):
    url = server.route(
        "/x",
        reply(200, "<h1>Hello</h1><script>no()</script><p>world</p>", content_type="text/html"),
    )
    env = {**hookcode_env.env, "HOOKCODE_DATA_DIR": str(hookcode_env.data_dir)}
    args = json.dumps({"url": url, "format": "text"})

    done = subprocess.run(
        [sys.executable, "-m", "hookcode", "tools", "call", "webfetch", args, "--json", "--yes"],
        cwd=hookcode_env.project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["error"] is None
    assert data["output"] == "Helloworld"
    assert data["title"] == f"{url} (text/html)"
    assert data["attachments"] == []
