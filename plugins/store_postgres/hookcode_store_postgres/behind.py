"""Writes that a store commits after the call that made them has returned (write-behind): the
PostgreSQL store's tool-part saves, which a run makes at every tool call and which would
otherwise each wait for a round trip to the server.

A :class:`WriteBehind` keeps a bounded queue of keyed values and one background thread (a
daemon, started with the first write) that takes everything queued at that moment and hands
it to the store's ``write`` function in one batch, oldest first: a key queued twice before the
thread took it is written once, with its last value, at the place of its first (so the rows
the batch inserts keep the order they were first saved in). Its guarantees:

- :meth:`WriteBehind.flush` returns once everything queued before it was called has been
  written (the store calls it before any other work: no caller sees the store without a
  write queued before);
- a write that fails (``write`` raised, after the store's own retries) is not lost silently:
  its :class:`~hookcode.store.records.StoreError` is raised by EVERY later
  :meth:`~WriteBehind.flush`, :meth:`~WriteBehind.submit` and :meth:`~WriteBehind.close`, in
  every thread, and nothing more is queued. Raising it once would let whichever thread
  called next (a lease renewal, an audit record, both of which report a store error and go
  on) take it, and the run would go on without the result it could not store; a run whose
  store lost a write stops instead (the store's user opens another store to go on);
- at most ``capacity`` writes wait at once: :meth:`~WriteBehind.submit` blocks while the
  queue is full (back-pressure, not unbounded memory);
- :meth:`WriteBehind.close` lets the thread write everything queued, then stops it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from hookcode.store import StoreError

__all__ = ["CAPACITY", "WriteBehind"]

#: how many writes may wait in the queue before :meth:`WriteBehind.submit` blocks
CAPACITY = 1000

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class WriteBehind(Generic[K, V]):
    """A queue of writes ``write`` commits in batches on a thread of its own; ``name`` (the
    store, its password masked) names it in errors."""

    def __init__(
        self, write: Callable[[list[V]], None], *, name: str, capacity: int = CAPACITY
    ) -> None:
        self._write = write
        self._name = name
        self._capacity = capacity
        self._cond = threading.Condition()
        #: written by nobody yet, in the order first queued (a key again: its last value)
        self._pending: dict[K, V] = {}
        #: how many writes were ever queued, and how many of them have ended (written or
        #: failed); both only grow, ``_ended`` never past ``_queued``
        self._queued = 0
        self._ended = 0
        #: the writes that failed, oldest first: each later call raises the first (sticky)
        self._failures: list[StoreError] = []
        self._thread: threading.Thread | None = None
        self._closing = False

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._name}: {self.waiting} waiting>"

    @property
    def waiting(self) -> int:
        """How many queued writes have not ended yet (neither written nor failed)."""
        return self._queued - self._ended

    def submit(self, key: K, value: V) -> None:
        """Queue ``value`` under ``key`` and return (blocking while the queue is full). A
        failure of an earlier write is raised instead, and nothing is queued."""
        with self._cond:
            while True:
                self._raise_failures()
                if self._closing:
                    raise StoreError(f"{self._name}: the store is closed")
                if self._queued - self._ended < self._capacity:
                    break
                self._cond.wait()
            self._pending[key] = value
            self._queued += 1
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._drain, name="hookcode-store-writer", daemon=True
                )
                self._thread.start()
            self._cond.notify_all()

    def flush(self, *, wait: bool = True) -> None:
        """Wait until every write queued before this call has ended, then raise the first
        failure there was (naming how many more there were), if any. ``wait=False``: raise a
        failure only, waiting for nothing."""
        # the fast path, without the lock: read ``_ended`` first (both only grow, so when it
        # equals ``_queued`` read after it, every write queued before this call has ended)
        if self._ended == self._queued and not self._failures:
            return
        with self._cond:
            if wait:
                target = self._queued
                while self._ended < target:
                    self._cond.wait()
            self._raise_failures()

    def close(self) -> None:
        """Refuse new writes, let the thread write everything queued and stop, then raise the
        failure there was, if any; idempotent."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        with self._cond:
            self._raise_failures()

    # -- the writer thread ---------------------------------------------------------------------

    def _drain(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._closing:
                    self._cond.wait()
                if not self._pending:
                    return
                batch = list(self._pending.values())
                taken = self._queued
                self._pending = {}
            failure: StoreError | None = None
            try:
                self._write(batch)
            except StoreError as exc:
                failure = exc
            except Exception as exc:  # never lose the thread (and with it every later write)
                failure = StoreError(f"{self._name}: {type(exc).__name__}: {exc}")
            with self._cond:
                if failure is not None:
                    self._failures.append(failure)
                self._ended = taken
                self._cond.notify_all()

    def _raise_failures(self) -> None:
        """Raise the first failure there was (they stay: every later call raises it); the lock
        is held."""
        if not self._failures:
            return
        first, more = self._failures[0], len(self._failures) - 1
        text = f"{first} (and {more} later write(s) failed too)" if more else str(first)
        raise StoreError(text) from None
