"""Fixtures shared by the built-in tools' tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hookcode.testing import missing


@pytest.fixture(scope="session")
def lsp_server():
    """``lsp_server(name)``: the command of a language server from PyPI, each in its own
    cached venv (``lsp_servers.py``); a failed install fails the test in CI, skips elsewhere."""
    from lsp_servers import InstallFailed, server_command

    def get(name: str) -> list[str]:
        try:
            return server_command(name)
        except InstallFailed as exc:
            missing(f"language server {name} could not be installed: {exc}")

    return get


@pytest.fixture
def exa() -> Iterator[Any]:
    """A local stand-in for Exa's MCP endpoint (``http_fakes.FakeServer``), for the websearch
    and codesearch tests (``exa_fake`` has their shared helpers)."""
    from http_fakes import FakeServer

    with FakeServer() as fake:
        yield fake
