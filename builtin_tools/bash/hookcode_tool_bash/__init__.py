"""The ``bash`` tool: run a shell command (reference/tools.md §12, ARCHITECTURE.md "Shell").

* Permission (:func:`hookcode.shell.shell_plan`): the ``shell_analyze`` hook (policy_shell)
  says which simple commands the line runs, which directories outside the project it names
  and which files it reads and writes; the tool asks ``external_directory`` for each outside
  directory (and an outside ``workdir``), ``read`` for the files it shows, ``edit`` for the
  protected files it writes, then ``bash`` with one pattern per command. With no analyser
  the whole line is one opaque pattern: rules may deny it, only a reply allows it. The
  ``permission_plan`` hook gives ``hookcode permissions explain bash`` the same requests.
* Running: the shell (``[tool.bash] shell``, else bash, else ``$SHELL`` unless fish or nu,
  else sh: the analysis reads bash's grammar, and a command another shell runs is opaque) in
  its own session below the runtime's process guardian (``runtime.processes``), stdin closed,
  stdout and stderr in one pipe (arrival order), the environment tagged with
  ``HOOKCODE_PROC_TOKEN``, passed through ``shell_env`` and given git's
  ``safe.bareRepository=explicit``. Output streams into the truncation layer (head and tail;
  the spill file holds everything).
* Timeout (``timeout`` + 100 ms, at most :data:`MAX_TIMEOUT_MS`) and abort kill the whole
  process tree: SIGTERM, 200 ms, SIGKILL. What a command leaves running in the background
  lives until the runtime closes or hookcode ends, by any signal: then it is killed too.
* ``[tool.bash] persistent = true``: one shell per session, so ``cd`` and ``export`` carry over;
  a shell that died is restarted and the model is told. ``shell_env`` runs when a shell
  starts; a ``workdir`` applies to its own command only; a timeout or abort kills the
  command's processes and (bash) unwinds the command without losing the shell's state; other
  shells are replaced.

Only the standard library and hookcode are imported here; the runner modules are stdlib only.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from hookcode import ToolContext, ToolResult, hookimpl, tool
from hookcode.errors import ToolError
from hookcode.stash import StashKey
from hookcode.tools import MAX_TIMEOUT_MS

__all__ = ["DEFAULT_TIMEOUT_MS", "MAX_TIMEOUT_MS", "bash", "close_shells"]

DEFAULT_TIMEOUT_MS = 120_000
#: the timeout fires this long after the requested one (reference)
TIMEOUT_SLACK_MS = 100

DESCRIPTION = """\
Executes a shell command with an optional timeout, in a working directory.

Before running the command:
- If the command creates files or directories, first check (with the list tool) that the
  parent directory exists.
- Quote paths that contain spaces with double quotes (cd "path with spaces/file.txt").

Usage notes:
- `command` is required. `description` is required too: say in 5-10 words what the command
  does (e.g. "Lists files in current directory", "Installs package dependencies").
- `timeout` is optional, in milliseconds (default 120000 = 2 minutes, at most 2147483647).
  Commands that run past it are killed together with every process they started.
- `workdir` runs the command in that directory; prefer it to `cd <dir> && <command>`.
- stdout and stderr are merged in the order they were written. stdin is closed: commands that
  wait for input get end-of-file at once, so pass flags such as --yes or -y instead.
- A non-zero exit code is shown at the end of the output ("exit code N").
- Long output keeps its first and last part; the full output is saved to a file whose path is
  given, so search it with grep or read parts of it instead of running the command again.
- Avoid find, grep, cat, head, tail, sed, awk and echo for reading, searching or writing files:
  the dedicated tools (glob, grep, read, edit, write) are better at it.
- Chain dependent commands with '&&' (mkdir foo && cd foo); use ';' only when a failure does not
  matter. Do not use newlines to separate commands (newlines inside quoted strings are fine).
- A command started in the background (`cmd &`) keeps running after the call returns (until
  hookcode exits); the call returns when the shell itself has finished.
- Git: never change the git config, never force-push, never skip hooks (--no-verify), and only
  commit when the user asks you to.
