"""The store's schema: the SQL scripts that build the database, one per version.

The schema grows by appending SQL scripts to :data:`MIGRATIONS` (never edit a released one).
Script ``i`` takes the database from version ``i`` to ``i + 1``; the version lives in
``PRAGMA user_version``; :class:`hookcode.store.database.Database` applies them when it opens a file.

Tables: ``sessions`` (with ``parent_id`` for sub-agent sessions and the token/cost roll-ups),
``messages`` (one row per user/assistant message, its fields as JSON), ``parts`` (the parts of
a message in order; a ``tool`` part row only fixes the call's place, its state lives in
``tool_parts``, which :func:`hookcode.pipeline.invoke` writes as the call moves
pending -> running -> completed | error), ``approvals``, ``todos``, ``session_state``,
``session_locks`` (the lease of the process running a session: its host, pid and expiry; an
expired lease, or a dead pid's on this host, is taken over).

JSON columns are stored as text (``json.dumps``); times are float epoch seconds.
"""

from __future__ import annotations

__all__ = ["MIGRATIONS"]

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
    # 3: what started a session that is not a conversation (``tools call``): NULL for one
    """
    ALTER TABLE sessions ADD COLUMN origin TEXT;
    """,
    # 4: teams and fleets: the host and user that created a session; leases (a lock expires
    # unless renewed; NULL: an older lock, expired LEASE_TTL after it was acquired); the
    # directory an approval was given in (another clone's project approvals apply only in a
    # trusted folder), unique per directory too. Approvals so far were keyed by the worktree's
    # path: that path is the directory they were given in. ``sessions list`` asks for this
    # project's sessions on this host, newest first: one index answers it in order (``--all-hosts``
    # takes sessions_project_updated; a (host, updated) index would be picked for both filters
    # and read every row of a one-machine store).
    """
    ALTER TABLE sessions ADD COLUMN host TEXT;
    ALTER TABLE sessions ADD COLUMN user TEXT;
    CREATE INDEX sessions_project_host_updated ON sessions(project, host, updated, id);

    ALTER TABLE session_locks ADD COLUMN expires REAL;

    ALTER TABLE approvals ADD COLUMN directory TEXT;
    UPDATE approvals SET directory = project;
    DROP INDEX approvals_unique;
    CREATE UNIQUE INDEX approvals_unique
        ON approvals(project, ifnull(session_id, ''), permission, pattern, ifnull(directory, ''));
    """,
]
