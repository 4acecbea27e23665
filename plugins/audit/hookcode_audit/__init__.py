"""audit: a hash-chained, append-only JSONL log of every tool call and permission decision.

On by default; ``[audit] enabled = false`` turns it off::

    [audit]
    path = "/var/log/hookcode/audit.jsonl"   # default <data dir>/audit.jsonl
    redact = ["MY_SERVICE_PASS"]             # more environment variables to scrub
    fail_closed = true                       # refuse calls that cannot be recorded

``to = "store"`` (ignored in an untrusted folder's config, like every setting here but
``redact``) writes the same records, in the same chain, to the audit log of the configured
store instead of the file: one log for every process and machine sharing a PostgreSQL store
(:mod:`hookcode_audit.stored`). A store that keeps no audit log (the embedded SQLite one) is
reported when the run starts, and its tool calls are then refused like those of a log that
cannot be written.

Records (one JSON object a line; every one has ``seq``, ``time`` (UTC), ``type``, ``pid`` and
``prev``, the SHA-256 of the previous line, see :mod:`hookcode_audit.chain`):

* ``tool.call``: written by ``tool_execute_before`` (the last one, so with the arguments the
  tool will get) BEFORE the tool runs: session, call id, parent call, agent, tool, args.
* ``tool.result``: when the call ends (the ``tool.completed`` / ``tool.failed`` events, so a
  call recovered by an error hook is recorded as what it finally was): ok, title, error and
  its type, the start of the output, ``cached`` (a result served by the cache plugin),
  duration.
* ``permission``: every decision. ``decision`` is ``allow`` / ``deny`` (the votes decided:
  ``by = {"kind": "policy", "votes": {plugin: vote}, "rules": [each pattern's deciding rule
  with its source]}``) or the reply ``once`` / ``always`` / ``reject`` (``by.kind`` is
  ``user`` with the ``front_end`` plugin that answered and the scope, ``headless`` when nobody
  could be asked, ``inferred`` when core settled a waiting request from an earlier reply).

Secrets never reach the file: every secret the runtime knows (:mod:`hookcode.secrets`:
provider keys from the environment and ``auth.json``, variables named like secrets, configured
header values, MCP tokens) and the values of the variables listed in ``[audit] redact`` are
replaced by ``[redacted: SOURCE]`` wherever they appear (arguments, output, errors, patterns,
feedback). The file is mode 0600, in a directory created 0700.

Failures, deliberately: the ``tool.call`` record is the accountability point, so when it
cannot be written (disk full, permission denied) the call is refused before the tool runs
(``tool_execute_before`` raising fails the call closed, naming this plugin) and the reason is
on stderr; the run goes on. ``[audit] fail_closed = false`` lets such calls run, unrecorded.
Records written after the fact (results, permission decisions) can no longer stop anything:
a failure there is reported on stderr and the call keeps its outcome, since turning a
finished side effect into an error would invite the model to repeat it.

``hookcode audit verify [--path P] [--anchor HASH] [--json]`` checks the chain (exit 0 ok, 1
broken, naming the first broken line and why); ``hookcode audit show [--tail N]`` prints
records. Both read the log the config names (the file, or the store's); ``--path`` reads a
file.
"""

from __future__ import annotations

import os
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hookcode import hookimpl
from hookcode.errors import HookcodeError
from hookcode.stash import StashKey

if TYPE_CHECKING:
    import typer
    from hookcode import Runtime, ToolCall, ToolContext, ToolResult
    from hookcode.events import Event
    from pydantic import BaseModel

    from hookcode_audit.chain import AuditLog
    from hookcode_audit.stored import StoredAuditLog

__all__ = ["AuditError", "audit_path", "open_log"]

DEFAULT_NAME = "audit.jsonl"


class AuditError(HookcodeError):
    """The audit log cannot be written, so a tool call is refused (``fail_closed``)."""


def _settings(config: Any) -> Any:
    section = config.section("audit") if hasattr(config, "section") else None
    if section is None:
        from hookcode_audit._config import AuditConfig

        section = AuditConfig()
    return section


def audit_path(runtime: Any) -> Path:
    """The log file of a runtime: ``[audit] path`` (relative to the data directory, ``~``
    expanded) or ``<data dir>/audit.jsonl``."""
    configured = _settings(runtime.config).path
    if not configured:
        return Path(runtime.data_dir) / DEFAULT_NAME
    path = Path(configured).expanduser()
    return path if path.is_absolute() else Path(runtime.data_dir) / path


