"""Store URLs: which store a URL names, and how to show one without its password.

A store URL is ``sqlite:///abs/path.db`` (core's SQLite store at that file) or any URL a plugin's
``store`` hook takes (``postgresql://user:password@host/db?sslmode=require``). It may carry a
password in three places, and every one of them is masked as ``***`` by :func:`mask_url` and
found by :func:`url_passwords` (so that redaction knows it): the user information
(``user:password@``), a query parameter named like a password (``?password=...``,
``&sslpassword=...``), and a keyword of a libpq keyword/value string
(``host=h password='se cret'``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import unquote

__all__ = ["MASK", "STORE_ENV", "mask_url", "sqlite_path", "store_url", "url_passwords"]

#: what a password in a URL is shown as
MASK = "***"
#: the environment variable naming the store (wins over the config's ``store`` key)
STORE_ENV = "HOOKCODE_STORE"

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)(.*)$", re.DOTALL)
# a query parameter, or a keyword of a keyword/value string, named like a password
_QUERY_PASSWORD = re.compile(r"([?&;][A-Za-z_]*password=)([^&#]*)", re.IGNORECASE)
_KEYWORD_PASSWORD = re.compile(
    r"((?:^|\s)[A-Za-z_]*password\s*=\s*)('(?:[^'\\]|\\.)*'|\S*)", re.IGNORECASE
)


def store_url(env: Mapping[str, str], configured: str | None) -> str | None:
    """The store URL in effect: ``HOOKCODE_STORE`` when set, else the config's ``store`` key
    (the user's config only: :mod:`hookcode.config` drops a project's), else None (the SQLite
    file in the data directory)."""
    url = (env.get(STORE_ENV) or "").strip() or (configured or "").strip()
    return url or None


def _userinfo_end(rest: str) -> int:
    """Where the user information of ``rest`` (a URL after ``scheme://``) ends: the index of
    its ``@``, or -1. The last ``@`` before the query counts (a password may hold ``@``); a
    password holding ``?`` moves that ``@`` after it: the last one anywhere then counts
    (masking too much beats showing a password)."""
    query = rest.find("?")
    at = rest.rfind("@", 0, query if query >= 0 else len(rest))
    return at if at >= 0 else rest.rfind("@")


def mask_url(url: str) -> str:
    """``url`` with every password in it shown as ``***``:
    ``postgresql://bob:***@host/db?sslmode=require``. Text without a password is unchanged."""
    match = _SCHEME.match(url)
    if match is None:  # a keyword/value string ("host=h password=x"), or a path
        return _KEYWORD_PASSWORD.sub(lambda m: m.group(1) + MASK, url)
    scheme, rest = match.groups()
    at = _userinfo_end(rest)
    if at >= 0 and ":" in rest[:at]:
        user = rest[:at].split(":", 1)[0]
        rest = f"{user}:{MASK}{rest[at:]}"
    return scheme + _QUERY_PASSWORD.sub(lambda m: m.group(1) + MASK, rest)


def url_passwords(url: str) -> list[str]:
    """Every password in ``url`` (as written, and percent-decoded when that differs)."""
    found: list[str] = []
    match = _SCHEME.match(url)
    if match is None:
        for m in _KEYWORD_PASSWORD.finditer(url):
            value = m.group(2)
            if value.startswith("'") and value.endswith("'") and len(value) >= 2:
                value = re.sub(r"\\(.)", r"\1", value[1:-1])
            found.append(value)
    else:
        rest = match.group(2)
        at = _userinfo_end(rest)
        if at >= 0 and ":" in rest[:at]:
            found.append(rest[:at].split(":", 1)[1])
        found += [m.group(2) for m in _QUERY_PASSWORD.finditer(rest)]
    out: list[str] = []
    for value in found:
        for form in (value, unquote(value)):
            if form and form not in out:
                out.append(form)
    return out


def sqlite_path(url: str) -> Path | None:
    """The file a ``sqlite:///abs/path.db`` URL names (None: not a ``sqlite:`` URL); the path
    is always absolute (``sqlite:////abs/path.db`` names the same file). A URL without the
    three slashes or without a path is a ``ValueError`` naming it."""
    if not url.lower().startswith("sqlite:"):
        return None
    rest = url[len("sqlite:") :]
    path = unquote(rest[3:]).lstrip("/")
    if not rest.startswith("///") or not path:
        raise ValueError(
            f"store URL {mask_url(url)!r}: a SQLite store URL is sqlite:/// and an absolute "
            "path (sqlite:///home/me/hookcode.db)"
        )
    return Path("/" + path)
