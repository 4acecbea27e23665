"""What the store hands out and raises: the records of sessions, tool parts and approvals,
a whole session for moving it between stores (:class:`SessionExport`), and its errors (the
same for any database behind :class:`hookcode.store.Store`)."""

from __future__ import annotations

import getpass
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hookcode.errors import HookcodeError

__all__ = [
    "LEASE_TTL",
    "LEASE_VARIABLE",
    "ApprovalRecord",
    "SessionBusy",
    "SessionExport",
    "SessionRecord",
    "StoreError",
    "ToolPartRecord",
    "current_user",
    "seconds_setting",
]

#: seconds a session lock (a lease) lasts unless renewed; a running session renews it every
#: third of this, so a crashed owner's lease is taken over at most this long after it died
LEASE_TTL = 30.0
#: the variable that sets it for a run (an operator's choice: a fleet whose runs crash wants
#: quick takeovers; a store over a slow network a longer lease)
LEASE_VARIABLE = "HOOKCODE_LEASE_SECONDS"


def seconds_setting(
    env: Mapping[str, str], name: str, default: float, *, low: float, high: float
) -> float:
    """The seconds the environment variable ``name`` sets (``default`` when unset or empty);
    anything but a number from ``low`` to ``high`` is a :class:`StoreError` naming it."""
    text = env.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not low <= value <= high:  # NaN fails too
        raise StoreError(f"{name}={text!r}: expected seconds from {low:g} to {high:g}")
    return value


def current_user() -> str | None:
    """The name of the user running hookcode (recorded on each session), None if unknown."""
    try:
        return getpass.getuser() or None
    except (OSError, KeyError, ImportError):
        return None


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
    #: what started a session that is not a conversation (``"tools call"``); None for one
    origin: str | None = None
    #: the machine and the user that created the session (None: unknown, or an older session)
    host: str | None = None
    user: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The public shape (``sessions list --json``); ``origin``, ``host`` and ``user`` only
        when there is one."""
        data: dict[str, Any] = {
            "id": self.id,
            "title": self.title,
            "parent_id": self.parent_id,
            "agent": self.agent,
            "model": self.model,
            "created": self.created,
            "updated": self.updated,
            "cost": self.cost,
        }
        if self.origin is not None:
            data["origin"] = self.origin
        if self.host is not None:
            data["host"] = self.host
        if self.user is not None:
            data["user"] = self.user
        return data


class SessionBusy(StoreError):
    """Another live process (``pid`` on ``host``) holds the session's lease."""

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
    #: the worktree the approval was given in: a project-scoped approval given in another
    #: directory (another clone) applies only in a trusted folder (None: not known)
    directory: str | None = None


@dataclass
class SessionExport:
    """One session as data, independent of the database (``hookcode store migrate`` moves it
    with :meth:`~hookcode.store.Store.export_session` and
    :meth:`~hookcode.store.Store.import_session`); every list in the source's order."""

    session: SessionRecord
    #: ``{"id", "role", "created", "data": dict}`` each
    messages: list[dict[str, Any]] = field(default_factory=list)
    #: ``{"id", "message_id", "type", "data": dict}`` each
    parts: list[dict[str, Any]] = field(default_factory=list)
    #: every :class:`ToolPartRecord` field, plus ``"raw"`` (str | None) and ``"compacted"``
    #: (float | None)
    tool_parts: list[dict[str, Any]] = field(default_factory=list)
    #: as :meth:`~hookcode.store.Store.todos` returns them
    todos: list[dict[str, Any]] = field(default_factory=list)
    #: the per-session state, key -> value
    state: dict[str, Any] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        """How many rows of each kind the session holds (what ``store migrate`` compares)."""
        return {
            "messages": len(self.messages),
            "parts": len(self.parts),
            "tool_parts": len(self.tool_parts),
            "todos": len(self.todos),
            "session_state": len(self.state),
        }