def open_log(runtime: Any) -> AuditLog | StoredAuditLog:
    """Where a runtime's records go: the file (``[audit] to = "file"``, :func:`audit_path`) or
    the store's audit log (``to = "store"``). Raises
    :class:`~hookcode_audit.stored.AuditUnavailable` for a store that keeps none, and
    :class:`~hookcode.store.records.StoreError` when the store cannot be opened."""
    settings = _settings(runtime.config)
    if settings.to == "store":
        from hookcode_audit.stored import StoredAuditLog

        return StoredAuditLog(runtime.store)
    from hookcode_audit.chain import AuditLog

    return AuditLog(audit_path(runtime), fsync=settings.fsync)


class _State:
    """One runtime's audit: its log, its secrets, and what calls in flight have told us."""

    def __init__(self, runtime: Any, settings: Any) -> None:
        self.runtime = runtime
        self.settings = settings
        self.lock = threading.Lock()
        self._warned: set[str] = set()
        #: where records go; None when that cannot be used (``problem`` says why)
        self.log: AuditLog | StoredAuditLog | None = None
        self.problem: str | None = None
        try:
            self.log = open_log(runtime)
        except HookcodeError as exc:  # to = "store" and the store keeps no log / cannot open
            self.problem = str(exc)
            self.warn(f"{self.problem}; {self._effect()}")
        self.started: dict[str, float] = {}
        self.results: dict[str, dict[str, Any]] = {}
        self.errors: dict[str, str] = {}
        self.unrecorded_args: dict[str, Any] = {}
        self.asked: dict[str, dict[str, Any]] = {}

    # -- redaction ----------------------------------------------------------------------------
    def redact(self, value: Any) -> Any:
        """``value`` with the runtime's known secrets and ``[audit] redact``'s redacted."""
        redactor = self.runtime.secrets.redactor(self.settings.redact)
        return redactor.redact_value(value)

    # -- writing ------------------------------------------------------------------------------
    def write(self, record: dict[str, Any], *, refuse: bool = False) -> bool:
        """Append one record; False when it could not be written. A failure is reported on
        stderr (once per distinct failure); with ``refuse`` it raises :class:`AuditError`."""
        stamped = {
            "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "pid": os.getpid(),
            **record,
        }
        log = self.log
        if log is None:
            if refuse:
                raise AuditError(
                    f"{self.problem}; so the call was refused before it ran: every tool call "
                    "must be recorded ([audit] fail_closed = false runs calls unrecorded)"
                )
            return False
        try:
            log.append(self.redact(stamped))
        except (OSError, ValueError, TypeError, HookcodeError) as exc:  # HookcodeError: StoreError
            reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            self.warn(f"cannot write the audit log {log.path}: {reason}; {self._effect()}")
            if refuse:
                raise AuditError(
                    f"the audit log {log.path} cannot be written ({reason}), so the call "
                    "was refused before it ran: every tool call must be recorded "
                    "([audit] fail_closed = false runs calls unrecorded)"
                ) from None
            return False
        return True

    def _effect(self) -> str:
        if self.settings.fail_closed:
            return "tool calls are refused while it cannot be written ([audit] fail_closed)"
        return "records are being lost"

    def warn(self, message: str) -> None:
        with self.lock:
            if message in self._warned:
                return
            self._warned.add(message)
        self.runtime.plugins.warn(f"audit: {message}")


#: the runtime's audit state (None when auditing is off)
_STATE = StashKey["_State | None"]()
_STATES_LOCK = threading.Lock()


def _state(runtime: Any) -> _State | None:
    """The runtime's audit state; None when auditing is off (or there is no runtime)."""
    if runtime is None:
        return None
    stash = runtime.stash
    if _STATE in stash:
        return stash[_STATE]
    with _STATES_LOCK:
        if _STATE not in stash:
            settings = _settings(runtime.config)
            stash[_STATE] = _State(runtime, settings) if settings.enabled else None
        return stash[_STATE]


# ---------------------------------------------------------------------------------------------
# hooks
# ---------------------------------------------------------------------------------------------


@hookimpl
def config_schema() -> dict[str, type[BaseModel]]:
    from hookcode_audit._config import AuditConfig

    return {"audit": AuditConfig}


@hookimpl(trylast=True)
def tool_execute_before(call: ToolCall, ctx: ToolContext) -> None:
    # the last before hook: the arguments recorded are the ones the tool gets
    state = _state(ctx.runtime)
    if state is None:
        return
    state.started[call.call_id] = time.perf_counter()
    written = state.write(
        {
            "type": "tool.call",
            "session_id": call.session_id,
            "call_id": call.call_id,
            "parent_call_id": call.parent_call_id,
            "agent": call.agent,
            "model": call.model,
            "tool": call.tool,
            "args": call.args,
        },
        refuse=state.settings.fail_closed,
    )
    if not written:  # failing open: the result record carries the arguments, if it can
        state.unrecorded_args[call.call_id] = call.args


