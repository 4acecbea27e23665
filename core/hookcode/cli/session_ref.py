"""A session named on the command line or in the chat: its id, or a unique prefix of it."""

from __future__ import annotations

from typing import Any

from hookcode.errors import HookcodeError

__all__ = ["resolve_session"]


def resolve_session(store: Any, ref: str) -> Any:
    """The session ``ref`` names: its id, or a prefix of exactly one session's id. Raises
    HookcodeError when none matches, or listing the candidates when several do."""
    record = store.get_session(ref) if ref else None
    if record is not None:
        return record
    found = store.sessions_by_prefix(ref, limit=_CANDIDATES + 1) if ref else []
    if len(found) == 1:
        return found[0]
    if not found:
        raise HookcodeError(f"no session '{ref}' (see `hookcode sessions list`)")
    shown = [f"{r.id} ({r.title})" if r.title else r.id for r in found[:_CANDIDATES]]
    more = ", ..." if len(found) > _CANDIDATES else ""
    raise HookcodeError(
        f"session id prefix '{ref}' is ambiguous: {', '.join(shown)}{more}; give more of the id"
    )


#: how many sessions an ambiguous prefix error names
_CANDIDATES = 5
