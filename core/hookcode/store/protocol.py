"""What a store is: :class:`Store`, the methods the agent loop, the tool pipeline, the CLI and the
plugins call on ``runtime.store``, whatever database is behind it.

Two implementations ship: :class:`hookcode.store.SQLiteStore`, the embedded default (one file per
user in the data directory), and ``hookcode-store-postgres`` (one PostgreSQL database shared by a
team or a fleet). A plugin provides another through the ``store`` hook (first result wins),
given the configured URL (``store = "..."`` in the config, or ``HOOKCODE_STORE``).

The contract every implementation keeps (``tests/store_contract`` checks it against each):

- every write method is its own transaction, committed before it returns, unless it runs inside
  :meth:`Store.transaction`, whose writes commit together at its end (or not at all); with
  one exception a store MAY make, below;
- records come back as they were written: JSON values as JSON-compatible Python values, times as
  float epoch seconds, text exactly (a lone surrogate, which no UTF-8 database holds, is
  stored as ``?``; so is a NUL character in a column PostgreSQL keeps as text);
- failures are :class:`~hookcode.store.records.StoreError` (one line naming the database and
  the cause, never a password); a session held by another live process is
  :class:`~hookcode.store.records.SessionBusy`;
- several processes, on one machine or several, may use one store at once; a session is run by
  the holder of its lease (:meth:`Store.lock_session`), which expires unless renewed.

**Tool parts written behind.** A store MAY commit :meth:`Store.save_tool_part` after it
returned (the PostgreSQL store does: a tool call would otherwise wait for a round trip to the
server, twice), and only on these terms:

- inside a :meth:`Store.transaction` block of the calling thread the save is one of the
  block's writes, as always;
- outside one, the part is queued and the call returns; the queue is written in the order the
  parts were saved (a part saved again before it was written: its last state, at the place of
  its first), and it is bounded (a save waits while it is full);
- every other method, in any thread (reads, writes, :meth:`Store.transaction`,
  :meth:`Store.counts`, the exports, the leases, an audit log's appends), first waits until
  the parts queued so far are committed, so nobody sees the store without a part saved
  before: that wait is :meth:`Store.flush` (inside a transaction block of the caller's, the
  block's start waited: its statements do not wait again);
- a part that cannot be written (after the store's bounded retry) is never lost silently:
  every later call of the store (:meth:`Store.flush`, :meth:`Store.save_tool_part`, any
  other, :meth:`Store.close`), in every thread, raises its
  :class:`~hookcode.store.records.StoreError` (raised once, a background thread that reports
  store errors and goes on could take it, and the run would go on without the result);
- :meth:`Store.close` flushes first (and raises such a failure), so a process that closes its
  store has every part committed.

A store that writes everything before returning (SQLite) has nothing to flush.
"""

from __future__ import annotations

import contextlib
from typing import Any, Protocol, runtime_checkable

from hookcode.store.records import (
    LEASE_TTL,
    ApprovalRecord,
    SessionExport,
    SessionRecord,
    ToolPartRecord,
)

__all__ = ["Store"]


