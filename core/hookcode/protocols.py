"""The shapes low modules need from higher ones, as Protocols shared by several of them: a
module that only calls a few methods of the runtime or a tool context names one of these
instead of importing :mod:`hookcode.runtime` or :mod:`hookcode.tools` (not even under
``TYPE_CHECKING``), so the import graph keeps one direction
(``tests/core/test_import_graph.py``). :class:`~hookcode.runtime.Runtime` and
:class:`~hookcode.tools.ToolContext` satisfy them structurally, which pyright checks where
they are passed. A Protocol one module alone needs
lives in that module (:mod:`hookcode.shell`, :mod:`hookcode.question`); what low modules call
on the plugin manager is :class:`hookcode.plugin_manager.HookCaller`, beside it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from hookcode.fileio import PathLocks, PendingWrites
    from hookcode.filetime import FileTimes
    from hookcode.plugin_manager import HookCaller
    from hookcode.protected import ProtectedPaths

__all__ = [
    "AbortState",
    "EditContext",
    "EditRuntime",
    "SecretsRuntime",
    "StoredCredentials",
]


class SecretsRuntime(Protocol):
    """The part of a runtime that the secrets of a run read."""

    @property
    def env(self) -> Mapping[str, str]: ...

    @property
    def data_dir(self) -> Path: ...

    @property
    def plugins(self) -> HookCaller: ...

    @property
    def config(self) -> object: ...

    @property
    def credentials(self) -> StoredCredentials: ...


class StoredCredentials(Protocol):
    """The credentials store, as far as secret redaction reads it."""

    def stored(self) -> Mapping[str, Any]: ...


class AbortState(Protocol):
    """Whether a call was aborted (:class:`hookcode.tools.AbortSignal`)."""

    @property
    def aborted(self) -> bool: ...


class EditRuntime(Protocol):
    """The part of a runtime that a file-edit transaction uses."""

    @property
    def path_locks(self) -> PathLocks: ...

    @property
    def executor(self) -> Executor: ...

    @property
    def pending_writes(self) -> PendingWrites: ...

    @property
    def protected(self) -> ProtectedPaths: ...


class EditContext(Protocol):
    """The part of a :class:`hookcode.tools.ToolContext` that :mod:`hookcode.edits` and
    :mod:`hookcode.writes` use (the tool context makes their transactions)."""

    @property
    def runtime(self) -> EditRuntime: ...

    @property
    def abort(self) -> AbortState: ...

    @property
    def files(self) -> FileTimes: ...

    def resolve(self, path: str | Path) -> Path: ...

    def relative(self, path: str | Path) -> str: ...

    def publish(self, type: str, **properties: Any) -> None: ...

    def external_directory(self, path: str | Path, kind: str | None = None) -> str | None: ...

    async def ask_external_directory(self, path: str | Path, kind: str | None = None) -> None: ...

    def ask_external_directory_sync(self, path: str | Path, kind: str | None = None) -> None: ...

    async def ask(
        self,
        permission: str,
        patterns: list[str] | None = None,
        always: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None: ...

    def ask_sync(
        self,
        permission: str,
        patterns: list[str] | None = None,
        always: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None: ...
