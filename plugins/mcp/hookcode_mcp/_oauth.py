"""OAuth for remote MCP servers, on the ``mcp`` SDK's :class:`OAuthClientProvider` (an
``httpx2.Auth`` given to the streamable HTTP and SSE transports).

Two uses:

* **connecting** (an agent run, ``hookcode mcp list``, a tool call): the stored tokens are sent;
  the SDK refreshes an expired one with its refresh token (and the new tokens are stored). When
  a login would be needed, the provider's redirect handler raises :class:`AuthorizationRequired`
  at once: a connection never opens a browser and never waits. Without a stored client it
  presents a placeholder client id, so finding out that a login is needed registers nothing
  with the server and writes nothing.
* **logging in** (``hookcode mcp auth NAME``, :mod:`hookcode_mcp._login`): the authorization
  code flow with PKCE; a dynamically registered client (or the configured one), the tokens and
  the metadata found are stored only when the whole login has succeeded.

Two gaps of the SDK (2.3) are filled here: it forgets a stored token's expiry and the
authorization server's metadata when a provider is built again, so an expired token would be
sent as if valid (a 401 and a login instead of a refresh) and a refresh would go to
``<origin>/token``; :meth:`Provider._initialize` restores both from the store.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from pydantic import ValidationError

from hookcode_mcp._auth import AuthStore, login_hint, redirect_uri

if TYPE_CHECKING:
    from hookcode_mcp._config import McpServerConfig

__all__ = ["AuthorizationRequired", "Provider", "ServerTokens", "connecting_provider"]

#: the client id a connection presents when it has none: the redirect handler raises before
#: anything is sent with it
PLACEHOLDER_CLIENT_ID = "hookcode-not-registered"


class AuthorizationRequired(Exception):
    """A connection found that the server needs an OAuth login; ``status`` is ``needs_auth``
    or ``needs_client_registration``."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class _ConfiguredScope(OAuthClientMetadata):
    """Client metadata whose ``scope`` stays the configured one: the SDK replaces it with the
    scope the server suggests (WWW-Authenticate, resource metadata) before it registers and
    authorizes, but ``[mcp.NAME.oauth] scope`` is what the user asked for."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name != "scope":
            super().__setattr__(name, value)


class ServerTokens:
    """The SDK's ``TokenStorage`` for one server: its entry in ``mcp-auth.json``.

    ``login=False`` (a connection): the stored tokens and client, if made for this URL (and
    this configured client); refreshed tokens are written back at once. ``login=True``: starts
    from nothing (a fresh login) and keeps what the flow produces in memory until
    :meth:`commit`."""

    def __init__(
        self, store: AuthStore, name: str, config: McpServerConfig, redirect: str, *, login: bool
    ) -> None:
        from hookcode_mcp._config import OAuthConfig

        self.store = store
        self.name = name
        self.url = str(config.url)
        self.redirect = redirect
        self.login = login
        oauth = config.oauth if isinstance(config.oauth, OAuthConfig) else None
        self.client_id = oauth.client_id if oauth else None
        self.client_secret = oauth.client_secret if oauth else None
        self.scope = oauth.scope if oauth else None
        #: bound by the provider: what the flow discovered (saved with the tokens)
        self.context: Any = None
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None
        self.expires_at: float | None = None
        self.auth_server: OAuthMetadata | None = None
        self.resource: ProtectedResourceMetadata | None = None
        #: why a connection has no usable login (for the message)
        self.had_tokens = False
        self.other_url: str | None = None
        self.placeholder = False

    # -- the SDK's TokenStorage ---------------------------------------------------------------
    async def get_tokens(self) -> OAuthToken | None:
        if not self.login:
            self._load()
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens
        self.expires_at = getattr(self.context, "token_expiry_time", None)
        if not self.login:  # a refresh: keep it
            self.store.merge(self.name, self.url, self._fields())

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if self.client_id:
            return self._configured_client()
        if self.client is None and not self.login:
            self.placeholder = True
            return OAuthClientInformationFull(
                client_id=PLACEHOLDER_CLIENT_ID,
                redirect_uris=[self.redirect],  # type: ignore[list-item]
                token_endpoint_auth_method="none",
            )
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info  # stored with the tokens, once the login has succeeded
        self.placeholder = False

    # -- reading and writing the entry ---------------------------------------------------------
    def _load(self) -> None:
        self.tokens = self.client = self.auth_server = self.resource = None
        self.expires_at = None
        entry = self.store.entries().get(self.name)
        if entry is None:
            return
        if entry.get("serverUrl") != self.url:
            self.other_url = str(entry.get("serverUrl"))
            return
        try:
            if self.client_id:
                if entry.get("clientId") != self.client_id:
                    return  # made with another client: its refresh token is not ours
            elif isinstance(entry.get("clientInfo"), dict):
                self.client = OAuthClientInformationFull.model_validate(entry["clientInfo"])
            else:
                return
            if isinstance(entry.get("tokens"), dict):
                self.tokens = OAuthToken.model_validate(entry["tokens"])
                self.had_tokens = True
            expires_at = entry.get("expiresAt")
            self.expires_at = float(expires_at) if isinstance(expires_at, int | float) else None
            if isinstance(entry.get("authServer"), dict):
                self.auth_server = OAuthMetadata.model_validate(entry["authServer"])
            if isinstance(entry.get("resource"), dict):
                self.resource = ProtectedResourceMetadata.model_validate(entry["resource"])
        except ValidationError as exc:
            from hookcode.errors import HookcodeError

            raise HookcodeError(
                f"{self.store.path}: the entry of MCP server '{self.name}' is malformed "
                f"({exc.error_count()} error(s)); {login_hint(self.name)} to replace it"
            ) from None

    def _fields(self) -> dict[str, Any]:
        context = self.context
        if context is not None:
            self.auth_server = context.oauth_metadata or self.auth_server
            self.resource = context.protected_resource_metadata or self.resource
        fields: dict[str, Any] = {
            "tokens": _dump(self.tokens),
            "expiresAt": self.expires_at,
            "authServer": _dump(self.auth_server),
            "resource": _dump(self.resource),
        }
        if self.client_id:
            fields["clientId"] = self.client_id  # the secret stays in the config
        else:
            fields["clientInfo"] = _dump(self.client)
        return fields

    def commit(self) -> None:
        """Store what a successful login produced (replacing the server's entry)."""
        self.store.put(self.name, {"serverUrl": self.url, **self._fields()})

    def _configured_client(self) -> OAuthClientInformationFull:
        return OAuthClientInformationFull(
            client_id=str(self.client_id),
            client_secret=self.client_secret,
            redirect_uris=[self.redirect],  # type: ignore[list-item]
            token_endpoint_auth_method="client_secret_post" if self.client_secret else "none",
            scope=self.scope,
        )

    # -- why a connection cannot go on ---------------------------------------------------------
    def required(self) -> AuthorizationRequired:
        """The failure a connection reports when the flow reached the point of a login."""
        hint = login_hint(self.name)
        context = self.context
        metadata = getattr(context, "oauth_metadata", None)
        if self.placeholder and metadata is not None and metadata.registration_endpoint is None:
            return AuthorizationRequired(
                "needs_client_registration",
                f"the server's authorization server ({metadata.issuer}) offers no dynamic client "
                f"registration: register a client there with redirect URI {self.redirect}, set "
                f'[mcp.{self.name}.oauth] clientId = "..." (and clientSecret if it has one), '
                f"then {hint}",
            )
        if metadata is None and getattr(context, "protected_resource_metadata", None) is None:
            return AuthorizationRequired(
                "needs_auth",
                "the server requires authorization (HTTP 401) and publishes no OAuth metadata: "
                'set headers = { Authorization = "Bearer ..." }, or, if it supports OAuth, ' + hint,
            )
        if self.had_tokens:
            reason = "the stored OAuth login was refused or could not be refreshed"
        elif self.other_url:
            reason = f"the stored OAuth login is for another URL ({self.other_url})"
        else:
            reason = "the server requires an OAuth login"
        return AuthorizationRequired("needs_auth", f"{reason}: {hint}")


class Provider(OAuthClientProvider):
    """The SDK's provider with its tokens' expiry and metadata restored from the store."""

    def __init__(
        self,
        tokens: ServerTokens,
        redirect_handler: Callable[[str], Awaitable[None]],
        callback_handler: Callable[[], Awaitable[AuthorizationCodeResult]],
    ) -> None:
        from hookcode import __version__

        metadata_class = _ConfiguredScope if tokens.scope else OAuthClientMetadata
        metadata = metadata_class(
            client_name="hookcode",
            software_id="hookcode",
            software_version=__version__,
            redirect_uris=[tokens.redirect],  # type: ignore[list-item]
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",  # a public client: PKCE, no secret
            scope=tokens.scope,
        )
        super().__init__(
            server_url=tokens.url,
            client_metadata=metadata,
            storage=tokens,
            redirect_handler=redirect_handler,
            callback_handler=callback_handler,
        )
        self.tokens = tokens
        tokens.context = self.context

    async def _initialize(self) -> None:
        await super()._initialize()
        context, tokens = self.context, self.tokens
        if context.current_tokens is not None:
            context.token_expiry_time = tokens.expires_at
        if context.oauth_metadata is None and tokens.auth_server is not None:
            context.oauth_metadata = tokens.auth_server
        if context.protected_resource_metadata is None and tokens.resource is not None:
            context.protected_resource_metadata = tokens.resource
            context.auth_server_url = str(tokens.resource.authorization_servers[0])


def connecting_provider(name: str, config: McpServerConfig, store: AuthStore) -> Provider:
    """The provider of a connection: stored tokens, refreshed as needed; never a login."""
    tokens = ServerTokens(store, name, config, redirect_uri(), login=False)

    async def refuse(url: str) -> None:
        raise tokens.required()

    async def never() -> AuthorizationCodeResult:  # pragma: no cover - refuse() raised first
        raise tokens.required()

    return Provider(tokens, refuse, never)


def _dump(model: Any) -> Any:
    return None if model is None else model.model_dump(mode="json", exclude_none=True)
