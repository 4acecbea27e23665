"""The ``anthropic`` provider: Claude models through the official ``anthropic`` SDK.

The SDK (and its HTTP client) is imported in a background thread as soon as a run knows it
will use this provider (:meth:`AnthropicProvider.preload`), and the clients' TLS context made
in another (:mod:`hookcode_provider_anthropic.tls`, once per process); both are needed by
:meth:`AnthropicProvider.stream`; importing this module costs only the standard library and
hookcode. The SDK's own retries are off: one request per reply, a failure reported as
retryable or not (with the wait the server asked for), and the agent loop retries.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from hookcode.auth import redact
from hookcode.providers import (
    ModelInfo,
    ModelRequest,
    StreamError,
    StreamEvent,
    http_retry,
    import_soon,
)

from hookcode_provider_anthropic.models import (
    DEFAULT_MAX_TOKENS_CAP,
    FALLBACK_OUTPUT,
    MODELS,
    AnthropicModel,
    lookup_model,
)
from hookcode_provider_anthropic.tls import make_soon, ssl_context

if TYPE_CHECKING:
    from hookcode.auth import Credentials

__all__ = ["DEFAULT_BASE_URL", "AnthropicProvider", "normalize_base_url"]

PROVIDER_ID = "anthropic"
DEFAULT_BASE_URL = "https://api.anthropic.com"
LOGIN_HINT = "run `hookcode auth login anthropic`"
#: thinking blocks remembered per tool call (for histories that lost them), most recent kept
THINKING_MEMORY = 512


def normalize_base_url(url: str) -> str:
    """Strip whitespace, a trailing ``/`` and a trailing ``/v1``: the SDK appends
    ``/v1/messages`` itself, so ``https://host/v1`` would become ``/v1/v1/messages``."""
    url = url.strip().rstrip("/")
    if url.endswith("/v1"):
        url = url[: -len("/v1")]
    return url


