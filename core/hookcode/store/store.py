"""The SQLite store (:class:`SQLiteStore`, the embedded default): sessions, their messages and parts, tool parts, remembered approvals,
todos, per-session provider state and session locks.

:class:`SQLiteStore` implements :class:`hookcode.store.protocol.Store`; its parts, by what
each owns:

- :mod:`hookcode.store.database`: the SQLite plumbing (one connection shared by threads, WAL mode
  for several processes, write transactions, checkpoints, applying migrations);
- :mod:`hookcode.store.schema`: the tables and their migrations (:data:`MIGRATIONS`);
- :mod:`hookcode.store.records`: the records it hands out and the errors it raises;
- :mod:`hookcode.store.message_store`: messages, their parts and the tool parts;
- this module: sessions and their roll-ups, remembered approvals, session locks, per-session
  state and todos.

Every write is its own transaction, committed before the method returns (see
:mod:`hookcode.store.database`); JSON columns are stored as text, times are float epoch seconds.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from dataclasses import astuple, replace
from pathlib import Path
from typing import Any

from hookcode.ids import new_id
from hookcode.store.database import BUSY_TIMEOUT_MS as BUSY_TIMEOUT_MS
from hookcode.store.database import CHECKPOINT_EVERY as CHECKPOINT_EVERY
from hookcode.store.database import dumps, execute, storable
from hookcode.store.message_store import MessageStore
from hookcode.store.records import (
    ApprovalRecord,
    SessionBusy,
    SessionRecord,
    StoreError,
    ToolPartRecord,
)
from hookcode.store.schema import MIGRATIONS

__all__ = [
    "MIGRATIONS",
    "ApprovalRecord",
    "SQLiteStore",
    "SessionBusy",
    "SessionRecord",
    "StoreError",
    "ToolPartRecord",
]

_SESSION_FIELDS = (
    "id, project, directory, title, agent, model, parent_id, created, updated, "
    "cost, tokens_in, tokens_out, tokens_reasoning, tokens_cache_read, tokens_cache_write, origin"
)
_UPDATABLE_SESSION_FIELDS = frozenset(
    {
        "title",
        "agent",
        "model",
        "directory",
        "parent_id",
        "cost",
        "tokens_in",
        "tokens_out",
        "tokens_reasoning",
        "tokens_cache_read",
        "tokens_cache_write",
        "updated",
    }
)
#: token counters a message adds to its session (``add_session_usage``)
_USAGE_FIELDS = (
    "tokens_in",
    "tokens_out",
    "tokens_reasoning",
    "tokens_cache_read",
    "tokens_cache_write",
)
_APPROVAL_FIELDS = "id, project, session_id, permission, pattern, created"


class SQLiteStore(MessageStore):
    """The SQLite store at ``path`` (created with its parent directories; ``":memory:"`` works):
    the embedded default :class:`~hookcode.store.protocol.Store`."""

    def __init__(self, path: Path | str) -> None:
        super().__init__(path, MIGRATIONS)

    @property
    def location(self) -> str:
        return str(self.path)

    # -- sessions ------------------------------------------------------------------------------

    def create_session(
        self,
        *,
        project: str,
        directory: str,
        title: str = "",
        agent: str = "build",
        model: str | None = None,
        parent_id: str | None = None,
        id: str | None = None,
        origin: str | None = None,
    ) -> SessionRecord:
        now = time.time()
        record = SessionRecord(
            id=id or new_id("ses"),
            project=project,
            directory=directory,
            title=storable(title),
            agent=agent,
            model=model,
            parent_id=parent_id,
            created=now,
            updated=now,
            origin=origin,
        )
        with self._write() as conn:
            conn.execute(
                f"INSERT INTO sessions ({_SESSION_FIELDS}) "
                f"VALUES ({','.join('?' * len(astuple(record)))})",
                astuple(record),
            )
        return record

    def get_session(self, id: str) -> SessionRecord | None:
        rows = self._query(f"SELECT {_SESSION_FIELDS} FROM sessions WHERE id = ?", (id,))
        return SessionRecord(*rows[0]) if rows else None

    def list_sessions(
        self,
        project: str | None = None,
        *,
        parent: bool | None = None,
        limit: int | None = None,
        conversations: bool = False,
    ) -> list[SessionRecord]:
        """Sessions, most recently updated first.

        ``project`` filters by project; ``parent=False`` keeps top-level sessions only,
        ``parent=True`` child sessions only; ``conversations`` leaves out the sessions with an
        ``origin`` (``tools call``).
        """
        where: list[str] = []
        params: list[Any] = []
        if project is not None:
            where.append("project = ?")
            params.append(project)
        if conversations:
            where.append("origin IS NULL")
        if parent is True:
            where.append("parent_id IS NOT NULL")
        elif parent is False:
            where.append("parent_id IS NULL")
        sql = f"SELECT {_SESSION_FIELDS} FROM sessions"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY updated DESC, id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [SessionRecord(*row) for row in self._query(sql, params)]

    def update_session(self, id: str, /, **fields: Any) -> None:
        """Set ``fields`` (title, agent, model, cost, tokens_in, ...) and bump ``updated``."""
        unknown = sorted(set(fields) - _UPDATABLE_SESSION_FIELDS)
        if unknown:
            raise ValueError(f"unknown session field(s): {', '.join(unknown)}")
        values = {"updated": time.time(), **fields}
        assignments = ", ".join(f"{name} = ?" for name in values)
        with self._write() as conn:
            cursor = conn.execute(
                f"UPDATE sessions SET {assignments} WHERE id = ?", (*values.values(), id)
            )
            if cursor.rowcount == 0:
                raise StoreError(f"{self.path}: no session {id!r}")

    def delete_session(self, id: str) -> None:
        """Delete a session with its tool parts, approvals and child sessions."""
        with self._write() as conn:
            conn.execute("DELETE FROM sessions WHERE id = ?", (id,))

    # -- approvals ("always" replies) ----------------------------------------------------------

    def add_approval(
        self, *, project: str, permission: str, pattern: str, session_id: str | None = None
    ) -> ApprovalRecord:
        """Remember an approval; an identical existing one is returned instead of a duplicate."""
        pattern = storable(pattern)
        key = (project, session_id or "", permission, pattern)
        select = (
            f"SELECT {_APPROVAL_FIELDS} FROM approvals WHERE project = ? "
            "AND ifnull(session_id, '') = ? AND permission = ? AND pattern = ?"
        )
        with self._write() as conn:
            conn.execute(
                f"INSERT OR IGNORE INTO approvals ({_APPROVAL_FIELDS}) VALUES (?,?,?,?,?,?)",
                (new_id("apr"), project, session_id, permission, storable(pattern), time.time()),
            )
            row = conn.execute(select, key).fetchone()
        return ApprovalRecord(*row)

    def approvals(self, *, project: str, session_id: str | None = None) -> list[ApprovalRecord]:
        """The project's project-scoped approvals, then (given ``session_id``) that session's;
        each group in creation order."""
        return [replace(record) for record in self._approvals_shared(project, session_id)]

    def _approvals_shared(self, project: str, session_id: str | None) -> list[ApprovalRecord]:
        """:meth:`approvals` from the cache, as the cached list itself (callers must not
        change it): the same list object until the approvals may have changed."""
        with self._lock:
            if self._depth:  # inside a transaction(): raw writes may not pass _write()
                self._cache.clear()
                return self._approval_rows(project, session_id)
            try:
                version = self._conn.execute("PRAGMA data_version").fetchone()[0]
            except sqlite3.Error as exc:
                raise StoreError(f"{self.path}: {exc}") from exc
            if version != self._cache_version:
                self._cache.clear()
                self._cache_version = version
            key = (project, session_id)
            cached = self._cache.get(key)
            if cached is None:
                if len(self._cache) >= 256:
                    self._cache.clear()
                cached = self._cache[key] = self._approval_rows(project, session_id)
            return cached

    def _approval_rows(self, project: str, session_id: str | None) -> list[ApprovalRecord]:
        rows = self._query(
            f"SELECT {_APPROVAL_FIELDS} FROM approvals WHERE project = ? "
            "AND (session_id IS NULL OR session_id = ?) ORDER BY session_id IS NOT NULL, seq",
            (project, session_id),
        )
        return [ApprovalRecord(*row) for row in rows]

    def remove_approval(self, id: str) -> bool:
        with self._write() as conn:
            return conn.execute("DELETE FROM approvals WHERE id = ?", (id,)).rowcount > 0

    def clear_approvals(self, *, project: str, session_id: str | None = None) -> int:
        """Delete the approvals of one scope: the project's (``session_id=None``) or the
        session's; return how many."""
        with self._write() as conn:
            return conn.execute(
                "DELETE FROM approvals WHERE project = ? AND ifnull(session_id, '') = ?",
                (project, session_id or ""),
            ).rowcount

    # -- session roll-ups, lookups -------------------------------------------------------------

    def add_session_usage(self, id: str, /, *, cost: float = 0.0, **tokens: int) -> None:
        """Add a message's cost and tokens (``tokens_in``, ``tokens_out``, ...) to its session."""
        unknown = sorted(set(tokens) - set(_USAGE_FIELDS))
        if unknown:
            raise ValueError(f"unknown token field(s): {', '.join(unknown)}")
        sets = ["cost = cost + ?", "updated = ?"]
        values: list[Any] = [cost, time.time()]
        for name, value in tokens.items():
            sets.append(f"{name} = {name} + ?")
            values.append(int(value))
        with self._write() as conn:
            conn.execute(f"UPDATE sessions SET {', '.join(sets)} WHERE id = ?", (*values, id))

    def sessions_json(
        self, project: str | None = None, *, conversations: bool = False
    ) -> list[str]:
        """``sessions list --json`` objects as JSON texts, most recently updated first (built
        by SQLite: fast for many sessions); as :meth:`SessionRecord.to_dict`, ``origin``
        only when there is one. ``conversations``: as in :meth:`list_sessions`."""
        sql = (
            "SELECT json_patch(json_object('id', id, 'title', title, 'parent_id', parent_id, "
            "'agent', agent, 'model', model, 'created', created, 'updated', updated, 'cost', "
            "cost), CASE WHEN origin IS NULL THEN '{}' ELSE json_object('origin', origin) END) "
            "FROM sessions"
        )
        where: list[str] = []
        params: list[Any] = []
        if project is not None:
            where.append("project = ?")
            params.append(project)
        if conversations:
            where.append("origin IS NULL")
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY updated DESC, id DESC"
        return [row[0] for row in self._query(sql, params)]

    def latest_session(self, project: str, *, top_level: bool = True) -> SessionRecord | None:
        """The project's most recently updated (top-level) conversation (``--continue``)."""
        found = self.list_sessions(
            project, parent=False if top_level else None, limit=1, conversations=True
        )
        return found[0] if found else None

    def sessions_by_prefix(self, prefix: str, *, limit: int = 10) -> list[SessionRecord]:
        """The sessions whose id starts with ``prefix`` (case matters; at most ``limit``), in
        id order."""
        rows = self._query(
            f"SELECT {_SESSION_FIELDS} FROM sessions WHERE id >= ? AND id < ? ORDER BY id LIMIT ?",
            (prefix, prefix + "\U0010ffff", limit),
        )
        return [SessionRecord(*row) for row in rows]

    def children(self, id: str) -> list[SessionRecord]:
        rows = self._query(
            f"SELECT {_SESSION_FIELDS} FROM sessions WHERE parent_id = ? ORDER BY created, id",
            (id,),
        )
        return [SessionRecord(*row) for row in rows]

    # -- session locks -------------------------------------------------------------------------

    def lock_session(self, id: str, pid: int | None = None) -> None:
        """Mark the session as being run by ``pid`` (default: this process).

        Raises :class:`SessionBusy` when another live process holds it; a lock whose process
        is dead (same host) is taken over. Re-locking by the same pid is a no-op.
        """
        pid = os.getpid() if pid is None else pid
        host = socket.gethostname()
        with self._write() as conn:
            row = conn.execute(
                "SELECT pid, host FROM session_locks WHERE session_id = ?", (id,)
            ).fetchone()
            if row is not None:
                held_pid, held_host = int(row[0]), str(row[1])
                if held_pid != pid and (held_host != host or pid_alive(held_pid)):
                    raise SessionBusy(id, held_pid, held_host)
            conn.execute(
                "INSERT OR REPLACE INTO session_locks (session_id, pid, host, acquired) "
                "VALUES (?, ?, ?, ?)",
                (id, pid, host, time.time()),
            )

    def unlock_session(self, id: str, pid: int | None = None) -> None:
        """Release the lock if ``pid`` (default: this process) holds it."""
        pid = os.getpid() if pid is None else pid
        with self._write() as conn:
            conn.execute("DELETE FROM session_locks WHERE session_id = ? AND pid = ?", (id, pid))

    def session_lock(self, id: str) -> tuple[int, str] | None:
        """``(pid, host)`` of the process running the session, if a live one holds its lock."""
        rows = self._query("SELECT pid, host FROM session_locks WHERE session_id = ?", (id,))
        if not rows:
            return None
        pid, host = int(rows[0][0]), str(rows[0][1])
        if host == socket.gethostname() and not pid_alive(pid):
            return None
        return pid, host

    # -- per-session state (providers keep small values here) ----------------------------------

    def get_state(self, session_id: str, key: str) -> Any:
        rows = self._query(
            "SELECT value FROM session_state WHERE session_id = ? AND key = ?", (session_id, key)
        )
        return json.loads(rows[0][0]) if rows else None

    def set_state(self, session_id: str, key: str, value: Any) -> None:
        with self._write() as conn:
            execute(
                conn,
                "INSERT OR REPLACE INTO session_state (session_id, key, value) VALUES (?,?,?)",
                [session_id, key, dumps(value)],
            )

    # -- todos ---------------------------------------------------------------------------------

    def set_todos(self, session_id: str, todos: list[dict[str, Any]]) -> None:
        """Replace the session's todo list (``{"id", "content", "status", "priority"}`` each)."""
        with self._write() as conn:
            conn.execute("DELETE FROM todos WHERE session_id = ?", (session_id,))
            conn.executemany(
                "INSERT INTO todos (session_id, position, id, content, status, priority) "
                "VALUES (?,?,?,?,?,?)",
                [
                    (
                        session_id,
                        i,
                        str(t.get("id") or i + 1),
                        str(t["content"]),
                        str(t.get("status") or "pending"),
                        str(t.get("priority") or "medium"),
                    )
                    for i, t in enumerate(todos)
                ],
            )

    def todos(self, session_id: str) -> list[dict[str, Any]]:
        rows = self._query(
            "SELECT id, content, status, priority FROM todos WHERE session_id = ? "
            "ORDER BY position",
            (session_id,),
        )
        return [{"id": r[0], "content": r[1], "status": r[2], "priority": r[3]} for r in rows]


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this machine (a zombie counts as dead)."""
    from hookcode.guardian import pid_alive as alive

    return alive(pid)
