"""The audit log in PostgreSQL: what ``PostgresStore.audit_log()`` returns, the log the audit
plugin writes with ``[audit] to = "store"`` (:class:`hookcode.store.audit_log.AuditLogStore`).

One table, ``audit_log``: a row per line, in ``seq`` order, with the line exactly as the audit
plugin built it and its :func:`~hookcode.store.audit_log.line_hash`, which the next line's
``prev`` repeats. Its own migrations (:data:`MIGRATIONS`, the component ``audit`` of
``hookcode_schema``) are applied the first time a process opens the log, under the same
advisory lock as the store's.

**Appending** is one transaction that first takes ``pg_advisory_xact_lock(``:data:`APPEND_LOCK`
``)``: every writer, in any process on any machine, waits for the one before it to commit,
then reads the head (the row with the highest ``seq``) and chains onto it. The ``prev`` handed
on is the head's stored hash, not a hash of its text as it is now: a last row edited by hand
does not become the base of a valid chain, the next line exposes it. A lost connection is
retried (:meth:`Database.run`); a retry first looks whether the lost attempt was committed
after all (its line is at the ``seq`` it was given) and then returns it instead of writing the
record twice, whatever other writers appended since.

**Append-only**: a trigger refuses ``UPDATE``, ``DELETE`` and ``TRUNCATE`` of the table. The
table's owner can drop or disable the trigger, so it stops mistakes, not the owner; what the
owner does to the rows ``hookcode audit verify`` finds (grant the agents' role no more than
``SELECT`` and ``INSERT`` on it where the log must stand up to them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from hookcode.store.audit_log import GENESIS, line_hash

from hookcode_store_postgres.database import apply_migrations, execute, storable

if TYPE_CHECKING:
    import psycopg

    from hookcode_store_postgres.database import Database

__all__ = ["APPEND_LOCK", "MIGRATIONS", "PostgresAuditLog"]

#: the ``pg_advisory_xact_lock`` key serializing appends (a fixed 64-bit number: "hookaudt")
APPEND_LOCK = 0x686F6F6B61756474
#: the component name of these tables in ``hookcode_schema``
COMPONENT = "audit"
#: lines read per statement by :meth:`PostgresAuditLog.lines`
_BATCH = 5000

MIGRATIONS: list[str] = [
    # 1: the log, and the trigger that keeps it append-only
    """
    CREATE TABLE audit_log (
        seq      bigint PRIMARY KEY CHECK (seq > 0),
        line     text NOT NULL,
        hash     text NOT NULL,
        written  double precision NOT NULL DEFAULT extract(epoch FROM clock_timestamp())
    );
    CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION USING MESSAGE = 'audit_log is append-only (' || TG_OP || ' refused)';
    END
    $$;
    CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
        FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
    CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
        FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();
    """,
]


class PostgresAuditLog:
    """The audit log of one PostgreSQL store (thread-safe: every call takes its own pooled
    connection)."""

    def __init__(self, database: Database) -> None:
        self._db = database
        database.run(lambda conn: apply_migrations(conn, COMPONENT, MIGRATIONS, database))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._db.location}>"

    def append(self, build: Callable[[int, str], str]) -> str:
        """Append the line ``build(seq, prev)`` makes, chained onto the head, in one
        transaction holding :data:`APPEND_LOCK`; returns it."""
        attempted: tuple[int, str] | None = None  # the seq and line of the last attempt

        def work(conn: psycopg.Connection) -> str:
            nonlocal attempted
            execute(conn, "SELECT pg_advisory_xact_lock(%s)", [APPEND_LOCK])
            if attempted is not None:  # a retry: was the lost attempt committed after all?
                seq, line = attempted
                row = execute(conn, "SELECT line FROM audit_log WHERE seq = %s", [seq]).fetchone()
                if row is not None and row[0] == line:
                    return line
            head = execute(
                conn, "SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1"
            ).fetchone()
            seq, prev = (int(head[0]) + 1, str(head[1])) if head else (1, GENESIS)
            line = storable(build(seq, prev))  # the text exactly as stored, and hashed
            attempted = (seq, line)
            execute(
                conn,
                "INSERT INTO audit_log (seq, line, hash) VALUES (%s, %s, %s)",
                [seq, line, line_hash(line)],
            )
            return line

        return self._db.run(work, atomic=True)

    def lines(self) -> Iterator[str]:
        """Every line in ``seq`` order (read in batches, each its own statement)."""
        after = 0
        while True:
            rows = self._db.query(
                "SELECT seq, line FROM audit_log WHERE seq > %s ORDER BY seq LIMIT %s",
                [after, _BATCH],
            )
            for _seq, line in rows:
                yield str(line)
            if len(rows) < _BATCH:
                return
            after = int(rows[-1][0])