class AnthropicProvider:
    """A :class:`~hookcode.providers.Provider` for ``anthropic/<model>``."""

    id = PROVIDER_ID
    name = "Anthropic"

    def __init__(self, settings: Any = None, credentials: Credentials | None = None) -> None:
        if settings is None:
            from hookcode_provider_anthropic._config import AnthropicConfig

            settings = AnthropicConfig()
        self.settings = settings
        self.credentials = credentials
        self._thinking: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()

    # -- models ---------------------------------------------------------------------------------
    def _table(self) -> dict[str, AnthropicModel]:
        table = dict(MODELS)
        configured = self.settings.models
        if isinstance(configured, list):
            for model_id in configured:
                table.setdefault(model_id, lookup_model(model_id))
        else:
            for model_id, entry in configured.items():
                base = lookup_model(model_id)
                values = {k: v for k, v in entry.model_dump().items() if v is not None}
                table[model_id] = AnthropicModel(
                    **{
                        "id": model_id,
                        "name": base.name,
                        "context": base.context,
                        "output": base.output,
                        "cost_in": base.cost_in,
                        "cost_out": base.cost_out,
                        "cost_cache_read": base.cost_cache_read,
                        "cost_cache_write": base.cost_cache_write,
                        "thinking": base.thinking,
                        **values,
                    }
                )
        return table

    def preload(self) -> None:
        """Start importing the SDK (about a second) while the run starts (see
        :class:`hookcode.providers.Provider`)."""
        import_soon("anthropic", "hookcode_provider_anthropic.events")
        make_soon()

    def models(self) -> list[ModelInfo]:
        return list(self._table().values())

    def model_info(self, model: str) -> AnthropicModel:
        return lookup_model(model, self._table())

    # -- settings -------------------------------------------------------------------------------
    @property
    def max_retries(self) -> int | None:
        """How many times the agent loop retries a retryable error (None: its default)."""
        return self.settings.max_retries

    @property
    def env(self) -> Mapping[str, str]:
        return self.credentials.env if self.credentials is not None else os.environ

    def base_url(self) -> str:
        """``[provider.anthropic] base_url``, else ``ANTHROPIC_BASE_URL``, else the public API."""
        url = self.settings.base_url or self.env.get("ANTHROPIC_BASE_URL", "").strip()
        return normalize_base_url(url) if url else DEFAULT_BASE_URL

    def _secrets(self) -> tuple[str | None, str | None]:
        """(API key, auth token): the key from the configured variable or ``hookcode auth
        login``; failing that a bearer token from ``ANTHROPIC_AUTH_TOKEN``."""
        key_env = self.settings.api_key_env
        if self.credentials is not None:
            key = self.credentials.get(PROVIDER_ID, [key_env])
        else:
            key = os.environ.get(key_env, "").strip() or None
        if key:
            return key, None
        token = self.env.get("ANTHROPIC_AUTH_TOKEN", "").strip()
        return None, token or None

    # -- thinking memory ------------------------------------------------------------------------
    def _remember(self, tool_ids: list[str], blocks: list[dict[str, Any]]) -> None:
        for tool_id in tool_ids:
            self._thinking[tool_id] = blocks
            self._thinking.move_to_end(tool_id)
        while len(self._thinking) > THINKING_MEMORY:
            self._thinking.popitem(last=False)

    def _recall(self, tool_id: str) -> list[dict[str, Any]]:
        return [dict(b) for b in self._thinking.get(tool_id, [])]

    # -- streaming ------------------------------------------------------------------------------
    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        """The ``messages.create`` arguments for ``request`` (no network, no SDK)."""
        from hookcode_provider_anthropic.convert import build_body

        info = self.model_info(request.model)
        default = min(info.output, DEFAULT_MAX_TOKENS_CAP) if info.output else FALLBACK_OUTPUT
        return build_body(
            request,
            default_max_tokens=default,
            model_output=info.output,
            adaptive=info.thinking == "adaptive",
            cache=self.settings.cache,
            thinking_for=self._recall,
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        key, token = self._secrets()
        if not key and not token:
            yield StreamError(
                f"no Anthropic API key: set {self.settings.api_key_env} or {LOGIN_HINT}"
            )
            return
        secrets = [s for s in (key, token) if s]
        try:
            import anthropic
        except ImportError:
            yield StreamError(
                "the anthropic SDK is not installed: pip install hookcode-provider-anthropic"
            )
            return
        from hookcode_provider_anthropic.events import ReplyState

        try:
            body = self.build_body(request)
        except (TypeError, ValueError) as exc:
            yield StreamError(f"invalid request options: {exc}")
            return
        info = self.model_info(request.model)
        state = ReplyState(cost=lambda u: info.cost(u.input, u.output, u.cache_read, u.cache_write))
        base_url = self.base_url()
        client_args: dict[str, Any] = {
            "base_url": base_url,
            "max_retries": 0,  # the agent loop retries (hookcode.session)
            "default_headers": dict(self.settings.headers) or None,
        }
        if key:
            client_args["api_key"] = key
        else:
            client_args["auth_token"] = token
        if self.settings.timeout is not None:
            client_args["timeout"] = self.settings.timeout
        # the SDK's default HTTP client, with the process's one TLS context (see .tls)
        client_args["http_client"] = anthropic.DefaultAsyncHttpxClient(verify=ssl_context())
        client = anthropic.AsyncAnthropic(**client_args)
        try:
            stream = await client.messages.create(**body, stream=True)
            async with stream:
                async for raw in stream:
                    for event in state.feed(raw):
                        yield event
                    if state.error:
                        return
            for event in state.end():
                yield event
            if state.finished:
                thinking = state.thinking_blocks()
                if thinking:
                    self._remember(state.tool_ids(), thinking)
        except anthropic.APIStatusError as exc:
            yield self._status_error(exc, secrets)
        except anthropic.APIConnectionError as exc:
            detail = redact(str(exc), secrets)
            yield StreamError(
                f"cannot reach the Anthropic API at {base_url}: {detail}", retryable=True
            )
        except anthropic.AnthropicError as exc:  # anything else the SDK raises
            yield StreamError(f"Anthropic SDK error: {redact(str(exc), secrets)}")
        finally:
            await client.close()

    def _status_error(self, exc: Any, secrets: list[str]) -> StreamError:
        status = int(getattr(exc, "status_code", 0) or 0)
        error = exc.body.get("error") if isinstance(exc.body, dict) else None
        kind = str((error or {}).get("type") or "") if isinstance(error, dict) else ""
        message = (error or {}).get("message") if isinstance(error, dict) else None
        text = redact(str(message or getattr(exc, "message", "") or exc), secrets)
        request_id = getattr(exc, "request_id", None)
        where = f" (request-id {request_id})" if request_id else ""
        if status == 200:  # an `error` event in the middle of the stream
            return StreamError(
                f"{kind or 'error'}: {text}{where}",
                retryable=kind in ("overloaded_error", "rate_limit_error", "api_error"),
            )
        response = getattr(exc, "response", None)
        retryable, wait = http_retry(status, response.headers if response is not None else {})
        if status == 401:
            text = (
                f"authentication failed: set {self.settings.api_key_env} or {LOGIN_HINT}"
                f" (the API said: {text}){where}"
            )
        elif status == 429:
            text = f"rate limited: {text}{where}"
        elif status == 529 or kind == "overloaded_error":
            text = f"Anthropic API overloaded: {text}{where}"
        elif status >= 500 or status in (408, 409):
            text = f"Anthropic API error {status}: {text}{where}"
        elif status == 403:
            text = f"permission denied: {text}{where}"
        elif status == 404:
            text = f"not found (model or endpoint; base URL {self.base_url()}): {text}"
        else:
            text = f"request rejected ({status} {kind}): {text}{where}".replace(" )", ")")
        return StreamError(text, retryable=retryable, retry_after=wait if retryable else None)
