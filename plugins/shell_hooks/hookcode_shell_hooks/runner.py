"""Running one hook command: JSON on stdin, exit code, stdout and stderr back.

A hook that cannot start, times out or is killed comes back with ``problem`` set; the caller
reports it and goes on (a broken hook never blocks, as in Claude Code). Hooks run below the
runtime's process guardian (``runtime.processes``): a timeout kills the hook's whole process
tree (``setsid`` and double-forked children too), and nothing it started outlives hookcode.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hookcode.process import Child, Processes

__all__ = ["HookRun", "argv_of", "label_of", "run_hook", "run_hook_sync"]


@dataclass
class HookRun:
    """What one hook did."""

    label: str
    status: int | None = None
    stdout: str = ""
    stderr: str = ""
    problem: str | None = None

    def json_output(self) -> tuple[dict[str, Any] | None, str | None]:
        """(the stdout JSON object, None), (None, None) for no output, or (None, problem)."""
        text = self.stdout.strip()
        if not text:
            return None, None
        try:
            value = json.loads(text)
        except ValueError:
            return None, f"printed output that is not JSON: {_excerpt(text)}"
        if not isinstance(value, dict):
            return None, f"printed JSON that is not an object: {_excerpt(text)}"
        return value, None

    def stderr_text(self) -> str:
        return self.stderr.strip()


def argv_of(command: str | list[str]) -> list[str]:
    return ["sh", "-c", command] if isinstance(command, str) else [str(c) for c in command]


def label_of(event: str, index: int, command: str | list[str], source: str | None = None) -> str:
    """How messages name a hook: its event, its place among the event's hooks, its command and,
    for one from a Claude Code settings file, that file."""
    text = command if isinstance(command, str) else " ".join(command)
    label = f"shell hook {event}[{index}] `{_excerpt(text, 60)}`"
    return f"{label} ({source})" if source else label


async def run_hook(
    label: str,
    command: str | list[str],
    payload: Mapping[str, Any],
    *,
    cwd: str,
    env: Mapping[str, str],
    timeout: float,
    processes: Processes,
) -> HookRun:
    """Run a hook without blocking the event loop (in a worker thread)."""
    import asyncio

    started: list[Child] = []
    try:
        return await asyncio.to_thread(
            _run, label, command, payload, cwd, env, timeout, processes, started
        )
    except asyncio.CancelledError:
        for child in started:
            child.terminate()  # the thread sees its pipes close and returns
        raise


def run_hook_sync(
    label: str,
    command: str | list[str],
    payload: Mapping[str, Any],
    *,
    cwd: str,
    env: Mapping[str, str],
    timeout: float,
    processes: Processes,
) -> HookRun:
    """Run a hook from synchronous code (the ``chat_message`` and ``event`` hooks)."""
    return _run(label, command, payload, cwd, env, timeout, processes, [])


def _run(
    label: str,
    command: str | list[str],
    payload: Mapping[str, Any],
    cwd: str,
    env: Mapping[str, str],
    timeout: float,
    processes: Processes,
    started: list[Child],
) -> HookRun:
    """Start the hook below the runtime's process guardian (its whole tree dies on a timeout
    and with hookcode), feed it the event, collect what it says."""
    data = json.dumps(payload, default=str).encode()
    try:
        child = processes.spawn(
            argv_of(command),
            cwd=cwd,
            env=env,
            stdin=True,
            separate_stderr=True,
        )
    except OSError as exc:
        return HookRun(label, problem=f"could not start: {exc.strerror or exc}")
    started.append(child)
    try:
        child.started()
    except OSError as exc:
        child.close()
        return HookRun(label, problem=f"could not start: {exc.strerror or exc}")
    try:
        out, err = child.communicate(data, timeout)
    except TimeoutError:
        child.kill()
        return HookRun(label, problem=f"timed out after {timeout:g} s and was killed")
    except BaseException:
        child.kill()
        raise
    finally:
        if not child.gone:
            child.detach()  # what it left in the background lives until the runtime ends
        child.close()
    return HookRun(label, child.returncode, _text(out), _text(err))


def _text(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", errors="replace")


def _excerpt(text: str, limit: int = 80) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 3] + "..."