@hookimpl(trylast=True)
def tool_execute_after(call: ToolCall, result: ToolResult, ctx: ToolContext) -> None:
    # the last after hook: the output recorded is the one the model reads
    state = _state(ctx.runtime)
    if state is None:
        return
    output = result.output or ""
    limit = state.settings.max_output
    state.results[call.call_id] = {
        "cached": result.metadata.get("cached") is True,
        "output": output[:limit],
        "output_chars": len(output),
        "attachments": [{"mime": a.mime, "filename": a.filename} for a in result.attachments],
    }


@hookimpl(tryfirst=True)
def tool_execute_error(call: ToolCall, error: BaseException, ctx: ToolContext) -> None:
    state = _state(ctx.runtime)
    if state is not None:
        state.errors[call.call_id] = type(error).__name__
        if call.call_id not in state.started:
            # failed before any tool.call record (unknown tool, invalid arguments)
            state.unrecorded_args[call.call_id] = call.args


@hookimpl
def event(event: Event, runtime: Runtime) -> None:
    # the first event of a run (a new session's session.created) opens the log: a log that
    # cannot be used is reported then, before any tool call
    state = _state(runtime)
    if state is None:
        return
    kind = event.type
    if not kind.startswith(("tool.completed", "tool.failed", "permission.")):
        return
    props = event.properties
    if kind in ("tool.completed", "tool.failed"):
        _tool_result(state, props, ok=kind == "tool.completed")
    elif kind == "permission.asked":
        state.asked[str(props.get("id"))] = dict(props)
    elif kind == "permission.decided":
        state.asked.pop(str(props.get("id")), None)
        _permission(
            state,
            props,
            decision=props.get("action"),
            by={
                "kind": "policy",
                "reason": props.get("reason"),
                "votes": props.get("votes"),
                "rules": props.get("rules"),
            },
        )
    elif kind == "permission.replied":
        request = state.asked.pop(str(props.get("request_id")), {"id": props.get("request_id")})
        front_end = props.get("front_end")
        if front_end:
            who = "user"
        elif "front_end" not in props:
            who = "reply"  # a core that does not say who answered
        elif props.get("reason") and "headless" not in str(props.get("reason")):
            who = "inferred"
        else:
            who = "headless"
        _permission(
            state,
            {**request, "session_id": props.get("session_id")},
            decision=props.get("reply"),
            by={
                "kind": who,
                "front_end": front_end,
                "reply": props.get("reply"),
                "scope": props.get("scope"),
                "feedback": props.get("feedback"),
                "reason": props.get("reason"),
            },
        )


def _tool_result(state: _State, props: dict[str, Any], *, ok: bool) -> None:
    call_id = str(props.get("call_id"))
    for request_id, request in list(state.asked.items()):
        if (request.get("tool") or {}).get("call_id") == call_id:
            state.asked.pop(request_id, None)  # an ask the call was aborted in: no reply comes
    started = state.started.pop(call_id, None)
    details = state.results.pop(call_id, None)
    error_type = state.errors.pop(call_id, None)
    record: dict[str, Any] = {
        "type": "tool.result",
        "session_id": props.get("session_id"),
        "call_id": call_id,
        "tool": props.get("tool"),
        "ok": ok,
        "title": props.get("title") if ok else None,
        "error": None if ok else props.get("error"),
        "error_type": None if ok else error_type,
        "cached": bool(details and details["cached"]),
    }
    if call_id in state.unrecorded_args:
        record["args"] = state.unrecorded_args.pop(call_id)
    if ok and error_type is not None:
        record["recovered_from"] = error_type  # an error hook turned the failure into this
    if details is not None:
        record.update(
            output=details["output"],
            output_chars=details["output_chars"],
            attachments=details["attachments"],
        )
    record["duration_ms"] = (
        None if started is None else round((time.perf_counter() - started) * 1000, 3)
    )
    state.write(record)


def _permission(
    state: _State, request: dict[str, Any], *, decision: Any, by: dict[str, Any]
) -> None:
    found = request.get("tool")
    tool: dict[str, Any] = found if isinstance(found, dict) else {}
    state.write(
        {
            "type": "permission",
            "session_id": request.get("session_id"),
            "request_id": request.get("id"),
            "call_id": tool.get("call_id"),
            "tool": tool.get("name"),
            "agent": request.get("agent"),
            "permission": request.get("permission"),
            "patterns": request.get("patterns"),
            "decision": decision,
            "by": by,
        }
    )


@hookimpl
def cli(app: typer.Typer) -> None:
    from hookcode_audit._cli import register

    register(app)
