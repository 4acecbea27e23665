"""Ascending identifiers that encode their creation time: ``<prefix>_<12 hex ms><10 random>``.

Sorting ids of one prefix sorts them by creation time; :func:`id_time` reads the time back
(the spill-file cleanup uses it).
"""

from __future__ import annotations

import os
import threading
import time

__all__ = ["id_time", "new_id"]

_lock = threading.Lock()
_last_ms = 0
_counter = 0


def new_id(prefix: str) -> str:
    """A new id such as ``ses_0192f3a4b5c6a1b2c3d4e5``; later calls sort after earlier ones."""
    global _last_ms, _counter
    with _lock:
        ms = int(time.time() * 1000)
        if ms <= _last_ms:
            ms = _last_ms
            _counter += 1
        else:
            _counter = 0
        _last_ms = ms
        counter = _counter
    # 12 hex digits of milliseconds, 4 of a per-millisecond counter, 6 random
    return f"{prefix}_{ms:012x}{counter:04x}{os.urandom(3).hex()}"


def id_time(identifier: str) -> float | None:
    """The creation time (epoch seconds) encoded in an id, or None if it is not one of ours."""
    _, _, body = identifier.rpartition("_")
    if len(body) < 12:
        return None
    try:
        return int(body[:12], 16) / 1000.0
    except ValueError:
        return None