"""


# ---------------------------------------------------------------------------------------------
# config
# ---------------------------------------------------------------------------------------------


@hookimpl
def config_schema() -> dict[str, Any]:
    from hookcode_tool_bash._config import BashConfig

    return {"tool.bash": BashConfig}


def _settings(ctx: ToolContext) -> Any:
    section = ctx.runtime.config.section("tool.bash")
    if section is None:
        from hookcode_tool_bash._config import BashConfig

        section = BashConfig()
    return section


def _limits(ctx: ToolContext) -> tuple[int, int]:
    limits = ctx.runtime.config.core.truncation
    max_lines, max_bytes = limits.max_lines, limits.max_bytes
    own = limits.tools.get(ctx.call.tool) or limits.tools.get("bash")
    if own is not None:
        max_lines = own.max_lines or max_lines
        max_bytes = own.max_bytes or max_bytes
    return max_lines, max_bytes


# ---------------------------------------------------------------------------------------------
# the tool
# ---------------------------------------------------------------------------------------------


@tool(name="bash", description=DESCRIPTION, asks_permission=True)
async def bash(
    ctx: ToolContext,
    command: Annotated[str, "The command to execute"],
    timeout: Annotated[int | None, "Optional timeout in milliseconds (default 120000)"] = None,
    workdir: Annotated[
        str | None,
        "The working directory to run the command in. Defaults to the project directory. "
        "Use this instead of 'cd' commands.",
    ] = None,
    *,
    description: Annotated[
        str,
        "Clear, concise description of what this command does in 5-10 words. Examples:\n"
        "Input: ls\nOutput: Lists files in current directory\n\n"
        "Input: git status\nOutput: Shows working tree status\n\n"
        "Input: npm install\nOutput: Installs package dependencies\n\n"
        "Input: mkdir foo\nOutput: Creates directory 'foo'",
    ],
) -> ToolResult:
    import asyncio

    from hookcode_tool_bash import _runner

    if timeout is not None and timeout < 0:
        raise ToolError(f"Invalid timeout value: {timeout}. Timeout must be a positive number.")
    if timeout is not None and timeout > MAX_TIMEOUT_MS:
        raise ToolError(
            f"Invalid timeout value: {timeout}. Timeout must be at most {MAX_TIMEOUT_MS} ms "
            "(about 24.8 days)."
        )
    if not command.strip():
        raise ToolError("The command is empty: pass the shell command to run in `command`.")
    settings = _settings(ctx)
    timeout_ms = DEFAULT_TIMEOUT_MS if timeout is None else timeout
    if settings.max_timeout is not None:
        timeout_ms = min(timeout_ms, settings.max_timeout)

    explicit_dir: Path | None = None
    if workdir:
        explicit_dir = ctx.resolve(workdir)
        if not explicit_dir.exists():
            raise ToolError(f"The working directory does not exist: {explicit_dir}")
        if not explicit_dir.is_dir():
            raise ToolError(f"The working directory is not a directory: {explicit_dir}")

    shell = _runner.pick_shell(settings.shell, ctx.runtime.env)
    slot = _slot(ctx) if settings.persistent else None
    if explicit_dir is not None:
        run_dir = explicit_dir
    elif slot is not None and slot.shell is not None and slot.shell.alive():
        run_dir = Path(slot.shell.cwd)
    else:
        run_dir = ctx.cwd

    await _ask(ctx, command, description, run_dir, shell)

    waker = _runner.Waker()
    ctx.abort.add_callback(lambda: waker.fire("abort"))
    loop = asyncio.get_running_loop()
    job = _Job(ctx, _runner, shell, command, description, run_dir, explicit_dir, timeout_ms, waker)
    job.slot = slot
    future = loop.run_in_executor(ctx.runtime.executor, job.run if slot is None else job.run_in)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        # the pipeline gave up on us (abort, or its own cancellation): kill, then let it go on
        waker.fire("abort" if ctx.abort.is_set() else "cancel")
        with contextlib.suppress(BaseException):
            await future
        raise


async def _ask(
    ctx: ToolContext, command: str, description: str, run_dir: Path, shell: str = "bash"
) -> None:
    """Everything the command needs before it runs (:func:`hookcode.shell.shell_plan`):
    ``external_directory``, ``read`` for the files it shows, ``edit`` for the protected files
    it writes, then ``bash`` with one pattern per simple command."""
    import asyncio

    from hookcode.shell import shell_plan

    def plan() -> Any:
        return shell_plan(
            ctx,
            command,
            run_dir,
            permission=bash.permission_name,
            shell=shell,
            description=description,
        )

    planned = await asyncio.get_running_loop().run_in_executor(ctx.runtime.executor, plan)
    for ask in planned.asks:
        await ctx.ask(ask.permission, ask.patterns, ask.always, ask.metadata)


@hookimpl
def permission_plan(permission: str, pattern: str, ctx: ToolContext) -> Any:
    """``hookcode permissions explain bash COMMAND``: what this tool would ask before running
    COMMAND in the working directory, with the shell it would run it in."""
    if permission != bash.permission_name:
        return None
    from hookcode.shell import shell_plan

    from hookcode_tool_bash import _runner

    shell = _runner.pick_shell(_settings(ctx).shell, ctx.runtime.env)
    return shell_plan(ctx, pattern, ctx.cwd, permission=permission, shell=shell)


def _environment(ctx: ToolContext, cwd: Path, token: str) -> dict[str, str]:
    from hookcode.guardian import TOKEN_VAR

    env = dict(ctx.runtime.env)
    env[TOKEN_VAR] = token
    ctx.runtime.plugins.call_each("shell_env", env=env, cwd=str(cwd), ctx=ctx)
    env[TOKEN_VAR] = token  # the tag is not negotiable: the tree kill relies on it
    git_settings(env)
    return {str(k): str(v) for k, v in env.items()}


#: git settings every command runs with: a repository found by walking up from the working
#: directory must not be a bare one, so a bare repository committed inside a cloned project
#: (its own ``config`` with ``core.fsmonitor``, diff drivers...) is never used by an allowed
#: ``git status`` or ``git log`` run in it (git's own ``safe.bareRepository`` hardening)
GIT_SETTINGS = (("safe.bareRepository", "explicit"),)


def git_settings(env: dict[str, str]) -> None:
    """Add :data:`GIT_SETTINGS` to ``env`` through ``GIT_CONFIG_COUNT``/``KEY_n``/``VALUE_n``,
    after any the environment already sets (those keep working)."""
    try:
        count = int(env.get("GIT_CONFIG_COUNT", "0") or "0")
    except ValueError:
        count = 0
    for key, value in GIT_SETTINGS:
        env[f"GIT_CONFIG_KEY_{count}"] = key
        env[f"GIT_CONFIG_VALUE_{count}"] = value
        count += 1
    env["GIT_CONFIG_COUNT"] = str(count)


class _Job:
    """One call's blocking part (a worker thread)."""

    def __init__(
        self,
        ctx: ToolContext,
        runner: Any,
        shell: str,
        command: str,
        description: str,
        run_dir: Path,
        explicit_dir: Path | None,
        timeout_ms: int,
        waker: Any,
    ) -> None:
        self.ctx = ctx
        self.runner = runner
        self.shell = shell
        self.command = command
        self.description = description
        self.run_dir = run_dir
        self.explicit_dir = explicit_dir
        self.timeout_ms = timeout_ms
        self.waker = waker
        self.slot: _Slot | None = None
        self.deadline = time.monotonic() + (timeout_ms + TIMEOUT_SLACK_MS) / 1000
        max_lines, max_bytes = _limits(ctx)
        self.writer = ctx.runtime.truncator.writer(
            max_lines=max_lines,
            max_bytes=max_bytes,
            direction="both",
            advice=ctx.runtime.registry.truncation_hint(ctx.agent, ctx.session_id),
        )
        self.preview = runner.Preview(ctx, self.writer, description)

    # one-shot ---------------------------------------------------------------------------------
    def run(self) -> ToolResult:
        runner = self.runner
        token = runner.new_token()
        try:
            env = _environment(self.ctx, self.run_dir, token)
            try:
                outcome = runner.run_one_shot(
                    runner.one_shot_argv(self.shell, self.command),
                    processes=self.ctx.runtime.processes,
                    cwd=str(self.run_dir),
                    env=env,
                    token=token,
                    session=self.ctx.session_id,
                    deadline=self.deadline,
                    waker=self.waker,
                    writer=self.writer,
                    preview=self.preview,
                )
            except OSError as exc:
                raise ToolError(f"Failed to start the shell {self.shell!r}: {exc}") from exc
            return self._result(outcome)
        finally:
            self.writer.finish()
            self.waker.close()

    # persistent -------------------------------------------------------------------------------
    def run_in(self) -> ToolResult:
        runner = self.runner
        slot = self.slot
        assert slot is not None
        try:
            while not slot.lock.acquire(timeout=0.05):  # another call of this session runs
                if self.waker.reason is not None:
                    return self._result(runner.RunResult(aborted=True))
                if time.monotonic() >= self.deadline:
                    return self._result(runner.RunResult(timed_out=True))
            try:
                notes: list[str] = []
                shell = slot.shell
                if shell is not None and not shell.alive():
                    shell.close()
                    slot.shell = shell = None
                    if not slot.told:
                        notes.append(
                            "The persistent shell had exited and was restarted: the working "
                            "directory and variables set by earlier commands are lost."
                        )
                if shell is None:
                    token = runner.new_token()
                    start_dir = self.ctx.cwd
                    env = _environment(self.ctx, start_dir, token)
                    try:
                        shell = runner.PersistentShell(
                            self.shell,
                            str(start_dir),
                            env,
                            token,
                            self.ctx.runtime.processes,
                            self.ctx.session_id,
                        )
                    except OSError as exc:
                        raise ToolError(f"Failed to start the shell {self.shell!r}: {exc}") from exc
                    slot.shell = shell
                    slot.told = False
                outcome = shell.run(
                    self.command,
                    workdir=str(self.explicit_dir) if self.explicit_dir is not None else None,
                    deadline=self.deadline,
                    waker=self.waker,
                    writer=self.writer,
                    preview=self.preview,
                )
                if outcome.notes:
                    slot.told = True  # the model heard about this shell's end already
                if not shell.alive():
                    shell.close()
                    slot.shell = None
                outcome.notes[:0] = notes
                return self._result(outcome)
            finally:
                slot.lock.release()
        finally:
            self.writer.finish()
            self.waker.close()

    # result -----------------------------------------------------------------------------------
    def _result(self, outcome: Any) -> ToolResult:
        cut = self.writer.finish()
        text = cut.content
        footer: list[str] = []
        if outcome.timed_out:
            footer.append(
                f"bash tool terminated command after exceeding timeout {self.timeout_ms} ms"
            )
        if outcome.aborted:
            footer.append("User aborted the command")
        if outcome.signal is not None:
            footer.append(f"The shell was terminated by signal {_signal_name(outcome.signal)}")
        footer += outcome.notes
        if footer:
            text += "\n\n<bash_metadata>\n" + "\n".join(footer) + "\n</bash_metadata>"
        killed = outcome.timed_out or outcome.aborted
        exit_code = None if killed else outcome.exit
        if exit_code:
            text += ("\n" if text and not text.endswith("\n") else "") + f"exit code {exit_code}"
        metadata: dict[str, Any] = {
            "output": self.writer.preview(),
            "exit": exit_code,
            "description": self.description,
            "truncated": cut.truncated,
        }
        if cut.truncated:
            metadata["outputPath"] = str(cut.output_path)
        return ToolResult(output=text, title=self.description, metadata=metadata)


