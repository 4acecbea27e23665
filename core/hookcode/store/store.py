"""The SQLite store (:class:`SQLiteStore`, the embedded default): sessions, their messages and parts, tool parts, remembered approvals,
todos, per-session provider state and session locks.

:class:`SQLiteStore` implements :class:`hookcode.store.protocol.Store`; its parts, by what
each owns:

- :mod:`hookcode.store.database`: the SQLite plumbing (one connection shared by threads, WAL mode
  for several processes, write transactions, checkpoints, applying migrations);
- :mod:`hookcode.store.schema`: the tables and their migrations (:data:`MIGRATIONS`);
- :mod:`hookcode.store.records`: the records it hands out and the errors it raises;
- :mod:`hookcode.store.message_store`: messages, their parts and the tool parts;
- this module: sessions and their roll-ups, remembered approvals, session leases, per-session
  state and todos, and moving whole sessions between stores (:class:`SessionExport`).

Every write is its own transaction, committed before the method returns (see
:mod:`hookcode.store.database`); JSON columns are stored as text, times are float epoch seconds.
"""

from __future__ import annotations

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
from hookcode.store.queries import (
    Queries,
    approval_key,
    exported_todo_rows,
    new_session,
    state_values,
    todo_rows,
)
from hookcode.store.reads import StoreReads
from hookcode.store.records import (
    LEASE_TTL,
    ApprovalRecord,
    SessionBusy,
    SessionExport,
    SessionRecord,
    StoreError,
    ToolPartRecord,
    current_user,
)
from hookcode.store.schema import MIGRATIONS
from hookcode.store.urls import mask_url

__all__ = [
    "MIGRATIONS",
    "ApprovalRecord",
    "SQLiteStore",
    "SessionBusy",
    "SessionRecord",
    "StoreError",
    "ToolPartRecord",
]

#: the SQL this store runs as every SQL store does (sqlite3's placeholder)
_SQL = Queries("?")
#: SQLite's spellings: conflicts on ``approvals_unique`` (its ``ifnull`` expressions)
_APPROVAL_BY_MEANING = (
    f"SELECT {_SQL.approval_fields} FROM approvals WHERE project = ? "
    "AND ifnull(session_id, '') = ? AND permission = ? AND pattern = ? "
    "AND ifnull(directory, '') = ?"
)
_INSERT_APPROVAL_OR_IGNORE = (
    f"INSERT OR IGNORE INTO approvals ({_SQL.approval_fields}) VALUES ({_SQL.approval_values})"
)
_INSERT_APPROVAL_OR_REPLACE = (
    f"INSERT OR REPLACE INTO approvals ({_SQL.approval_fields}) VALUES ({_SQL.approval_values})"
)
#: ``sessions list --json`` objects built by SQLite, as :meth:`SessionRecord.to_dict` does
#: (``json_patch`` drops a null member)
_LISTING_JSON = (
    "json_patch(json_object('id', id, 'title', title, 'parent_id', parent_id, "
    "'agent', agent, 'model', model, 'created', created, 'updated', updated, 'cost', "
    "cost), json_object('origin', origin, 'host', host, 'user', user))"
)


