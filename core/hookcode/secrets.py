"""Secrets: what a runtime knows to be secret, and their redaction.

A runtime knows these secrets (:meth:`Secrets.known`):

* **environment**: the values of the variables that the providers' ``auth`` hooks name
  (``AuthMethod.env``), of those a config key such as ``api_key_env`` names, and of every
  variable named like a secret (:func:`secret_env_name`: ``*API_KEY*``, ``*_KEY``,
  ``*_TOKEN``, ``*SECRET*``, ``*PASSWORD*``, ``*PASSWD*``, ``*PASSPHRASE*``, ``*_PAT``);
* **auth.json**: every value stored by ``hookcode auth login``;
* **mcp-auth.json**: the tokens and client secrets of MCP OAuth logins;
* **config**: every value of a ``headers`` table (provider and MCP headers; for
  ``"Bearer TOKEN"`` the token alone too) but those of headers that never carry a credential
  (:data:`PUBLIC_HEADERS`: ``Content-Type``, ``User-Agent``, ``X-Title``, ...), every value
  under a key named like a secret (:func:`secret_key_name`: ``authorization``, ``api_key``,
  ``token``, ``*_secret``, ``password``, ...) and the secret-named entries of ``env`` and
  ``environment`` tables (MCP server environments);
* **store**: the passwords in the store URL (``HOOKCODE_STORE``, or the ``store`` key).

A value shorter than :data:`MIN_LENGTH` characters is never treated as a secret. How a
secret is replaced (``[redacted: SOURCE]``), in a text and in a stream, is
:mod:`hookcode.redaction`'s (:class:`Redactor`, :class:`StreamRedactor`, re-exported here).

Limits: only these known values are recognised, as written. A secret the runtime does not know
(one read from a file that is not ``auth.json``, a key of another program) is not redacted, and
neither is a transformed one (base64, URL-encoded, split over lines, upper-cased).
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hookcode.redaction import MIN_LENGTH, Redactor, Secret, StreamRedactor

if TYPE_CHECKING:
    from hookcode.protocols import SecretsRuntime

__all__ = [
    "MASK",
    "MIN_LENGTH",
    "PUBLIC_HEADERS",
    "Redactor",
    "Secret",
    "Secrets",
    "StreamRedactor",
    "mask_config",
    "secret_env_name",
    "secret_key_name",
]

#: what ``config show`` prints in place of a secret value
MASK = "****"
#: seconds between two looks at auth.json and mcp-auth.json for changes
RECHECK_SECONDS = 0.5
#: HTTP headers (lower-cased) whose configured values are not secrets: redacting them would
#: replace every ``application/json`` or ``hookcode`` in tool output (``config show`` masks
#: every header value all the same). Any other header's value is a secret.
PUBLIC_HEADERS = frozenset(
    {
        "accept",
        "accept-encoding",
        "accept-language",
        "anthropic-beta",
        "anthropic-version",
        "cache-control",
        "content-type",
        "http-referer",
        "openai-beta",
        "referer",
        "user-agent",
        "x-title",
    }
)

# Environment variable names whose values are secrets (upper-cased name), and the endings of
# names that hold a path, an address or a name instead (GOOGLE_APPLICATION_CREDENTIALS-like
# paths would redact every mention of the file; ``api_key_env`` names a variable).
_ENV_SECRET = re.compile(
    r"API_?KEY|SECRET|PASSWORD|PASSWD|PASSPHRASE|(?:^|_)TOKEN(?:_|$)|(?:^|_)KEYS?$|(?:^|_)PAT$"
)
_ENV_NOT_SECRET = re.compile(
    r"_(?:FILE|PATH|DIR|SOCK|SOCKET|ENV|URL|URI|HOST|PORT|ID|NAME|TYPE|COMMAND|CMD)$"
)
# Config keys (lower-cased, ``-`` as ``_``) whose string values are secrets
_KEY_SECRET = re.compile(
    r"(?:^|_)(?:authorization|cookie|token|bearer|pat|apikey|credentials?)$"
    r"|api_?key$|private_?key$|access_?key$|secret|password|passwd|passphrase"
)
# ``api_key_env = "NAME"``: the key names a variable whose value is a secret
_KEY_NAMES_ENV = re.compile(r"^(.*)_(?:env|env_var|var)$")
# an HTTP authorization value "SCHEME CREDENTIAL": the credential alone is a secret too
_AUTH_SCHEME = re.compile(r"^(?:bearer|basic|token|digest|apikey|key)\s+(\S+)$", re.IGNORECASE)
#: variables that look secret but are not (hookcode's own process tag)
_NOT_SECRET_ENV = frozenset({"HOOKCODE_PROC_TOKEN"})


def secret_env_name(name: str) -> bool:
    """Whether an environment variable's name says its value is a secret."""
    upper = name.upper()
    if upper in _NOT_SECRET_ENV or _ENV_NOT_SECRET.search(upper):
        return False
    return _ENV_SECRET.search(upper) is not None


