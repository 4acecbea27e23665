"""One OpenAI-compatible provider: streaming ``POST {base_url}/chat/completions`` over httpx.

httpx is imported in a background thread once a run knows it will use this provider
(:meth:`OpenAIProvider.preload`), and needed by :meth:`OpenAIProvider.stream`; never at
import time. One request per
reply: a failure is reported as retryable or not, with the wait the server asked for, and the
agent loop retries. The API key is
looked up when a request is made (environment variable, then ``hookcode auth login``); a
request to OpenAI's own API without one fails at once naming both, while another server with
neither gets no Authorization header (Ollama, LM Studio, vLLM need none).
The key never appears in an error message.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from hookcode.auth import redact
from hookcode.providers import (
    ModelInfo,
    ModelRequest,
    StreamError,
    StreamEvent,
    http_retry,
    import_soon,
)

from hookcode_provider_openai.wire import (
    Prices,
    StreamAssembler,
    build_body,
    error_message,
    parse_data,
    sse_events,
)

__all__ = ["OpenAIProvider", "ProviderSettings"]

#: the host of OpenAI's own API (the built-in provider's default endpoint)
OPENAI_HOST = "api.openai.com"
#: at most this much of an error body is read
ERROR_BODY_LIMIT = 64 * 1024


@dataclass
class ProviderSettings:
    id: str
    name: str
    base_url: str | None
    api_key_env: str | None = None
    models: list[str] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    prices: dict[str, Prices] = field(default_factory=dict)
    #: how many times the agent loop retries a retryable error (None: its default)
    max_retries: int | None = None
    timeout: float = 600.0

    @property
    def url(self) -> str:
        base = (self.base_url or "").strip().rstrip("/")
        if base.endswith("/chat/completions"):
            base = base[: -len("/chat/completions")]
        return f"{base}/chat/completions"

    @property
    def max_tokens_key(self) -> str:
        # OpenAI's own API wants max_completion_tokens (its reasoning models reject
        # max_tokens); compatible servers know max_tokens
        host = urlsplit(self.base_url or "").hostname or ""
        return "max_completion_tokens" if host == OPENAI_HOST else "max_tokens"

    @property
    def key_required(self) -> bool:
        """Whether a request needs an API key: OpenAI's own API does (without one a request
        fails at once, naming where the key comes from); another server (Ollama, LM Studio,
        vLLM, a proxy) may need none, so none is sent and the server decides."""
        return (urlsplit(self.base_url or "").hostname or "") == OPENAI_HOST


class OpenAIProvider:
    """A Chat Completions provider (``openai``, or a configured ``[provider.NAME]``)."""

    def __init__(self, settings: ProviderSettings, credentials: Any) -> None:
        self.settings = settings
        self.credentials = credentials
        self.id = settings.id
        self.name = settings.name
        self.max_retries = settings.max_retries

    def __repr__(self) -> str:
        return f"OpenAIProvider(id={self.id!r}, base_url={self.settings.base_url!r})"

    def preload(self) -> None:
        """Start importing httpx while the run starts (see :class:`hookcode.providers.Provider`)."""
        import_soon("httpx")

    def models(self) -> list[ModelInfo]:
        out = []
        for model in self.settings.models:
            price = self.settings.prices.get(model)
            out.append(
                ModelInfo(
                    id=model,
                    name=model,
                    cost_in=price.input if price else 0.0,
                    cost_out=price.output if price else 0.0,
                )
            )
        return out

    # -- credentials --------------------------------------------------------------------------
    def _key(self) -> str | None:
        if self.credentials is None:
            return None
        env = [self.settings.api_key_env] if self.settings.api_key_env else []
        return self.credentials.get(self.id, env)

    def _auth_hint(self) -> str:
        login = f"`hookcode auth login {self.id}`"
        if self.settings.api_key_env:
            return f"set {self.settings.api_key_env} or run {login}"
        return f"set api_key_env in [provider.{self.id}] or run {login}"

    def _headers(self, key: str | None) -> dict[str, str]:
        import hookcode

        headers = {
            "Content-Type": "application/json",
            "Accept": "text/event-stream",
            "User-Agent": f"hookcode/{hookcode.__version__}",
        }
        if key:
            headers["Authorization"] = f"Bearer {key}"
        headers.update(self.settings.headers)
        return headers

    # -- streaming ----------------------------------------------------------------------------
    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        if not (self.settings.base_url or "").strip():
            yield StreamError(
                f"provider '{self.id}' has no base_url: set base_url in [provider.{self.id}] "
                "(e.g. http://127.0.0.1:11434/v1)"
            )
            return
        key = self._key()
        if key is None and self.settings.key_required:
            # not worth a request (nor the loop's retries): say where the key comes from
            yield StreamError(f"no API key for provider '{self.id}': {self._auth_hint()}")
            return
        try:
            import httpx
        except ImportError:  # pragma: no cover - httpx is a dependency
            yield StreamError("the OpenAI-compatible provider needs httpx: pip install httpx")
            return

        secrets = [key] if key else []
        body = build_body(
            request.model,
            request.system,
            request.messages,
            request.tools,
            request.params,
            max_tokens_key=self.settings.max_tokens_key,
        )
        price = self.settings.prices.get(request.model)
        timeout = httpx.Timeout(self.settings.timeout, connect=min(10.0, self.settings.timeout))
        url = self.settings.url
        emitted = False
        async with httpx.AsyncClient(timeout=timeout, follow_redirects=True) as client:
            try:
                async with client.stream(
                    "POST", url, json=body, headers=self._headers(key)
                ) as response:
                    if response.status_code < 400:
                        async for event in self._read(response, price):
                            emitted = True
                            if isinstance(event, StreamError):
                                event.message = redact(event.message, secrets)
                            yield event
                        return
                    raw = await _read_limited(response)
                    yield self._http_error(response.status_code, response.headers, raw, secrets)
            except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
                yield StreamError(f"provider '{self.id}': bad base_url {url!r}: {exc}")
            except httpx.TransportError as exc:
                what = str(exc) or type(exc).__name__
                # part of the reply out: it cannot be taken back, but the loop may try again
                # when nothing of it ran
                failure = f"the connection to {url} broke mid-reply" if emitted else ""
                failure = failure or f"cannot reach {url}"
                yield StreamError(redact(f"{failure}: {what}", secrets), retryable=True)

    def _http_error(
        self, status: int, headers: Mapping[str, str], raw: bytes, secrets: list[str]
    ) -> StreamError:
        message = redact(error_message(status, raw), secrets)
        retryable, wait = http_retry(status, headers)
        if status == 401:
            message = f"authentication failed: {self._auth_hint()} ({message})"
        else:
            message = f"provider '{self.id}': {message}"
        return StreamError(message, retryable=retryable, retry_after=wait if retryable else None)

    async def _read(self, response: Any, price: Prices | None) -> AsyncIterator[StreamEvent]:
        assembler = StreamAssembler(price)
        content_type = response.headers.get("content-type", "")
        if content_type.startswith("application/json"):
            # a server that ignored "stream": the whole completion at once
            raw = await response.aread()
            for payload in parse_data(raw.decode("utf-8", "replace")) or []:
                for event in assembler.feed(payload):
                    yield event
                    if isinstance(event, StreamError):
                        return
            for event in assembler.end(done=True):
                yield event
            return
        done = False
        async for name, data in sse_events(response.aiter_lines()):
            if data.strip() == "[DONE]":
                done = True
                break
            payloads = parse_data(data)
            if payloads is None:
                continue  # not JSON (a keep-alive of some proxy): nothing to use
            if name == "error":
                payload = payloads[0] if payloads else {}
                if not (isinstance(payload, Mapping) and payload.get("error")):
                    payload = {"error": payload}
                payloads = [payload]
            for payload in payloads:
                for event in assembler.feed(payload):
                    yield event
                    if isinstance(event, StreamError):
                        return
            if "[DONE]" in (line.strip() for line in data.split("\n")):
                done = True
                break
        for event in assembler.end(done):
            yield event


async def _read_limited(response: Any) -> bytes:
    data = b""
    async for chunk in response.aiter_bytes():
        data += chunk
        if len(data) >= ERROR_BODY_LIMIT:
            break
    return data[:ERROR_BODY_LIMIT]
