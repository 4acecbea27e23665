"""One SQLite database file shared by threads and processes: how :class:`hookcode.store.Store`
opens, migrates and writes it, apart from what it stores.

One :class:`Database` wraps one ``sqlite3`` connection guarded by a re-entrant lock, so threads
of one process may share it. Several processes may open the same file: the database runs in WAL
mode with a 5 s busy timeout, and every write is its own ``BEGIN IMMEDIATE`` transaction,
committed before the method returns. A process killed at any moment therefore leaves a
consistent database holding every write that returned.

Opening applies the migrations (:mod:`hookcode.store.schema`) the file lacks; opening a database
that is newer than this code raises :class:`~hookcode.store.records.StoreError`.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

from hookcode.datadir import private_dir, private_file
from hookcode.store.records import StoreError

__all__ = [
    "BUSY_TIMEOUT_MS",
    "CHECKPOINT_EVERY",
    "Database",
    "dumps",
    "execute",
    "split_statements",
    "storable",
]

#: how long a write waits for another process's lock (ms)
BUSY_TIMEOUT_MS = 5000
#: commits between two WAL checkpoints. A thread of the store's own runs them: SQLite's
#: automatic checkpoint runs inside whichever commit crosses its threshold and makes the
#: commits pay for it (about a quarter of a small commit's cost, on average, here)
CHECKPOINT_EVERY = 256

#: what ``json.dumps(value, ensure_ascii=False)`` builds on every call, built once
_ENCODER = json.JSONEncoder(ensure_ascii=False)


def dumps(value: Any) -> str:
    if not value and type(value) in (dict, list):  # most parts' metadata or attachments
        return "{}" if type(value) is dict else "[]"
    return _ENCODER.encode(value)


def execute(conn: sqlite3.Connection, statement: str, values: list[Any]) -> sqlite3.Cursor:
    """``conn.execute``; text that SQLite cannot take (a lone surrogate) is made storable and
    the statement run again (nothing was written: the values are encoded before it runs)."""
    try:
        return conn.execute(statement, values)
    except UnicodeEncodeError:
        return conn.execute(statement, [storable(v) for v in values])


def storable(value: Any) -> Any:
    """Text as SQLite (and any UTF-8 file) can hold it: a lone surrogate (a byte that was not
    UTF-8, kept by ``surrogateescape``, or a JSON ``\\udcff`` from a model) becomes ``?``
    instead of failing the write; anything else is returned as it is."""
    if type(value) is str and not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "replace").decode("utf-8")
    return value


def split_statements(script: str) -> list[str]:
    """Split an SQL script into complete statements (triggers and quoted ``;`` stay whole)."""
    statements: list[str] = []
    pending = ""
    *pieces, last = script.split(";")
    for piece in pieces:
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \t\r\n;"):
                statements.append(pending.strip())
            pending = ""
    pending += last
    if pending.strip():
        statements.append(pending.strip())  # a last statement without ';'
    return statements


class _Checkpointer:
    """Runs ``PRAGMA wal_checkpoint(PASSIVE)`` on a connection and a daemon thread of its own
    each time it is woken (PASSIVE: it never waits for, or blocks, a reader or a writer).
    A checkpoint that fails (the database is busy) is left to the next one."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._wake = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(
            target=self._run, name=f"hookcode-store-checkpoint {path.name}", daemon=True
        )
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def _run(self) -> None:
        try:
            conn = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
        except sqlite3.Error:
            return  # the committing connections go on; the WAL is checkpointed when closed
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._stopping:
                    return
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        finally:
            conn.close()

    def stop(self) -> None:
        self._stopping = True
        self._wake.set()
        self._thread.join(timeout=10)