def secret_key_name(key: str) -> bool:
    """Whether a config key's name says its value is a secret (``Authorization``,
    ``api_key``, ``client_secret``, ``password``; not ``api_key_env``, which names one)."""
    lower = key.lower().replace("-", "_")
    if _KEY_NAMES_ENV.match(lower) or lower.endswith(("_file", "_path", "_url", "_type")):
        return False
    return _KEY_SECRET.search(lower) is not None


# ---------------------------------------------------------------------------------------------
# the secrets of a runtime
# ---------------------------------------------------------------------------------------------


class Secrets:
    """The secrets one runtime knows, and a :class:`Redactor` of them (``runtime.secrets``).

    The environment and the config are read once; ``auth.json`` and ``mcp-auth.json`` are
    looked at again (their size and time, at most every :data:`RECHECK_SECONDS`) so a login or
    a token refresh is redacted from then on; :meth:`invalidate` forgets everything at once."""

    def __init__(self, runtime: SecretsRuntime) -> None:
        self._runtime = runtime
        self._lock = threading.RLock()  # an auth hook may ask for the redactor itself
        self._redactor: Redactor | None = None
        self._extra: dict[tuple[str, ...], tuple[Redactor, Redactor]] = {}
        self._files_key: object = None
        self._next_check = 0.0
        self._static: list[Secret] | None = None
        self._warned: set[str] = set()

    @property
    def files(self) -> tuple[Path, Path]:
        data_dir = Path(self._runtime.data_dir)
        return data_dir / "auth.json", data_dir / "mcp-auth.json"

    def redactor(self, extra_env: Iterable[str] = ()) -> Redactor:
        """The redactor of every known secret (plus the values of the environment variables
        ``extra_env``, e.g. the audit plugin's ``[audit] redact``)."""
        now = time.monotonic()
        redactor = self._redactor
        if not extra_env and redactor is not None and now < self._next_check:
            return redactor  # every tool call asks: the common case first
        if redactor is None or now >= self._next_check:
            with self._lock:
                key = self._files_key_now()
                if self._redactor is None or key != self._files_key:
                    self._redactor = Redactor(self.known())
                    self._files_key = key
                    self._extra.clear()
                self._next_check = now + RECHECK_SECONDS
                redactor = self._redactor
        names = tuple(extra_env)
        if not names:
            return redactor
        cached = self._extra.get(names)
        if cached is None or cached[0] is not redactor:
            env = self._runtime.env
            more = [Secret(env[n].strip(), n) for n in names if env.get(n, "").strip()]
            cached = self._extra[names] = (redactor, redactor.with_secrets(more))
        return cached[1]

    def redact(self, text: str) -> str:
        return self.redactor().redact(text)

    def redact_value(self, value: Any) -> Any:
        return self.redactor().redact_value(value)

    def invalidate(self) -> None:
        """Read every source again on next use (after a change this process made)."""
        with self._lock:
            self._redactor = None
            self._static = None
            self._extra.clear()

    def _files_key_now(self) -> object:
        key = []
        for path in self.files:
            try:
                st = os.stat(path)
            except OSError:
                key.append(None)
            else:
                key.append((st.st_ino, st.st_size, st.st_mtime_ns))
        return tuple(key)

    # -- the sources --------------------------------------------------------------------------
    def known(self) -> list[Secret]:
        """Every known secret (values of :data:`MIN_LENGTH` characters or more)."""
        if self._static is None:
            self._static = [*self._from_config_and_env()]
        found = [*self._static, *self._from_auth_json(), *self._from_mcp_auth()]
        return [s for s in found if len(s.value) >= MIN_LENGTH]

    def _warn(self, line: str) -> None:
        if line not in self._warned:
            self._warned.add(line)
            self._runtime.plugins.warn(line)

    def _from_config_and_env(self) -> Iterator[Secret]:
        runtime = self._runtime
        env: Mapping[str, str] = runtime.env
        names: dict[str, None] = {}
        for _plugin, methods in runtime.plugins.collect("auth", config=runtime.config):
            for method in methods if isinstance(methods, list | tuple) else [methods]:
                for name in getattr(method, "env", None) or []:
                    names[str(name)] = None
        config_secrets = list(_config_secrets(getattr(runtime.config, "raw", {}) or {}, ()))
        for secret in config_secrets:
            if secret.source.startswith("env:"):
                names[secret.value] = None
        names.update(dict.fromkeys(n for n in env if secret_env_name(n)))
        for name in names:
            value = env.get(name, "").strip()
            if value:
                yield Secret(value, name)
        for secret in config_secrets:
            if not secret.source.startswith("env:"):
                yield secret
        yield from _store_secrets(env, runtime.config)

    def _from_auth_json(self) -> Iterator[Secret]:
        from hookcode.errors import HookcodeError

        try:
            data = self._runtime.credentials.stored()
        except HookcodeError as exc:
            self._warn(f"{exc} (its secrets cannot be redacted)")
            return
        for provider, entry in data.items():
            if isinstance(entry, dict):
                for key, value in _strings(entry):
                    if key != "type":
                        yield Secret(value, f"auth.json {provider}")

    def _from_mcp_auth(self) -> Iterator[Secret]:
        path = self.files[1]
        for server, entry in self._read_json(path).items():
            if isinstance(entry, dict):
                for key, value in _strings(entry):
                    if secret_key_name(key):
                        yield Secret(value, f"mcp-auth.json {server}")

    def _read_json(self, path: Path) -> dict[str, Any]:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            self._warn(
                f"{path}: cannot read it to redact its secrets ({type(exc).__name__}); "
                "fix or delete the file"
            )
            return {}
        return data if isinstance(data, dict) else {}


