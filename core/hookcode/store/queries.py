"""The SQL and the row shapes every store shares (:class:`Queries`): the one place for what the
SQLite store (:class:`hookcode.store.SQLiteStore`) and another SQL store (the PostgreSQL
plugin's) do the same way.

A store builds one :class:`Queries` with its driver's placeholder (``"?"`` for sqlite3, ``"%s"``
for psycopg) and runs what it hands out: the session columns and records, a session listing's
``WHERE``/``ORDER BY``/``LIMIT``, the updates of a session's fields and usage (and their
validation), the lookups, the counts, the statements that move a project's key, and the rows
of todos and state as they are stored, listed, exported and imported. What each database spells
its own way stays in its store: upserts, JSON functions, locks, the clock.

Public as a module (``from hookcode.store.queries import Queries``). Column names are quoted:
``user`` is a reserved word in PostgreSQL (SQLite takes the quotes too).
"""

from __future__ import annotations

import json
import socket
import time
from dataclasses import fields
from typing import Any

from hookcode.ids import new_id
from hookcode.store.database import dumps
from hookcode.store.records import ApprovalRecord, SessionRecord, ToolPartRecord, current_user

__all__ = [
    "APPROVAL_COLUMNS",
    "COUNTED",
    "EXPORTED_TOOL_PART_COLUMNS",
    "MESSAGE_COLUMNS",
    "PART_COLUMNS",
    "SESSION_COLUMNS",
    "TOOL_PART_COLUMNS",
    "TOOL_PART_FIELDS",
    "UPDATABLE_SESSION_FIELDS",
    "USAGE_FIELDS",
    "Queries",
    "approval_key",
    "assembled_messages",
    "counted",
    "exported_conversation",
    "exported_todo_rows",
    "first_session",
    "new_session",
    "session_records",
    "state_values",
    "todo_dicts",
    "todo_rows",
    "tool_part_record",
    "tool_part_values",
]

