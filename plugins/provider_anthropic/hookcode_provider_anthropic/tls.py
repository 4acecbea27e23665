"""The TLS context of the provider's HTTP clients, made once per process.

Every request builds a new SDK client, and every new client used to load the system's
certificate authorities again (about 30 ms of CPU each time, more under load). Loading them
runs without the interpreter lock, so the provider's ``preload()`` has the context made in a
background thread (:func:`make_soon`) while the run starts: it takes the second core instead
of time from start-up. The context is the one the SDK's
HTTP client makes by default (``httpx2.create_ssl_context()``: the system's authorities, or
``SSL_CERT_FILE`` / ``SSL_CERT_DIR``).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ssl

__all__ = ["make_soon", "ssl_context"]

_lock = threading.Lock()
_context: ssl.SSLContext | None = None
_started = False


def ssl_context() -> ssl.SSLContext:
    """The context, made on first use (a caller meanwhile waits for it)."""
    global _context
    with _lock:
        if _context is None:
            import httpx2

            _context = httpx2.create_ssl_context()
        return _context


def make_soon() -> None:
    """Start making the context in a background thread, once per process; return at once.
    A failure there is left to :func:`ssl_context`'s next caller to report."""
    global _started
    if _started:
        return
    _started = True

    def run() -> None:
        try:
            ssl_context()
        except Exception:  # reported by the caller that needs it
            return

    threading.Thread(target=run, name="hookcode-anthropic-tls", daemon=True).start()