def _store_secrets(env: Mapping[str, str], config: object) -> Iterator[Secret]:
    """The passwords in the store URL (``HOOKCODE_STORE`` or the ``store`` key)."""
    from hookcode.store.urls import store_url, url_passwords

    url = store_url(env, getattr(getattr(config, "core", None), "store", None))
    for password in url_passwords(url) if url else []:
        yield Secret(password, "store URL")


def _strings(value: Any, key: str = "") -> Iterator[tuple[str, str]]:
    """(key, string) for every string in ``value``, with the key it is under."""
    if isinstance(value, str):
        yield key, value
    elif isinstance(value, dict):
        for sub, item in value.items():
            yield from _strings(item, str(sub))
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item, key)


def _config_secrets(value: Any, path: tuple[str, ...]) -> Iterator[Secret]:
    """The secrets in a raw config table. ``Secret`` objects whose source starts with ``env:``
    carry an environment variable's name (``api_key_env = "NAME"``), not a secret."""
    if not isinstance(value, Mapping):
        return
    parent = path[-1].lower() if path else ""
    for raw_key, item in value.items():
        key = str(raw_key)
        where = (*path, key)
        if isinstance(item, Mapping):
            yield from _config_secrets(item, where)
            continue
        if not isinstance(item, str) or not item.strip():
            continue
        text = item.strip()
        source = "config " + ".".join(where)
        header = parent == "headers" and key.lower() not in PUBLIC_HEADERS
        if header or secret_key_name(key):
            yield Secret(text, source)
            scheme = _AUTH_SCHEME.match(text)
            if scheme:
                yield Secret(scheme.group(1), source)
        elif parent in ("env", "environment") and secret_env_name(key):
            yield Secret(text, source)
        elif (named := _KEY_NAMES_ENV.match(key.lower().replace("-", "_"))) and _KEY_SECRET.search(
            named.group(1)
        ):
            yield Secret(text, "env:" + ".".join(where))


# ---------------------------------------------------------------------------------------------
# config show
# ---------------------------------------------------------------------------------------------


def mask_config(data: Any, redact: Callable[[str], str] | None = None) -> Any:
    """``data`` (a config as plain JSON) with secret values replaced by :data:`MASK`: every
    value of a ``headers`` table, every value under a key named like a secret, the
    secret-named entries of ``env`` tables, the password of the ``store`` URL; ``redact`` (a
    :meth:`Redactor.redact`) replaces known secrets found anywhere else."""
    return _mask(data, "", redact)


def _mask(value: Any, key: str, redact: Callable[[str], str] | None, parent: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _mask(v, str(k), redact, key.lower()) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(v, key, redact, parent) for v in value]
    if not isinstance(value, str):
        return value
    if key == "store" and not parent:  # the store URL: its password alone
        from hookcode.store.urls import mask_url

        value = mask_url(value)
    secret = (
        parent == "headers"
        or secret_key_name(key)
        or (parent in ("env", "environment") and secret_env_name(key))
    )
    if secret and value:
        return MASK
    return redact(value) if redact is not None else value
