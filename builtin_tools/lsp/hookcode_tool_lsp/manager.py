"""Language servers for one runtime, kept on a background event loop.

The CLI runs one ``asyncio.run`` per command and the agent loop may run several, so a server's
pipes cannot belong to the caller's loop: one daemon thread runs an event loop that owns every
server of the process; callers reach it with ``run_coroutine_threadsafe`` (:func:`call` from
async code). Servers start lazily, one per (server, workspace root); a server that died is
started again on its next use; all of them are shut down when their runtime ends
(``Runtime.on_close``: closed, garbage-collected or at exit), or by :func:`close_all`.

Which servers handle a file, and in which root: :mod:`hookcode_tool_lsp.servers`; what each
of the nine operations asks a server: :mod:`hookcode_tool_lsp.operations`; how a change is
told to a server and its diagnostics awaited: :mod:`hookcode_tool_lsp.diagnostics`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import threading
import time
import weakref
from collections.abc import Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from hookcode.background import BackgroundLoop
from hookcode.stash import StashKey

from hookcode_tool_lsp.client import LspClient, LspError, ServerGone
from hookcode_tool_lsp.diagnostics import DiagnosticsReport, notify_and_wait
from hookcode_tool_lsp.operations import OPERATIONS, NotSupported, run_operation
from hookcode_tool_lsp.servers import ServerSpec, find_specs, language_id, root_for

__all__ = [
    "DiagnosticsReport",
    "Manager",
    "NoServer",
    "NotSupported",
    "ServerSpec",
    "TooLarge",
    "call",
    "close_all",
    "manager_for",
    "submit",
]

T = TypeVar("T")

#: the quiet time that ends the wait for diagnostics after a change (seconds)
DIAGNOSTICS_DEBOUNCE = 0.15
#: a server that did not start in time is not tried again for this long (seconds)
START_BACKOFF = 30.0
#: seconds ``close_all`` waits for the servers to shut down
CLOSE_TIMEOUT = 3.0


class NoServer(Exception):
    """No language server is configured or found for a file."""


class Unavailable(Exception):
    """A server for the file exists in config but cannot run now."""


class TooLarge(Exception):
    """The file is larger than ``[lsp] max_file_bytes``: servers never see it."""


# ---------------------------------------------------------------------------------------------
# the background loop
# ---------------------------------------------------------------------------------------------


_LOOP = BackgroundLoop("hookcode-lsp")


def submit(coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
    """Run ``coro`` on the servers' loop; returns a thread-safe future."""
    return _LOOP.submit(coro)


async def call(coro: Coroutine[Any, Any, T]) -> T:
    """Await ``coro`` on the servers' loop from another event loop (cancellation carries
    over)."""
    if _LOOP.in_loop():
        return await coro
    return await asyncio.wrap_future(submit(coro))


# ---------------------------------------------------------------------------------------------
# one manager per runtime
# ---------------------------------------------------------------------------------------------

#: the runtime's manager
_MANAGER = StashKey["Manager"]()
_ALL: weakref.WeakSet[Manager] = weakref.WeakSet()
_MANAGERS_LOCK = threading.Lock()


def manager_for(runtime: Any) -> Manager:
    """The runtime's manager (made on first use; its servers shut down when the runtime
    ends: closed, collected or at exit, through ``runtime.on_close``)."""
    with _MANAGERS_LOCK:
        manager = runtime.stash.get(_MANAGER, None)
        if manager is None:
            manager = runtime.stash[_MANAGER] = Manager.from_runtime(runtime)
            _ALL.add(manager)
            runtime.on_close(manager.close_now)
        return manager


def close_all(timeout: float = CLOSE_TIMEOUT, *, final: bool = False) -> None:
    """Shut every server of every manager in this process down; a later use starts them
    again unless ``final``."""
    if not _LOOP.started:
        return
    managers = list(_ALL)
    if not managers:
        return

    async def close() -> None:
        await asyncio.gather(*(m.close(final=final) for m in managers), return_exceptions=True)

    future = submit(close())
    with contextlib.suppress(Exception):
        future.result(timeout)


