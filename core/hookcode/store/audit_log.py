"""The audit log kept in a store: what a store's optional ``audit_log()`` returns, and the hash
that chains its lines.

The audit plugin (``hookcode-audit``) writes a hash-chained log of every tool call and permission
decision: one JSON object a line, each with ``seq`` (1, 2, 3, ...) and ``prev``, the SHA-256 (hex)
of the previous line's UTF-8 bytes (:func:`line_hash`; :data:`GENESIS` for the first). By default
the lines go to a file; with ``[audit] to = "store"`` they go to the store, when it has one: a
store offers it by a method ``audit_log() -> AuditLogStore`` (``hookcode-store-postgres`` does;
the embedded SQLite store does not). The store owns ordering and atomicity, the plugin owns what
a line says: :meth:`AuditLogStore.append` hands the next ``seq`` and ``prev`` to a callable that
builds the line.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from typing import Protocol

__all__ = ["GENESIS", "AuditLogStore", "line_hash"]

#: the ``prev`` of the first record
GENESIS = "0" * 64


def line_hash(line: bytes | str) -> str:
    """The SHA-256 (hex) of one line (its UTF-8 bytes), without its newline."""
    return hashlib.sha256(line.encode("utf-8") if isinstance(line, str) else line).hexdigest()


class AuditLogStore(Protocol):
    """A store's audit log: lines appended in one order by every process and machine using the
    store, each chained onto the one before."""

    def append(self, build: Callable[[int, str], str]) -> str:
        """Append one line, atomically across processes and machines: under the store's lock
        (or in its transaction), call ``build(seq, prev)`` with the next ``seq`` (the last
        line's + 1, or 1) and ``prev`` (:func:`line_hash` of the last line, or
        :data:`GENESIS`), store the line it returns and return it. Nothing is stored when
        ``build`` raises or the write fails (:class:`~hookcode.store.records.StoreError`)."""
        ...

    def lines(self) -> Iterator[str]:
        """Every line, in ``seq`` order."""
        ...
