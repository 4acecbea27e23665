"""The ``[provider.NAME]`` config section (imported only when the config is validated).

Every ``[provider.NAME]`` table that no other plugin claims by name is validated here. A
table with ``type = "openai"`` (the default) is an OpenAI-compatible provider and its keys
are checked strictly; a table with another ``type`` belongs to some other plugin and is
left alone.
"""

from __future__ import annotations

import difflib

from hookcode.tools import MAX_TIMEOUT_SECONDS
from hookcode.trust import trusted_only
from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

__all__ = ["OpenAIProviderConfig", "Price"]


class Price(BaseModel):
    """``[provider.NAME.prices."MODEL"]``: USD per million tokens."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    input: float = Field(
        default=0.0,
        ge=0,
        examples=[2.5],
        description="USD per million input (prompt) tokens that were not read from the cache.",
    )
    output: float = Field(
        default=0.0,
        ge=0,
        examples=[10.0],
        description="USD per million output (completion) tokens.",
    )
    cached_input: float | None = Field(
        default=None,
        ge=0,
        examples=[1.25],
        description="USD per million cached prompt tokens (default: the input price).",
    )


class OpenAIProviderConfig(BaseModel):
    """``[provider.NAME]``: an OpenAI-compatible Chat Completions provider (``type = "openai"``),
    e.g. Ollama, vLLM, LM Studio, OpenRouter; ``[provider.openai]`` adjusts the built-in one."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    type: str = Field(
        default="openai",
        examples=["openai"],
        description="The wire protocol: ``openai`` (Chat Completions). Tables of another type belong to other plugins and are ignored here.",
    )
    name: str | None = Field(
        default=None,
        examples=["Local Ollama"],
        description="Display name (default: the table's name).",
    )
    base_url: str | None = Field(
        default=None,
        examples=["http://127.0.0.1:11434/v1"],
        description="The API root, including ``/v1``; requests go to ``{base_url}/chat/completions``.",
        json_schema_extra=trusted_only(),
    )
    api_key_env: str | None = Field(
        default=None,
        examples=["OPENROUTER_API_KEY"],
        description="Environment variable holding the API key. With neither it nor a key stored by ``hookcode auth login NAME``, no Authorization header is sent (local servers).",
        json_schema_extra=trusted_only(),
    )
    models: list[str] = Field(
        default=[],
        examples=[["qwen2.5-coder:7b", "llama3.1:8b"]],
        description="The model ids this provider offers (used as ``NAME/MODEL``).",
    )
    headers: dict[str, str] = Field(
        default={},
        examples=[{"X-Title": "hookcode"}],
        description="Extra HTTP headers sent with every request.",
        json_schema_extra=trusted_only(),
    )
    prices: dict[str, Price] = Field(
        default={},
        examples=[{"gpt-4o": {"input": 2.5, "output": 10.0, "cached_input": 1.25}}],
        description="Prices per model id (USD per million tokens), for the session's cost.",
    )
    max_retries: int | None = Field(
        default=None,
        examples=[2],
        ge=0,
        le=10,
        description="How many times the agent loop retries a request answered 408/409/429/5xx or failing to connect, waiting what the server asks or backing off. Default: the loop's, 4.",
    )
    timeout: float = Field(
        default=600.0,
        gt=0,
        le=MAX_TIMEOUT_SECONDS,
        description="Seconds to wait for the server (connect: at most 10).",
    )

    @model_validator(mode="after")
    def _no_unknown_keys(self) -> OpenAIProviderConfig:
        extra = self.model_extra or {}
        if self.type == "openai" and extra:
            key = next(iter(extra))
            close = difflib.get_close_matches(key, list(type(self).model_fields), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise PydanticCustomError(
                "extra_forbidden", "unknown key {key}{hint}", {"key": repr(key), "hint": hint}
            )
        return self

    @property
    def explicit_type(self) -> bool:
        return "type" in self.model_fields_set
