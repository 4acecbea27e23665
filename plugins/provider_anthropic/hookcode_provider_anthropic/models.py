"""The Anthropic models hookcode knows: context and output limits, and prices (USD per million
tokens) used to compute the cost of a reply.

Standard library only. A model id that is not in the table still works (any id is sent to the
API as is); it just has no known price (cost 0) and a conservative output limit. A dated id
(``claude-sonnet-4-5-20250929``) or a ``-latest`` alias is priced by its base id. Prices of
models not in the table, or newer prices, can be given in ``[provider.anthropic.models]``.
"""

from __future__ import annotations

from dataclasses import dataclass

from hookcode.providers import ModelInfo

from hookcode_provider_anthropic import DEFAULT_MODEL

__all__ = ["DEFAULT_MODEL", "FALLBACK_OUTPUT", "MODELS", "AnthropicModel", "lookup_model"]

#: ``max_tokens`` sent for a model whose output limit is unknown
FALLBACK_OUTPUT = 8192
#: ``max_tokens`` sent by default is the model's output limit, capped at this
DEFAULT_MAX_TOKENS_CAP = 32_000


@dataclass
class AnthropicModel(ModelInfo):
    """:class:`~hookcode.providers.ModelInfo` plus the prompt-cache prices.

    Unset cache prices follow Anthropic's usual ratios: a read costs 0.1x the input price,
    a (5-minute) write 1.25x.
    """

    cost_cache_read: float | None = None
    cost_cache_write: float | None = None
    #: ``extended``: thinking takes a token budget and sampling parameters are accepted;
    #: ``adaptive`` (the 5.x models): thinking is adaptive (a budget, ``disabled``,
    #: ``temperature``, ``top_p`` and ``top_k`` are rejected with a 400)
    thinking: str = "extended"

    @property
    def cache_read_price(self) -> float:
        return self.cost_in * 0.1 if self.cost_cache_read is None else self.cost_cache_read

    @property
    def cache_write_price(self) -> float:
        return self.cost_in * 1.25 if self.cost_cache_write is None else self.cost_cache_write

    def cost(self, input: int, output: int, cache_read: int, cache_write: int) -> float:
        """USD for one reply (``input`` excludes cache reads and writes, as Anthropic counts)."""
        return (
            input * self.cost_in
            + output * self.cost_out
            + cache_read * self.cache_read_price
            + cache_write * self.cache_write_price
        ) / 1_000_000


def _m(
    id: str,
    name: str,
    context: int,
    output: int,
    cost_in: float,
    cost_out: float,
    cache_read: float | None = None,
    cache_write: float | None = None,
    thinking: str = "extended",
) -> AnthropicModel:
    return AnthropicModel(
        id=id,
        name=name,
        context=context,
        output=output,
        cost_in=cost_in,
        cost_out=cost_out,
        cost_cache_read=cache_read,
        cost_cache_write=cache_write,
        thinking=thinking,
    )


_K = 1000
_A = "adaptive"
_M = 1_000_000

#: id -> model (newest first). Prices are the standard tier's (USD / million tokens); the
#: 4.x and 3.x models are kept for existing configs (several are deprecated by Anthropic).
MODELS: dict[str, AnthropicModel] = {
    m.id: m
    for m in (
        _m("claude-fable-5-1", "Claude Fable 5.1", _M, 128 * _K, 10, 50, thinking=_A),
        _m("claude-opus-5-5", "Claude Opus 5.5", _M, 128 * _K, 4, 20, 0.20, 5, _A),
        _m("claude-sonnet-5-5", "Claude Sonnet 5.5", _M, 128 * _K, 2, 10, 0.10, 2.5, _A),
        # Haiku 5.5: the price of prompts up to 100K tokens (longer ones cost 5x)
        _m("claude-haiku-5-5", "Claude Haiku 5.5", _M, 128 * _K, 0.10, 0.50, 0.01, 0.125, _A),
        _m("claude-opus-5", "Claude Opus 5", _M, 128 * _K, 5, 25, 0.50, 6.25, _A),
        _m("claude-sonnet-5", "Claude Sonnet 5", _M, 128 * _K, 2, 10, 0.20, 2.5, _A),
        _m("claude-opus-4-6", "Claude Opus 4.6", _M, 128 * _K, 5, 25),
        _m("claude-sonnet-4-6", "Claude Sonnet 4.6", _M, 128 * _K, 3, 15),
        _m("claude-opus-4-5", "Claude Opus 4.5", 200 * _K, 64 * _K, 5, 25),
        _m("claude-sonnet-4-5", "Claude Sonnet 4.5", 200 * _K, 64 * _K, 3, 15),
        _m("claude-haiku-4-5", "Claude Haiku 4.5", 200 * _K, 64 * _K, 1, 5),
        _m("claude-opus-4-1", "Claude Opus 4.1", 200 * _K, 32 * _K, 15, 75),
        _m("claude-opus-4-0", "Claude Opus 4", 200 * _K, 32 * _K, 15, 75),
        _m("claude-sonnet-4-0", "Claude Sonnet 4", 200 * _K, 64 * _K, 3, 15),
        _m("claude-3-7-sonnet", "Claude Sonnet 3.7", 200 * _K, 64 * _K, 3, 15),
        _m("claude-3-5-haiku", "Claude Haiku 3.5", 200 * _K, 8192, 0.80, 4),
    )
}

#: other spellings of the same models
_ALIASES = {"claude-opus-4": "claude-opus-4-0", "claude-sonnet-4": "claude-sonnet-4-0"}


def _base_id(model: str) -> str:
    """``claude-sonnet-4-5-20250929`` -> ``claude-sonnet-4-5``; ``...-latest`` likewise."""
    parts = model.split("-")
    if parts and (parts[-1] == "latest" or (len(parts[-1]) == 8 and parts[-1].isdigit())):
        parts = parts[:-1]
    base = "-".join(parts)
    return _ALIASES.get(base, base)


def lookup_model(model: str, table: dict[str, AnthropicModel] | None = None) -> AnthropicModel:
    """The model's entry (exact id, then its base id), or a priceless entry for an unknown id."""
    table = MODELS if table is None else table
    found = table.get(model) or table.get(_base_id(model))
    if found is not None:
        return found
    return AnthropicModel(id=model, name=model)
