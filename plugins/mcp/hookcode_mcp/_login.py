"""``hookcode mcp auth NAME``: the OAuth authorization code flow (PKCE) for one remote server.

A callback server listens on ``127.0.0.1:<port>`` (19876 by default; 0 picks a free port) at
``/mcp/oauth/callback``. An unauthenticated request to the server's URL gets its 401; the SDK's
provider discovers the metadata, registers a client (unless one is configured), and hands us
the authorization URL: it is printed and opened with :mod:`webbrowser` (which honours
``BROWSER``). The first request to the callback settles the login: an ``error`` parameter is a
refusal, a ``state`` other than the one sent is rejected (a forged or stale redirect), a
``code`` is exchanged for tokens by the SDK. Nothing is stored unless the whole login succeeds.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import os
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from hookcode_mcp._auth import CALLBACK_PATH, AuthStore, redirect_uri

if TYPE_CHECKING:
    from mcp.shared.auth import AuthorizationCodeResult

    from hookcode_mcp._config import McpServerConfig

__all__ = ["DEFAULT_TIMEOUT", "LoginError", "login"]

#: seconds to wait for the browser to come back
DEFAULT_TIMEOUT = 300.0
#: text-mode browsers Python's webbrowser may pick on a machine without a display: they would
#: take over the terminal we are printing to, so they run only when BROWSER names them
_CONSOLE_BROWSERS = {"www-browser", "links", "elinks", "lynx", "w3m"}


class LoginError(Exception):
    """A login that did not succeed; the message says why (and what to do)."""


class _Refused(Exception):
    """What the callback received instead of a code."""


class CallbackServer:
    """The local endpoint the browser is redirected to; the first callback settles it."""

    def __init__(self, port: int) -> None:
        self._state: str | None = None
        self._outcome: AuthorizationCodeResult | BaseException | None = None
        self._settled = threading.Event()
        self._waiters: list[Callable[[], object]] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # the http.server API
                owner._handle(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # the terminal is ours

        try:
            self._http = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        except OSError as exc:
            raise LoginError(
                f"cannot listen on 127.0.0.1:{port} for the OAuth callback "
                f"({exc.strerror or exc}); pass --port with a free port (a pre-registered "
                "client must list the redirect URI it gives)"
            ) from None
        self._http.daemon_threads = True
        self.port = int(self._http.server_address[1])
        self.redirect_uri = redirect_uri(self.port)
        self._thread = threading.Thread(
            target=self._http.serve_forever, name="hookcode-mcp-oauth-callback", daemon=True
        )
        self._thread.start()

    def expect(self, state: str | None) -> None:
        """The ``state`` of the authorization request just sent."""
        self._state = state

    async def wait(self, timeout: float) -> AuthorizationCodeResult:
        """The code the browser brought back; raises :class:`_Refused` or ``TimeoutError``."""
        loop = asyncio.get_running_loop()
        done = asyncio.Event()
        with self._lock:
            self._waiters.append(lambda: loop.call_soon_threadsafe(done.set))
            if self._settled.is_set():
                done.set()
        await asyncio.wait_for(done.wait(), timeout)
        outcome = self._outcome
        if isinstance(outcome, BaseException):
            raise outcome
        assert outcome is not None
        return outcome

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()

    # -- on the server's threads ------------------------------------------------------------
    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        from mcp.shared.auth import AuthorizationCodeResult

        parts = urlsplit(request.path)
        if parts.path != CALLBACK_PATH:
            _page(request, 404, "Not found", "This is hookcode's OAuth callback; nothing here.")
            return
        query = {key: values[0] for key, values in parse_qs(parts.query).items()}
        if self._settled.is_set():
            _page(request, 409, "Already done", "This login has already been settled.")
            return
        outcome: AuthorizationCodeResult | BaseException
        if self._state is None or query.get("state") != self._state:
            outcome = _Refused(
                "the callback's state parameter does not match the authorization request "
                "(a forged or stale redirect): rejected"
            )
            _page(request, 400, "Rejected", "The state parameter does not match this login.")
        elif "error" in query:
            described = query["error"]
            if query.get("error_description"):
                described += f" ({query['error_description']})"
            outcome = _Refused(f"the authorization was refused: {described}")
            _page(request, 400, "Authorization refused", described)
        elif not query.get("code"):
            outcome = _Refused("the callback carried neither a code nor an error")
            _page(request, 400, "No code", "The callback carried no authorization code.")
        else:
            outcome = AuthorizationCodeResult(
                code=query["code"], state=query.get("state"), iss=query.get("iss")
            )
            _page(request, 200, "Authorized", "hookcode is authorized; you can close this tab.")
        with self._lock:
            if self._settled.is_set():
                return
            self._outcome = outcome
            self._settled.set()
            waiters = list(self._waiters)
        for wake in waiters:
            wake()


def _page(request: BaseHTTPRequestHandler, code: int, title: str, text: str) -> None:
    body = (
        f"<!doctype html><title>hookcode: {html.escape(title)}</title>"
        f"<h1>{html.escape(title)}</h1><p>{html.escape(text)}</p>"
    ).encode()
    request.send_response(code)
    request.send_header("Content-Type", "text/html; charset=utf-8")
    request.send_header("Content-Length", str(len(body)))
    request.send_header("Cache-Control", "no-store")
    request.end_headers()
    with contextlib.suppress(OSError):
        request.wfile.write(body)


def _open_browser(url: str, echo: Callable[[str], None]) -> None:
    """Open ``url`` without waiting (a browser named by BROWSER may run until it exits)."""
    import webbrowser

    def run() -> None:
        try:
            browser = webbrowser.get()
            if getattr(browser, "name", "") in _CONSOLE_BROWSERS and "BROWSER" not in os.environ:
                raise webbrowser.Error("only a text-mode browser")
            opened = browser.open(url)
        except webbrowser.Error:
            opened = False
        if not opened:
            echo("Could not open a browser: open the URL above yourself.")

    threading.Thread(target=run, name="hookcode-mcp-oauth-browser", daemon=True).start()


async def login(
    name: str,
    config: McpServerConfig,
    store: AuthStore,
    *,
    port: int,
    timeout: float,
    open_browser: bool = True,
    echo: Callable[[str], None] = print,
) -> None:
    """Log in to server ``name``; raises :class:`LoginError` saying why it did not work."""
    import httpx2
    from mcp.client.auth import OAuthFlowError, OAuthRegistrationError
    from mcp.shared._httpx_utils import create_mcp_http_client

    from hookcode_mcp._oauth import Provider, ServerTokens

    url = str(config.url)
    callback = CallbackServer(port)
    try:
        tokens = ServerTokens(store, name, config, callback.redirect_uri, login=True)
        asked: list[str] = []

        async def on_redirect(authorization_url: str) -> None:
            asked.append(authorization_url)
            state = parse_qs(urlsplit(authorization_url).query).get("state", [None])[0]
            callback.expect(state)
            echo(f"Authorize hookcode for MCP server '{name}' in the browser, or visit:")
            echo(f"\n  {authorization_url}\n")
            if open_browser:
                _open_browser(authorization_url, echo)
            echo(f"Waiting up to {timeout:g} s for the authorization (Ctrl-C to cancel)...")

        async def on_callback() -> AuthorizationCodeResult:
            try:
                return await callback.wait(timeout)
            except TimeoutError:
                raise LoginError(
                    f"no authorization came back within {timeout:g} s (--timeout to wait longer)"
                ) from None
            except _Refused as exc:
                raise LoginError(str(exc)) from None

        provider = Provider(tokens, on_redirect, on_callback)
        http_timeout = httpx2.Timeout(config.timeout / 1000.0)
        client = create_mcp_http_client(
            headers=dict(config.headers), timeout=http_timeout, auth=provider
        )
        try:
            async with client:
                status = await _ask(client, url)
        except LoginError:
            raise
        except OAuthRegistrationError as exc:
            raise LoginError(_registration_failed(name, tokens, provider, exc)) from None
        except OAuthFlowError as exc:
            raise LoginError(f"the OAuth flow failed: {exc}") from None
        except httpx2.HTTPError as exc:
            raise LoginError(f"cannot reach {url}: {type(exc).__name__}: {exc}") from None
        if not asked:
            raise LoginError(
                f"the server did not ask for authorization (HTTP {status} without a token): "
                "there is nothing to log in to"
            )
        if status in (401, 403):
            raise LoginError(f"the server refused the new token (HTTP {status})")
        tokens.commit()
    finally:
        callback.close()


async def _ask(client: Any, url: str) -> int:
    """An MCP request to ``url`` (a 401 starts the flow); the final HTTP status. A POST for
    streamable HTTP; an SSE-only server (404/405) is asked with its event-stream GET."""
    body = {"jsonrpc": "2.0", "id": 0, "method": "ping"}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    response = await client.post(url, json=body, headers=headers)
    await response.aclose()
    if response.status_code not in (404, 405):
        return int(response.status_code)
    async with client.stream("GET", url, headers={"Accept": "text/event-stream"}) as stream:
        return int(stream.status_code)


def _registration_failed(name: str, tokens: Any, provider: Any, exc: BaseException) -> str:
    context = provider.context
    metadata = context.oauth_metadata
    if metadata is None and context.protected_resource_metadata is None:
        return (
            "the server publishes no OAuth metadata (/.well-known/oauth-protected-resource, "
            "/.well-known/oauth-authorization-server) and registering a client failed: it does "
            'not support an OAuth login; set headers = { Authorization = "Bearer ..." } '
            f"in [mcp.{name}] instead ({exc})"
        )
    if metadata is not None and metadata.registration_endpoint is None:
        return (
            f"the server's authorization server ({metadata.issuer}) offers no dynamic client "
            f"registration: register a client there with redirect URI {tokens.redirect}, then "
            f'set [mcp.{name}.oauth] clientId = "..." (and clientSecret if it has one)'
        )
    return f"registering hookcode as an OAuth client failed: {exc}"
