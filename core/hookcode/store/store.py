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

_SESSION_FIELDS = (
    "id, project, directory, title, agent, model, parent_id, created, updated, "
    "cost, tokens_in, tokens_out, tokens_reasoning, tokens_cache_read, tokens_cache_write, origin, "
    "host, user"
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
_APPROVAL_FIELDS = "id, project, session_id, permission, pattern, created, directory"
#: what :meth:`SQLiteStore.counts` counts: key -> table
_COUNTED = {
    "sessions": "sessions",
    "messages": "messages",
    "parts": "parts",
    "tool_parts": "tool_parts",
    "approvals": "approvals",
    "todos": "todos",
    "session_state": "session_state",
}


class SQLiteStore(MessageStore):
    """The SQLite store at ``path`` (created with its parent directories; ``":memory:"`` works):
    the embedded default :class:`~hookcode.store.protocol.Store`."""

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
            host=socket.gethostname() or None,
            user=current_user(),
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
        host: str | None = None,
    ) -> list[SessionRecord]:
        """Sessions, most recently updated first.

        ``project`` filters by project, ``host`` by the machine that created them;
        ``parent=False`` keeps top-level sessions only, ``parent=True`` child sessions only;
        ``conversations`` leaves out the sessions with an ``origin`` (``tools call``).
        """
        where, params = _session_filter(project, host, conversations)
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
            cursor = execute(
                conn, f"UPDATE sessions SET {assignments} WHERE id = ?", [*values.values(), id]
            )
            if cursor.rowcount == 0:
                raise StoreError(f"{self.path}: no session {id!r}")

    def delete_session(self, id: str) -> None:
        """Delete a session with its tool parts, approvals and child sessions."""
        with self._write() as conn:
            conn.execute("DELETE FROM sessions WHERE id = ?", (id,))

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
        key = (project, session_id or "", permission, pattern, directory or "")
        select = (
            f"SELECT {_APPROVAL_FIELDS} FROM approvals WHERE project = ? "
            "AND ifnull(session_id, '') = ? AND permission = ? AND pattern = ? "
            "AND ifnull(directory, '') = ?"
        )
        with self._write() as conn:
            conn.execute(
                f"INSERT OR IGNORE INTO approvals ({_APPROVAL_FIELDS}) VALUES (?,?,?,?,?,?,?)",
                (new_id("apr"), project, session_id, permission, pattern, time.time(), directory),
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
        self, project: str | None = None, *, conversations: bool = False, host: str | None = None
    ) -> list[str]:
        """``sessions list --json`` objects as JSON texts, most recently updated first (built
        by SQLite: fast for many sessions); as :meth:`SessionRecord.to_dict`: ``origin``,
        ``host`` and ``user`` only when set (``json_patch`` drops a null member).
        ``conversations`` and ``host``: as in :meth:`list_sessions`."""
        sql = (
            "SELECT json_patch(json_object('id', id, 'title', title, 'parent_id', parent_id, "
            "'agent', agent, 'model', model, 'created', created, 'updated', updated, 'cost', "
            "cost), json_object('origin', origin, 'host', host, 'user', user)) "
            "FROM sessions"
        )
        where, params = _session_filter(project, host, conversations)
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
            conn.execute(
                "DELETE FROM session_locks WHERE session_id = ? AND pid = ? AND host = ?",
                (id, pid, socket.gethostname()),
            )

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
                        storable(str(t.get("id") or i + 1)),
                        storable(str(t["content"])),
                        storable(str(t.get("status") or "pending")),
                        storable(str(t.get("priority") or "medium")),
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

    # -- moving data between stores (``hookcode store migrate``) --------------------------------

    def session_ids(self) -> list[str]:
        """Every session's id, oldest first (by ``created``, then id), a parent always before
        its children."""
        rows = self._query("SELECT id, parent_id FROM sessions ORDER BY created, id")
        return parents_first(rows)

    def export_session(self, id: str) -> SessionExport | None:
        """Everything stored about one session (not its children), read in one snapshot."""
        with self._reading():
            record = self.get_session(id)
            if record is None:
                return None
            messages, parts, tool_parts = self._conversation(id)
            state = {
                key: json.loads(value)
                for key, value in self._query(
                    "SELECT key, value FROM session_state WHERE session_id = ? ORDER BY key",
                    (id,),
                )
            }
            return SessionExport(
                session=record,
                messages=messages,
                parts=parts,
                tool_parts=tool_parts,
                todos=self.todos(id),
                state=state,
            )

    def import_session(self, data: SessionExport) -> None:
        """Write an exported session in one transaction: a session already here is replaced
        (its record, messages, parts, tool parts, todos and state become the export's; its
        child sessions, approvals and lease stay). Importing twice changes nothing more."""
        record = data.session
        values = astuple(record)
        columns = _SESSION_FIELDS.split(", ")
        with self._write() as conn:
            execute(
                conn,
                f"INSERT INTO sessions ({_SESSION_FIELDS}) VALUES ({','.join('?' * len(values))}) "
                "ON CONFLICT(id) DO UPDATE SET "
                + ", ".join(f"{name} = excluded.{name}" for name in columns[1:]),
                list(values),
            )
            self._replace_conversation(conn, record.id, data.messages, data.parts, data.tool_parts)
            conn.execute("DELETE FROM todos WHERE session_id = ?", (record.id,))
            for position, todo in enumerate(data.todos):
                execute(
                    conn,
                    "INSERT INTO todos (session_id, position, id, content, status, priority) "
                    "VALUES (?,?,?,?,?,?)",
                    [
                        record.id,
                        position,
                        todo["id"],
                        todo["content"],
                        todo["status"],
                        todo["priority"],
                    ],
                )
            conn.execute("DELETE FROM session_state WHERE session_id = ?", (record.id,))
            for key, value in data.state.items():
                execute(
                    conn,
                    "INSERT INTO session_state (session_id, key, value) VALUES (?,?,?)",
                    [record.id, key, dumps(value)],
                )

    def approval_records(self) -> list[ApprovalRecord]:
        """Every remembered approval of every project, in creation order."""
        rows = self._query(f"SELECT {_APPROVAL_FIELDS} FROM approvals ORDER BY created, seq")
        return [ApprovalRecord(*row) for row in rows]

    def import_approval(self, record: ApprovalRecord) -> None:
        """Store ``record`` as it is (its id and time); an approval here with its id or with its
        meaning (project, session, permission, pattern, directory) is replaced. Importing an
        approval already here as it is changes nothing."""
        values = astuple(record)
        with self._write() as conn:
            same = conn.execute(
                f"SELECT {_APPROVAL_FIELDS} FROM approvals WHERE id = ?", (record.id,)
            ).fetchone()
            if same is not None and tuple(same) == values:
                return
            execute(
                conn,
                f"INSERT OR REPLACE INTO approvals ({_APPROVAL_FIELDS}) VALUES (?,?,?,?,?,?,?)",
                list(values),
            )

    def counts(self) -> dict[str, int]:
        """How many rows each kind of data has (``store check``, ``store migrate``)."""
        sql = ", ".join(f"(SELECT count(*) FROM {table})" for table in _COUNTED.values())
        row = self._query(f"SELECT {sql}")[0]
        return dict(zip(_COUNTED, (int(n) for n in row), strict=True))

    # -- project identity ------------------------------------------------------------------------

    def rekey_project(self, old: str, new: str) -> int:
        """Move the sessions and approvals stored under the project key ``old`` (a worktree's
        path, before projects were identified by their root commit) to ``new``; how many rows
        moved. A read when there is nothing to move. An approval already stored under ``new``
        with the same meaning is kept once."""
        if old == new:
            return 0
        found = self._query(
            "SELECT EXISTS (SELECT 1 FROM sessions WHERE project = ?) "
            "OR EXISTS (SELECT 1 FROM approvals WHERE project = ?)",
            (old, old),
        )
        if not found[0][0]:
            return 0
        with self._write() as conn:
            moved = conn.execute(
                "UPDATE sessions SET project = ? WHERE project = ?", (new, old)
            ).rowcount
            moved += conn.execute(
                "UPDATE OR IGNORE approvals SET project = ? WHERE project = ?", (new, old)
            ).rowcount
            conn.execute("DELETE FROM approvals WHERE project = ?", (old,))
        return moved


