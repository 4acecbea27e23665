"""The chat's ``/commands``: its own (``/help``, ``/model``, ``/agent``, ``/clear``,
``/sessions``, ``/compact``, ``/exit``...) and the ones plugins run through the
``chat_command`` hook (the MCP plugin's ``/server:prompt``). A command nobody knows is an
error naming the known ones: it is never sent to the model."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hookcode.runtime import Runtime
    from hookcode.store import SessionRecord

__all__ = ["COMMANDS", "ChatState", "run_command"]


@dataclass
class ChatState:
    """What the chat carries from one message to the next."""

    runtime: Runtime
    console: Any  # rich Console on stderr
    model: str | None = None
    agent: str | None = None
    session: SessionRecord | None = None
    done: bool = False  # /exit

    def probe(self, *, model: str | None = None, agent: str | None = None) -> Any:
        """A loop for the current (or the given) model and agent, not run: resolves the names
        and raises HookcodeError for unknown ones."""
        from hookcode.session import SessionLoop

        return SessionLoop(
            self.runtime,
            model=model or self.model,
            agent=agent or self.agent,
            session=self.session,
            lock=False,
        )

    def note(self, text: str, style: str = "dim") -> None:
        """A line of the chat's own (never read as markup)."""
        self.console.print(text, style=style, markup=False, highlight=False)

    def error(self, text: str) -> None:
        self.note(text, "red")


def _help(chat: ChatState, arguments: str) -> None:
    lines = ["Commands:"]
    for name, (_handler, usage, text) in COMMANDS.items():
        if name in _ALIASES:
            continue
        lines.append(f"  /{name}{' ' + usage if usage else ''}".ljust(24) + text)
    plugin_commands = _plugin_commands(chat.runtime)
    if plugin_commands:
        lines.append("From plugins (MCP prompts):")
        lines += [f"  /{name}".ljust(24) + text for name, text in plugin_commands]
    lines += [
        "Keys: Enter sends; Alt-Enter (or Esc then Enter) adds a line; Up/Down recall earlier",
        "  messages, Ctrl-R searches them; Ctrl-C clears the line (at an empty prompt, a second",
        "  Ctrl-C quits) and stops a reply; Ctrl-D at an empty prompt quits.",
    ]
    chat.note("\n".join(lines), "")


def _plugin_commands(runtime: Runtime) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for plugin, value, error in runtime.plugins.call_each_outcomes(
        "chat_commands", runtime=runtime
    ):
        if error is not None:
            runtime.plugins.report(plugin, "chat_commands", error)
            continue
        for entry in value or []:
            if isinstance(entry, tuple | list) and len(entry) == 2:
                found.append((str(entry[0]), str(entry[1])))
    return found


def _model(chat: ChatState, arguments: str) -> None:
    from hookcode.errors import HookcodeError

    if not arguments:
        chat.note(f"model {chat.probe().model_id}", "")
        return
    try:
        probe = chat.probe(model=arguments)
    except HookcodeError as exc:
        chat.error(f"/model: {exc}")
        return
    chat.model = arguments
    chat.note(f"model {probe.model_id}")


def _agent(chat: ChatState, arguments: str) -> None:
    from hookcode.errors import HookcodeError

    if not arguments:
        current = chat.probe().spec.name
        lines = []
        for name, spec in sorted(chat.runtime.agents().items()):
            if spec.mode == "hidden":
                continue
            mark = "*" if name == current else " "
            description = " ".join((spec.description or "").split())
            lines.append(f"{mark} {name:<12} {description}".rstrip())
        chat.note("\n".join(lines), "")
        return
    try:
        probe = chat.probe(agent=arguments)
    except HookcodeError as exc:
        chat.error(f"/agent: {exc}")
        return
    chat.agent = arguments
    chat.note(f"agent {probe.spec.name} · model {probe.model_id}")


def _clear(chat: ChatState, arguments: str) -> None:
    chat.session = None
    chat.note("new session (the next message starts it)")


