"""What the websearch and codesearch tests share: a local stand-in for Exa's MCP endpoint
(the ``exa`` fixture is in conftest.py), its JSON-RPC results, and a runtime pointed at it."""

from __future__ import annotations

from typing import Any

from http_fakes import FakeServer


def result(text: str, **extra: Any) -> dict[str, Any]:
    """A ``tools/call`` answer carrying ``text`` (``extra``: more fields of the result)."""
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"content": [{"type": "text", "text": text}], **extra},
    }


def enabled_runtime(hookcode_env: Any, exa: FakeServer) -> Any:
    """A runtime with the Exa tools enabled, sending to ``exa``."""
    return hookcode_env.runtime(HOOKCODE_ENABLE_EXA="1", HOOKCODE_EXA_URL=exa.url("/mcp"))


def ok(outcome: Any) -> Any:
    assert outcome.error is None, outcome.error_text
    return outcome.result


def failed(outcome: Any) -> str:
    assert outcome.error is not None, outcome.result
    return outcome.error_text