class SQLiteStore(MessageStore, StoreReads):
    """The SQLite store at ``path`` (created with its parent directories; ``":memory:"`` works):
    the embedded default :class:`~hookcode.store.protocol.Store`."""

    _sql = _SQL

    def __init__(self, path: Path | str) -> None:
        super().__init__(path, MIGRATIONS)

    def _migrated(self, conn: sqlite3.Connection, version: int) -> None:
        if version == 4:
            # the sessions stored before hosts were recorded were made here: a SQLite store is
            # one machine's file (``sessions list`` shows this host's sessions)
            conn.execute(
                "UPDATE sessions SET host = ?, user = ? WHERE host IS NULL",
                (socket.gethostname() or None, current_user()),
            )

    @property
    def location(self) -> str:
        """The database file (``:memory:`` for an in-memory database)."""
        return mask_url(str(self.path))

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
        record = new_session(
            project=project,
            directory=directory,
            title=storable(title),
            agent=agent,
            model=model,
            parent_id=parent_id,
            id=id,
            origin=origin,
        )
        with self._write() as conn:
            conn.execute(_SQL.insert_session, astuple(record))
        return record

    def update_session(self, id: str, /, **fields: Any) -> None:
        """Set ``fields`` (title, agent, model, cost, tokens_in, ...) and bump ``updated``."""
        sql, params = _SQL.update_session(id, fields, time.time())
        with self._write() as conn:
            cursor = execute(conn, sql, params)
            if cursor.rowcount == 0:
                raise StoreError(f"{self.path}: no session {id!r}")

    def delete_session(self, id: str) -> None:
        """Delete a session with its tool parts, approvals and child sessions."""
        with self._write() as conn:
            conn.execute(_SQL.delete_session, (id,))

    # -- approvals ("always" replies) ----------------------------------------------------------

    def add_approval(
        self,
        *,
        project: str,
        permission: str,
        pattern: str,
        session_id: str | None = None,
        directory: str | None = None,
    ) -> ApprovalRecord:
        """Remember an approval given in ``directory`` (the worktree); an identical existing
        one is returned instead of a duplicate."""
        pattern = storable(pattern)
        key = approval_key(project, session_id, permission, pattern, directory)
        with self._write() as conn:
            conn.execute(
                _INSERT_APPROVAL_OR_IGNORE,
                (new_id("apr"), project, session_id, permission, pattern, time.time(), directory),
            )
            row = conn.execute(_APPROVAL_BY_MEANING, key).fetchone()
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
        rows = self._query(_SQL.approvals, (project, session_id))
        return [ApprovalRecord(*row) for row in rows]

    def remove_approval(self, id: str) -> bool:
        with self._write() as conn:
            return conn.execute(_SQL.remove_approval, (id,)).rowcount > 0

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
        sql, params = _SQL.add_session_usage(id, cost, tokens, time.time())
        with self._write() as conn:
            conn.execute(sql, params)

    def sessions_json(
        self, project: str | None = None, *, conversations: bool = False, host: str | None = None
    ) -> list[str]:
        """``sessions list --json`` objects as JSON texts, most recently updated first (built
        by SQLite: fast for many sessions); as :meth:`SessionRecord.to_dict`: ``origin``,
        ``host`` and ``user`` only when set (``json_patch`` drops a null member).
        ``conversations`` and ``host``: as in :meth:`list_sessions`."""
        sql, params = _SQL.listing(_LISTING_JSON, project, conversations=conversations, host=host)
        return [row[0] for row in self._query(sql, params)]

    # -- session leases ------------------------------------------------------------------------

    def lock_session(self, id: str, pid: int | None = None, *, ttl: float = LEASE_TTL) -> None:
        """Take (or renew) the session's lease for ``pid`` (default: this process) on this
        host, for ``ttl`` seconds.

        The lease is free when nobody holds it, when it has expired (by this machine's clock),
        or when its holder is a dead process on this host; otherwise :class:`SessionBusy`.
        One ``BEGIN IMMEDIATE`` transaction reads and takes it: of two processes racing for
        it, exactly one wins.
        """
        pid = os.getpid() if pid is None else pid
        host = socket.gethostname()
        with self._write() as conn:
            now = time.time()
            row = conn.execute(
                "SELECT pid, host, acquired, expires FROM session_locks WHERE session_id = ?",
                (id,),
            ).fetchone()
            if row is not None:
                held_pid, held_host = int(row[0]), str(row[1])
                ours = held_pid == pid and held_host == host
                if not ours and _lease_live(held_pid, held_host, row[2], row[3], now):
                    raise SessionBusy(id, held_pid, held_host)
            conn.execute(
                "INSERT OR REPLACE INTO session_locks (session_id, pid, host, acquired, expires) "
                "VALUES (?, ?, ?, ?, ?)",
                (id, pid, host, now, now + ttl),
            )

    def renew_session_lock(
        self, id: str, pid: int | None = None, *, ttl: float = LEASE_TTL
    ) -> bool:
        """Extend our lease by ``ttl`` from now; False if we no longer hold it (another
        process took it over, or it was released)."""
        pid = os.getpid() if pid is None else pid
        with self._write() as conn:
            cursor = conn.execute(
                "UPDATE session_locks SET expires = ? "
                "WHERE session_id = ? AND pid = ? AND host = ?",
                (time.time() + ttl, id, pid, socket.gethostname()),
            )
            return cursor.rowcount > 0

    def unlock_session(self, id: str, pid: int | None = None) -> None:
        """Release the lease if ``pid`` (default: this process) on this host holds it."""
        pid = os.getpid() if pid is None else pid
        with self._write() as conn:
            conn.execute(_SQL.unlock_session, (id, pid, socket.gethostname()))

    def session_lock(self, id: str) -> tuple[int, str] | None:
        """``(pid, host)`` of the live holder of the session's lease, if any."""
        rows = self._query(
            "SELECT pid, host, acquired, expires FROM session_locks WHERE session_id = ?", (id,)
        )
        if not rows:
            return None
        pid, host, acquired, expires = rows[0]
        if not _lease_live(int(pid), str(host), acquired, expires, time.time()):
            return None
        return int(pid), str(host)

    # -- per-session state (providers keep small values here) ----------------------------------

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
        rows = [
            [sid, position, *map(storable, texts)]
            for sid, position, *texts in todo_rows(session_id, todos)
        ]
        with self._write() as conn:
            conn.execute(_SQL.delete_todos, (session_id,))
            conn.executemany(_SQL.insert_todo, rows)

    # -- moving data between stores (``hookcode store migrate``) --------------------------------

    def export_session(self, id: str) -> SessionExport | None:
        """Everything stored about one session (not its children), read in one snapshot."""
        with self._reading():
            record = self.get_session(id)
            if record is None:
                return None
            messages, parts, tool_parts = self._conversation(id)
            return SessionExport(
                session=record,
                messages=messages,
                parts=parts,
                tool_parts=tool_parts,
                todos=self.todos(id),
                state=state_values(self._query(_SQL.session_state, (id,))),
            )

    def import_session(self, data: SessionExport) -> None:
        """Write an exported session in one transaction: a session already here is replaced
        (its record, messages, parts, tool parts, todos and state become the export's; its
        child sessions, approvals and lease stay). Importing twice changes nothing more."""
        record = data.session
        with self._write() as conn:
            execute(conn, _SQL.import_session, list(astuple(record)))
            self._replace_conversation(conn, record.id, data.messages, data.parts, data.tool_parts)
            conn.execute(_SQL.delete_todos, (record.id,))
            for row in exported_todo_rows(record.id, data.todos):
                execute(conn, _SQL.insert_todo, row)
            conn.execute(_SQL.delete_state, (record.id,))
            for key, value in data.state.items():
                execute(conn, _SQL.insert_state, [record.id, key, dumps(value)])

    def import_approval(self, record: ApprovalRecord) -> None:
        """Store ``record`` as it is (its id and time); an approval here with its id or with its
        meaning (project, session, permission, pattern, directory) is replaced. Importing an
        approval already here as it is changes nothing."""
        values = astuple(record)
        with self._write() as conn:
            same = conn.execute(_SQL.approval, (record.id,)).fetchone()
            if same is not None and tuple(same) == values:
                return
            execute(conn, _INSERT_APPROVAL_OR_REPLACE, list(values))

    # -- project identity ------------------------------------------------------------------------

    def rekey_project(self, old: str, new: str) -> int:
        """Move the sessions and approvals stored under the project key ``old`` (a worktree's
        path, before projects were identified by their root commit) to ``new``; how many rows
        moved. A read when there is nothing to move. An approval already stored under ``new``
        with the same meaning is kept once."""
        if not self._rekeys(old, new):
            return 0
        with self._write() as conn:
            moved = conn.execute(_SQL.rekey_sessions, (new, old)).rowcount
            # an approval whose meaning is already under ``new`` stays behind, then goes
            moved += conn.execute(
                "UPDATE OR IGNORE approvals SET project = ? WHERE project = ?", (new, old)
            ).rowcount
            conn.execute(_SQL.drop_project_approvals, (old,))
        return moved


def _lease_live(pid: int, host: str, acquired: float, expires: float | None, now: float) -> bool:
    """Whether a lease still binds: not expired (a lock from before leases, without an
    expiry, lasts :data:`LEASE_TTL` from when it was taken), and not held by a dead process on
    this host."""
    until = float(expires) if expires is not None else float(acquired) + LEASE_TTL
    if until <= now:
        return False
    return host != socket.gethostname() or pid_alive(pid)


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this machine (a zombie counts as dead)."""
    from hookcode.guardian import pid_alive as alive

    return alive(pid)