class Database:
    """The SQLite database at ``path`` (created with its parent directories; ``":memory:"``
    works), brought to the schema ``migrations`` describe."""

    def __init__(self, path: Path | str, migrations: Sequence[str]) -> None:
        self.path: Path | str = path if str(path) == ":memory:" else Path(path)
        self._migrations = migrations
        self._lock = threading.RLock()
        self._depth = 0  # nesting of _write() blocks on this connection
        #: answers the store caches (approvals(), by (project, session_id)), valid while this
        #: connection has not written through _write() and ``PRAGMA data_version`` (which
        #: changes when another connection commits) reads the same as when they were cached
        self._cache: dict[Any, Any] = {}
        self._cache_version: int | None = None
        self._commits = 0  # since the last checkpoint was asked for
        self._checkpointer: _Checkpointer | None = None  # started by the first checkpoint
        if isinstance(self.path, Path):
            try:
                private_dir(self.path.parent, tighten=False)
            except OSError as exc:
                raise StoreError(f"{self.path}: cannot create its directory: {exc}") from exc
            try:
                # private from the start: SQLite gives the -wal and -shm files the mode of the
                # database file (an existing one readable by others is tightened first)
                private_file(self.path)
                for suffix in ("-wal", "-shm"):
                    with contextlib.suppress(FileNotFoundError):
                        private_file(f"{self.path}{suffix}", create=False)
            except OSError as exc:
                raise StoreError(f"{self.path}: cannot open the database: {exc}") from exc
        try:
            self._conn = sqlite3.connect(
                str(self.path), isolation_level=None, check_same_thread=False, timeout=5.0
            )
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot open the database: {exc}") from exc
        try:
            self._configure()
            self._migrate()
        except BaseException:
            self._conn.close()
            raise

    # -- connection and migrations ------------------------------------------------------------

    def _configure(self) -> None:
        # Switching a new database to WAL needs an exclusive lock, and SQLite may answer
        # "database is locked" at once (without the busy handler) while another process is
        # creating the same database: retry for as long as the busy timeout would wait.
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        while True:
            try:
                conn = self._conn
                conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                    conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
                conn.execute("PRAGMA foreign_keys = ON")
                if isinstance(self.path, Path):
                    conn.execute("PRAGMA wal_autocheckpoint = 0")  # see _committed()
                return
            except sqlite3.OperationalError as exc:
                busy = "locked" in str(exc) or "busy" in str(exc)
                if not busy or time.monotonic() >= deadline:
                    raise StoreError(f"{self.path}: cannot open the database: {exc}") from exc
                time.sleep(0.02)
            except sqlite3.Error as exc:
                raise StoreError(f"{self.path}: cannot open the database: {exc}") from exc

    def _check_version(self, version: int) -> None:
        if version > len(self._migrations):
            raise StoreError(
                f"{self.path}: database schema version {version} is newer than this hookcode "
                f"knows ({len(self._migrations)}); upgrade hookcode or use another data directory"
            )

    def _migrate(self) -> None:
        self._check_version(self._read_version())
        if self._read_version() == len(self._migrations):
            return
        with self._write() as conn:
            # re-read inside the write lock: another process may have migrated meanwhile
            version = self._read_version()
            self._check_version(version)
            for number in range(version, len(self._migrations)):
                for statement in split_statements(self._migrations[number]):
                    conn.execute(statement)
                self._migrated(conn, number + 1)
                conn.execute(f"PRAGMA user_version = {number + 1}")

    def _migrated(self, conn: sqlite3.Connection, version: int) -> None:
        """After the script that brought the database to ``version``, in its transaction:
        what SQL alone cannot do (a subclass's business; nothing here)."""

    def _read_version(self) -> int:
        try:
            with self._lock:
                return int(self._conn.execute("PRAGMA user_version").fetchone()[0])
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot read the database: {exc}") from exc

    @property
    def version(self) -> int:
        """The schema version of the database (``PRAGMA user_version``)."""
        return self._read_version()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction, committed on exit; nested blocks join it."""
        with self._lock:
            self._cache.clear()  # any write may touch what is cached (cascades too)
            if self._depth:
                self._depth += 1
                try:
                    yield self._conn
                finally:
                    self._depth -= 1
                return
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise StoreError(f"{self.path}: cannot write: {exc}") from exc
            self._depth = 1
            try:
                yield self._conn
            except BaseException as exc:
                self._depth = 0
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise StoreError(f"{self.path}: {exc}") from exc
                raise
            self._depth = 0
            try:
                self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise StoreError(f"{self.path}: cannot commit: {exc}") from exc
            self._committed()

    def _committed(self) -> None:
        """Count a commit; every CHECKPOINT_EVERY, wake the checkpoint thread (this
        connection's automatic checkpoint is off)."""
        self._commits += 1
        if self._commits >= CHECKPOINT_EVERY and isinstance(self.path, Path):
            self._commits = 0
            if self._checkpointer is None:
                self._checkpointer = _Checkpointer(self.path)
            self._checkpointer.wake()

    def transaction(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """Group several writes into one transaction (committed at the end, rolled back on an
        exception); the store's own write methods called inside join it."""
        return self._write()

    def flush(self) -> None:
        """Nothing to wait for: every write was committed before its method returned."""

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """Several reads that see one snapshot of the database (one read transaction; inside
        a write, they join it)."""
        with self._lock:
            if self._depth or self._conn.in_transaction:
                yield
                return
            try:
                self._conn.execute("BEGIN")
            except sqlite3.Error as exc:
                raise StoreError(f"{self.path}: cannot read: {exc}") from exc
            try:
                yield
            finally:
                if self._conn.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        self._conn.execute("COMMIT")

    def _query(self, sql: str, params: tuple | list = ()) -> list[tuple]:
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"{self.path}: {exc}") from exc

    def close(self) -> None:
        """Close the connection (idempotent); the last connection to close checkpoints the
        WAL into the database."""
        with self._lock:
            checkpointer, self._checkpointer = self._checkpointer, None
            if checkpointer is not None:
                checkpointer.stop()
            self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
