"""The reads every SQL store makes alike (:class:`StoreReads`), written once over
:class:`~hookcode.store.queries.Queries`.

A store mixes it in, sets :attr:`StoreReads._sql` to its :class:`Queries` and provides
``_query(sql, params)`` (rows as tuples): the SQLite store's comes from its database, another
store's runs the statement on its own connection. What a store reads its own way (the SQLite
store's cached approvals, the PostgreSQL store's server-built listing) stays in that store.

Public as a module (``from hookcode.store.reads import StoreReads``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hookcode.store.queries import (
    Queries,
    counted,
    first_session,
    session_records,
    todo_dicts,
)
from hookcode.store.records import ApprovalRecord, SessionRecord

__all__ = ["StoreReads", "parents_first"]


class StoreReads:
    """Sessions, todos, state and approvals read the same way by every SQL store (see
    :class:`hookcode.store.protocol.Store` for what each method promises)."""

    #: the store's statements (its driver's placeholder)
    _sql: Queries

    if TYPE_CHECKING:

        def _query(self, sql: str, params: list[Any] = ...) -> list[Any]: ...

    def get_session(self, id: str) -> SessionRecord | None:
        return first_session(self._query(self._sql.get_session, [id]))

    def list_sessions(
        self,
        project: str | None = None,
        *,
        parent: bool | None = None,
        limit: int | None = None,
        conversations: bool = False,
        host: str | None = None,
    ) -> list[SessionRecord]:
        """Sessions, most recently updated first (the filters: :meth:`Queries.listing`)."""
        sql, params = self._sql.listing(
            self._sql.session_fields,
            project,
            parent=parent,
            limit=limit,
            conversations=conversations,
            host=host,
        )
        return session_records(self._query(sql, params))

    def latest_session(self, project: str, *, top_level: bool = True) -> SessionRecord | None:
        """The project's most recently updated (top-level) conversation (``--continue``)."""
        return first_session(self._query(*self._sql.latest_session(project, top_level=top_level)))

    def sessions_by_prefix(self, prefix: str, *, limit: int = 10) -> list[SessionRecord]:
        """The sessions whose id starts with ``prefix`` (case matters; at most ``limit``), in
        id order."""
        return session_records(self._query(*self._sql.sessions_by_prefix(prefix, limit)))

    def children(self, id: str) -> list[SessionRecord]:
        return session_records(self._query(self._sql.children, [id]))

    def get_state(self, session_id: str, key: str) -> Any:
        rows = self._query(self._sql.get_state, [session_id, key])
        return json.loads(rows[0][0]) if rows else None

    def todos(self, session_id: str) -> list[dict[str, Any]]:
        return todo_dicts(self._query(self._sql.todos, [session_id]))

    def session_ids(self) -> list[str]:
        """Every session's id, oldest first (by ``created``, then id), a parent always before
        its children."""
        return parents_first(self._query(self._sql.session_ids))

    def approval_records(self) -> list[ApprovalRecord]:
        """Every remembered approval of every project, in creation order."""
        return [ApprovalRecord(*row) for row in self._query(self._sql.approval_records)]

    def _rekeys(self, old: str, new: str) -> bool:
        """Whether ``rekey_project(old, new)`` has anything to move (else it stays a read)."""
        return old != new and bool(self._query(self._sql.project_used, [old, old])[0][0])

    def counts(self) -> dict[str, int]:
        """How many rows each kind of data has (``store check``, ``store migrate``)."""
        return counted(self._query(self._sql.counts)[0])


def parents_first(rows: Sequence[Sequence[Any]]) -> list[str]:
    """The ids of ``(id, parent_id)`` rows in their order, except that a parent listed after
    its child moves before it (a session's clock may lag its parent's on another machine)."""
    parent_of = {str(id): parent for id, parent in rows}
    out: list[str] = []
    done: set[str] = set()
    for id, _parent in rows:
        chain: list[str] = []
        node: str | None = str(id)
        while node is not None and node not in done and node in parent_of and node not in chain:
            chain.append(node)
            node = parent_of[node]
        for item in reversed(chain):
            done.add(item)
            out.append(item)
    return out
