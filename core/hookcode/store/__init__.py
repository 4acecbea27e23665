"""The store: sessions, their messages and parts, tool parts, remembered approvals, todos,
per-session provider state and session locks.

:class:`Store` (:mod:`hookcode.store.protocol`) is the one surface hookcode reads and writes
through, a Protocol; :class:`SQLiteStore` is the embedded default, and a plugin's ``store`` hook
may provide another (``hookcode-store-postgres``). The SQLite store's parts, by what each owns:

- :mod:`hookcode.store.store`: :class:`SQLiteStore`: sessions and their roll-ups, remembered
  approvals, session locks, per-session state and todos;
- :mod:`hookcode.store.message_store`: messages, their parts and the tool parts;
- :mod:`hookcode.store.database`: the SQLite plumbing (one connection shared by threads, WAL
  mode for several processes, write transactions, checkpoints, applying migrations);
- :mod:`hookcode.store.schema`: the tables and their migrations (:data:`MIGRATIONS`);
- :mod:`hookcode.store.records`: the records it hands out and the errors it raises;
- :mod:`hookcode.store.opening`: opening the store a URL names (the ``store`` hook, failing
  closed);
- :mod:`hookcode.store.urls`: store URLs (``sqlite:///path``) and masking their passwords;
- :mod:`hookcode.store.audit_log`: the optional ``audit_log()`` a store may offer (the audit
  plugin's ``[audit] to = "store"``) and the hash that chains its lines; public as a module
  (``from hookcode.store.audit_log import AuditLogStore, line_hash``);
- :mod:`hookcode.store.queries`: the SQL and row shapes every SQL store shares, built for a
  driver's placeholder (:class:`~hookcode.store.queries.Queries`); public as a module;
- :mod:`hookcode.store.reads`: the reads every SQL store makes alike over those statements
  (:class:`~hookcode.store.reads.StoreReads`, mixed into both stores); public as a module.

Import the names from here (``from hookcode.store import Store``); the submodules import each
other directly, never this package. Another store (a plugin's) builds on the same helpers:
:func:`dumps` and :func:`storable` (JSON and text as stores keep them), :func:`current_user`,
:func:`pid_alive` (is a lease's holder on this host alive), :func:`parents_first` (the order of
``session_ids``), :func:`mask_url` and :func:`url_passwords` (never show a password).
"""

from __future__ import annotations

from hookcode.store import audit_log, queries, reads
from hookcode.store.database import dumps, storable
from hookcode.store.protocol import Store
from hookcode.store.reads import parents_first
from hookcode.store.records import (
    LEASE_TTL,
    LEASE_VARIABLE,
    ApprovalRecord,
    SessionBusy,
    SessionExport,
    SessionRecord,
    StoreError,
    ToolPartRecord,
    current_user,
    seconds_setting,
)
from hookcode.store.schema import MIGRATIONS
from hookcode.store.store import SQLiteStore, pid_alive
from hookcode.store.urls import mask_url, url_passwords

__all__ = [
    "LEASE_TTL",
    "LEASE_VARIABLE",
    "MIGRATIONS",
    "ApprovalRecord",
    "SQLiteStore",
    "SessionBusy",
    "SessionExport",
    "SessionRecord",
    "Store",
    "StoreError",
    "ToolPartRecord",
    "audit_log",
    "current_user",
    "dumps",
    "mask_url",
    "parents_first",
    "pid_alive",
    "queries",
    "reads",
    "seconds_setting",
    "storable",
    "url_passwords",
]
