"""The SQLite store: sessions, their messages and parts, tool parts, remembered approvals,
todos, per-session provider state and session locks.

Tables: ``sessions`` (with ``parent_id`` for sub-agent sessions and the token/cost roll-ups),
``messages`` (one row per user/assistant message, its fields as JSON), ``parts`` (the parts of
a message in order; a ``tool`` part row only fixes the call's place, its state lives in
``tool_parts``, which :func:`hookcode.pipeline.invoke` writes as the call moves
pending -> running -> completed | error), ``approvals``, ``todos``, ``session_state``,
``session_locks`` (the pid running a session; a dead pid's lock is taken over).

One :class:`Store` wraps one ``sqlite3`` connection guarded by a re-entrant lock, so threads of
one process may share it. Several processes may open the same file: the database runs in WAL
mode with a 5 s busy timeout, and every write is its own ``BEGIN IMMEDIATE`` transaction,
committed before the method returns. A process killed at any moment therefore leaves a
consistent database holding every write that returned.

The schema grows by appending SQL scripts to :data:`MIGRATIONS` (never edit a released one).
Script ``i`` takes the database from version ``i`` to ``i + 1``; the version lives in
``PRAGMA user_version``. Opening a database that is newer than this code raises
:class:`StoreError`.

JSON columns are stored as text (``json.dumps``); times are float epoch seconds.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import astuple, dataclass, field, replace
from pathlib import Path
from typing import Any

from hookcode.datadir import private_dir, private_file
from hookcode.errors import HookcodeError
from hookcode.ids import new_id

__all__ = [
    "MIGRATIONS",
    "ApprovalRecord",
    "SessionBusy",
    "SessionRecord",
    "Store",
    "StoreError",
    "ToolPartRecord",
]

MIGRATIONS: list[str] = [
    # 1: the foundation's tables
    """
    CREATE TABLE sessions (
        id          TEXT PRIMARY KEY,
        project     TEXT NOT NULL,
        directory   TEXT NOT NULL,
        title       TEXT NOT NULL DEFAULT '',
        agent       TEXT NOT NULL,
        model       TEXT,
        parent_id   TEXT REFERENCES sessions(id) ON DELETE CASCADE,
        created     REAL NOT NULL,
        updated     REAL NOT NULL,
        cost        REAL NOT NULL DEFAULT 0,
        tokens_in   INTEGER NOT NULL DEFAULT 0,
        tokens_out  INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX sessions_project_updated ON sessions(project, updated);
    CREATE INDEX sessions_parent ON sessions(parent_id);

    CREATE TABLE tool_parts (
        seq         INTEGER PRIMARY KEY,
        id          TEXT NOT NULL UNIQUE,
        session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        message_id  TEXT,
        tool        TEXT NOT NULL,
        state       TEXT NOT NULL,
        input       TEXT NOT NULL DEFAULT 'null',
        output      TEXT,
        title       TEXT,
        metadata    TEXT NOT NULL DEFAULT '{}',
        attachments TEXT NOT NULL DEFAULT '[]',
        error       TEXT,
        time_start  REAL,
        time_end    REAL
    );
    CREATE INDEX tool_parts_session ON tool_parts(session_id, seq);

    CREATE TABLE approvals (
        seq         INTEGER PRIMARY KEY,
        id          TEXT NOT NULL UNIQUE,
        project     TEXT NOT NULL,
        session_id  TEXT REFERENCES sessions(id) ON DELETE CASCADE,
        permission  TEXT NOT NULL,
        pattern     TEXT NOT NULL,
        created     REAL NOT NULL
    );
    CREATE UNIQUE INDEX approvals_unique
        ON approvals(project, ifnull(session_id, ''), permission, pattern);
    CREATE INDEX approvals_session ON approvals(session_id);
    """,
    # 2: the agent loop's tables: messages and their parts, todos, per-session provider state,
    # session locks; token roll-ups on sessions; raw input and pruning on tool parts
    """
    ALTER TABLE sessions ADD COLUMN tokens_reasoning INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sessions ADD COLUMN tokens_cache_read INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sessions ADD COLUMN tokens_cache_write INTEGER NOT NULL DEFAULT 0;

    ALTER TABLE tool_parts ADD COLUMN raw TEXT;
    ALTER TABLE tool_parts ADD COLUMN compacted REAL;

    CREATE TABLE messages (
        seq         INTEGER PRIMARY KEY,
        id          TEXT NOT NULL UNIQUE,
        session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        role        TEXT NOT NULL,
        created     REAL NOT NULL,
        data        TEXT NOT NULL DEFAULT '{}'
    );
    CREATE INDEX messages_session ON messages(session_id, seq);

    CREATE TABLE parts (
        seq         INTEGER PRIMARY KEY,
        id          TEXT NOT NULL UNIQUE,
        session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        message_id  TEXT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
        type        TEXT NOT NULL,
        data        TEXT NOT NULL DEFAULT '{}'
    );
    CREATE INDEX parts_session ON parts(session_id, seq);
    CREATE INDEX parts_message ON parts(message_id, seq);

    CREATE TABLE todos (
        session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        position    INTEGER NOT NULL,
        id          TEXT NOT NULL,
        content     TEXT NOT NULL,
        status      TEXT NOT NULL DEFAULT 'pending',
        priority    TEXT NOT NULL DEFAULT 'medium',
        PRIMARY KEY (session_id, position)
    );

    CREATE TABLE session_state (
        session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        key         TEXT NOT NULL,
        value       TEXT NOT NULL,
        PRIMARY KEY (session_id, key)
    );

    CREATE TABLE session_locks (
        session_id  TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
        pid         INTEGER NOT NULL,
        host        TEXT NOT NULL,
        acquired    REAL NOT NULL
    );
    """,
]

_SESSION_FIELDS = (
    "id, project, directory, title, agent, model, parent_id, created, updated, "
    "cost, tokens_in, tokens_out, tokens_reasoning, tokens_cache_read, tokens_cache_write"
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
_PART_COLUMNS = (
    "id",
    "session_id",
    "message_id",
    "tool",
    "state",
    "input",
    "output",
    "title",
    "metadata",
    "attachments",
    "error",
    "time_start",
    "time_end",
)
_PART_JSON_COLUMNS = ("input", "metadata", "attachments")
_PART_FIELDS = ", ".join(_PART_COLUMNS)
_PART_UPSERT = (
    f"INSERT INTO tool_parts ({_PART_FIELDS}) VALUES ({', '.join('?' * len(_PART_COLUMNS))}) "
    "ON CONFLICT(id) DO UPDATE SET "
    + ", ".join(f"{name} = excluded.{name}" for name in _PART_COLUMNS[1:])
)
_APPROVAL_FIELDS = "id, project, session_id, permission, pattern, created"


#: how long a write waits for another process's lock (ms)
BUSY_TIMEOUT_MS = 5000
#: commits between two WAL checkpoints. A thread of the store's own runs them: SQLite's
#: automatic checkpoint runs inside whichever commit crosses its threshold and makes the
#: commits pay for it (about a quarter of a small commit's cost, on average, here)
CHECKPOINT_EVERY = 256


class StoreError(HookcodeError):
    """The store cannot be used as asked; the message names the database file."""


@dataclass
class SessionRecord:
    id: str
    project: str
    directory: str
    title: str
    agent: str
    model: str | None
    parent_id: str | None
    created: float
    updated: float
    cost: float = 0.0
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_reasoning: int = 0
    tokens_cache_read: int = 0
    tokens_cache_write: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The public shape (``sessions list --json``)."""
        return {
            "id": self.id,
            "title": self.title,
            "parent_id": self.parent_id,
            "agent": self.agent,
            "model": self.model,
            "created": self.created,
            "updated": self.updated,
            "cost": self.cost,
        }


class SessionBusy(StoreError):
    """Another live process is running the session (``pid``)."""

    def __init__(self, session_id: str, pid: int, host: str):
        super().__init__(
            f"session {session_id} is busy: another hookcode process (pid {pid}"
            + ("" if host == socket.gethostname() else f" on {host}")
            + ") is running it"
        )
        self.session_id = session_id
        self.pid = pid
        self.host = host


@dataclass
class ToolPartRecord:
    id: str  # the call id
    session_id: str
    tool: str
    state: str  # "pending" | "running" | "completed" | "error"
    input: Any = None  # JSON-compatible
    message_id: str | None = None
    output: str | None = None
    title: str | None = None
    metadata: dict = field(default_factory=dict)
    attachments: list = field(default_factory=list)
    error: str | None = None
    time_start: float | None = None
    time_end: float | None = None


@dataclass
class ApprovalRecord:
    id: str
    project: str
    session_id: str | None  # None = project scope
    permission: str
    pattern: str
    created: float


#: what ``json.dumps(value, ensure_ascii=False)`` builds on every call, built once
_ENCODER = json.JSONEncoder(ensure_ascii=False)


def _dumps(value: Any) -> str:
    if not value and type(value) in (dict, list):  # most parts' metadata or attachments
        return "{}" if type(value) is dict else "[]"
    return _ENCODER.encode(value)


def _execute(conn: sqlite3.Connection, statement: str, values: list[Any]) -> sqlite3.Cursor:
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


def _split_statements(script: str) -> list[str]:
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


class Store:
    """The SQLite store at ``path`` (created with its parent directories; ``":memory:"`` works)."""

    def __init__(self, path: Path | str) -> None:
        self.path: Path | str = path if str(path) == ":memory:" else Path(path)
        self._lock = threading.RLock()
        self._depth = 0  # nesting of _write() blocks on this connection
        #: approvals() answers by (project, session_id), valid while this connection has not
        #: written through _write() and ``PRAGMA data_version`` (which changes when another
        #: connection commits) reads the same as when they were cached
        self._approvals_cache: dict[tuple[str, str | None], list[ApprovalRecord]] = {}
        self._approvals_version: int | None = None
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
        if version > len(MIGRATIONS):
            raise StoreError(
                f"{self.path}: database schema version {version} is newer than this hookcode "
                f"knows ({len(MIGRATIONS)}); upgrade hookcode or use another data directory"
            )

    def _migrate(self) -> None:
        self._check_version(self._read_version())
        if self._read_version() == len(MIGRATIONS):
            return
        with self._write() as conn:
            # re-read inside the write lock: another process may have migrated meanwhile
            version = self._read_version()
            self._check_version(version)
            for number in range(version, len(MIGRATIONS)):
                for statement in _split_statements(MIGRATIONS[number]):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {number + 1}")

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
            self._approvals_cache.clear()  # any write may touch approvals (cascades too)
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

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

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
        self, project: str | None = None, *, parent: bool | None = None, limit: int | None = None
    ) -> list[SessionRecord]:
        """Sessions, most recently updated first.

        ``project`` filters by project; ``parent=False`` keeps top-level sessions only,
        ``parent=True`` child sessions only.
        """
        where: list[str] = []
        params: list[Any] = []
        if project is not None:
            where.append("project = ?")
            params.append(project)
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

    # -- tool parts ----------------------------------------------------------------------------

    def save_tool_part(self, part: ToolPartRecord) -> None:
        """Insert or replace the part with ``part.id``; a replaced part keeps its position."""
        values = [
            _dumps(getattr(part, name)) if name in _PART_JSON_COLUMNS else getattr(part, name)
            for name in _PART_COLUMNS
        ]
        with self._lock:
            if self._depth:  # inside a transaction(): join it
                with self._write() as conn:
                    _execute(conn, _PART_UPSERT, values)
                return
            # a single statement outside a transaction is its own transaction (autocommit,
            # taking the write lock at once like BEGIN IMMEDIATE), committed before execute
            # returns: the same guarantee as _write() in one statement instead of three
            try:
                _execute(self._conn, _PART_UPSERT, values)
            except sqlite3.Error as exc:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise StoreError(f"{self.path}: {exc}") from exc
            self._committed()

    @staticmethod
    def _part(row: tuple) -> ToolPartRecord:
        data = dict(zip(_PART_COLUMNS, row, strict=True))
        for name in _PART_JSON_COLUMNS:
            data[name] = json.loads(data[name])
        return ToolPartRecord(**data)

    def get_tool_part(self, id: str) -> ToolPartRecord | None:
        rows = self._query(f"SELECT {_PART_FIELDS} FROM tool_parts WHERE id = ?", (id,))
        return self._part(rows[0]) if rows else None

    def tool_parts(self, session_id: str) -> list[ToolPartRecord]:
        """The session's tool parts in the order they were first saved."""
        rows = self._query(
            f"SELECT {_PART_FIELDS} FROM tool_parts WHERE session_id = ? ORDER BY seq",
            (session_id,),
        )
        return [self._part(row) for row in rows]

    def mark_interrupted(self, session_id: str, message: str = "Tool execution aborted") -> int:
        """Turn the session's pending/running parts into errors with ``message``; return how many."""
        with self._write() as conn:
            cursor = conn.execute(
                "UPDATE tool_parts SET state = 'error', error = ?, time_end = ? "
                "WHERE session_id = ? AND state IN ('pending', 'running')",
                (message, time.time(), session_id),
            )
            return cursor.rowcount

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
                self._approvals_cache.clear()
                return self._approval_rows(project, session_id)
            try:
                version = self._conn.execute("PRAGMA data_version").fetchone()[0]
            except sqlite3.Error as exc:
                raise StoreError(f"{self.path}: {exc}") from exc
            if version != self._approvals_version:
                self._approvals_cache.clear()
                self._approvals_version = version
            key = (project, session_id)
            cached = self._approvals_cache.get(key)
            if cached is None:
                if len(self._approvals_cache) >= 256:
                    self._approvals_cache.clear()
                cached = self._approvals_cache[key] = self._approval_rows(project, session_id)
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

    def sessions_json(self, project: str | None = None) -> list[str]:
        """``sessions list --json`` objects as JSON texts, most recently updated first (built
        by SQLite: fast for many sessions)."""
        sql = (
            "SELECT json_object('id', id, 'title', title, 'parent_id', parent_id, 'agent', "
            "agent, 'model', model, 'created', created, 'updated', updated, 'cost', cost) "
            "FROM sessions"
        )
        params: list[Any] = []
        if project is not None:
            sql += " WHERE project = ?"
            params.append(project)
        sql += " ORDER BY updated DESC, id DESC"
        return [row[0] for row in self._query(sql, params)]

    def latest_session(self, project: str, *, top_level: bool = True) -> SessionRecord | None:
        """The project's most recently updated (top-level) session."""
        found = self.list_sessions(project, parent=False if top_level else None, limit=1)
        return found[0] if found else None

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

    # -- messages and parts --------------------------------------------------------------------

    def save_message(self, message: dict[str, Any]) -> None:
        """Insert or update a message: ``{"id", "session_id", "role", "created", ...}``; every
        other key is kept in its JSON ``data`` (parts are saved on their own)."""
        data = {
            k: v
            for k, v in message.items()
            if k not in ("id", "session_id", "role", "created", "parts")
        }
        with self._write() as conn:
            _execute(
                conn,
                "INSERT INTO messages (id, session_id, role, created, data) VALUES (?,?,?,?,?) "
                "ON CONFLICT(id) DO UPDATE SET data = excluded.data",
                [
                    message["id"],
                    message["session_id"],
                    message["role"],
                    message["created"],
                    _dumps(data),
                ],
            )

    def save_part(self, part: dict[str, Any]) -> None:
        """Insert or update a message part: ``{"id", "session_id", "message_id", "type", ...}``.

        A ``tool`` part row only fixes the call's place in its message (``call_id``); the call's
        state lives in ``tool_parts`` (:meth:`save_tool_part`)."""
        data = {
            k: v for k, v in part.items() if k not in ("id", "session_id", "message_id", "type")
        }
        with self._write() as conn:
            _execute(
                conn,
                "INSERT INTO parts (id, session_id, message_id, type, data) VALUES (?,?,?,?,?) "
                "ON CONFLICT(id) DO UPDATE SET data = excluded.data",
                [part["id"], part["session_id"], part["message_id"], part["type"], _dumps(data)],
            )

    def delete_part(self, id: str) -> None:
        with self._write() as conn:
            conn.execute("DELETE FROM parts WHERE id = ?", (id,))

    def set_tool_raw(self, id: str, raw: str) -> None:
        """The raw input text of a pending call, as streamed so far."""
        with self._write() as conn:
            conn.execute("UPDATE tool_parts SET raw = ? WHERE id = ?", (storable(raw), id))

    def set_compacted(self, ids: list[str], when: float | None = None) -> None:
        """Mark tool outputs as pruned (sent to the model as a placeholder from now on)."""
        when = time.time() if when is None else when
        with self._write() as conn:
            conn.executemany(
                "UPDATE tool_parts SET compacted = ? WHERE id = ?", [(when, i) for i in ids]
            )

    def messages(self, session_id: str) -> list[dict[str, Any]]:
        """The session's messages in order, each with its ``parts`` in order (tool parts with
        their ``state`` from ``tool_parts``); plain JSON-compatible dicts."""
        out: list[dict[str, Any]] = []
        by_id: dict[str, dict[str, Any]] = {}
        for id, role, created, data in self._query(
            "SELECT id, role, created, data FROM messages WHERE session_id = ? ORDER BY seq",
            (session_id,),
        ):
            message = {"id": id, "session_id": session_id, "role": role, "created": created}
            message.update(json.loads(data))
            message["parts"] = []
            by_id[id] = message
            out.append(message)
        rows = self._query(
            "SELECT p.id, p.message_id, p.type, p.data, t.tool, t.state, t.input, t.raw, "
            "t.output, t.title, t.metadata, t.attachments, t.error, t.time_start, t.time_end, "
            "t.compacted FROM parts p LEFT JOIN tool_parts t ON t.id = json_extract(p.data, "
            "'$.call_id') WHERE p.session_id = ? ORDER BY p.seq",
            (session_id,),
        )
        for row in rows:
            message = by_id.get(row[1])
            if message is None:
                continue
            part: dict[str, Any] = {"id": row[0], "type": row[2]}
            part.update(json.loads(row[3]))
            if row[2] == "tool":
                if row[5] is None:  # the call's state row is missing: nothing to show
                    continue
                part["tool"] = row[4]
                part["state"] = {
                    "status": row[5],
                    "input": json.loads(row[6]) if row[6] else {},
                    "raw": row[7],
                    "output": row[8],
                    "error": row[12],
                    "title": row[9],
                    "metadata": json.loads(row[10]) if row[10] else {},
                    "attachments": json.loads(row[11]) if row[11] else [],
                    "time": {"start": row[13], "end": row[14], "compacted": row[15]},
                }
            message["parts"].append(part)
        return out

    def recover_session(self, session_id: str, message: str = "Tool execution aborted") -> int:
        """After a process died mid-step: its pending/running tool parts become errors with
        ``message`` (``metadata.interrupted`` set) and its unfinished assistant messages are
        closed with an error. Returns how many tool parts were marked."""
        now = time.time()
        with self._write() as conn:
            count = conn.execute(
                "UPDATE tool_parts SET state = 'error', error = ?, time_end = ?, "
                "metadata = json_set(CASE WHEN json_valid(metadata) THEN metadata ELSE '{}' END, "
                "'$.interrupted', json('true')) "
                "WHERE session_id = ? AND state IN ('pending', 'running')",
                (message, now, session_id),
            ).rowcount
            conn.execute(
                "UPDATE messages SET data = json_set(json_set(data, '$.completed', ?), "
                "'$.error', coalesce(json_extract(data, '$.error'), 'interrupted')) "
                "WHERE session_id = ? AND role = 'assistant' "
                "AND json_extract(data, '$.completed') IS NULL",
                (now, session_id),
            )
        return count

    # -- per-session state (providers keep small values here) ----------------------------------

    def get_state(self, session_id: str, key: str) -> Any:
        rows = self._query(
            "SELECT value FROM session_state WHERE session_id = ? AND key = ?", (session_id, key)
        )
        return json.loads(rows[0][0]) if rows else None

    def set_state(self, session_id: str, key: str, value: Any) -> None:
        with self._write() as conn:
            _execute(
                conn,
                "INSERT OR REPLACE INTO session_state (session_id, key, value) VALUES (?,?,?)",
                [session_id, key, _dumps(value)],
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
    from hookcode.process import pid_alive as alive

    return alive(pid)
