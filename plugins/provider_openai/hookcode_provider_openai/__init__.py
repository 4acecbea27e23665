"""provider_openai: OpenAI and OpenAI-compatible servers through Chat Completions.

Providers:

* ``openai`` (built in): ``https://api.openai.com/v1``, or ``OPENAI_BASE_URL``; the key from
  ``OPENAI_API_KEY`` or ``hookcode auth login openai``. ``[provider.openai]`` adjusts it.
* every ``[provider.NAME]`` table with ``type = "openai"`` (the default type), e.g.::

      [provider.local]
      type = "openai"
      base_url = "http://127.0.0.1:11434/v1"   # Ollama; vLLM, LM Studio, OpenRouter alike
      models = ["qwen2.5-coder:7b"]
      # api_key_env = "OPENROUTER_API_KEY"     # unset and no stored key: no Authorization
      # headers = { "X-Title" = "hookcode" }
      # prices."qwen2.5-coder:7b" = { input = 0.0, output = 0.0 }

Model ids are ``NAME/MODEL`` (``local/qwen2.5-coder:7b``, ``openai/gpt-4.1``).

The plugin claims ``provider.*`` in the config; a plugin that claims a provider by name
(``provider.anthropic``) keeps that table. Importing this module imports neither httpx nor
pydantic: the config model is built when the config is validated, httpx is imported when a
request is made.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hookcode import hookimpl

if TYPE_CHECKING:
    from hookcode.providers import AuthMethod

__all__ = ["DEFAULT_BASE_URL", "configured_providers"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
OPENAI_ID = "openai"
OPENAI_KEY_ENV = "OPENAI_API_KEY"
OPENAI_BASE_URL_ENV = "OPENAI_BASE_URL"
#: provider ids that mean another plugin's provider unless the table says ``type = "openai"``
OTHER_PLUGINS_IDS = frozenset({"anthropic"})


def _sections(config: Any) -> list[tuple[str, Any]]:
    """``(id, section)`` of every ``[provider.NAME]`` table this plugin serves, in file order."""
    if config is None:
        return []
    from hookcode_provider_openai.settings import OpenAIProviderConfig

    raw = getattr(config, "raw", {}) or {}
    tables = raw.get("provider")
    if not isinstance(tables, Mapping):
        return []
    out = []
    for name in tables:
        section = config.section(f"provider.{name}")
        if not isinstance(section, OpenAIProviderConfig) or section.type != "openai":
            continue  # another plugin's table (claimed by name, or of another type)
        if name in OTHER_PLUGINS_IDS and not section.explicit_type:
            continue
        out.append((str(name), section))
    return out


def configured_providers(config: Any, env: Mapping[str, str] | None = None) -> list[Any]:
    """The :class:`~hookcode_provider_openai.client.ProviderSettings` of every provider:
    the built-in ``openai`` first, then the configured ones."""
    from hookcode_provider_openai.client import ProviderSettings
    from hookcode_provider_openai.wire import Prices

    env = os.environ if env is None else env
    sections = dict(_sections(config))
    tables = (getattr(config, "raw", {}) or {}).get("provider", {}) or {}
    out: list[ProviderSettings] = []

    def settings(name: str, section: Any, base_url: str | None, key_env: str | None) -> Any:
        if section is None:
            return ProviderSettings(id=name, name=name, base_url=base_url, api_key_env=key_env)
        return ProviderSettings(
            id=name,
            name=section.name or name,
            base_url=section.base_url or base_url,
            api_key_env=section.api_key_env or key_env,
            models=list(section.models),
            headers=dict(section.headers),
            prices={
                model: Prices(p.input, p.output, p.cached_input)
                for model, p in section.prices.items()
            },
            max_retries=section.max_retries,
            timeout=section.timeout,
        )

    # the built-in provider, unless [provider.openai] belongs to another type
    if OPENAI_ID in sections or OPENAI_ID not in tables:
        base = (env.get(OPENAI_BASE_URL_ENV) or "").strip() or DEFAULT_BASE_URL
        openai = settings(OPENAI_ID, sections.get(OPENAI_ID), base, OPENAI_KEY_ENV)
        if sections.get(OPENAI_ID) is None or not sections[OPENAI_ID].name:
            openai.name = "OpenAI"
        out.append(openai)
    for name, section in sections.items():
        if name != OPENAI_ID:
            out.append(settings(name, section, None, None))
    return out


# ----------------------------------------------------------------------------- hooks


@hookimpl
def config_schema() -> dict[str, Any]:
    from hookcode_provider_openai.settings import OpenAIProviderConfig

    return {"provider.*": OpenAIProviderConfig}


@hookimpl
def provider(config: Any, credentials: Any) -> list[Any]:
    from hookcode_provider_openai.client import OpenAIProvider

    env = getattr(credentials, "env", None)
    return [OpenAIProvider(s, credentials) for s in configured_providers(config, env)]


@hookimpl
def auth(config: Any) -> list[AuthMethod]:
    from hookcode.providers import AuthMethod

    methods = [
        AuthMethod(OPENAI_ID, "env", f"{OPENAI_KEY_ENV} environment variable", [OPENAI_KEY_ENV]),
        AuthMethod(OPENAI_ID, "api", "API key (hookcode auth login openai)"),
    ]
    for name, section in _sections(config):
        key_env = section.api_key_env
        if name == OPENAI_ID:
            if key_env and key_env != OPENAI_KEY_ENV:
                methods[0] = AuthMethod(name, "env", f"{key_env} environment variable", [key_env])
            continue
        if key_env:
            methods.append(AuthMethod(name, "env", f"{key_env} environment variable", [key_env]))
        methods.append(AuthMethod(name, "api", f"API key (hookcode auth login {name})"))
    return methods
