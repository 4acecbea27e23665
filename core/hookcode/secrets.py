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
  ``environment`` tables (MCP server environments).

A value shorter than :data:`MIN_LENGTH` characters is never treated as a secret: replacing
every ``1234`` or ``true`` would shred ordinary output. A secret is replaced by
``[redacted: SOURCE]`` (``[redacted: ANTHROPIC_API_KEY]``, ``[redacted: auth.json anthropic]``):
the marker names where the secret comes from, never the value.

:class:`Redactor` is an immutable set of secrets, prepared once: the common case (no secret in
the text) costs one ``str.find`` of a single, rarely used character per secret (memchr speed),
so it can sit on every tool call and every byte of a streamed output. :class:`StreamRedactor`
does the same for text that arrives in chunks, holding back only the few characters at the end
of a chunk that could begin a secret.

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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

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

#: values shorter than this are never treated as secrets
MIN_LENGTH = 8
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
#: characters a marker's source keeps (others, such as quotes from a config key, become "?")
_UNSAFE_IN_MARKER = re.compile(r"[^\w.:/@+ -]")
#: variables that look secret but are not (hookcode's own process tag)
_NOT_SECRET_ENV = frozenset({"HOOKCODE_PROC_TOKEN"})

# Characters from the most to the least frequent in typical tool output (text, code, logs).
# A secret is looked for through its least frequent character: a memchr-speed ``str.find``
# that, in the common case, finds nothing. Characters not listed are the rarest of all.
_FREQUENT = (
    " e\ntaoinsrlhdcu.mpf_g/-=y,bw\"'():0v1k2x>3<59;]4[86E7STARI{}ONLCDPMj#zFq*UBHGW\t"
    "+!?&|@$%^~`\\KVYXJQZ"
)
_RANK = {char: rank for rank, char in enumerate(_FREQUENT)}


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


@dataclass(frozen=True)
class Secret:
    """A secret value and where it comes from; ``repr`` hides the value."""

    value: str
    source: str

    def __repr__(self) -> str:
        return f"Secret(source={self.source!r}, value=<hidden>)"

    __str__ = __repr__


#: characters at least this rare (the upper-case letters K V Y X J Q Z, and every character
#: not in :data:`_FREQUENT`) are equally good anchors: secrets share one where they can
_RARE = _RANK["K"]


def _anchors(values: list[str]) -> list[tuple[str, int]]:
    """For each secret, the character it is looked for through, and that character's first
    index in it: its least frequent character, or among the rare ones the one most secrets
    share (one ``str.find`` then serves them all)."""
    unlisted = len(_FREQUENT)
    shared: dict[str, int] = {}
    for value in values:
        for char in set(value):
            if _RANK.get(char, unlisted) >= _RARE:
                shared[char] = shared.get(char, 0) + 1
    out = []
    for value in values:
        rare = [c for c in set(value) if c in shared]
        if rare:
            best = max(rare, key=lambda c: (shared[c], _RANK.get(c, unlisted), c))
        else:
            best = max(value, key=lambda c: _RANK.get(c, unlisted))
        out.append((best, value.index(best)))
    return out


def _probes(values: list[str]) -> list[tuple[str, list[tuple[str, int]]]]:
    """The secrets grouped by anchor: ``[(anchor, [(secret, anchor index), ...]), ...]``."""
    groups: dict[str, list[tuple[str, int]]] = {}
    for value, (anchor, offset) in zip(values, _anchors(values), strict=True):
        groups.setdefault(anchor, []).append((value, offset))
    return list(groups.items())


#: the types of values that hold no text (most of a tool call's arguments and metadata)
_SCALARS = frozenset({int, float, bool, type(None)})

#: after this many anchor hits that were not the secret, a text is searched for the secret
#: itself (a text full of the anchor character would otherwise cost a Python loop per hit)
_HITS = 8


