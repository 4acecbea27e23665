"""Per-run plugin state: :class:`Stash` and its typed keys (modelled on pytest's stash).

Every :class:`~hookcode.runtime.Runtime` has one ``runtime.stash``; a plugin that keeps
something for the run (a language-server manager, a cache, persistent shells) makes one
:class:`StashKey` at module level and keeps its value there instead of in a module-global
dictionary keyed by the runtime::

    from hookcode import StashKey

    SHELLS = StashKey[dict[str, Shell]]()

    def shells(runtime) -> dict[str, Shell]:
        found = runtime.stash.get(SHELLS, None)
        if found is None:
            found = runtime.stash[SHELLS] = {}
            runtime.on_close(lambda: close_all(found))
        return found

The value lives exactly as long as the runtime; what must be stopped when the run ends is
registered with ``runtime.on_close(callback)`` (which must not hold the runtime itself).
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar, cast

__all__ = ["Stash", "StashKey"]

T = TypeVar("T")
D = TypeVar("D")


class StashKey(Generic[T]):
    """A key of a :class:`Stash`: an object compared by identity, typed by what it holds.
    Make one per kind of state at module level (``KEY = StashKey[Manager]()``)."""

    __slots__ = ()


class Stash:
    """A mapping from :class:`StashKey` objects to values, typed by the key: ``stash[key]``
    (KeyError when absent), ``stash[key] = value``, ``key in stash``, ``del stash[key]``,
    ``stash.get(key, default)`` and ``stash.setdefault(key, default)``."""

    __slots__ = ("_storage",)

    def __init__(self) -> None:
        self._storage: dict[StashKey[Any], object] = {}

    def __setitem__(self, key: StashKey[T], value: T) -> None:
        self._storage[key] = value

    def __getitem__(self, key: StashKey[T]) -> T:
        return cast(T, self._storage[key])

    def get(self, key: StashKey[T], default: D) -> T | D:
        """The value of ``key``, or ``default`` when it has none."""
        try:
            return self[key]
        except KeyError:
            return default

    def setdefault(self, key: StashKey[T], default: T) -> T:
        """The value of ``key``; when it has none, ``default`` is stored and returned. (The
        check and the store happen in one step of the dictionary: safe across threads.)"""
        return cast(T, self._storage.setdefault(key, default))

    def __delitem__(self, key: StashKey[T]) -> None:
        del self._storage[key]

    def __contains__(self, key: StashKey[T]) -> bool:
        return key in self._storage

    def __len__(self) -> int:
        return len(self._storage)
