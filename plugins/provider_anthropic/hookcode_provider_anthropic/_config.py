"""``[provider.anthropic]``: the pydantic model of the section (imported only when the config is
loaded, through the ``config_schema`` hook)."""

from __future__ import annotations

from typing import Literal

from hookcode.tools import MAX_TIMEOUT_SECONDS
from hookcode.trust import trusted_only
from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["AnthropicConfig", "ModelEntry"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class ModelEntry(_Strict):
    """``[provider.anthropic.models.ID]``: a model to offer, or new limits/prices for a known one."""

    name: str | None = Field(default=None, description="A display name.")
    context: int | None = Field(
        default=None, gt=0, examples=[200000], description="Context window in tokens."
    )
    output: int | None = Field(
        default=None,
        gt=0,
        examples=[64000],
        description="Output limit in tokens (the default ``max_tokens`` is this, capped at 32000).",
    )
    cost_in: float | None = Field(
        default=None, ge=0, examples=[3.0], description="USD per million input tokens."
    )
    cost_out: float | None = Field(
        default=None, ge=0, examples=[15.0], description="USD per million output tokens."
    )
    cost_cache_read: float | None = Field(
        default=None,
        ge=0,
        examples=[0.3],
        description="USD per million tokens read from the prompt cache (default 0.1x ``cost_in``).",
    )
    cost_cache_write: float | None = Field(
        default=None,
        ge=0,
        examples=[3.75],
        description="USD per million tokens written to the prompt cache (default 1.25x ``cost_in``).",
    )
    thinking: Literal["extended", "adaptive"] | None = Field(
        default=None,
        description="``extended``: thinking takes a budget, sampling parameters are sent; ``adaptive`` (the 5.x models): budgets and sampling parameters are left out (the API rejects them).",
    )


class AnthropicConfig(_Strict):
    """``[provider.anthropic]``: the Anthropic provider (official ``anthropic`` SDK)."""

    base_url: str | None = Field(
        default=None,
        examples=["https://proxy.example.com/anthropic"],
        description="API base URL, without ``/v1`` (the SDK appends ``/v1/messages``). Default: ``ANTHROPIC_BASE_URL``, else the public API.",
        json_schema_extra=trusted_only(),
    )
    api_key_env: str = Field(
        default="ANTHROPIC_API_KEY",
        examples=["MY_ANTHROPIC_KEY"],
        description="The environment variable holding the API key (``hookcode auth login anthropic`` is consulted when it is unset).",
        json_schema_extra=trusted_only(),
    )
    max_retries: int | None = Field(
        default=None,
        examples=[2],
        ge=0,
        le=20,
        description="How many times the agent loop retries a failed request (429, 529, 5xx, connection errors), waiting what the server asks or backing off. Default: the loop's, 4.",
    )
    timeout: float | None = Field(
        default=None,
        gt=0,
        le=MAX_TIMEOUT_SECONDS,
        examples=[600],
        description="Request timeout in seconds (default: the SDK's, 600).",
    )
    cache: bool = Field(
        default=True,
        description="Prompt caching: ``cache_control`` breakpoints on the system prompt, the tools and the last two messages.",
    )
    headers: dict[str, str] = Field(
        default={},
        examples=[{"anthropic-beta": "some-beta"}],
        description="Extra HTTP headers sent with every request.",
        json_schema_extra=trusted_only(),
    )
    models: list[str] | dict[str, ModelEntry] = Field(
        default=[],
        examples=[["claude-opus-4-8"], {"my-model": {"cost_in": 3, "cost_out": 15}}],
        description="Models to offer besides the built-in table: a list of ids, or a table of id -> limits and prices (which also overrides a built-in entry).",
    )

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("base_url must start with http:// or https://")
        return value
