"""Running one hook command: JSON on stdin, exit code, stdout and stderr back.

A hook that cannot start, times out or is killed comes back with ``problem`` set; the caller
reports it and goes on (a broken hook never blocks, as in Claude Code). Timeouts kill the
hook's whole process group.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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


def label_of(event: str, index: int, command: str | list[str]) -> str:
    text = command if isinstance(command, str) else " ".join(command)
    return f"shell hook {event}[{index}] `{_excerpt(text, 60)}`"


async def run_hook(
    label: str,
    command: str | list[str],
    payload: Mapping[str, Any],
    *,
    cwd: str,
    env: Mapping[str, str],
    timeout: float,
) -> HookRun:
    """Run a hook without blocking the event loop."""
    from hookcode.childwatch import ensure_child_watcher

    ensure_child_watcher()  # no thread per hook process on Python 3.11
    data = json.dumps(payload, default=str).encode()
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv_of(command),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
        )
    except OSError as exc:
        return HookRun(label, problem=f"could not start: {exc.strerror or exc}")
    try:
        out, err = await asyncio.wait_for(proc.communicate(data), timeout)
    except (TimeoutError, asyncio.CancelledError) as exc:
        _kill_group(proc.pid)
        with contextlib.suppress(Exception):
            await proc.wait()
        if isinstance(exc, asyncio.CancelledError):
            raise
        return HookRun(label, problem=f"timed out after {timeout:g} s and was killed")
    return HookRun(label, proc.returncode, _text(out), _text(err))


def run_hook_sync(
    label: str,
    command: str | list[str],
    payload: Mapping[str, Any],
    *,
    cwd: str,
    env: Mapping[str, str],
    timeout: float,
) -> HookRun:
    """Run a hook from synchronous code (the ``chat_message`` and ``event`` hooks)."""
    data = json.dumps(payload, default=str).encode()
    try:
        proc = subprocess.Popen(
            argv_of(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
        )
    except OSError as exc:
        return HookRun(label, problem=f"could not start: {exc.strerror or exc}")
    try:
        out, err = proc.communicate(data, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        # the whole group is dead, so the pipes close: this returns at once
        proc.communicate()
        return HookRun(label, problem=f"timed out after {timeout:g} s and was killed")
    return HookRun(label, proc.returncode, _text(out), _text(err))


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _text(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", errors="replace")


def _excerpt(text: str, limit: int = 80) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 3] + "..."
