"""The SQLite store: sessions, tool parts and remembered approvals.

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

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import astuple, dataclass, field
from pathlib import Path
from typing import Any

from hookcode.errors import HookcodeError
from hookcode.ids import new_id

__all__ = [
    "MIGRATIONS",
    "ApprovalRecord",
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
]

_SESSION_FIELDS = (
    "id, project, directory, title, agent, model, parent_id, created, updated, "
    "cost, tokens_in, tokens_out"
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
        "updated",
    }
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


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


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


class Store:
    """The SQLite store at ``path`` (created with its parent directories; ``":memory:"`` works)."""

    def __init__(self, path: Path | str) -> None:
        self.path: Path | str = path if str(path) == ":memory:" else Path(path)
        self._lock = threading.RLock()
        self._depth = 0  # nesting of _write() blocks on this connection
        if isinstance(self.path, Path):
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"{self.path}: cannot create its directory: {exc}") from exc
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
        try:
            conn = self._conn
            conn.execute("PRAGMA busy_timeout = 5000")
            if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
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

    def _query(self, sql: str, params: tuple | list = ()) -> list[tuple]:
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"{self.path}: {exc}") from exc

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
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
            title=title,
            agent=agent,
            model=model,
            parent_id=parent_id,
            created=now,
            updated=now,
        )
        with self._write() as conn:
            conn.execute(
                f"INSERT INTO sessions ({_SESSION_FIELDS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
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
        with self._write() as conn:
            conn.execute(_PART_UPSERT, values)

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
        key = (project, session_id or "", permission, pattern)
        select = (
            f"SELECT {_APPROVAL_FIELDS} FROM approvals WHERE project = ? "
            "AND ifnull(session_id, '') = ? AND permission = ? AND pattern = ?"
        )
        with self._write() as conn:
            conn.execute(
                f"INSERT OR IGNORE INTO approvals ({_APPROVAL_FIELDS}) VALUES (?,?,?,?,?,?)",
                (new_id("apr"), project, session_id, permission, pattern, time.time()),
            )
            row = conn.execute(select, key).fetchone()
        return ApprovalRecord(*row)

    def approvals(self, *, project: str, session_id: str | None = None) -> list[ApprovalRecord]:
        """The project's project-scoped approvals, then (given ``session_id``) that session's;
        each group in creation order."""
        rows = self._query(
            f"SELECT {_APPROVAL_FIELDS} FROM approvals WHERE project = ? "
            "AND (session_id IS NULL OR session_id = ?) "
            "ORDER BY session_id IS NOT NULL, seq",
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