def _session_filter(
    project: str | None, host: str | None, conversations: bool
) -> tuple[list[str], list[Any]]:
    """The WHERE conditions (and their parameters) of a session listing."""
    where: list[str] = []
    params: list[Any] = []
    if project is not None:
        where.append("project = ?")
        params.append(project)
    if host is not None:
        where.append("host = ?")
        params.append(host)
    if conversations:
        where.append("origin IS NULL")
    return where, params


def _lease_live(pid: int, host: str, acquired: float, expires: float | None, now: float) -> bool:
    """Whether a lease still binds: not expired (a lock from before leases, without an
    expiry, lasts :data:`LEASE_TTL` from when it was taken), and not held by a dead process on
    this host."""
    until = float(expires) if expires is not None else float(acquired) + LEASE_TTL
    if until <= now:
        return False
    return host != socket.gethostname() or pid_alive(pid)


def parents_first(rows: list[tuple[Any, Any]]) -> list[str]:
    """The ids of ``(id, parent_id)`` rows in their order, except that a parent listed after
    its child moves before it (a session's clock may lag its parent's on another machine)."""
    parent_of = {str(id): parent for id, parent in rows}
    out: list[str] = []
    done: set[str] = set()
    for id, _parent in rows:
        chain: list[str] = []
        node: str | None = str(id)
        while node is not None and node not in done and node in parent_of and node not in chain:
            chain.append(node)
            node = parent_of[node]
        for item in reversed(chain):
            done.add(item)
            out.append(item)
    return out


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this machine (a zombie counts as dead)."""
    from hookcode.guardian import pid_alive as alive

    return alive(pid)
