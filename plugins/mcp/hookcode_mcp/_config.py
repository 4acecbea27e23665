"""``[mcp.NAME]``: imported only when the config is loaded (it needs pydantic)."""

from __future__ import annotations

from typing import Literal

from hookcode.tools import MAX_TIMEOUT_MS
from hookcode.trust import trusted_only
from pydantic import BaseModel, ConfigDict, Field, model_validator

DEFAULT_TIMEOUT_MS = 30_000


class OAuthConfig(BaseModel):
    """``[mcp.NAME.oauth]``: a pre-registered OAuth client for a remote server, used instead
    of dynamic client registration; its redirect URI is
    ``http://127.0.0.1:19876/mcp/oauth/callback`` (the port of ``hookcode mcp auth --port``)."""

    model_config = ConfigDict(extra="forbid", defer_build=True, populate_by_name=True)

    client_id: str | None = Field(
        default=None,
        alias="clientId",
        description="OAuth client id registered with the server's authorization server "
        "(instead of dynamic registration; redirect URI "
        "http://127.0.0.1:19876/mcp/oauth/callback).",
        examples=["hookcode"],
    )
    client_secret: str | None = Field(
        default=None,
        alias="clientSecret",
        description="Its secret, if it has one (sent in the token requests' body).",
    )
    scope: str | None = Field(
        default=None,
        description="Scopes to request, space-separated; default: those the server names.",
        examples=["read write"],
    )


class McpServerConfig(BaseModel):
    """One MCP server; NAME is the prefix of its tools' names (`<NAME>_<tool>`). `type =
    "local"` runs `command` over stdio; `type = "remote"` speaks streamable HTTP to `url`
    (falling back to SSE). Its tools ask for permission by default (`"NAME_*" = "allow"` in
    `[permission]` decides otherwise). The project's own config of an untrusted folder can
    only turn a server off (`enabled = false`): a server runs a command or receives headers."""

    # every key but `enabled = false` is ignored in an untrusted project's files
    model_config = ConfigDict(extra="forbid", defer_build=True, json_schema_extra=trusted_only())

    type: Literal["local", "remote"] | None = Field(
        default=None,
        description='"local" (stdio) or "remote" (HTTP); default: from `command` / `url`.',
        examples=["local"],
    )
    command: list[str] | None = Field(
        default=None,
        description="local: the program and its arguments; runs in the project directory.",
        examples=[["python", "-m", "mcp_server_time", "--local-timezone", "UTC"]],
    )
    environment: dict[str, str] = Field(
        default={},
        description="local: variables added to hookcode's environment for the server.",
        examples=[{"TZ": "UTC"}],
    )
    url: str | None = Field(
        default=None,
        description="remote: the endpoint (streamable HTTP, then SSE).",
        examples=["http://127.0.0.1:8766/mcp"],
    )
    headers: dict[str, str] = Field(
        default={},
        description="remote: HTTP headers sent with every request.",
        examples=[{"Authorization": "Bearer abc"}],
    )
    enabled: bool = Field(
        default=True,
        description="false: the server is not started.",
        json_schema_extra=trusted_only(keep=[False]),
    )
    timeout: int = Field(
        default=DEFAULT_TIMEOUT_MS,
        gt=0,
        le=MAX_TIMEOUT_MS,
        description="Milliseconds for connecting and listing tools, and for each tool call.",
        examples=[10000],
    )
    oauth: Literal[False] | OAuthConfig | None = Field(
        default=None,
        description="remote: OAuth is on unless false (`hookcode mcp auth NAME` logs in); a "
        "table names a pre-registered client.",
        examples=[False],
    )
    max_lines: int | None = Field(
        default=None, gt=0, description="Output budget of this server's tools (lines)."
    )
    max_bytes: int | None = Field(
        default=None, gt=0, description="Output budget of this server's tools (bytes)."
    )

    @model_validator(mode="after")
    def _check(self) -> McpServerConfig:
        kind = self.kind
        if not self.enabled:
            return self
        if kind == "local" and not self.command:
            raise ValueError('a local server needs command = ["program", "arg", ...]')
        if kind == "remote" and not self.url:
            raise ValueError('a remote server needs url = "http://..."')
        if kind is None:
            raise ValueError(
                'set type = "local" with command = [...], or type = "remote" with url = "..."'
            )
        return self

    @property
    def kind(self) -> Literal["local", "remote"] | None:
        if self.type is not None:
            return self.type
        if self.command:
            return "local"
        if self.url:
            return "remote"
        return None
