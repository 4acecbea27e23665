"""The Language Server Protocol as hookcode's client speaks it: what the client tells a server
it supports, the errors a request ends with, and the ``file:`` URIs that name documents.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

__all__ = [
    "CLIENT_CAPABILITIES",
    "METHOD_NOT_FOUND",
    "LspError",
    "ServerGone",
    "path_to_uri",
    "uri_to_path",
]

#: the LSP error code of a method the client does not implement
METHOD_NOT_FOUND = -32601

# what the client supports: enough for the nine operations and versioned diagnostics
CLIENT_CAPABILITIES: dict[str, Any] = {
    "general": {"positionEncodings": ["utf-16"]},
    "window": {"workDoneProgress": True},
    "workspace": {
        "configuration": True,
        "workspaceFolders": True,
        "didChangeWatchedFiles": {"dynamicRegistration": True},
        "symbol": {"dynamicRegistration": False},
    },
    "textDocument": {
        "synchronization": {"dynamicRegistration": False, "didSave": False},
        "publishDiagnostics": {"relatedInformation": False, "versionSupport": True},
        "hover": {"contentFormat": ["markdown", "plaintext"]},
        "definition": {"linkSupport": False},
        "implementation": {"linkSupport": False},
        "references": {},
        "documentSymbol": {"hierarchicalDocumentSymbolSupport": True},
        "callHierarchy": {"dynamicRegistration": False},
    },
}


class LspError(Exception):
    """The server answered a request with an error."""

    def __init__(self, method: str, code: int, message: str) -> None:
        super().__init__(f"{method}: {message} (code {code})")
        self.method = method
        self.code = code


class ServerGone(Exception):
    """The server is not running (it exited, crashed, or could not be written to)."""


def path_to_uri(path: str | os.PathLike[str]) -> str:
    """The ``file:`` URI of ``path``."""
    return Path(path).as_uri()


def uri_to_path(uri: str) -> str:
    """The path a ``file:`` URI names (any other URI as it is)."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return uri
    return unquote(parsed.path)