class Redactor:
    """Replaces a fixed set of secrets in text; build once, use for many texts.

    ``secrets``: :class:`Secret` objects, or plain strings (then the marker is ``[redacted]``).
    Values shorter than :data:`MIN_LENGTH` are dropped; a value known from several sources is
    named after the first. Longer secrets are replaced first, so one that contains another
    goes whole."""

    __slots__ = ("_probes", "_starts", "longest", "markers", "shortest")

    def __init__(self, secrets: Iterable[Secret | str] = ()) -> None:
        markers: dict[str, str] = {}
        for secret in secrets:
            if isinstance(secret, Secret):
                # the marker may land inside JSON or a shell line: plain characters only
                source = _UNSAFE_IN_MARKER.sub("?", secret.source)
                value, marker = secret.value, f"[redacted: {source}]"
            else:
                value, marker = str(secret), "[redacted]"
            if len(value) >= MIN_LENGTH and value not in markers:
                markers[value] = marker
        ordered = sorted(markers, key=len, reverse=True)
        #: secret value -> its marker, longest first
        self.markers: dict[str, str] = {value: markers[value] for value in ordered}
        self._probes = _probes(ordered)
        self._starts = [(value, value[0]) for value in ordered]
        #: the length of the longest secret (0 when there is none)
        self.longest = len(ordered[0]) if ordered else 0
        #: the length of the shortest one: a shorter text holds none (the common case of a
        #: tool call's small values costs a length check)
        self.shortest = len(ordered[-1]) if ordered else 0

    def __bool__(self) -> bool:
        return bool(self.markers)

    def __len__(self) -> int:
        return len(self.markers)

    def __repr__(self) -> str:
        return f"Redactor({len(self.markers)} secrets)"

    def found(self, text: str) -> list[str]:
        """The secrets that occur in ``text``, longest first."""
        out = []
        for anchor, group in self._probes:
            first = text.find(anchor)
            if first < 0:
                continue  # the common case: one memchr for every secret of the group
            for value, offset in group:
                index, hits = first, 0
                while index >= 0:
                    start = index - offset
                    if start >= 0 and text.startswith(value, start):
                        out.append(value)
                        break
                    hits += 1
                    if hits >= _HITS:  # the anchor is common in this text: search for the secret
                        if text.find(value, max(0, start)) >= 0:
                            out.append(value)
                        break
                    index = text.find(anchor, index + 1)
        if len(out) > 1:
            out.sort(key=len, reverse=True)
        return out

    def redact(self, text: str) -> str:
        """``text`` with every known secret replaced by its marker (the same object when
        there is none)."""
        if len(text) < self.shortest or not self._probes:
            return text
        for value in self.found(text):
            text = text.replace(value, self.markers[value])
        return text

    def redact_value(self, value: Any) -> Any:
        """``value`` with every string in it redacted, through dicts (keys too), lists and
        tuples; the same object when nothing changed (so it is cheap on clean values)."""
        if not self._probes:
            return value
        return self._walk(value)

    def _walk(self, value: Any) -> Any:
        kind = type(value)
        if kind is str:
            return value if len(value) < self.shortest else self.redact(value)
        if kind in _SCALARS:
            return value
        if kind is dict or isinstance(value, dict):
            # one look first (most values are clean: nothing is built), then the copy
            for key, item in value.items():
                if self._dirty(key) or self._dirty(item):
                    break
            else:
                return value
            return {self._walk(key): self._walk(item) for key, item in value.items()}
        if kind is list or kind is tuple or isinstance(value, list | tuple):
            for item in value:
                if self._dirty(item):
                    break
            else:
                return value
            items = [self._walk(item) for item in value]
            return items if isinstance(value, list) else tuple(items)
        if isinstance(value, str):  # a str subclass
            return value if len(value) < self.shortest else self.redact(value)
        return value

    def _dirty(self, value: Any) -> bool:
        """Whether :meth:`_walk` would change ``value`` (short texts and numbers are decided
        here, without a call)."""
        kind = type(value)
        if kind is str:
            return len(value) >= self.shortest and self.redact(value) is not value
        if kind in _SCALARS:
            return False
        return self._walk(value) is not value

    def settled(self, text: str) -> str:
        """The part of a text that is still growing (a model's reply as it streams) that may
        be stored now: redacted, without an end that could be the start of a secret."""
        return self.redact(text[: self._hold(text)])

    def _hold(self, text: str) -> int:
        """Where to cut ``text`` so that what comes before may go out now: before the end
        that could begin a secret (a suffix that is a prefix of one), and never inside a
        whole secret (``len(text)``: all of it may go)."""
        hold = len(text)
        for value, first in self._starts:
            index = text.find(first, max(0, len(text) - len(value) + 1))
            while 0 <= index < hold:
                if value.startswith(text[index:]):
                    hold = index
                    break
                index = text.find(first, index + 1)
        moved = hold < len(text)
        while moved:  # a whole secret across the cut (one contains the start of another)
            moved = False
            for value in self.markers:
                size = len(value)
                index = text.find(value, max(0, hold - size + 1), hold + size - 1)
                if 0 <= index < hold:
                    hold, moved = index, True
        return hold

    def stream(self) -> StreamRedactor:
        """A redactor for one text that arrives in chunks."""
        return StreamRedactor(self)

    def with_secrets(self, more: Iterable[Secret | str]) -> Redactor:
        """A redactor of this one's secrets and ``more`` (this one's names win)."""
        return Redactor([*self._secrets(), *more])

    def _secrets(self) -> list[Secret | str]:
        return [
            value if marker == "[redacted]" else Secret(value, marker[len("[redacted: ") : -1])
            for value, marker in self.markers.items()
        ]


class StreamRedactor:
    """Redacts a text given in chunks: what :meth:`feed` returns, joined, with what
    :meth:`flush` returns at the end, is :meth:`Redactor.redact` of the whole text.

    A secret may straddle two chunks: the end of a chunk that could be the start of a secret
    (shorter than the longest secret, or a little more where one secret contains the start of
    another) is held back until the next chunk shows whether it is. Most chunk ends cannot be
    (their last characters begin no secret), so most chunks go through whole, without a
    copy."""

    __slots__ = ("_pending", "_redactor")

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._pending = ""

    def feed(self, text: str) -> str:
        redactor = self._redactor
        if not redactor.markers:
            return text
        if self._pending:
            text = self._pending + text
            self._pending = ""
        hold = redactor._hold(text)
        if hold < len(text):
            self._pending = text[hold:]
            text = text[:hold]
        return redactor.redact(text)

    def flush(self) -> str:
        """What was held back, redacted (the text ended: it completes no secret)."""
        rest, self._pending = self._pending, ""
        return self._redactor.redact(rest)


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
    secret-named entries of ``env`` tables; ``redact`` (a :meth:`Redactor.redact`) replaces
    known secrets found anywhere else."""
    return _mask(data, "", redact)


def _mask(value: Any, key: str, redact: Callable[[str], str] | None, parent: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _mask(v, str(k), redact, key.lower()) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(v, key, redact, parent) for v in value]
    if not isinstance(value, str):
        return value
    secret = (
        parent == "headers"
        or secret_key_name(key)
        or (parent in ("env", "environment") and secret_env_name(key))
    )
    if secret and value:
        return MASK
    return redact(value) if redact is not None else value
