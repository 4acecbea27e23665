"""The few shapes low modules need from higher ones, as Protocols: a module that only calls a
couple of methods of the plugin manager or the runtime names one of these instead of importing
:mod:`hookcode.plugins` or :mod:`hookcode.runtime`, so the import graph keeps one direction
(``tests/core/test_import_graph.py``). :class:`hookcode.plugins.Plugins` and
:class:`hookcode.runtime.Runtime` satisfy them structurally."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

__all__ = ["HookCaller", "RuntimeView", "StoredCredentials"]


class HookCaller(Protocol):
    """What the config, the event bus and the trust report call on the plugin manager."""

    def warn(self, line: str) -> None: ...

    def collect(self, hook: str, **kwargs: Any) -> list[tuple[str, Any]]: ...

    def call_each(self, hook: str, **kwargs: Any) -> list[Any]: ...

    def has_impls(self, hook: str) -> bool: ...


class RuntimeView(Protocol):
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