@runtime_checkable
class Store(Protocol):
    """A hookcode store: sessions, their messages and parts, tool parts, remembered approvals,
    todos, per-session state and session locks."""

    @property
    def location(self) -> str:
        """Where the data lives, for messages: a file path, or a URL with its password masked
        (:func:`hookcode.store.urls.mask_url`)."""
        ...

    @property
    def version(self) -> int:
        """The schema version of the database."""
        ...

    def close(self) -> None:
        """Commit what is written behind (:meth:`flush`, raising its failure), then release
        the connection(s); idempotent."""
        ...

    def flush(self) -> None:
        """Return once every tool part saved so far (by any thread) is committed; raise the
        StoreError of a save that could not be written (every time, from then on). A no-op for a store that writes
        before returning (SQLite's)."""
        ...

    def transaction(self) -> contextlib.AbstractContextManager[Any]:
        """Group several writes into one transaction (committed at the end, rolled back on an
        exception); the store's own write methods called inside join it."""
        ...

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
        """A new session, recording this host and user (``host``, ``user``)."""
        ...

    def get_session(self, id: str) -> SessionRecord | None: ...

    def list_sessions(
        self,
        project: str | None = None,
        *,
        parent: bool | None = None,
        limit: int | None = None,
        conversations: bool = False,
        host: str | None = None,
    ) -> list[SessionRecord]:
        """Sessions, most recently updated first. ``project`` filters by project, ``host`` by
        the machine that created them;
        ``parent=False`` keeps top-level sessions only, ``parent=True`` child sessions only;
        ``conversations`` leaves out the sessions with an ``origin`` (``tools call``)."""
        ...

    def sessions_json(
        self, project: str | None = None, *, conversations: bool = False, host: str | None = None
    ) -> list[str]:
        """``sessions list --json`` objects as JSON texts (as
        :meth:`~hookcode.store.records.SessionRecord.to_dict`), in :meth:`list_sessions` order."""
        ...

    def update_session(self, id: str, /, **fields: Any) -> None:
        """Set ``fields`` (title, agent, model, cost, tokens_in, ...) and bump ``updated``;
        an unknown field is a ``ValueError``, an unknown session a ``StoreError``."""
        ...

    def delete_session(self, id: str) -> None:
        """Delete a session with its messages, tool parts, approvals and child sessions."""
        ...

    def add_session_usage(self, id: str, /, *, cost: float = 0.0, **tokens: int) -> None:
        """Add a message's cost and tokens (``tokens_in``, ``tokens_out``, ...) to its session."""
        ...

    def latest_session(self, project: str, *, top_level: bool = True) -> SessionRecord | None:
        """The project's most recently updated (top-level) conversation (``--continue``)."""
        ...

    def sessions_by_prefix(self, prefix: str, *, limit: int = 10) -> list[SessionRecord]:
        """The sessions whose id starts with ``prefix`` (at most ``limit``), in id order."""
        ...

    def children(self, id: str) -> list[SessionRecord]:
        """The session's child sessions (sub-agents), oldest first."""
        ...

    # -- session leases ------------------------------------------------------------------------

    def lock_session(self, id: str, pid: int | None = None, *, ttl: float = LEASE_TTL) -> None:
        """Take the session's lease for ``pid`` (default: this process) on this host, for
        ``ttl`` seconds; the same (host, pid) again renews it. The lease is free when there is
        none, when it has expired (by the store's clock), or when its holder is a dead process
        on this host; otherwise :class:`~hookcode.store.records.SessionBusy`. Atomic across
        processes and machines: of two racing for one lease, exactly one wins."""
        ...

    def renew_session_lock(
        self, id: str, pid: int | None = None, *, ttl: float = LEASE_TTL
    ) -> bool:
        """Extend our lease to ``ttl`` seconds from now; False if we no longer hold it (it was
        taken over after expiring, or released)."""
        ...

    def unlock_session(self, id: str, pid: int | None = None) -> None:
        """Release the lease if ``pid`` (default: this process) on this host holds it."""
        ...

    def session_lock(self, id: str) -> tuple[int, str] | None:
        """``(pid, host)`` of the live holder of the session's lease, if any."""
        ...

    # -- approvals -----------------------------------------------------------------------------

    def add_approval(
        self,
        *,
        project: str,
        permission: str,
        pattern: str,
        session_id: str | None = None,
        directory: str | None = None,
    ) -> ApprovalRecord:
        """Remember an approval given in ``directory`` (the worktree it was given in); an
        identical existing one (the same directory too) is returned instead of a duplicate."""
        ...

    def approvals(self, *, project: str, session_id: str | None = None) -> list[ApprovalRecord]:
        """The project's project-scoped approvals, then (given ``session_id``) that session's;
        each group in creation order."""
        ...

    def remove_approval(self, id: str) -> bool: ...

    def clear_approvals(self, *, project: str, session_id: str | None = None) -> int:
        """Delete the approvals of one scope (the project's, or the session's); how many."""
        ...

    # -- messages, parts, tool parts -----------------------------------------------------------

    def save_message(self, message: dict[str, Any]) -> None: ...

    def save_part(self, part: dict[str, Any]) -> None: ...

    def delete_part(self, id: str) -> None: ...

    def messages(self, session_id: str) -> list[dict[str, Any]]:
        """The session's messages in order, each with its ``parts`` in order (tool parts with
        their ``state`` from the tool parts)."""
        ...

    def save_tool_part(self, part: ToolPartRecord) -> None:
        """Insert or replace the tool part with ``part.id``; a replaced part keeps its place.
        It may be committed after the call returned (see the module's notes, "written
        behind"); it is before any other call of the store does anything."""
        ...

    def get_tool_part(self, id: str) -> ToolPartRecord | None: ...

    def tool_parts(self, session_id: str) -> list[ToolPartRecord]: ...

    def set_tool_raw(self, id: str, raw: str) -> None: ...

    def set_compacted(self, ids: list[str], when: float | None = None) -> None: ...

    def mark_interrupted(self, session_id: str, message: str = "Tool execution aborted") -> int: ...

    def recover_session(self, session_id: str, message: str = "Tool execution aborted") -> int:
        """After a process died mid-step: its unfinished tool parts and assistant messages
        are closed with an error; how many tool parts were marked."""
        ...

    # -- per-session state, todos --------------------------------------------------------------

    def get_state(self, session_id: str, key: str) -> Any: ...

    def set_state(self, session_id: str, key: str, value: Any) -> None: ...

    def set_todos(self, session_id: str, todos: list[dict[str, Any]]) -> None: ...

    def todos(self, session_id: str) -> list[dict[str, Any]]: ...

    # -- moving data between stores (``hookcode store migrate``) --------------------------------

    def session_ids(self) -> list[str]:
        """Every session's id, oldest first (by ``created``, then id), parents before their
        children."""
        ...

    def export_session(self, id: str) -> SessionExport | None:
        """Everything stored about one session (not its children), read consistently."""
        ...

    def import_session(self, data: SessionExport) -> None:
        """Write an exported session in one transaction; a session already there is replaced,
        so the target ends equal to the source (importing twice is harmless)."""
        ...

    def approval_records(self) -> list[ApprovalRecord]:
        """Every remembered approval of every project, in creation order."""
        ...

    def import_approval(self, record: ApprovalRecord) -> None:
        """Store ``record`` keeping its id and time; idempotent."""
        ...

    def counts(self) -> dict[str, int]:
        """Rows per kind: ``sessions``, ``messages``, ``parts``, ``tool_parts``, ``approvals``,
        ``todos``, ``session_state``."""
        ...
