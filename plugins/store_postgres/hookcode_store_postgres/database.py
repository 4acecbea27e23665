"""One PostgreSQL database shared by threads, processes and machines: how
:class:`~hookcode_store_postgres.postgres_store.PostgresStore` connects, migrates, runs its statements
and survives a server restart, apart from what it stores.

**Connections.** A :class:`psycopg_pool.ConnectionPool` (autocommit connections, grown on
demand up to :data:`POOL_MAX_SIZE`) is shared by the threads of one process. Each store
method takes a connection for its statements and gives it back; :meth:`Database.transaction`
pins one connection to the calling thread until the block ends, and the store's methods
called inside join it (a nested block is the same transaction).

**Faults.** A statement that fails because the connection was lost (the server restarted,
the network dropped; or, inside PostgreSQL, a serialization failure or deadlock) is run
again on a fresh connection, with a backoff, for at most :data:`RETRY_SECONDS` (or what
``HOOKCODE_STORE_RETRY_SECONDS`` sets: a database failover may take longer); then a
:class:`~hookcode.store.records.StoreError` says the store was unreachable for that long and
why. What is retried is always a whole unit the store owns: one method, in its own
transaction. Inside a :meth:`Database.transaction` block the caller owns the unit, so a lost
connection is retried only before the block's first statement has run (nothing written yet);
after that the block fails with a StoreError and nothing of it is committed.

A retried write may already have been committed when the connection broke (the server
committed, the acknowledgement was lost). Every write the store makes is idempotent on such a
retry, except :meth:`~hookcode_store_postgres.postgres_store.PostgresStore.add_session_usage` (the
counters may count one message twice) and the counts that ``mark_interrupted`` and
``recover_session`` return (the second run finds nothing left to mark).

**Writes behind.** A subclass may queue writes to be committed after their method returned
(:attr:`Database.behind`, a :class:`~hookcode_store_postgres.behind.WriteBehind`; the store
queues its tool-part saves there). Every statement :meth:`Database.run` runs for a caller, and
every :meth:`Database.transaction` block, first waits until the writes queued so far are
committed (:meth:`Database.flush`): whatever a caller reads or writes comes after every write
queued before it, from any thread. Statements inside an open block do not wait again (the
block's start did; waiting inside could wait for rows the block itself holds locked), but a
queued write's failure is raised by the next call either way. :meth:`Database.close` flushes
first.

**Secrets.** The URL's password is never in a message, a repr or a log line: the store is
named by :attr:`Database.location` (the URL with the password masked), and error texts are
scrubbed of the password before they are raised. Every other libpq option in the URL
(``sslmode``, ``sslrootcert``, ``connect_timeout``, ``application_name``, ...) reaches libpq
untouched.

**Migrations** (:func:`apply_migrations`): versioned lists of SQL scripts per component (the
store's tables, and any plugin's own), the versions kept in the table ``hookcode_schema``,
applied at open inside one transaction holding ``pg_advisory_xact_lock``, so processes opening
a new database at once apply them exactly once.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, LiteralString, Self, TypeVar, cast

from hookcode.store import StoreError, mask_url, url_passwords
from hookcode.store import storable as utf8_storable

if TYPE_CHECKING:
    import psycopg

    from hookcode_store_postgres.behind import WriteBehind

__all__ = [
    "CONNECT_TIMEOUT",
    "POOL_MAX_SIZE",
    "RETRY_SECONDS",
    "RETRY_VARIABLE",
    "Database",
    "Unreachable",
    "apply_migrations",
    "execute",
    "storable",
]

#: how long a lost connection is retried (with a doubling backoff) before a write fails (s)
RETRY_SECONDS = 10.0
#: the variable that sets another bound for a run
RETRY_VARIABLE = "HOOKCODE_STORE_RETRY_SECONDS"
#: the first pause between two attempts, doubled after each one up to :data:`_MAX_DELAY` (s)
_FIRST_DELAY = 0.05
_MAX_DELAY = 1.0
#: how long one attempt waits for a pooled connection before making one of its own (s)
_POOL_WAIT = 1.0
#: libpq's ``connect_timeout`` when the URL sets none (libpq's own default waits forever) (s)
CONNECT_TIMEOUT = 10
#: connections one process's pool may hold; it opens them only as threads need them
POOL_MAX_SIZE = 16
#: the ``pg_advisory_xact_lock`` key serializing migrations (any fixed 64-bit number)
_MIGRATION_LOCK = 0x686F6F6B636F6465  # "hookcode"
#: the table holding each component's schema version
VERSION_TABLE = "hookcode_schema"
#: connection failures that no retry mends (libpq reports them without an SQLSTATE)
_PERMANENT = re.compile(
    r"authentication failed|does not exist|SSL was required|does not support SSL|"
    r"no password supplied|pg_hba\.conf|certificate|invalid (?:connection option|sslmode|URI)|"
    r"invalid .* value|permission denied",
    re.IGNORECASE,
)
#: SQLSTATEs worth another attempt: the server shutting down or starting, the connection
#: failing, a serialization failure or deadlock (the transaction was rolled back)
_TRANSIENT_STATES = ("57P01", "57P02", "57P03")
_TRANSIENT_CLASSES = ("08", "40")

T = TypeVar("T")

# psycopg_pool reports each failed background reconnection as a warning; without a handler of
# the application's own Python would print each one on stderr (they name no password)
logging.getLogger("psycopg.pool").addHandler(logging.NullHandler())


def storable(value: Any) -> Any:
    """Text as PostgreSQL can hold it: a lone surrogate (as for SQLite, see
    :func:`hookcode.store.storable`) and a NUL character, which no PostgreSQL text
    holds, become ``?``; anything else is returned as it is."""
    if type(value) is str:
        value = utf8_storable(value)
        if "\x00" in value:
            value = value.replace("\x00", "?")
    return value


def execute(conn: psycopg.Connection, sql: str, params: Sequence[Any] = ()) -> psycopg.Cursor:
    """``conn.execute``; text PostgreSQL cannot take (NUL, a lone surrogate) is made storable
    and the statement sent again (psycopg refuses such text before sending anything, so
    nothing ran and a transaction around it is intact)."""
    import psycopg

    query = cast("LiteralString", sql)  # built by the store from its own constant pieces
    try:
        return conn.execute(query, params)
    except (UnicodeEncodeError, psycopg.DataError) as exc:
        if isinstance(exc, psycopg.DataError) and exc.sqlstate is not None:
            raise  # the server's own complaint: not about text it could not be sent
        return conn.execute(query, [storable(v) for v in params])


def _transient(exc: BaseException, conn: psycopg.Connection | None) -> bool:
    """Whether ``exc`` is a lost connection (or a rolled-back serialization conflict) that a
    fresh attempt may get past."""
    import psycopg

    if not isinstance(exc, psycopg.OperationalError):
        return False
    if conn is not None and (conn.closed or conn.broken):
        return True
    state = exc.sqlstate
    if state is None:
        return not _PERMANENT.search(str(exc))
    return state in _TRANSIENT_STATES or state[:2] in _TRANSIENT_CLASSES


class Unreachable(StoreError):
    """The store could not be reached for its whole retry bound (the message says so)."""


@dataclass
class _Pinned:
    """A thread's :meth:`Database.transaction`: its nesting depth, the connection it holds
    once its first statement ran, and the error that dooms it."""

    depth: int = 0
    conn: psycopg.Connection | None = None
    failed: BaseException | None = None


class Database:
    """The PostgreSQL database at ``url`` (a ``postgresql://`` or ``postgres://`` URL with any
    libpq options), brought to the schema ``migrations`` describe (component ``"store"``)."""

    def __init__(
        self, url: str, migrations: Sequence[str], *, retry_seconds: float = RETRY_SECONDS
    ) -> None:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict

        scheme, sep, rest = url.partition("://")
        self._url = scheme.lower() + sep + rest  # libpq knows the scheme in lower case only
        self._secrets = sorted(url_passwords(url), key=len, reverse=True)
        #: where the data lives, for messages: the URL with its password masked
        self.location = mask_url(url)
        #: how long a lost connection is retried before a write fails
        self.retry_seconds = retry_seconds
        self._local = threading.local()
        self._closed = False
        #: the writes queued to be committed after their method returned (a subclass's)
        self.behind: WriteBehind[Any, Any] | None = None
        #: connections made outside the pool (see :meth:`_attempt`), closed after their use
        self._own: set[psycopg.Connection] = set()
        try:
            options = conninfo_to_dict(self._url)
        except psycopg.Error as exc:
            raise StoreError(f"PostgreSQL store {self.location}: {self._text(exc)}") from None
        self._connect_options: dict[str, Any] = {"autocommit": True}
        if "connect_timeout" not in options:
            self._connect_options["connect_timeout"] = CONNECT_TIMEOUT
        conn = self._connect()
        try:
            apply_migrations(conn, "store", migrations, self)
        finally:
            conn.close()
        from psycopg_pool import ConnectionPool

        self._pool: ConnectionPool = ConnectionPool(
            self._url,
            kwargs=self._connect_options,
            min_size=1,
            max_size=POOL_MAX_SIZE,
            open=True,
            name="hookcode-store",
            num_workers=2,
        )

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.location}>"

    # -- messages -----------------------------------------------------------------------------

    def _text(self, exc: BaseException) -> str:
        """``exc`` in one line, without the password."""
        text = " ".join(str(exc).split()) or type(exc).__name__
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    def _error(self, exc: BaseException) -> StoreError:
        return StoreError(f"PostgreSQL store {self.location}: {self._text(exc)}")

    def _unreachable(self, cause: BaseException | None) -> StoreError:
        reason = self._text(cause) if cause is not None else "no connection"
        return Unreachable(
            f"PostgreSQL store {self.location} unreachable for {self.retry_seconds:g} s: {reason}"
        )

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"PostgreSQL store {self.location}: the store is closed")

    # -- connecting ----------------------------------------------------------------------------

    def _connect(self) -> psycopg.Connection:
        """A connection of its own (not the pool's), retried within :attr:`retry_seconds`
        while the server cannot be reached."""
        return self._retrying(self._connect_once)

    def _connect_once(self, deadline: float) -> _Done[psycopg.Connection] | BaseException:
        """One attempt of :meth:`_connect`: a connection, or the transient failure to retry;
        a failure no retry mends (authentication, TLS required, no such database) raises."""
        import psycopg

        try:
            return _Done(psycopg.connect(self._url, **self._connect_options))
        except psycopg.Error as exc:
            if not _transient(exc, None):
                raise StoreError(
                    f"PostgreSQL store {self.location}: cannot connect: {self._text(exc)}"
                ) from None
            return exc

    def _retrying(self, attempt: Callable[[float], _Done[T] | BaseException]) -> T:
        """``attempt(deadline)`` until it succeeds, pausing between attempts (doubling from
        :data:`_FIRST_DELAY` to :data:`_MAX_DELAY`); after :attr:`retry_seconds`, a
        StoreError saying the store was unreachable and the last failure."""
        deadline = time.monotonic() + self.retry_seconds
        delay = _FIRST_DELAY
        while True:
            outcome = attempt(deadline)
            if isinstance(outcome, _Done):
                return outcome.value
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._unreachable(outcome) from None
            time.sleep(min(delay, remaining))
            delay = min(delay * 2, _MAX_DELAY)

    # -- running statements --------------------------------------------------------------------

    def flush(self) -> None:
        """Wait until the writes queued behind (:attr:`behind`) so far are committed; raise
        the StoreError of one that failed (every time, from then on). Inside this thread's :meth:`transaction`
        block only the failure is raised: the block's start waited already."""
        behind = self.behind
        if behind is not None:
            behind.flush(wait=getattr(self._local, "pinned", None) is None)

    def run(self, work: Callable[[psycopg.Connection], T], *, atomic: bool = False) -> T:
        """``work(conn)``: in the calling thread's :meth:`transaction` if one is open, else on
        a pooled connection (in a transaction of its own when ``atomic``), retried on a fresh
        connection while the connection is lost, for at most :attr:`retry_seconds`. First,
        the writes queued behind are committed (:meth:`flush`).

        ``work`` must be safe to run again after a lost connection (see the module's notes);
        psycopg errors become :class:`StoreError`, anything else ``work`` raises passes.
        """
        self.flush()
        return self.run_now(work, atomic=atomic)

    def run_now(self, work: Callable[[psycopg.Connection], T], *, atomic: bool = False) -> T:
        """:meth:`run` without waiting for the writes queued behind: how the writer thread
        commits them."""
        pinned: _Pinned | None = getattr(self._local, "pinned", None)
        if pinned is not None and (pinned.conn is not None or pinned.failed is not None):
            return self._in_transaction(pinned, work)
        self._check_open()
        return self._retrying(
            lambda deadline: self._attempt(work, deadline, atomic=atomic, pinned=pinned)
        )

    def _attempt(
        self,
        work: Callable[[psycopg.Connection], T],
        deadline: float,
        *,
        atomic: bool,
        pinned: _Pinned | None,
    ) -> _Done[T] | BaseException:
        """One attempt of :meth:`run`: its result, or the transient failure to retry.

        With ``pinned`` (a :meth:`transaction` block none of whose statements ran yet) the
        connection begins the block's transaction and stays pinned to it after ``work``,
        unless the connection was lost (then nothing of the block ran: it is retried)."""
        import psycopg

        self._check_open()
        try:
            wait = min(max(deadline - time.monotonic(), 0.01), _POOL_WAIT)
            conn = self._pool.getconn(timeout=wait)
        except psycopg.OperationalError:  # PoolTimeout: the pool has none to give now
            self._check_open()
            # the pool's own reconnection backs off for seconds after the server is back
            # (or its connections are all in use): a connection of this attempt's own
            own = self._connect_once(deadline)
            if not isinstance(own, _Done):
                return own
            conn = own.value
            self._own.add(conn)
        keep = False
        try:
            if pinned is not None:
                execute(conn, "BEGIN")
                pinned.conn, keep = conn, True
                return _Done(work(conn))
            if atomic:
                with conn.transaction():
                    return _Done(work(conn))
            return _Done(work(conn))
        except psycopg.Error as exc:
            if not _transient(exc, conn):
                if pinned is not None:
                    pinned.failed = exc  # the block's end rolls it back
                raise self._error(exc) from None
            if pinned is not None:
                pinned.conn, keep = None, False
                self._rollback(conn)
            self._pool.check()  # the other idle connections likely died with this one
            return exc
        finally:
            if not keep:
                self._give_back(conn)

    def _give_back(self, conn: psycopg.Connection) -> None:
        """Return a pooled connection to the pool; close one of an attempt's own."""
        if conn in self._own:
            self._own.discard(conn)
            conn.close()
        else:
            self._pool.putconn(conn)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group several writes into one transaction (committed at the end, rolled back on an
        exception); the store's own methods called inside, in this thread, join it, and so does
        a nested block.

        The connection is taken when the first statement runs; a connection lost before then
        is retried like any write. A statement that fails inside dooms the transaction: it
        raises, and the block's end rolls everything back and raises a StoreError even if the
        caller caught the first one."""
        pinned: _Pinned | None = getattr(self._local, "pinned", None)
        if pinned is not None:
            pinned.depth += 1
            try:
                yield
            finally:
                pinned.depth -= 1
            return
        self._check_open()
        self.flush()
        pinned = self._local.pinned = _Pinned(depth=1)
        try:
            yield
        except BaseException:
            self._end(pinned, commit=False)
            raise
        self._end(pinned, commit=True)

    def _in_transaction(self, pinned: _Pinned, work: Callable[[psycopg.Connection], T]) -> T:
        """``work`` on the connection a :meth:`transaction` block holds (after its first
        statement): never retried, the block is the caller's."""
        import psycopg

        if pinned.failed is not None:
            raise StoreError(
                f"PostgreSQL store {self.location}: the transaction failed earlier and will be "
                f"rolled back: {self._text(pinned.failed)}"
            )
        conn = pinned.conn
        assert conn is not None
        try:
            return work(conn)
        except psycopg.Error as exc:
            pinned.failed = exc
            if _transient(exc, conn):
                raise StoreError(
                    f"PostgreSQL store {self.location}: connection lost inside a transaction "
                    f"(rolled back, nothing of it written): {self._text(exc)}"
                ) from None
            raise self._error(exc) from None

    @staticmethod
    def _rollback(conn: psycopg.Connection) -> None:
        import psycopg

        if not (conn.closed or conn.broken):
            with suppress(psycopg.Error):
                conn.execute("ROLLBACK")

    def _end(self, pinned: _Pinned, *, commit: bool) -> None:
        """End a thread's :meth:`transaction`: commit (unless a statement in it failed) or
        roll back, and give the connection back."""
        import psycopg

        self._local.pinned = None
        conn = pinned.conn
        if conn is None:
            return
        try:
            if commit and pinned.failed is None:
                try:
                    conn.execute("COMMIT")
                except psycopg.Error as exc:
                    raise StoreError(
                        f"PostgreSQL store {self.location}: the transaction may not have been "
                        f"committed: {self._text(exc)}"
                    ) from None
            else:
                self._rollback(conn)
        finally:
            self._give_back(conn)
        if commit and pinned.failed is not None:
            raise StoreError(
                f"PostgreSQL store {self.location}: the transaction was rolled back: a "
                f"statement in it failed: {self._text(pinned.failed)}"
            )

    # -- the rest ------------------------------------------------------------------------------

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of one read-only statement."""
        return self.run(lambda conn: execute(conn, sql, params).fetchall())

    @property
    def version(self) -> int:
        """The schema version of the store's tables."""
        rows = self.query(f"SELECT version FROM {VERSION_TABLE} WHERE component = 'store'")
        return int(rows[0][0]) if rows else 0

    def close(self) -> None:
        """Commit the writes queued behind (raising the StoreError of one that failed), then
        close the pool's connections (idempotent)."""
        if self._closed:
            return
        try:
            if self.behind is not None:
                self.behind.close()
        finally:
            self._closed = True
            self._pool.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


@dataclass
class _Done(Generic[T]):
    """A successful attempt's result (told apart from a failure to retry)."""

    value: T


def apply_migrations(
    conn: psycopg.Connection,
    component: str,
    migrations: Sequence[str],
    database: Database,
) -> int:
    """Bring ``component``'s tables to ``len(migrations)``: script ``i`` takes them from
    version ``i`` to ``i + 1`` (append scripts, never edit a released one). One transaction
    holding ``pg_advisory_xact_lock``: concurrent openers wait, and find the work done. A
    version newer than ``migrations`` knows is a StoreError naming both; a failing script
    rolls everything back. Returns the version. Errors name ``database``'s location."""
    import psycopg

    try:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", [_MIGRATION_LOCK])
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {VERSION_TABLE} "
                "(component text PRIMARY KEY, version integer NOT NULL)"
            )
            row = conn.execute(
                f"SELECT version FROM {VERSION_TABLE} WHERE component = %s", [component]
            ).fetchone()
            version = int(row[0]) if row else 0
            if version > len(migrations):
                raise StoreError(
                    f"PostgreSQL store {database.location}: database schema "
                    f"version {version} ({component}) is newer than this hookcode knows "
                    f"({len(migrations)}); upgrade hookcode-store-postgres"
                )
            for script in migrations[version:]:
                execute(conn, script)
            if version < len(migrations):
                conn.execute(
                    f"INSERT INTO {VERSION_TABLE} (component, version) VALUES (%s, %s) "
                    "ON CONFLICT (component) DO UPDATE SET version = excluded.version",
                    [component, len(migrations)],
                )
            return len(migrations)
    except psycopg.Error as exc:
        raise database._error(exc) from None
