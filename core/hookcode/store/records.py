"""What the store hands out and raises: the records of sessions, tool parts and approvals,
and its errors (the same for any database behind :class:`hookcode.store.Store`)."""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from typing import Any

from hookcode.errors import HookcodeError

__all__ = ["ApprovalRecord", "SessionBusy", "SessionRecord", "StoreError", "ToolPartRecord"]


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

    def to_dict(self) -> dict[str, Any]:
        """The public shape (``sessions list --json``); ``origin`` only when there is one."""
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
        return data


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
