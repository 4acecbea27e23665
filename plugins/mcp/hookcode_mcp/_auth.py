"""OAuth logins to remote MCP servers: where the browser comes back to, and where the tokens
are kept.

The redirect URI is ``http://127.0.0.1:<port>/mcp/oauth/callback``, port 19876 unless
``hookcode mcp auth NAME --port`` says otherwise (a pre-registered client must list it).

The tokens live in ``<data dir>/mcp-auth.json``.

One entry per server name, bound to the server's URL (an entry whose ``serverUrl`` is not the
configured ``url`` is not used: a login to one server is never sent to another)::

    {"docs": {"serverUrl": "https://example.com/mcp",
              "tokens": {"access_token": "...", "refresh_token": "...", ...},
              "expiresAt": 1767225600.0,
              "clientInfo": {"client_id": "...", ...},     # a dynamically registered client
              "authServer": {...}, "resource": {...}}}     # the metadata found at login

Changes go through :func:`hookcode.sharedfile.update`: under a lock on the sibling
``mcp-auth.json.lock``, so two hookcode processes refreshing tokens do not lose each other's
entries, and written atomically with mode 0600. Only the standard library here (hookcode's own modules when used): the CLI imports
this module to register its commands, and ``hookcode mcp logout`` needs no SDK.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["CALLBACK_PATH", "DEFAULT_PORT", "FILE_NAME", "AuthStore", "login_hint", "redirect_uri"]

FILE_NAME = "mcp-auth.json"
#: where the local callback server listens by default (the reference's port)
DEFAULT_PORT = 19876
CALLBACK_PATH = "/mcp/oauth/callback"


def redirect_uri(port: int = DEFAULT_PORT) -> str:
    """The redirect URI of the local callback server on ``port``."""
    return f"http://127.0.0.1:{port}{CALLBACK_PATH}"


def login_hint(name: str) -> str:
    """What to run to log in to server ``name``."""
    return f"run `hookcode mcp auth {name}`"


class AuthStore:
    """The MCP OAuth entries of one data directory."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / FILE_NAME

    # -- reading ------------------------------------------------------------------------------
    def entries(self) -> dict[str, dict[str, Any]]:
        """Every entry, by server name."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            from hookcode.errors import HookcodeError

            raise HookcodeError(
                f"{self.path}: cannot read the stored MCP logins ({type(exc).__name__}); fix or "
                "delete the file, then run `hookcode mcp auth NAME` again"
            ) from None
        if not isinstance(data, dict):
            from hookcode.errors import HookcodeError

            raise HookcodeError(f"{self.path}: expected a JSON object of MCP servers")
        return {name: entry for name, entry in data.items() if isinstance(entry, dict)}

    # -- writing ------------------------------------------------------------------------------
    def put(self, name: str, entry: dict[str, Any]) -> None:
        """Replace the entry of server ``name``."""
        self._update(lambda data: data.__setitem__(name, entry))

    def merge(self, name: str, url: str, fields: dict[str, Any]) -> None:
        """Update some fields of ``name``'s entry for ``url`` (a refresh); an entry for another
        URL is replaced."""

        def apply(data: dict[str, Any]) -> None:
            entry = data.get(name)
            if not isinstance(entry, dict) or entry.get("serverUrl") != url:
                entry = {"serverUrl": url}
            entry.update(fields)
            data[name] = entry

        self._update(apply)

    def remove(self, name: str) -> bool:
        """Delete the entry of ``name``; False when there was none."""
        removed: list[bool] = []

        def apply(data: dict[str, Any]) -> None:
            removed.append(data.pop(name, None) is not None)

        self._update(apply)
        return removed[0]

    def _update(self, change: Callable[[dict[str, Any]], None]) -> None:
        from hookcode.sharedfile import update

        update(self.path, self.entries, change, _dump)


def _dump(data: dict[str, Any]) -> bytes:
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
