"""The PostgreSQL store (:class:`PostgresStore`): one database shared by a team or a fleet of
agents, implementing :class:`hookcode.store.Store` with the SQLite store's semantics.

Its parts, by what each owns:

- :mod:`hookcode_store_postgres.database`: connecting (a pool shared by threads), transactions,
  retrying a lost connection, errors without passwords, migrations;
- :mod:`hookcode_store_postgres.schema`: the tables (:data:`MIGRATIONS`);
- :mod:`hookcode_store_postgres.messages`: messages, their parts and the tool parts;
- this module: sessions and their roll-ups, remembered approvals, session leases, per-session
  state and todos, and moving whole sessions between stores.

Every write outside :meth:`~hookcode_store_postgres.database.Database.transaction` is its own
transaction, committed before the method returns. Leases are timed by the server's clock
(``now()``), the one clock every machine sharing the database agrees on.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Sequence
from dataclasses import astuple
from typing import TYPE_CHECKING, Any, LiteralString, cast

from hookcode.ids import new_id
from hookcode.store import (
    LEASE_TTL,
    ApprovalRecord,
    SessionBusy,
    SessionExport,
    SessionRecord,
    StoreError,
    dumps,
    pid_alive,
)
from hookcode.store.queries import (
    Queries,
    approval_key,
    exported_todo_rows,
    first_session,
    new_session,
    state_values,
    todo_dicts,
    todo_rows,
)
from hookcode.store.reads import StoreReads

from hookcode_store_postgres import schema
from hookcode_store_postgres.database import RETRY_SECONDS, execute, storable
from hookcode_store_postgres.messages import MessageStore

if TYPE_CHECKING:
    import psycopg

    from hookcode_store_postgres.audit import PostgresAuditLog

__all__ = ["PostgresStore"]

#: the SQL this store runs as every SQL store does (psycopg's placeholder)
_SQL = Queries("%s")
_APPROVAL_MEANING = (
    "project = %s AND coalesce(session_id, '') = %s AND permission = %s AND pattern = %s "
    "AND coalesce(directory, '') = %s"
)
#: the server's clock as float epoch seconds
_NOW = "extract(epoch FROM now())::double precision"


class PostgresStore(MessageStore, StoreReads):
    """The PostgreSQL store at ``url`` (``postgresql://user:password@host:port/db?options``,
    any libpq option passed through): a :class:`~hookcode.store.Store` for a team."""

    _sql = _SQL

    def __init__(self, url: str, *, retry_seconds: float = RETRY_SECONDS) -> None:
        super().__init__(url, schema.MIGRATIONS, retry_seconds=retry_seconds)
        self._audit_log: PostgresAuditLog | None = None

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The reads :class:`StoreReads` makes, as every read here (:meth:`query`)."""
        return self.query(sql, params)

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
        """A new session, recording this host and user. Idempotent on retry: a session
        already there with this very record (our own insert, committed before a lost
        connection) counts as created; any other with its id is an error."""
        record = new_session(
            project=storable(project),
            directory=storable(directory),
            title=storable(title),
            agent=agent,
            model=model,
            parent_id=parent_id,
            id=id,
            origin=origin,
        )
        values = astuple(record)

        def insert(conn: psycopg.Connection) -> None:
            inserted = execute(
                conn, f"{_SQL.insert_session} ON CONFLICT (id) DO NOTHING RETURNING 1", values
            ).fetchone()
            if inserted is None:
                row = execute(conn, _SQL.get_session, [record.id]).fetchone()
                if row is None or SessionRecord(*row) != record:
                    raise StoreError(
                        f"PostgreSQL store {self.location}: a session {record.id!r} already exists"
                    )

        self.run(insert)
        return record

    def sessions_json(
        self, project: str | None = None, *, conversations: bool = False, host: str | None = None
    ) -> list[str]:
        """``sessions list --json`` objects as JSON texts, most recently updated first, as
        :meth:`SessionRecord.to_dict` builds them: built by the server when a session is
        written (the ``listing`` column), so listing many sessions reads one column.
        ``conversations`` and ``host``: as in :meth:`list_sessions`."""
        sql, params = _SQL.listing("listing", project, conversations=conversations, host=host)
        return [row[0] for row in self.query(sql, params)]

    def update_session(self, id: str, /, **fields: Any) -> None:
        """Set ``fields`` (title, agent, model, cost, tokens_in, ...) and bump ``updated``."""
        sql, params = _SQL.update_session(id, fields, time.time())

        def update(conn: psycopg.Connection) -> None:
            cursor = execute(conn, sql, params)
            if cursor.rowcount == 0:
                raise StoreError(f"PostgreSQL store {self.location}: no session {id!r}")

        self.run(update)

    def delete_session(self, id: str) -> None:
        """Delete a session with its messages, tool parts, approvals and child sessions."""
        self.run(lambda conn: execute(conn, _SQL.delete_session, [id]))

    def add_session_usage(self, id: str, /, *, cost: float = 0.0, **tokens: int) -> None:
        """Add a message's cost and tokens (``tokens_in``, ``tokens_out``, ...) to its session.
        The one write that is not idempotent on retry: if the connection breaks just as the
        server commits, the message may be counted twice."""
        sql, params = _SQL.add_session_usage(id, cost, tokens, time.time())
        self.run(lambda conn: execute(conn, sql, params))

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
        one is returned instead of a duplicate (so a retry adds nothing)."""
        pattern = storable(pattern)
        key = approval_key(project, session_id, permission, pattern, directory)
        row = [new_id("apr"), project, session_id, permission, pattern, time.time(), directory]

        # one statement: the new row, or the one already there. A row another process
        # committed after this statement's snapshot makes the insert do nothing yet stays
        # unseen by the select: the next statement (a new snapshot) sees it
        fields = _SQL.approval_fields
        statement = (
            f"WITH added AS (INSERT INTO approvals ({fields}) VALUES ({_SQL.approval_values}) "
            f"ON CONFLICT DO NOTHING RETURNING {fields}) "
            f"SELECT {fields} FROM added UNION ALL "
            f"(SELECT {fields} FROM approvals WHERE {_APPROVAL_MEANING}) LIMIT 1"
        )

        def add(conn: psycopg.Connection) -> ApprovalRecord:
            for _attempt in range(3):
                found = execute(conn, statement, [*row, *key]).fetchone()
                if found is not None:
                    return ApprovalRecord(*found)
            raise StoreError(
                f"PostgreSQL store {self.location}: the approval {permission} {pattern!r} was "
                "removed as fast as it was added"
            )

        return self.run(add)

    def approvals(self, *, project: str, session_id: str | None = None) -> list[ApprovalRecord]:
        """The project's project-scoped approvals, then (given ``session_id``) that session's;
        each group in creation order."""
        return [ApprovalRecord(*row) for row in self.query(_SQL.approvals, [project, session_id])]

    def remove_approval(self, id: str) -> bool:
        return self.run(lambda conn: execute(conn, _SQL.remove_approval, [id]).rowcount > 0)

    def clear_approvals(self, *, project: str, session_id: str | None = None) -> int:
        """Delete the approvals of one scope: the project's (``session_id=None``) or the
        session's; return how many."""
        return self.run(
            lambda conn: (
                execute(
                    conn,
                    "DELETE FROM approvals WHERE project = %s AND coalesce(session_id, '') = %s",
                    [project, session_id or ""],
                ).rowcount
            )
        )

    # -- session leases ------------------------------------------------------------------------

    def lock_session(self, id: str, pid: int | None = None, *, ttl: float = LEASE_TTL) -> None:
        """Take (or renew) the session's lease for ``pid`` (default: this process) on this
        host, for ``ttl`` seconds of the server's clock.

        The lease is free when nobody holds it, when it has expired, or when its holder is a
        dead process on this host; otherwise :class:`SessionBusy`. One transaction: the row is
        inserted if missing (``ON CONFLICT DO NOTHING`` waits for a racing insert) and read
        ``FOR UPDATE`` otherwise, so of two processes (or machines) racing, exactly one wins.
        Idempotent on retry (the same holder renews).
        """
        pid = os.getpid() if pid is None else pid
        host = socket.gethostname()

        def take(conn: psycopg.Connection) -> None:
            taken = execute(
                conn,
                "INSERT INTO session_locks (session_id, pid, host, acquired, expires) "
                f"VALUES (%s, %s, %s, {_NOW}, {_NOW} + %s) "
                "ON CONFLICT (session_id) DO NOTHING RETURNING 1",
                [id, pid, host, float(ttl)],
            ).fetchone()
            if taken is not None:
                return
            row = execute(
                conn,
                f"SELECT pid, host, expires <= {_NOW} FROM session_locks "
                "WHERE session_id = %s FOR UPDATE",
                [id],
            ).fetchone()
            if row is not None:
                held_pid, held_host, expired = int(row[0]), str(row[1]), bool(row[2])
                ours = held_pid == pid and held_host == host
                dead = held_host == host and not pid_alive(held_pid)
                if not (ours or expired or dead):
                    raise SessionBusy(id, held_pid, held_host)
            execute(
                conn,
                "INSERT INTO session_locks (session_id, pid, host, acquired, expires) "
                f"VALUES (%s, %s, %s, {_NOW}, {_NOW} + %s) ON CONFLICT (session_id) DO UPDATE "
                "SET pid = excluded.pid, host = excluded.host, acquired = excluded.acquired, "
                "expires = excluded.expires",
                [id, pid, host, float(ttl)],
            )

        self.run(take, atomic=True)

    def renew_session_lock(
        self, id: str, pid: int | None = None, *, ttl: float = LEASE_TTL
    ) -> bool:
        """Extend our lease to ``ttl`` from now (the server's clock); False if we no longer
        hold it (another process took it over, or it was released)."""
        pid = os.getpid() if pid is None else pid
        return self.run(
            lambda conn: (
                execute(
                    conn,
                    f"UPDATE session_locks SET expires = {_NOW} + %s "
                    "WHERE session_id = %s AND pid = %s AND host = %s",
                    [float(ttl), id, pid, socket.gethostname()],
                ).rowcount
                > 0
            )
        )

    def unlock_session(self, id: str, pid: int | None = None) -> None:
        """Release the lease if ``pid`` (default: this process) on this host holds it."""
        pid = os.getpid() if pid is None else pid
        self.run(lambda conn: execute(conn, _SQL.unlock_session, [id, pid, socket.gethostname()]))

    def session_lock(self, id: str) -> tuple[int, str] | None:
        """``(pid, host)`` of the live holder of the session's lease, if any."""
        rows = self.query(
            f"SELECT pid, host, expires <= {_NOW} FROM session_locks WHERE session_id = %s", [id]
        )
        if not rows:
            return None
        pid, host, expired = int(rows[0][0]), str(rows[0][1]), bool(rows[0][2])
        if expired or (host == socket.gethostname() and not pid_alive(pid)):
            return None
        return pid, host

    # -- per-session state (providers keep small values here) ----------------------------------

    def set_state(self, session_id: str, key: str, value: Any) -> None:
        values = [session_id, key, dumps(value)]
        self.run(
            lambda conn: execute(
                conn,
                "INSERT INTO session_state (session_id, key, value) VALUES (%s, %s, %s) "
                "ON CONFLICT (session_id, key) DO UPDATE SET value = excluded.value",
                values,
            )
        )

    # -- todos ---------------------------------------------------------------------------------

    def set_todos(self, session_id: str, todos: list[dict[str, Any]]) -> None:
        """Replace the session's todo list (``{"id", "content", "status", "priority"}`` each)."""
        rows = todo_rows(session_id, todos)

        def replace(conn: psycopg.Connection) -> None:
            execute(conn, _SQL.delete_todos, [session_id])
            _insert_todos(conn, rows)

        self.run(replace, atomic=True)

    # -- moving data between stores (``hookcode store migrate``) --------------------------------

    def export_session(self, id: str) -> SessionExport | None:
        """Everything stored about one session (not its children), read in one snapshot
        (a ``REPEATABLE READ`` transaction)."""

        # inside a caller's transaction, read in it (SET TRANSACTION must come first)
        snapshot = getattr(self._local, "pinned", None) is None

        def read(conn: psycopg.Connection) -> SessionExport | None:
            if snapshot:
                execute(conn, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            record = first_session(execute(conn, _SQL.get_session, [id]).fetchall())
            if record is None:
                return None
            messages, parts, tool_parts = self._conversation(conn, id)
            return SessionExport(
                session=record,
                messages=messages,
                parts=parts,
                tool_parts=tool_parts,
                todos=todo_dicts(execute(conn, _SQL.todos, [id]).fetchall()),
                state=state_values(execute(conn, _SQL.session_state, [id]).fetchall()),
            )

        return self.run(read, atomic=True)

    def import_session(self, data: SessionExport) -> None:
        """Write an exported session in one transaction: a session already here is replaced
        (its record, messages, parts, tool parts, todos and state become the export's; its
        child sessions, approvals and lease stay). Idempotent, so retried whole."""
        record = data.session
        values = astuple(record)
        todos = exported_todo_rows(record.id, data.todos)

        def write(conn: psycopg.Connection) -> None:
            execute(conn, _SQL.import_session, values)
            self._replace_conversation(conn, record.id, data.messages, data.parts, data.tool_parts)
            execute(conn, _SQL.delete_todos, [record.id])
            _insert_todos(conn, todos)
            execute(conn, _SQL.delete_state, [record.id])
            for key, value in data.state.items():
                execute(conn, _SQL.insert_state, [record.id, key, dumps(value)])

        self.run(write, atomic=True)

    def import_approval(self, record: ApprovalRecord) -> None:
        """Store ``record`` as it is (its id and time); an approval here with its id or with
        its meaning (project, session, permission, pattern, directory) is replaced. Importing
        an approval already here as it is changes nothing (idempotent)."""
        values = list(astuple(record))
        meaning = approval_key(
            record.project, record.session_id, record.permission, record.pattern, record.directory
        )

        def write(conn: psycopg.Connection) -> None:
            same = execute(conn, _SQL.approval, [record.id]).fetchone()
            if same is not None and tuple(same) == tuple(values):
                return
            execute(
                conn,
                f"DELETE FROM approvals WHERE id = %s OR ({_APPROVAL_MEANING})",
                [record.id, *meaning],
            )
            execute(
                conn,
                f"INSERT INTO approvals ({_SQL.approval_fields}) VALUES ({_SQL.approval_values})",
                values,
            )

        self.run(write, atomic=True)

    # -- project identity ------------------------------------------------------------------------

    def rekey_project(self, old: str, new: str) -> int:
        """Move the sessions and approvals stored under the project key ``old`` (a worktree's
        path, before projects were identified by their root commit) to ``new``; how many rows
        moved. A read when there is nothing to move. An approval already stored under ``new``
        with the same meaning is kept once."""
        if not self._rekeys(old, new):
            return 0

        def move(conn: psycopg.Connection) -> int:
            moved = execute(conn, _SQL.rekey_sessions, [new, old]).rowcount
            # an approval whose meaning is already under ``new`` stays behind, then goes
            moved += execute(
                conn,
                "UPDATE approvals a SET project = %s WHERE project = %s AND NOT EXISTS ("
                "SELECT 1 FROM approvals b WHERE b.project = %s "
                "AND coalesce(b.session_id, '') = coalesce(a.session_id, '') "
                "AND b.permission = a.permission AND b.pattern = a.pattern "
                "AND coalesce(b.directory, '') = coalesce(a.directory, ''))",
                [new, old, new],
            ).rowcount
            execute(conn, _SQL.drop_project_approvals, [old])
            return moved

        return self.run(move, atomic=True)

    # -- the audit log ([audit] to = "store") ----------------------------------------------------

    def audit_log(self) -> PostgresAuditLog:
        """The audit log kept in this database (:mod:`hookcode_store_postgres.audit`), its
        table created or upgraded on first use: the audit plugin's with ``[audit] to =
        "store"``."""
        if self._audit_log is None:
            from hookcode_store_postgres.audit import PostgresAuditLog

            self._audit_log = PostgresAuditLog(self)
        return self._audit_log


def _insert_todos(conn: psycopg.Connection, rows: list[list[Any]]) -> None:
    if not rows:
        return
    sql = cast("LiteralString", _SQL.insert_todo)  # built from core's constant pieces
    with conn.cursor() as cursor:
        try:
            cursor.executemany(sql, rows)
        except UnicodeEncodeError:
            cursor.executemany(sql, [[storable(v) for v in row] for row in rows])
        except Exception as exc:
            import psycopg

            if not isinstance(exc, psycopg.DataError) or exc.sqlstate is not None:
                raise
            cursor.executemany(sql, [[storable(v) for v in row] for row in rows])
