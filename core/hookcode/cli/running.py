"""Running one turn of the loop from the command line: signals (Ctrl-C, SIGTERM, SIGHUP),
the exit code, and ``hookcode run``."""

from __future__ import annotations

import contextlib
import signal
import sys
from typing import IO, TYPE_CHECKING, Any

from hookcode.cli.display import JsonDisplay, ResultDisplay, TextDisplay
from hookcode.cli.prompts import TERMINAL_PLUGIN
from hookcode.cli.screen import hung_up
from hookcode.cli.screen import write as _write

if TYPE_CHECKING:
    from hookcode.runtime import Runtime
    from hookcode.session import RunResult
    from hookcode.store import SessionRecord

__all__ = ["approval_hint", "exit_code", "has_terminal", "run_cli", "run_turn"]


def run_turn(
    runtime: Runtime,
    text: str,
    display: Any,
    *,
    model: str | None = None,
    agent: str | None = None,
    session: SessionRecord | None = None,
) -> RunResult | None:
    """Run the loop once with ``display``; Ctrl-C (SIGINT), SIGTERM or SIGHUP (the terminal
    closed) aborts the run: running tools are cancelled and marked aborted, their process trees
    killed, the session stored. A second Ctrl-C interrupts at once. Returns None when
    interrupted that way. Output that cannot be written (a closed terminal or pipe) is
    dropped: it never stops the run from being stored."""
    import asyncio

    from hookcode.session import SessionLoop
    from hookcode.tools import AbortSignal

    abort = AbortSignal()

    def emit(kind: str, data: dict[str, Any]) -> None:
        with contextlib.suppress(OSError):
            display.event(kind, data)

    loop_obj = SessionLoop(
        runtime,
        model=model,
        agent=agent,
        session=session,
        abort=abort,
        on_event=emit,
    )

    async def main() -> RunResult:
        loop = asyncio.get_running_loop()
        installed: list[int] = []

        def on_signal(signum: int) -> None:
            abort.abort("interrupted")
            if signum == signal.SIGHUP:
                hung_up.set()
            with contextlib.suppress(Exception):
                loop.remove_signal_handler(signum)  # a second one interrupts for good
            if signum == signal.SIGINT:
                with contextlib.suppress(OSError):
                    _write(sys.stderr, "\nhookcode: aborting (Ctrl-C again to quit at once)\n")

        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            try:
                loop.add_signal_handler(signum, on_signal, signum)
                installed.append(signum)
            except (NotImplementedError, RuntimeError, ValueError):
                pass
        try:
            return await loop_obj.run(text)
        finally:
            for signum in installed:
                with contextlib.suppress(Exception):
                    loop.remove_signal_handler(signum)

    # the display's live parts (a running tool's output) follow the runtime's events
    bus_event = getattr(display, "bus_event", None)
    live = getattr(display, "live", None) is not None
    unsubscribe = runtime.events.subscribe(bus_event) if live and bus_event is not None else None
    try:
        return asyncio.run(main())
    except KeyboardInterrupt:
        return None
    finally:
        if unsubscribe is not None:
            unsubscribe()
        with contextlib.suppress(OSError):
            display.close()


def has_terminal(runtime: Runtime) -> bool:
    """Whether the terminal prompt answers permission asks in this run (otherwise a refusal
    was for want of an approver: ``--non-interactive``, no TTY)."""
    pm = getattr(runtime.plugins, "pm", None)
    return bool(pm is not None and pm.has_plugin(TERMINAL_PLUGIN))


def exit_code(runtime: Runtime, result: RunResult | None, *, stderr: IO[str] | None = None) -> int:
    """0 ok; 1 failed or refused for want of an approver; 130 aborted."""
    err = stderr or sys.stderr
    if result is None:
        err.write("hookcode: interrupted\n")
        return 130
    if result.error:
        err.write(f"hookcode: error: {result.error}\n")
        return 1
    if result.aborted:
        err.write("hookcode: aborted\n")
        return 130
    if result.refused and not has_terminal(runtime):
        names = ", ".join(
            f"{r['tool']} {r['permission']} {' '.join(r['patterns'])} ({r['call_id']})"
            for r in result.refused
        )
        protected = any((r.get("metadata") or {}).get("protected") for r in result.refused)
        err.write(
            f"hookcode: refused tool calls (nobody to approve them: {approval_hint(protected)}): "
            f"{names}\n"
        )
        return 1
    return 0


def approval_hint(protected: bool) -> str:
    """How a headless refusal could have been approved."""
    if protected:
        return (
            "a protected path needs a person in a terminal or a rule naming it, such as "
            'edit = { "hookcode.toml" = "allow" } (--yes does not approve it)'
        )
    return "run in a terminal, or pass --yes or a rule in hookcode.toml"


def run_cli(
    runtime: Runtime,
    text: str,
    *,
    model: str | None = None,
    agent: str | None = None,
    session: SessionRecord | None = None,
    fmt: str = "text",
) -> int:
    """``hookcode run``: stream the run with the chosen display; returns the exit code."""
    displays = {"json": JsonDisplay, "json-result": ResultDisplay}
    display: Any = displays.get(fmt, TextDisplay)()
    result = run_turn(runtime, text, display, model=model, agent=agent, session=session)
    with contextlib.suppress(OSError):  # the terminal may be gone (SIGHUP)
        display.finish(result)
    try:
        return exit_code(runtime, result)
    except OSError:
        return 130 if result is None or result.aborted else 1
