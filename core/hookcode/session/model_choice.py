"""Which model a session talks to: the provider and model name behind ``provider/model``
(``--model``, the agent's, the session's or the configured default), and what the provider says
about it (:class:`~hookcode.providers.ModelInfo`: context window, prices)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookcode.agents import AgentSpec
from hookcode.errors import HookcodeError
from hookcode.providers import split_model_id

if TYPE_CHECKING:
    from hookcode.providers import ModelInfo, Provider
    from hookcode.session.host import SessionHost
    from hookcode.store import SessionRecord

__all__ = ["NO_MODEL_HINT", "model_info", "resolve_model"]

NO_MODEL_HINT = (
    "pass --model scripted/demo for the offline demo model, or install a provider plugin "
    "(hookcode-provider-anthropic) and set ANTHROPIC_API_KEY, or set "
    '`model = "provider/model"` in hookcode.toml'
)


def resolve_model(
    runtime: SessionHost,
    model: str | None,
    spec: AgentSpec,
    session: SessionRecord | None = None,
) -> tuple[Provider, str, str]:
    """(provider, model name, full id): ``model`` (``--model``), else the agent's, else the
    session's (when continuing one), else the configured default; a clear error otherwise.
    The provider's ``preload()``, if it has one, starts importing its SDK meanwhile."""
    model_id = (
        model or spec.model or (session.model if session else None) or runtime.config.core.model
    )
    if not model_id:
        raise HookcodeError(f"no model configured: {NO_MODEL_HINT}")
    try:
        provider_id, name = split_model_id(model_id)
    except ValueError as exc:
        raise HookcodeError(str(exc)) from None
    available = runtime.providers()
    provider = available.get(provider_id)
    if provider is None:
        names = ", ".join(sorted(available)) or "none installed"
        hint = "" if model else f"; {NO_MODEL_HINT}"
        raise HookcodeError(
            f"unknown model provider '{provider_id}' in '{model_id}'; available providers: "
            f"{names}{hint}"
        )
    preload = getattr(provider, "preload", None)
    if callable(preload):
        preload()
    return provider, name, model_id


def model_info(provider: Provider, name: str) -> ModelInfo | None:
    try:
        for info in provider.models():
            if info.id == name:
                return info
    except Exception:
        return None
    return None