def _signal_name(number: int) -> str:
    import signal

    try:
        return f"{signal.Signals(number).name} ({number})"
    except ValueError:
        return str(number)


# ---------------------------------------------------------------------------------------------
# persistent shells: one per session, kept per runtime
# ---------------------------------------------------------------------------------------------


class _Slot:
    """One session's persistent shell (a plain class: a dataclass costs at import)."""

    __slots__ = ("lock", "shell", "told")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.shell: Any = None
        self.told = False  # the model was already told that this slot's shell is gone


#: the persistent shells of a runtime, per session id
_SHELLS = StashKey[dict[str, _Slot]]()
_SHELLS_LOCK = threading.Lock()


def _slots(runtime: Any) -> dict[str, _Slot] | None:
    return runtime.stash.get(_SHELLS, None)


def _slot(ctx: ToolContext) -> _Slot:
    with _SHELLS_LOCK:
        slots = _slots(ctx.runtime)
        if slots is None:
            slots = ctx.runtime.stash[_SHELLS] = {}
            ctx.runtime.on_close(functools.partial(_close_slots, slots))
        slot = slots.get(ctx.session_id)
        if slot is None:
            slot = slots[ctx.session_id] = _Slot()
        return slot


def _close_slots(slots: dict[str, _Slot]) -> None:
    for slot in list(slots.values()):
        shell, slot.shell = slot.shell, None
        if shell is not None:
            with contextlib.suppress(Exception):
                shell.close()
    slots.clear()


def close_shells(runtime: Any, session_id: str | None = None) -> None:
    """Stop the persistent shells of ``runtime`` (one session's, or all)."""
    with _SHELLS_LOCK:
        slots = _slots(runtime)
    if not slots:
        return
    if session_id is None:
        _close_slots(slots)
    elif session_id in slots:
        _close_slots({session_id: slots.pop(session_id)})


def persistent_shell_pid(runtime: Any, session_id: str) -> int | None:
    """The pid of a session's persistent shell, if one runs (for tests and diagnostics)."""
    slot = (_slots(runtime) or {}).get(session_id)
    if slot is None or slot.shell is None or not slot.shell.alive():
        return None
    return int(slot.shell.pid)


@hookimpl
def register_tools(register: Callable[..., None]) -> None:
    register(bash)
