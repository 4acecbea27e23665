"""What ``hookcode tools call`` says when a call fails: words for the person who typed it, not
the text the model reads (``Model tried to call ...``, ``Please rewrite the input ...``, ``The
user rejected ...``). ``--json`` prints the error as recorded on stdout, for programs; this
message goes to stderr either way."""

from __future__ import annotations

import difflib
from typing import Any

from hookcode.errors import InvalidArguments, PermissionRejected, UnknownTool

__all__ = ["failure_message"]


def _unknown(rt: Any, error: UnknownTool, agent: str) -> str:
    name = error.name
    if name in rt.registry.entries:
        return (
            f"tool '{name}' is not available to agent '{agent}' (a permission rule denies it, "
            "or the agent is not offered it: see `hookcode tools list --agent "
            f"{agent}`)"
        )
    close = difflib.get_close_matches(name, error.available, n=3, cutoff=0.6)
    if close:
        return f"unknown tool '{name}' (did you mean {' or '.join(repr(c) for c in close)}?)"
    names = ", ".join(error.available) or "none"
    return f"unknown tool '{name}'; available tools: {names}"


def _refused(rt: Any, name: str, session_id: str, *, yes: bool) -> str:
    from hookcode.cli.running import approval_hint, has_terminal

    refused = [r for r in rt.refusals if r.session_id == session_id]
    protected = any(r.metadata.get("protected") for r in refused)
    if has_terminal(rt) or not refused or (yes and not protected):
        return f"{name}: the call was rejected"
    asked = "; ".join(f"{r.permission} {' '.join(r.patterns)}" for r in refused)
    return f"{name}: refused, nobody to approve {asked}: {approval_hint(protected)}"


def failure_message(
    rt: Any, name: str, outcome: Any, session_id: str, *, agent: str, yes: bool
) -> str:
    """The one-line error for a failed ``tools call`` (printed after ``hookcode: ``)."""
    error = outcome.error
    if isinstance(error, UnknownTool):
        return _unknown(rt, error, agent)
    if isinstance(error, InvalidArguments) and error.problem:
        return f"{name}: invalid arguments: {error.problem}"
    if isinstance(error, PermissionRejected) and error.feedback is None:
        return _refused(rt, name, session_id, yes=yes)
    return f"{name}: {outcome.error_text}"
