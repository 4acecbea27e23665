"""The PostgreSQL store's record of a conversation: the messages of sessions, their parts in
order, and the state of each tool call (``tool_parts``), with exactly the SQLite store's
semantics (:mod:`hookcode.store.message_store`). Part of
:class:`~hookcode_store_postgres.postgres_store.PostgresStore`.

Tool parts are saved behind (:mod:`hookcode_store_postgres.behind`): outside a
:meth:`~hookcode_store_postgres.database.Database.transaction` block,
:meth:`MessageStore.save_tool_part` queues the part and returns, and one thread per store
writes what is queued in one statement (a multi-row upsert; a part saved twice meanwhile is
written with its last state, at the place of its first). Every other call of the store waits
for the queue first, and a part that could not be written fails the next call with its
StoreError (see :class:`~hookcode_store_postgres.behind.WriteBehind`)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hookcode.store import StoreError, ToolPartRecord, dumps
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

from hookcode_store_postgres.behind import WriteBehind
from hookcode_store_postgres.database import Database, Unreachable, execute

if TYPE_CHECKING:
    import psycopg

__all__ = ["MessageStore"]

_PART_ROW = f"({', '.join(['%s'] * len(TOOL_PART_COLUMNS))})"
_PART_CONFLICT = " ON CONFLICT (id) DO UPDATE SET " + ", ".join(
    f"{name} = excluded.{name}" for name in TOOL_PART_COLUMNS[1:]
)
_PART_UPSERT = f"INSERT INTO tool_parts ({TOOL_PART_FIELDS}) VALUES {_PART_ROW}{_PART_CONFLICT}"
#: the part ids a failed batch names in its error at most
_NAMED_PARTS = 5


def _upsert(rows: int) -> str:
    """The statement inserting or replacing ``rows`` tool parts (distinct ids), in order."""
    values = ", ".join([_PART_ROW] * rows)
    return f"INSERT INTO tool_parts ({TOOL_PART_FIELDS}) VALUES {values}{_PART_CONFLICT}"


class MessageStore(Database):
    """Messages, parts and tool parts: the :class:`~hookcode.store.Store` methods that keep a
    session's conversation."""

    def __init__(self, url: str, migrations: Sequence[str], *, retry_seconds: float) -> None:
        super().__init__(url, migrations, retry_seconds=retry_seconds)
        self.behind = WriteBehind[str, list[Any]](
            self._write_tool_parts, name=f"PostgreSQL store {self.location}"
        )

    # -- tool parts ----------------------------------------------------------------------------

    def save_tool_part(self, part: ToolPartRecord) -> None:
        """Insert or replace the part with ``part.id``; a replaced part keeps its position.

        Inside this thread's :meth:`transaction` block, a statement of the block. Outside
        one, the part is queued and written behind (see the module's notes): the method
        returns before it is committed, every later call of the store waits for it, and a
        failure to write it is raised by the next call (and by :meth:`flush`, :meth:`close`).
        A call that raises (an earlier part's failure, a full queue's wait ending in one)
        queued nothing."""
        values = tool_part_values(vars(part))
        if getattr(self._local, "pinned", None) is not None:
            self.run(lambda conn: execute(conn, _PART_UPSERT, values))
            return
        self._check_open()
        assert self.behind is not None
        self.behind.submit(part.id, values)

    def _write_tool_parts(self, rows: list[list[Any]]) -> None:
        """Write queued tool parts (their column values, distinct ids, oldest first): one
        statement, retried while the server is unreachable (idempotent). When it fails
        otherwise (a part refused by a constraint: its session deleted), each part is
        written alone, so that only the refused ones are lost; the error names them."""
        values = [value for row in rows for value in row]
        try:
            self.run_now(lambda conn: execute(conn, _upsert(len(rows)), values))
            return
        except Unreachable as exc:
            raise self._unsaved(exc, rows) from None
        except StoreError as exc:
            if len(rows) == 1:
                raise self._unsaved(exc, rows) from None
        first: StoreError | None = None
        failed: list[list[Any]] = []
        for i, row in enumerate(rows):
            try:
                self.run_now(lambda conn, row=row: execute(conn, _PART_UPSERT, row))
            except StoreError as exc:
                first = first or exc
                if isinstance(exc, Unreachable):  # each would wait as long: give up on all
                    failed += rows[i:]
                    break
                failed.append(row)
        if first is not None:
            raise self._unsaved(first, failed)

    @staticmethod
    def _unsaved(exc: StoreError, rows: list[list[Any]]) -> StoreError:
        """``exc`` naming the tool parts it left unsaved."""
        ids = ", ".join(str(row[0]) for row in rows[:_NAMED_PARTS])
        if len(rows) > _NAMED_PARTS:
            ids += f" and {len(rows) - _NAMED_PARTS} more"
        return StoreError(f"{exc}; tool part(s) not saved: {ids}")

    def get_tool_part(self, id: str) -> ToolPartRecord | None:
        rows = self.query(f"SELECT {TOOL_PART_FIELDS} FROM tool_parts WHERE id = %s", [id])
        return tool_part_record(rows[0]) if rows else None

    def tool_parts(self, session_id: str) -> list[ToolPartRecord]:
        """The session's tool parts in the order they were first saved."""
        rows = self.query(
            f"SELECT {TOOL_PART_FIELDS} FROM tool_parts WHERE session_id = %s ORDER BY seq",
            [session_id],
        )
        return [tool_part_record(row) for row in rows]

    def mark_interrupted(self, session_id: str, message: str = "Tool execution aborted") -> int:
        """Turn the session's pending/running parts into errors with ``message``; how many."""
        now = time.time()
        return self.run(
            lambda conn: (
                execute(
                    conn,
                    "UPDATE tool_parts SET state = 'error', error = %s, time_end = %s "
                    "WHERE session_id = %s AND state IN ('pending', 'running')",
                    [message, now, session_id],
                ).rowcount
            )
        )

    def set_tool_raw(self, id: str, raw: str) -> None:
        """The raw input text of a pending call, as streamed so far."""
        self.run(
            lambda conn: execute(conn, "UPDATE tool_parts SET raw = %s WHERE id = %s", [raw, id])
        )

    def set_compacted(self, ids: list[str], when: float | None = None) -> None:
        """Mark tool outputs as pruned (sent to the model as a placeholder from now on)."""
        when = time.time() if when is None else when
        self.run(
            lambda conn: execute(
                conn, "UPDATE tool_parts SET compacted = %s WHERE id = ANY(%s)", [when, list(ids)]
            )
        )

    # -- messages and parts --------------------------------------------------------------------

    def save_message(self, message: dict[str, Any]) -> None:
        """Insert or update a message: ``{"id", "session_id", "role", "created", ...}``; every
        other key is kept in its JSON ``data`` (parts are saved on their own)."""
        data = {
            k: v
            for k, v in message.items()
            if k not in ("id", "session_id", "role", "created", "parts")
        }
        values = [message["id"], message["session_id"], message["role"], message["created"]]
        values.append(dumps(data))
        self.run(
            lambda conn: execute(
                conn,
                "INSERT INTO messages (id, session_id, role, created, data) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET data = excluded.data",
                values,
            )
        )

    def save_part(self, part: dict[str, Any]) -> None:
        """Insert or update a message part: ``{"id", "session_id", "message_id", "type", ...}``.

        A ``tool`` part row only fixes the call's place in its message (``call_id``); the call's
        state lives in ``tool_parts`` (:meth:`save_tool_part`)."""
        data = {
            k: v for k, v in part.items() if k not in ("id", "session_id", "message_id", "type")
        }
        call_id = data.get("call_id")
        values = [part["id"], part["session_id"], part["message_id"], part["type"]]
        values += [call_id if isinstance(call_id, str) else None, dumps(data)]
        self.run(
            lambda conn: execute(
                conn,
                "INSERT INTO parts (id, session_id, message_id, type, call_id, data) "
                "VALUES (%s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (id) DO UPDATE SET data = excluded.data, call_id = excluded.call_id",
                values,
            )
        )

    def delete_part(self, id: str) -> None:
        self.run(lambda conn: execute(conn, "DELETE FROM parts WHERE id = %s", [id]))

    def messages(self, session_id: str) -> list[dict[str, Any]]:
        """The session's messages in order, each with its ``parts`` in order (tool parts with
        their ``state`` from ``tool_parts``); plain JSON-compatible dicts."""

        def read(conn: psycopg.Connection) -> tuple[list[Any], list[Any]]:
            messages = execute(
                conn,
                f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = %s ORDER BY seq",
                [session_id],
            ).fetchall()
            parts = execute(
                conn,
                f"SELECT {PART_COLUMNS} FROM parts p LEFT JOIN tool_parts t "
                "ON t.id = p.call_id WHERE p.session_id = %s ORDER BY p.seq",
                [session_id],
            ).fetchall()
            return messages, parts

        # two statements, as SQLite's: a part whose message came after the first is left out
        return assembled_messages(session_id, *self.run(read))

    def recover_session(self, session_id: str, message: str = "Tool execution aborted") -> int:
        """After a process died mid-step: its pending/running tool parts become errors with
        ``message`` (``metadata.interrupted`` set) and its unfinished assistant messages are
        closed with an error. Returns how many tool parts were marked. One transaction; the
        JSON is edited here, not by the server, so it keeps its key order and numbers."""
        now = time.time()

        def recover(conn: psycopg.Connection) -> int:
            parts = execute(
                conn,
                "SELECT id, metadata FROM tool_parts WHERE session_id = %s "
                "AND state IN ('pending', 'running') ORDER BY seq FOR UPDATE",
                [session_id],
            ).fetchall()
            for id, metadata in parts:
                data = _json_object(metadata)
                data["interrupted"] = True
                execute(
                    conn,
                    "UPDATE tool_parts SET state = 'error', error = %s, time_end = %s, "
                    "metadata = %s WHERE id = %s",
                    [message, now, dumps(data), id],
                )
            for id, raw in execute(
                conn,
                "SELECT id, data FROM messages WHERE session_id = %s AND role = 'assistant' "
                "ORDER BY seq FOR UPDATE",
                [session_id],
            ).fetchall():
                data = _json_object(raw)
                if data.get("completed") is not None:
                    continue
                data["completed"] = now
                if data.get("error") is None:
                    data["error"] = "interrupted"
                execute(conn, "UPDATE messages SET data = %s WHERE id = %s", [dumps(data), id])
            return len(parts)

        return self.run(recover, atomic=True)

    # -- moving a conversation between stores (SessionExport) ----------------------------------

    def _conversation(
        self, conn: psycopg.Connection, session_id: str
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
        """The session's messages, parts and tool parts as
        :class:`~hookcode.store.records.SessionExport` holds them, each in order."""
        return exported_conversation(
            execute(
                conn,
                f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = %s ORDER BY seq",
                [session_id],
            ).fetchall(),
            execute(
                conn,
                "SELECT id, message_id, type, data FROM parts WHERE session_id = %s ORDER BY seq",
                [session_id],
            ).fetchall(),
            execute(
                conn,
                f"SELECT {', '.join(EXPORTED_TOOL_PART_COLUMNS)} FROM tool_parts "
                "WHERE session_id = %s ORDER BY seq",
                [session_id],
            ).fetchall(),
        )

    @staticmethod
    def _replace_conversation(
        conn: psycopg.Connection,
        session_id: str,
        messages: list[dict[str, Any]],
        parts: list[dict[str, Any]],
        tool_parts: list[dict[str, Any]],
    ) -> None:
        """Inside a transaction: the session's messages, parts and tool parts become exactly
        these, in this order."""
        for table in ("tool_parts", "parts", "messages"):
            execute(conn, f"DELETE FROM {table} WHERE session_id = %s", [session_id])
        for m in messages:
            execute(
                conn,
                "INSERT INTO messages (id, session_id, role, created, data) "
                "VALUES (%s, %s, %s, %s, %s)",
                [m["id"], session_id, m["role"], m["created"], dumps(m["data"])],
            )
        for part in parts:
            call_id = part["data"].get("call_id")
            execute(
                conn,
                "INSERT INTO parts (id, session_id, message_id, type, call_id, data) "
                "VALUES (%s, %s, %s, %s, %s, %s)",
                [
                    part["id"],
                    session_id,
                    part["message_id"],
                    part["type"],
                    call_id if isinstance(call_id, str) else None,
                    dumps(part["data"]),
                ],
            )
        for tool_part in tool_parts:
            values = tool_part_values(tool_part, EXPORTED_TOOL_PART_COLUMNS)
            values[1] = session_id
            execute(
                conn,
                f"INSERT INTO tool_parts ({', '.join(EXPORTED_TOOL_PART_COLUMNS)}) "
                f"VALUES ({', '.join(['%s'] * len(EXPORTED_TOOL_PART_COLUMNS))})",
                values,
            )


def _json_object(text: str | None) -> dict[str, Any]:
    """A JSON object column as a dict ({} when it holds anything else)."""
    try:
        value = json.loads(text) if text else None
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
