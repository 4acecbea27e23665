"""Credentials: where a provider's API key comes from.

A key is looked up in the environment variables the provider names (``ANTHROPIC_API_KEY``),
then in ``<data dir>/auth.json`` (written by ``hookcode auth login``, mode 0600). Secrets never
appear in logs, events, the session store or error messages: :mod:`hookcode.secrets` knows
every one of them and redacts them; :func:`redact` scrubs text of the secrets it is given.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from hookcode.errors import HookcodeError

__all__ = ["Credential", "Credentials", "redact", "redactor"]


@dataclass(frozen=True)
class Credential:
    """A secret and where it came from (``env:NAME`` or ``stored``); ``repr`` hides it."""

    value: str
    source: str

    def __repr__(self) -> str:
        return f"Credential(source={self.source!r}, value=<redacted>)"

    __str__ = __repr__


class Credentials:
    """Looks up and stores provider credentials."""

    def __init__(
        self, path: Path, env: Mapping[str, str], on_change: Callable[[], object] | None = None
    ) -> None:
        self.path = path
        self.env = env
        self._on_change = on_change

    # -- reading ------------------------------------------------------------------------------
    def stored(self) -> dict[str, dict[str, str]]:
        """Everything in auth.json: ``{provider: {"type": "api", "key": ...}}``."""
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise HookcodeError(
                f"{self.path}: cannot read stored credentials ({type(exc).__name__}); "
                "fix or delete the file, then run `hookcode auth login PROVIDER`"
            ) from None
        if not isinstance(data, dict):
            raise HookcodeError(f"{self.path}: expected a JSON object of providers")
        return {k: v for k, v in data.items() if isinstance(v, dict)}

    def lookup(self, provider: str, env_vars: Sequence[str] = ()) -> Credential | None:
        """The credential for ``provider``: the first set environment variable of ``env_vars``,
        else the stored key, else None."""
        for name in env_vars:
            value = self.env.get(name, "").strip()
            if value:
                return Credential(value, f"env:{name}")
        entry = self.stored().get(provider)
        if entry and entry.get("key"):
            return Credential(str(entry["key"]), "stored")
        return None

    def get(self, provider: str, env_vars: Sequence[str] = ()) -> str | None:
        """Just the secret of :meth:`lookup`."""
        found = self.lookup(provider, env_vars)
        return found.value if found else None

    # -- writing ------------------------------------------------------------------------------
    def _update(self, change: Callable[[dict[str, dict[str, str]]], bool]) -> bool:
        """Change auth.json under its lock (:func:`hookcode.sharedfile.update`: a login racing
        another process loses no entry; the file stays 0600)."""
        from hookcode.sharedfile import update

        changed = update(self.path, self.stored, change, _dump)
        if changed and self._on_change is not None:
            self._on_change()  # e.g. the runtime's secrets: the new key is redacted at once
        return changed

    def set(self, provider: str, key: str) -> None:
        """Store an API key for ``provider`` (auth.json stays mode 0600)."""
        key = key.strip()
        if not key:
            raise HookcodeError(f"no key given for provider '{provider}'")

        def put(data: dict[str, dict[str, str]]) -> bool:
            data[provider] = {"type": "api", "key": key}
            return True

        self._update(put)

    def remove(self, provider: str) -> bool:
        """Forget ``provider``'s stored key; False when there was none."""
        return self._update(lambda data: data.pop(provider, None) is not None)


def _dump(data: dict[str, dict[str, str]]) -> bytes:
    return json.dumps(data, indent=2).encode()


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret (of 8+ characters) replaced by ``[redacted]``."""
    return redactor(secrets)(text)


def redactor(secrets: Iterable[str]) -> Callable[[str], str]:
    """:func:`redact` with ``secrets`` prepared once, for redacting many strings (a
    :class:`hookcode.redaction.Redactor` of anonymous secrets)."""
    from hookcode.redaction import Redactor

    return Redactor(secrets).redact