class Manager:
    """The servers of one runtime: specs from its config, clients per (server, root)."""

    def __init__(
        self,
        settings: Any,
        *,
        env: Mapping[str, str],
        cwd: Path,
        worktree: Path,
        processes: Any = None,
    ) -> None:
        """``processes``: the runtime's :class:`hookcode.process.Processes`, which the servers
        run below (without it each client starts a guardian of its own)."""
        self.settings = settings
        self.processes = processes
        self.env = dict(env)
        self.cwd = cwd
        self.worktree = worktree
        self.max_bytes = int(settings.max_file_bytes)
        #: config problems (a new server without a command), reported once per note
        self.config_problems: list[str] = []
        self.specs: list[ServerSpec] = find_specs(settings, self.env, cwd, self.config_problems)
        self._clients: dict[tuple[str, Path], LspClient] = {}
        self._starting: dict[tuple[str, Path], asyncio.Task[LspClient]] = {}
        self._failures: dict[tuple[str, Path], tuple[str, float]] = {}
        #: how many times each server was started (tests and `restarts` in metadata)
        self.starts: dict[str, int] = {}
        self._closed = False

    @classmethod
    def from_runtime(cls, runtime: Any) -> Manager:
        return cls(
            settings_of(runtime.config),
            env=runtime.env,
            cwd=runtime.cwd,
            worktree=runtime.worktree,
            processes=runtime.processes,
        )

    # -- which servers (hookcode_tool_lsp.servers) --------------------------------------------
    def specs_for(self, path: str | Path) -> list[ServerSpec]:
        text = str(path)
        return [spec for spec in self.specs if spec.handles(text)]

    def root_for(self, spec: ServerSpec, path: str | Path) -> Path:
        """The nearest directory holding a root marker, up to the worktree (inclusive);
        else the worktree (or, outside it, the file's directory)."""
        return root_for(spec, path, self.worktree)

    # -- clients (on the loop) ----------------------------------------------------------------
    async def client(self, spec: ServerSpec, root: Path) -> LspClient:
        """A running client for (server, root), started (again) if needed; Unavailable with
        the reason otherwise."""
        if self._closed:
            raise Unavailable("hookcode is shutting down")
        key = (spec.name, root)
        client = self._clients.get(key)
        if client is not None:
            if client.alive:
                return client
            del self._clients[key]  # it died: start it again
        if spec.unavailable is not None:
            raise Unavailable(spec.unavailable)
        failure = self._failures.get(key)
        if failure is not None and time.monotonic() < failure[1]:
            raise Unavailable(failure[0])
        task = self._starting.get(key)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._start(spec, root))
            self._starting[key] = task
            task.add_done_callback(lambda _t: self._starting.pop(key, None))
        return await asyncio.shield(task)

    async def _start(self, spec: ServerSpec, root: Path) -> LspClient:
        key = (spec.name, root)
        env = {**self.env, **dict(spec.env)}
        client = LspClient(
            spec.name,
            spec.command,
            root,
            env=env,
            initialization_options=spec.initialization,
            processes=self.processes,
        )
        self.starts[spec.name] = self.starts.get(spec.name, 0) + 1
        timeout = float(self.settings.start_timeout)
        try:
            await client.start(timeout)
        except TimeoutError:
            reason = f"did not start within {timeout:g} s"
            self._failures[key] = (reason, time.monotonic() + START_BACKOFF)
            raise Unavailable(reason) from None
        except ServerGone as exc:
            await client.kill()
            raise Unavailable(f"could not start: {exc}") from None
        except LspError as exc:
            await client.kill()
            raise Unavailable(f"refused to initialize: {exc}") from None
        self._failures.pop(key, None)
        if self._closed:
            await client.shutdown()
            raise Unavailable("hookcode is shutting down")
        self._clients[key] = client
        return client

    def clients(self) -> list[LspClient]:
        return list(self._clients.values())

    # -- operations (on the loop) -------------------------------------------------------------
    async def warm(self, path: str) -> None:
        """Start the servers for ``path`` and open it, without waiting for anything else."""
        specs = self.specs_for(path)
        if not specs:
            return
        try:
            text = await asyncio.to_thread(_read, path, self.max_bytes)
        except TooLarge:
            return
        if text is None:
            return

        async def one(spec: ServerSpec) -> None:
            with contextlib.suppress(Unavailable, ServerGone, LspError):
                client = await self.client(spec, self.root_for(spec, path))
                await client.sync_document(path, text, language_id(spec, path))

        await asyncio.gather(*(one(spec) for spec in specs))

    async def diagnose(
        self,
        changed: Sequence[str],
        deleted: Sequence[str] = (),
        *,
        created: frozenset[str] = frozenset(),
        timeout: float | None = None,
        debounce: float = DIAGNOSTICS_DEBOUNCE,
        other_files: bool = False,
        busy_cap: float | None = None,
    ) -> DiagnosticsReport:
        """Tell the servers about changed and deleted files, wait for the changed files'
        diagnostics (``debounce`` quiet time, at most ``timeout`` seconds, default ``[lsp]
        diagnostics_ready_wait``, once a server runs; up to ``busy_cap``, default ``[lsp]
        diagnostics_wait``, while a server is cold or reports work in progress), and return every
        file's latest diagnostics; a file no server published for in time is named in
        ``late`` (never read as clean). ``created``: changed files that
        are new on disk. A server that had died before is started again (once) and a server
        that cannot run or dies on the way is named in ``problems``. ``other_files``: the quiet time
        counts every file's diagnostics, so files depending on the changed ones are
        re-checked before the wait ends (write and apply_patch show them)."""
        report = DiagnosticsReport()
        ready = float(self.settings.diagnostics_ready_wait) if timeout is None else timeout
        busy = float(self.settings.diagnostics_wait) if busy_cap is None else busy_cap
        texts: dict[str, str | None] = {}
        for path in changed:
            if not self.specs_for(path):
                continue
            try:
                texts[path] = await asyncio.to_thread(_read, path, self.max_bytes)
            except TooLarge as exc:
                report.large.append(f"{path}: {exc}")
        changed = [path for path in changed if texts.get(path) is not None]
        groups: dict[tuple[str, Path], tuple[ServerSpec, list[str], list[str]]] = {}
        for path in changed:
            for spec in self.specs_for(path):
                key = (spec.name, self.root_for(spec, path))
                groups.setdefault(key, (spec, [], []))[1].append(path)
        for path in deleted:
            for spec in self.specs_for(path):
                key = (spec.name, self.root_for(spec, path))
                groups.setdefault(key, (spec, [], []))[2].append(path)
        if not groups:
            return report

        async def one(spec: ServerSpec, root: Path, paths: list[str], gone: list[str]) -> None:
            for attempt in (1, 2):
                before = self._clients.get((spec.name, root))
                if not paths and (before is None or not before.alive):
                    return  # only deletions: nothing to tell a server that is not running
                try:
                    client = await self.client(spec, root)
                except Unavailable as exc:
                    report.problems.append(f"server '{spec.name}' {_reason(exc)}")
                    return
                try:
                    missing = await notify_and_wait(
                        client,
                        spec,
                        paths,
                        gone,
                        texts,
                        created,
                        ready,
                        debounce,
                        other_files,
                        busy,
                    )
                except ServerGone as exc:
                    if attempt == 1 and client is before:
                        continue  # it had died before this call: start it again, once
                    report.problems.append(
                        f"server '{spec.name}' {exc}; it will be restarted on next use"
                    )
                    return
                report.servers.append(spec.name)
                report.late += [(path, f"server '{spec.name}': {line}") for path, line in missing]
                return

        await asyncio.gather(
            *(one(spec, key[1], paths, gone) for key, (spec, paths, gone) in groups.items())
        )
        report.files = self.diagnostics()
        return report

    def diagnostics(self) -> dict[str, list[dict[str, Any]]]:
        """Every file's latest diagnostics over the live servers (merged by path)."""
        files: dict[str, list[dict[str, Any]]] = {}
        for client in self._clients.values():
            if not client.alive:
                continue
            for path, diagnostics in client.diagnostics().items():
                files.setdefault(path, []).extend(diagnostics)
        return files

    async def request(
        self, path: str, operation: str, line: int, character: int, *, timeout: float
    ) -> list[Any]:
        """Run one of the nine operations at a 0-based position on every server for
        ``path``; the results flattened in one list. NoServer when none handles the file."""
        specs = self.specs_for(path)
        if not specs:
            raise NoServer(path)
        text = await asyncio.to_thread(_read, path, self.max_bytes)  # TooLarge goes up
        if text is None:
            raise NoServer(path)
        results: list[Any] = []
        problems: list[str] = []
        lacking: list[str] = []
        answered = 0
        for spec in specs:
            try:
                found = await self._request_one(
                    spec, path, text, operation, line, character, timeout
                )
            except NotSupported:
                lacking.append(spec.name)
                continue
            except Unavailable as exc:
                problems.append(f"server '{spec.name}' {_reason(exc)}")
                continue
            except ServerGone as exc:
                problems.append(f"server '{spec.name}' {exc}")
                continue
            except TimeoutError:
                problems.append(f"server '{spec.name}' did not answer within {timeout:g} s")
                continue
            except LspError:
                answered += 1  # an error answer counts as no result (as the reference)
                continue
            answered += 1
            results.extend(found)
        if not answered and problems:
            raise Unavailable("; ".join(problems))
        if not answered and lacking:
            method = OPERATIONS[operation][0]
            names = ", ".join(f"'{name}'" for name in lacking)
            raise NotSupported(f"server {names} does not support {method}")
        return results

    async def _request_one(
        self,
        spec: ServerSpec,
        path: str,
        text: str,
        operation: str,
        line: int,
        character: int,
        timeout: float,
    ) -> list[Any]:
        root = self.root_for(spec, path)
        for attempt in (1, 2):
            before = self._clients.get((spec.name, root))
            client = await self.client(spec, root)
            try:
                since = client.last_seq(path)
                version, sent = await client.sync_document(path, text, language_id(spec, path))
                if sent:  # as the reference: let the server check the file first
                    await client.wait_diagnostics(
                        path,
                        since=since,
                        version=version,
                        debounce=DIAGNOSTICS_DEBOUNCE,
                        timeout=float(self.settings.diagnostics_ready_wait),
                    )
                return await run_operation(client, operation, path, text, line, character, timeout)
            except ServerGone:
                if attempt == 1 and client is before:
                    continue  # it had died before this call: start it again, once
                raise
        raise AssertionError("unreachable")

    # -- closing ------------------------------------------------------------------------------
    async def close(self, *, final: bool = True) -> None:
        """Shut every server down; ``final``: none is started again."""
        self._closed = self._closed or final
        for task in list(self._starting.values()):
            task.cancel()
        clients, self._clients = list(self._clients.values()), {}
        await asyncio.gather(*(c.shutdown() for c in clients), return_exceptions=True)

    def close_now(self, timeout: float = CLOSE_TIMEOUT) -> None:
        """Shut the servers down and wait (at most ``timeout`` seconds): the runtime closes."""
        if not _LOOP.started:
            self._closed = True
            return
        if _LOOP.in_loop():
            submit(self.close())
            return
        with contextlib.suppress(Exception):
            submit(self.close()).result(timeout)

    def close_soon(self) -> None:
        """Shut the servers down in the background (the runtime was collected)."""
        if _LOOP.started and self._clients:
            with contextlib.suppress(RuntimeError):
                submit(self.close())


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


def settings_of(config: Any) -> Any:
    """The ``[lsp]`` section (defaults when absent)."""
    section = config.section("lsp") if config is not None else None
    if section is None:
        from hookcode_tool_lsp._config import LspConfig

        section = LspConfig()
    return section


def _read(path: str, limit: int) -> str | None:
    """The file's text (None when it cannot be read); TooLarge past ``limit`` bytes."""
    from hookcode.fileio import read_text

    try:
        size = os.path.getsize(path)
    except OSError:
        return None
    if size > limit:
        raise TooLarge(f"{size} bytes, more than [lsp] max_file_bytes = {limit}")
    try:
        file = read_text(path)
    except (OSError, ValueError):
        return None
    return file.text if file.exists else None


def _reason(exc: Unavailable) -> str:
    text = str(exc)
    return (
        text
        if text.startswith(("could not", "did not", "refused"))
        else (f"is unavailable: {text}")
    )
