"""An OAuth-protected streamable-HTTP MCP server for the MCP client's tests (mcp 2.x
``MCPServer`` with the SDK's own authorization server, ``mcp.server.auth``).

Binds 127.0.0.1 on a free port, prints ``PORT <n>`` on stdout, serves ``/mcp`` (bearer tokens
required, scope ``read``), the protected-resource and authorization-server metadata, and
``/authorize``, ``/token``, ``/register``, ``/revoke``. The in-memory provider approves every
authorization at once: ``/authorize`` redirects straight to the redirect URI with a code (the
"browser" only has to follow redirects). Refresh tokens rotate.

Options: ``--ttl SECONDS`` (access-token lifetime, default 3600), ``--no-registration`` (no
dynamic client registration), ``--client ID:SECRET`` (a pre-registered client with scopes
``read write`` that accepts any loopback port in its redirect URI, RFC 8252 §7.3), ``--deny``
(every authorization is refused with ``access_denied``), ``--sse`` (the older HTTP+SSE
transport on ``/sse``).

``POST /test/expire`` ends the life of every access token issued so far (the tests decide
when a token expires, not a clock).

Tools: ``add``; ``whoami`` (the client id and scopes of the token that called it); ``stats``
(how many registrations, authorizations, code exchanges and refreshes the server saw).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import socket
import sys
import time
from collections import Counter

import uvicorn
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyUrl
from starlette.requests import Request
from starlette.responses import Response

SCOPES = ["read", "write"]


class LoopbackClient(OAuthClientInformationFull):
    """A pre-registered native client: a loopback redirect URI matches on any port."""

    def validate_redirect_uri(self, redirect_uri: AnyUrl | None) -> AnyUrl:
        if redirect_uri is not None and redirect_uri.host == "127.0.0.1":
            for registered in self.redirect_uris or []:
                if (registered.scheme, registered.host, registered.path) == (
                    redirect_uri.scheme,
                    redirect_uri.host,
                    redirect_uri.path,
                ):
                    return redirect_uri
        return super().validate_redirect_uri(redirect_uri)


class Provider(OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]):
    """Everything in memory; every authorization approved (or refused with ``--deny``)."""

    def __init__(self, ttl: int, deny: bool) -> None:
        self.ttl = ttl
        self.deny = deny
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.stats: Counter[str] = Counter()

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.stats["registrations"] += 1
        self.clients[client_info.client_id] = client_info

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        self.stats["authorizations"] += 1
        if self.deny:
            raise AuthorizeError("access_denied", "the resource owner said no")
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        found = self.codes.get(authorization_code)
        return found if found is not None and found.client_id == client.client_id else None

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.stats["exchanges"] += 1
        del self.codes[authorization_code.code]
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        found = self.refresh.get(refresh_token)
        return found if found is not None and found.client_id == client.client_id else None

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.stats["refreshes"] += 1
        del self.refresh[refresh_token.token]  # rotated: an old refresh token is spent
        return self._issue(client.client_id, scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    def expire_all(self) -> None:
        """Every access token issued so far is expired from now on."""
        past = int(time.time()) - 1
        for key, token in list(self.access.items()):
            self.access[key] = token.model_copy(update={"expires_at": past})

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = secrets.token_hex(16), secrets.token_hex(16)
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + self.ttl,
            resource=resource,
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource
        )
        return OAuthToken(
            access_token=access,
            expires_in=self.ttl,
            refresh_token=refresh,
            scope=" ".join(scopes) or None,
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ttl", type=int, default=3600)
    parser.add_argument("--no-registration", action="store_true")
    parser.add_argument("--client", default=None)
    parser.add_argument("--deny", action="store_true")
    parser.add_argument("--sse", action="store_true")
    args = parser.parse_args()

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # connections queue from now on: the port is usable once printed
    port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}"

    provider = Provider(args.ttl, args.deny)
    if args.client:
        client_id, secret = args.client.split(":", 1)
        provider.clients[client_id] = LoopbackClient(
            client_id=client_id,
            client_secret=secret,
            redirect_uris=[AnyUrl("http://127.0.0.1/mcp/oauth/callback")],
            token_endpoint_auth_method="client_secret_post",
            scope=" ".join(SCOPES),
        )
    auth = AuthSettings(
        issuer_url=base,  # type: ignore[arg-type]
        resource_server_url=f"{base}/sse" if args.sse else f"{base}/mcp",  # type: ignore[arg-type]
        validate_token_resource=True,
        required_scopes=["read"],
        client_registration_options=ClientRegistrationOptions(
            enabled=not args.no_registration, valid_scopes=SCOPES, default_scopes=["read"]
        ),
        revocation_options=RevocationOptions(enabled=True),
    )
    server = MCPServer("hookcode-test-oauth", auth_server_provider=provider, auth=auth)

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def whoami(ctx: Context) -> str:
        """The client id and scopes of the token this call came with."""
        header = ctx.request_context.request.headers.get("authorization", "")  # type: ignore[union-attr]
        token = provider.access.get(header.removeprefix("Bearer ").strip())
        if token is None:
            return json.dumps(None)
        return json.dumps({"client_id": token.client_id, "scopes": token.scopes})

    @server.custom_route("/test/expire", methods=["POST"])
    async def expire(request: Request) -> Response:
        provider.expire_all()
        return Response(status_code=204)

    @server.tool()
    def stats() -> str:
        """What the authorization server has done so far."""
        return json.dumps(dict(provider.stats))

    if args.sse:  # the old HTTP+SSE transport: GET /sse, POST /messages/
        app = server.sse_app(host="127.0.0.1")
    else:
        app = server.streamable_http_app(host="127.0.0.1")
    config = uvicorn.Config(app, log_level="warning")
    print(f"PORT {port}", flush=True)
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    sys.exit(main())