def _session(chat: ChatState, arguments: str) -> None:
    chat.note(chat.session.id if chat.session else "(no session yet)", "")


def _sessions(chat: ChatState, arguments: str) -> None:
    from hookcode.cli.session_ref import resolve_session
    from hookcode.errors import HookcodeError

    store = chat.runtime.store
    if arguments:
        try:
            chat.session = resolve_session(store, arguments)
        except HookcodeError as exc:
            chat.error(f"/sessions: {exc}")
            return
        assert chat.session is not None
        title = chat.session.title or ""
        chat.note(f"continuing session {chat.session.id}  {title}".rstrip())
        return
    records = store.list_sessions(chat.runtime.project, conversations=True, limit=15)
    if not records:
        chat.note("no sessions yet in this project")
        return
    redact = chat.runtime.secrets.redactor().redact
    lines = []
    for record in records:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(record.updated))
        mark = "*" if chat.session and record.id == chat.session.id else " "
        lines.append(f"{mark} {record.id}  {when}  {redact(record.title)}")
    lines.append("/sessions ID switches to one (a unique prefix of its id is enough)")
    chat.note("\n".join(lines), "")


def _compact(chat: ChatState, arguments: str) -> None:
    import asyncio

    from hookcode.session import SessionLoop, load_messages
    from hookcode.session.lease import SessionLease, lease_ttl

    session = chat.session
    if session is None:
        chat.note("nothing to compact yet")
        return
    runtime = chat.runtime
    loop = SessionLoop(runtime, model=chat.model, agent=chat.agent, session=session)

    async def main() -> bool:
        with SessionLease(
            runtime.store, session.id, ttl=lease_ttl(runtime.env), stash=runtime.stash
        ):
            loop.messages = load_messages(runtime.store, session.id)
            return await loop.compact(auto=False)

    ok = asyncio.run(main())
    sys.stderr.write("compacted\n" if ok else f"compaction failed: {loop.result.error}\n")


def _exit(chat: ChatState, arguments: str) -> None:
    chat.done = True


#: name -> (handler, usage, description)
COMMANDS: dict[str, tuple[Callable[[ChatState, str], None], str, str]] = {
    "help": (_help, "", "these commands and keys"),
    "model": (_model, "[NAME]", "show the model, or use NAME (provider/model) from now on"),
    "agent": (_agent, "[NAME]", "list the agents, or use NAME from now on"),
    "clear": (_clear, "", "start a new session"),
    "new": (_clear, "", "start a new session"),
    "sessions": (_sessions, "[ID]", "this project's sessions, or continue session ID"),
    "session": (_session, "", "the current session's id"),
    "compact": (_compact, "", "summarise this session to free the context window"),
    "exit": (_exit, "", "quit (also Ctrl-D)"),
    "quit": (_exit, "", "quit"),
}
_ALIASES = {"new", "quit"}


def run_command(chat: ChatState, line: str) -> str | None:
    """Run the ``/command`` line; returns the message to send (a plugin's command, such as an
    MCP prompt), or None when nothing is to be sent (the command was ours, refused, or
    unknown: its error names the known commands)."""
    from hookcode.errors import HookcodeError

    name, _, arguments = line[1:].partition(" ")
    arguments = arguments.strip()
    own = COMMANDS.get(name)
    if own is not None:
        own[0](chat, arguments)
        return None
    runtime = chat.runtime
    outcomes = runtime.plugins.call_each_outcomes(
        "chat_command", name=name, arguments=arguments, runtime=runtime
    )
    for plugin, value, error in outcomes:
        if isinstance(error, HookcodeError):
            chat.error(f"/{name}: {error}")
            return None
        if error is not None:
            runtime.plugins.report(plugin, "chat_command", error)
        elif value is not None:
            return str(value)
    known = " ".join(f"/{n}" for n in COMMANDS if n not in _ALIASES)
    chat.error(f"unknown command /{name} (known: {known}; /help lists plugins' commands too)")
    return None