#: the ``sessions`` columns, in :class:`SessionRecord`'s order (a row builds a record)
SESSION_COLUMNS = tuple(f.name for f in fields(SessionRecord))
#: the ``approvals`` columns, in :class:`ApprovalRecord`'s order
APPROVAL_COLUMNS = tuple(f.name for f in fields(ApprovalRecord))
#: what ``update_session`` may set
UPDATABLE_SESSION_FIELDS = frozenset(
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
USAGE_FIELDS = frozenset(
    {"tokens_in", "tokens_out", "tokens_reasoning", "tokens_cache_read", "tokens_cache_write"}
)
#: what ``counts()`` counts, by key (each key is its table)
COUNTED = ("sessions", "messages", "parts", "tool_parts", "approvals", "todos", "session_state")
#: above every id that starts with a prefix: ``id >= prefix AND id < prefix + _PAST``
_PAST = "\U0010ffff"


def _quoted(columns: tuple[str, ...]) -> str:
    return ", ".join(f'"{name}"' for name in columns)


class Queries:
    """The statements both stores run alike, written with the placeholder ``mark``; built once
    per store module. Attributes are complete statements; methods build the ones whose shape
    depends on their arguments and return ``(sql, params)``."""

    def __init__(self, mark: str) -> None:
        self.mark = mark
        p = mark
        #: the session columns (quoted), for ``SELECT`` and ``INSERT``
        self.session_fields = _quoted(SESSION_COLUMNS)
        #: the approval columns, for ``SELECT`` and ``INSERT``
        self.approval_fields = ", ".join(APPROVAL_COLUMNS)
        #: the placeholders of one approval row
        self.approval_values = ", ".join([p] * len(APPROVAL_COLUMNS))
        self.insert_session = (
            f"INSERT INTO sessions ({self.session_fields}) "
            f"VALUES ({', '.join([p] * len(SESSION_COLUMNS))})"
        )
        #: an exported session's record, replacing the one with its id (``import_session``)
        self.import_session = f"{self.insert_session} ON CONFLICT (id) DO UPDATE SET " + ", ".join(
            f'"{name}" = excluded."{name}"' for name in SESSION_COLUMNS[1:]
        )
        self.get_session = f"SELECT {self.session_fields} FROM sessions WHERE id = {p}"
        self.delete_session = f"DELETE FROM sessions WHERE id = {p}"
        self.children = (
            f"SELECT {self.session_fields} FROM sessions WHERE parent_id = {p} ORDER BY created, id"
        )
        #: every session, oldest first, for :func:`~hookcode.store.parents_first`
        self.session_ids = "SELECT id, parent_id FROM sessions ORDER BY created, id"
        #: a project's approvals, then (given a session) that session's; each in creation order
        self.approvals = (
            f"SELECT {self.approval_fields} FROM approvals WHERE project = {p} "
            f"AND (session_id IS NULL OR session_id = {p}) ORDER BY session_id IS NOT NULL, seq"
        )
        self.approval = f"SELECT {self.approval_fields} FROM approvals WHERE id = {p}"
        self.approval_records = (
            f"SELECT {self.approval_fields} FROM approvals ORDER BY created, seq"
        )
        self.remove_approval = f"DELETE FROM approvals WHERE id = {p}"
        self.get_state = f"SELECT value FROM session_state WHERE session_id = {p} AND key = {p}"
        self.session_state = (
            f"SELECT key, value FROM session_state WHERE session_id = {p} ORDER BY key"
        )
        self.insert_state = (
            f"INSERT INTO session_state (session_id, key, value) VALUES ({p}, {p}, {p})"
        )
        self.delete_state = f"DELETE FROM session_state WHERE session_id = {p}"
        self.todos = (
            "SELECT id, content, status, priority FROM todos "
            f"WHERE session_id = {p} ORDER BY position"
        )
        self.insert_todo = (
            "INSERT INTO todos (session_id, position, id, content, status, priority) "
            f"VALUES ({p}, {p}, {p}, {p}, {p}, {p})"
        )
        self.delete_todos = f"DELETE FROM todos WHERE session_id = {p}"
        self.unlock_session = (
            f"DELETE FROM session_locks WHERE session_id = {p} AND pid = {p} AND host = {p}"
        )
        #: one row of :data:`COUNTED`'s counts (:func:`counted` names them)
        self.counts = "SELECT " + ", ".join(f"(SELECT count(*) FROM {t})" for t in COUNTED)
        #: ``rekey_project``: whether anything is stored under the old key (params: old, old)
        self.project_used = (
            f"SELECT EXISTS (SELECT 1 FROM sessions WHERE project = {p}) "
            f"OR EXISTS (SELECT 1 FROM approvals WHERE project = {p})"
        )
        #: ``rekey_project``: the sessions move (params: new, old)
        self.rekey_sessions = f"UPDATE sessions SET project = {p} WHERE project = {p}"
        #: ``rekey_project``: the approvals left under the old key (already under the new one)
        self.drop_project_approvals = f"DELETE FROM approvals WHERE project = {p}"

    def listing(
        self,
        select: str,
        project: str | None = None,
        *,
        parent: bool | None = None,
        limit: int | None = None,
        conversations: bool = False,
        host: str | None = None,
    ) -> tuple[str, list[Any]]:
        """``SELECT select FROM sessions``, most recently updated first: ``project`` filters by
        project, ``host`` by the machine that created them; ``parent=False`` keeps top-level
        sessions only, ``parent=True`` child sessions only; ``conversations`` leaves out the
        sessions with an ``origin`` (``tools call``)."""
        where: list[str] = []
        params: list[Any] = []
        if project is not None:
            where.append(f"project = {self.mark}")
            params.append(project)
        if host is not None:
            where.append(f"host = {self.mark}")
            params.append(host)
        if conversations:
            where.append("origin IS NULL")
        if parent is True:
            where.append("parent_id IS NOT NULL")
        elif parent is False:
            where.append("parent_id IS NULL")
        sql = f"SELECT {select} FROM sessions"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY updated DESC, id DESC"
        if limit is not None:
            sql += f" LIMIT {self.mark}"
            params.append(limit)
        return sql, params

    def latest_session(self, project: str, *, top_level: bool = True) -> tuple[str, list[Any]]:
        """The project's most recently updated (top-level) conversation (``--continue``)."""
        return self.listing(
            self.session_fields,
            project,
            parent=False if top_level else None,
            limit=1,
            conversations=True,
        )

    def sessions_by_prefix(self, prefix: str, limit: int) -> tuple[str, list[Any]]:
        """The sessions whose id starts with ``prefix`` (case matters; at most ``limit``), in
        id order."""
        sql = (
            f"SELECT {self.session_fields} FROM sessions "
            f"WHERE id >= {self.mark} AND id < {self.mark} ORDER BY id LIMIT {self.mark}"
        )
        return sql, [prefix, prefix + _PAST, limit]

    def update_session(self, id: str, changes: dict[str, Any], now: float) -> tuple[str, list[Any]]:
        """Set ``changes`` and ``updated`` (``now`` unless ``changes`` sets it); ValueError
        naming a field ``update_session`` may not set."""
        unknown = sorted(set(changes) - UPDATABLE_SESSION_FIELDS)
        if unknown:
            raise ValueError(f"unknown session field(s): {', '.join(unknown)}")
        values = {"updated": now, **changes}
        assignments = ", ".join(f"{name} = {self.mark}" for name in values)
        return f"UPDATE sessions SET {assignments} WHERE id = {self.mark}", [*values.values(), id]

    def add_session_usage(
        self, id: str, cost: float, tokens: dict[str, int], now: float
    ) -> tuple[str, list[Any]]:
        """Add ``cost`` and ``tokens`` to the session's roll-ups and set ``updated`` to
        ``now``; ValueError naming a token field that is not one of :data:`USAGE_FIELDS`."""
        unknown = sorted(set(tokens) - USAGE_FIELDS)
        if unknown:
            raise ValueError(f"unknown token field(s): {', '.join(unknown)}")
        sets = [f"cost = cost + {self.mark}", f"updated = {self.mark}"]
        values: list[Any] = [cost, now]
        for name, value in tokens.items():
            sets.append(f"{name} = {name} + {self.mark}")
            values.append(int(value))
        return f"UPDATE sessions SET {', '.join(sets)} WHERE id = {self.mark}", [*values, id]


def new_session(
    *,
    project: str,
    directory: str,
    title: str,
    agent: str,
    model: str | None,
    parent_id: str | None,
    id: str | None,
    origin: str | None,
) -> SessionRecord:
    """A new session's record (``create_session``): ``id`` or a new one, created and updated
    now, by this host and user. The store passes its text as it can hold it."""
    now = time.time()
    return SessionRecord(
        id=id or new_id("ses"),
        project=project,
        directory=directory,
        title=title,
        agent=agent,
        model=model,
        parent_id=parent_id,
        created=now,
        updated=now,
        origin=origin,
        host=socket.gethostname() or None,
        user=current_user(),
    )


def session_records(rows: list[tuple[Any, ...]]) -> list[SessionRecord]:
    """The records of rows read as :attr:`Queries.session_fields`."""
    return [SessionRecord(*row) for row in rows]


def first_session(rows: list[tuple[Any, ...]]) -> SessionRecord | None:
    """The record of the first such row, if any."""
    return SessionRecord(*rows[0]) if rows else None


def approval_key(
    project: str, session_id: str | None, permission: str, pattern: str, directory: str | None
) -> list[Any]:
    """What makes approvals the same (``approvals_unique``: a missing session or directory
    is ``''``), as the parameters of the stores' lookups by meaning."""
    return [project, session_id or "", permission, pattern, directory or ""]


def todo_rows(session_id: str, todos: list[dict[str, Any]]) -> list[list[Any]]:
    """``set_todos``' rows for :attr:`Queries.insert_todo`: an item's missing id is its
    position from 1, its status ``pending``, its priority ``medium``."""
    return [
        [
            session_id,
            i,
            str(t.get("id") or i + 1),
            str(t["content"]),
            str(t.get("status") or "pending"),
            str(t.get("priority") or "medium"),
        ]
        for i, t in enumerate(todos)
    ]


def exported_todo_rows(session_id: str, todos: list[dict[str, Any]]) -> list[list[Any]]:
    """An exported session's todos (as :func:`todo_dicts` read them) as rows to import."""
    return [
        [session_id, position, t["id"], t["content"], t["status"], t["priority"]]
        for position, t in enumerate(todos)
    ]


def todo_dicts(rows: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """Rows read by :attr:`Queries.todos` as the todo items the store hands out."""
    return [{"id": r[0], "content": r[1], "status": r[2], "priority": r[3]} for r in rows]


def state_values(rows: list[tuple[Any, ...]]) -> dict[str, Any]:
    """Rows read by :attr:`Queries.session_state` as ``{key: value}``."""
    return {key: json.loads(value) for key, value in rows}


def counted(row: tuple[Any, ...]) -> dict[str, int]:
    """The row read by :attr:`Queries.counts` by its keys."""
    return dict(zip(COUNTED, (int(n) for n in row), strict=True))


#: the columns of a message row and of a part row joined with its tool part, in the order
#: :func:`assembled_messages` reads them (each store selects them in its own dialect)
MESSAGE_COLUMNS = "id, role, created, data"
PART_COLUMNS = (
    "p.id, p.message_id, p.type, p.data, t.tool, t.state, t.input, t.raw, t.output, t.title, "
    "t.metadata, t.attachments, t.error, t.time_start, t.time_end, t.compacted"
)


def assembled_messages(
    session_id: str, message_rows: list[Any], part_rows: list[Any]
) -> list[dict[str, Any]]:
    """A session's messages as :meth:`~hookcode.store.protocol.Store.messages` returns them,
    from its message rows (:data:`MESSAGE_COLUMNS`) and part rows (:data:`PART_COLUMNS`, a
    part joined with its tool part), each in order: a part of no listed message, or a tool
    part whose state row is missing, is left out."""
    out: list[dict[str, Any]] = []
    by_id: dict[str, dict[str, Any]] = {}
    for id, role, created, data in message_rows:
        message = {"id": id, "session_id": session_id, "role": role, "created": created}
        message.update(json.loads(data))
        message["parts"] = []
        by_id[id] = message
        out.append(message)
    for row in part_rows:
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
                "metadata": json.loads(row[10]) if row[10] and row[10] != "{}" else {},
                "attachments": json.loads(row[11]) if row[11] and row[11] != "[]" else [],
                "time": {"start": row[13], "end": row[14], "compacted": row[15]},
            }
        message["parts"].append(part)
    return out


#: the ``tool_parts`` columns of a :class:`ToolPartRecord`, in its order
TOOL_PART_COLUMNS = (
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
TOOL_PART_FIELDS = ", ".join(TOOL_PART_COLUMNS)
#: the tool part columns kept as JSON text
_TOOL_PART_JSON = frozenset({"input", "metadata", "attachments"})
#: the columns of a tool part as :class:`~hookcode.store.records.SessionExport` carries it
EXPORTED_TOOL_PART_COLUMNS = (*TOOL_PART_COLUMNS, "raw", "compacted")


def tool_part_values(
    part: dict[str, Any], columns: tuple[str, ...] = TOOL_PART_COLUMNS
) -> list[Any]:
    """The values of ``columns`` of a tool part (its fields as a dict), JSON columns as text."""
    return [
        dumps(part.get(name)) if name in _TOOL_PART_JSON else part.get(name) for name in columns
    ]


def tool_part_record(row: tuple[Any, ...]) -> ToolPartRecord:
    """The record of a row of :data:`TOOL_PART_COLUMNS`."""
    data: dict[str, Any] = dict(zip(TOOL_PART_COLUMNS, row, strict=True))
    for name in _TOOL_PART_JSON:
        data[name] = json.loads(data[name])
    return ToolPartRecord(**data)


def exported_conversation(
    message_rows: list[Any], part_rows: list[Any], tool_part_rows: list[Any]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """A session's messages, parts and tool parts as :class:`SessionExport` holds them, from
    its rows in order: messages of :data:`MESSAGE_COLUMNS`, parts of ``id, message_id, type,
    data``, tool parts of :data:`EXPORTED_TOOL_PART_COLUMNS`."""
    messages = [
        {"id": id, "role": role, "created": created, "data": json.loads(data)}
        for id, role, created, data in message_rows
    ]
    parts = [
        {"id": id, "message_id": message_id, "type": type, "data": json.loads(data)}
        for id, message_id, type, data in part_rows
    ]
    tool_parts = [
        {**vars(tool_part_record(row[:-2])), "raw": row[-2], "compacted": row[-1]}
        for row in tool_part_rows
    ]
    return messages, parts, tool_parts
