"""provider_anthropic: Claude models (``anthropic/<model>``) through the official ``anthropic`` SDK.

* **Model ids** ``anthropic/claude-sonnet-5-5`` etc. Any id is passed to the API; known ones
  have limits and prices (:mod:`hookcode_provider_anthropic.models`). With no model configured
  anywhere (``--model``, the agent, ``model = ...``) and an Anthropic credential available,
  :data:`DEFAULT_MODEL_ID` (``anthropic/claude-sonnet-5-5``) is used.
* **Credentials** ``ANTHROPIC_API_KEY`` (or the variable named by ``api_key_env``), else the key
  stored by ``hookcode auth login anthropic``, else a bearer token in ``ANTHROPIC_AUTH_TOKEN``.
  Keys are looked up per request and never appear in errors.
* **Endpoint** ``[provider.anthropic] base_url``, else ``ANTHROPIC_BASE_URL`` (the runtime's
  environment), else the public API; a trailing ``/v1`` is dropped (the SDK adds it).
* **Config** ``[provider.anthropic]``: ``base_url``, ``api_key_env``, ``max_retries`` (how
  many times the agent loop retries 429, 529, 5xx and connection errors; the SDK's own retries
  are off; default: the loop's 4), ``timeout``, ``cache`` (prompt caching, default on),
  ``headers``, ``models``.
* **Request options** (agent ``options`` / ``chat_params`` ``params["options"]``): ``thinking``
  (a budget in tokens, ``true``, ``"adaptive"``, or the API's own table), ``effort``,
  ``top_k``, ``stop_sequences``, ``cache``; see :mod:`hookcode_provider_anthropic.convert`.

Only the standard library and hookcode are imported here; the SDK is imported the first time a
model of this provider streams a reply.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hookcode import hookimpl

if TYPE_CHECKING:
    from hookcode.providers import AuthMethod
    from hookcode.runtime import Runtime

__all__ = ["DEFAULT_MODEL_ID", "auth", "config", "config_schema", "provider"]

#: the model used when neither ``--model``, the agent nor ``model = ...`` in the config names one
#: (defined here, not in ``models``, so that start-up does not import the model table)
DEFAULT_MODEL = "claude-sonnet-5-5"
DEFAULT_MODEL_ID = f"anthropic/{DEFAULT_MODEL}"


@hookimpl
def config_schema() -> dict[str, Any]:
    from hookcode_provider_anthropic._config import AnthropicConfig

    return {"provider.anthropic": AnthropicConfig}


@hookimpl
def config(config: Any, runtime: Runtime) -> None:
    """With no model configured at all and an Anthropic credential at hand, default to
    :data:`DEFAULT_MODEL_ID` (without one, core's "no model configured" error says what to do)."""
    core = getattr(config, "core", None)
    if core is None or getattr(core, "model", "") is not None:
        return
    section = config.section("provider.anthropic") if hasattr(config, "section") else None
    key_env = getattr(section, "api_key_env", None) or "ANTHROPIC_API_KEY"
    from hookcode.auth import Credentials

    try:  # (the runtime's own `credentials` is not set up yet while its config loads)
        store = Credentials(runtime.data_dir / "auth.json", runtime.env)
        found = store.lookup("anthropic", [key_env, "ANTHROPIC_AUTH_TOKEN"])
    except Exception:  # an unreadable auth.json: no default, the run will say what is wrong
        return
    if found is not None:
        core.model = DEFAULT_MODEL_ID


@hookimpl
def provider(config: Any, credentials: Any) -> list[Any]:
    from hookcode_provider_anthropic._provider import AnthropicProvider

    section = None
    if config is not None and hasattr(config, "section"):
        section = config.section("provider.anthropic")
    return [AnthropicProvider(section, credentials)]


@hookimpl
def auth() -> list[AuthMethod]:
    from hookcode.providers import AuthMethod

    return [
        AuthMethod(
            provider="anthropic", type="api", label="Anthropic API key", env=["ANTHROPIC_API_KEY"]
        )
    ]
