"""The store's record of a conversation: the messages of sessions, their parts in order, and
the state of each tool call (``tool_parts``), which :func:`hookcode.pipeline.invoke` writes as a
call moves pending -> running -> completed | error. Part of :class:`hookcode.store.Store`."""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from hookcode.store.database import Database, dumps, execute, storable
from hookcode.store.queries import (
    EXPORTED_TOOL_PART_COLUMNS,
    MESSAGE_COLUMNS,
    PART_COLUMNS,
    TOOL_PART_COLUMNS,
    TOOL_PART_FIELDS,
    assembled_messages,
    exported_conversation,
    tool_part_record,
    tool_part_values,
)
from hookcode.store.records import StoreError, ToolPartRecord

__all__ = ["MessageStore"]

_PART_UPSERT = (
    f"INSERT INTO tool_parts ({TOOL_PART_FIELDS}) "
    f"VALUES ({', '.join('?' * len(TOOL_PART_COLUMNS))}) ON CONFLICT(id) DO UPDATE SET "
    + ", ".join(f"{name} = excluded.{name}" for name in TOOL_PART_COLUMNS[1:])
)


class MessageStore(Database):
    """Messages, parts and tool parts: the :class:`~hookcode.store.Store` methods that keep a
    session's conversation."""

    # -- tool parts ----------------------------------------------------------------------------

    def save_tool_part(self, part: ToolPartRecord) -> None:
        """Insert or replace the part with ``part.id``; a replaced part keeps its position."""
        values = tool_part_values(vars(part))
        with self._lock:
            if self._depth:  # inside a transaction(): join it
                with self._write() as conn:
                    execute(conn, _PART_UPSERT, values)
                return
            # a single statement outside a transaction is its own transaction (autocommit,
            # taking the write lock at once like BEGIN IMMEDIATE), committed before execute
            # returns: the same guarantee as _write() in one statement instead of three
            try:
                execute(self._conn, _PART_UPSERT, values)
            except sqlite3.Error as exc:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise StoreError(f"{self.path}: {exc}") from exc
            self._committed()

    def get_tool_part(self, id: str) -> ToolPartRecord | None:
        rows = self._query(f"SELECT {TOOL_PART_FIELDS} FROM tool_parts WHERE id = ?", (id,))
        return tool_part_record(rows[0]) if rows else None

    def tool_parts(self, session_id: str) -> list[ToolPartRecord]:
        """The session's tool parts in the order they were first saved."""
        rows = self._query(
            f"SELECT {TOOL_PART_FIELDS} FROM tool_parts WHERE session_id = ? ORDER BY seq",
            (session_id,),
        )
        return [tool_part_record(row) for row in rows]

    def mark_interrupted(self, session_id: str, message: str = "Tool execution aborted") -> int:
        """Turn the session's pending/running parts into errors with ``message``; return how many."""
        with self._write() as conn:
            cursor = conn.execute(
                "UPDATE tool_parts SET state = 'error', error = ?, time_end = ? "
                "WHERE session_id = ? AND state IN ('pending', 'running')",
                (message, time.time(), session_id),
            )
            return cursor.rowcount

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
            execute(
                conn,
                "INSERT INTO messages (id, session_id, role, created, data) VALUES (?,?,?,?,?) "
                "ON CONFLICT(id) DO UPDATE SET data = excluded.data",
                [
                    message["id"],
                    message["session_id"],
                    message["role"],
                    message["created"],
                    dumps(data),
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
            execute(
                conn,
                "INSERT INTO parts (id, session_id, message_id, type, data) VALUES (?,?,?,?,?) "
                "ON CONFLICT(id) DO UPDATE SET data = excluded.data",
                [part["id"], part["session_id"], part["message_id"], part["type"], dumps(data)],
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
        messages = self._query(
            f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = ? ORDER BY seq",
            (session_id,),
        )
        parts = self._query(
            f"SELECT {PART_COLUMNS} FROM parts p LEFT JOIN tool_parts t "
            "ON t.id = json_extract(p.data, '$.call_id') WHERE p.session_id = ? ORDER BY p.seq",
            (session_id,),
        )
        return assembled_messages(session_id, messages, parts)

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

    # -- moving a conversation between stores (SessionExport) ----------------------------------

    def _conversation(
        self, session_id: str
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
        """The session's messages, parts and tool parts as :class:`SessionExport` holds them,
        each in order (call inside :meth:`_reading` for one snapshot)."""
        return exported_conversation(
            self._query(
                f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = ? ORDER BY seq",
                (session_id,),
            ),
            self._query(
                "SELECT id, message_id, type, data FROM parts WHERE session_id = ? ORDER BY seq",
                (session_id,),
            ),
            self._query(
                f"SELECT {', '.join(EXPORTED_TOOL_PART_COLUMNS)} FROM tool_parts "
                "WHERE session_id = ? ORDER BY seq",
                (session_id,),
            ),
        )

    @staticmethod
    def _replace_conversation(
        conn: sqlite3.Connection,
        session_id: str,
        messages: list[dict[str, Any]],
        parts: list[dict[str, Any]],
        tool_parts: list[dict[str, Any]],
    ) -> None:
        """Inside a write: the session's messages, parts and tool parts become exactly these,
        in this order."""
        for table in ("tool_parts", "parts", "messages"):
            conn.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))
        for m in messages:
            execute(
                conn,
                "INSERT INTO messages (id, session_id, role, created, data) VALUES (?,?,?,?,?)",
                [m["id"], session_id, m["role"], m["created"], dumps(m["data"])],
            )
        for part in parts:
            execute(
                conn,
                "INSERT INTO parts (id, session_id, message_id, type, data) VALUES (?,?,?,?,?)",
                [part["id"], session_id, part["message_id"], part["type"], dumps(part["data"])],
            )
        columns = EXPORTED_TOOL_PART_COLUMNS
        for tool_part in tool_parts:
            values = tool_part_values(tool_part, columns)
            values[1] = session_id
            execute(
                conn,
                f"INSERT INTO tool_parts ({', '.join(columns)}) "
                f"VALUES ({', '.join('?' * len(columns))})",
                values,
            )

    # -- per-session state (providers keep small values here) ----------------------------------
