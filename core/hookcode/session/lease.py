"""Holding a session's lease while it runs: :class:`SessionLease`.

A running session holds its lease in the store (:meth:`hookcode.store.Store.lock_session`,
which expires after ``ttl`` seconds unless renewed). While it runs, a daemon thread renews it
every third of ``ttl``. When a renewal finds the lease gone (this process stalled longer than
``ttl``, and another process, maybe on another machine, took the session over), the lease
records why; the agent loop checks it at each step boundary and stops with that error instead
of writing on as if it still ran the session. A renewal that fails (the database is briefly
unreachable) is tried again at the next tick: the lease is only lost when the store says so.

The leases a runtime holds are in ``runtime.stash[LEASES]`` by session id. A run's lease
lasts :data:`~hookcode.store.records.LEASE_TTL` seconds unless ``HOOKCODE_LEASE_SECONDS`` says
otherwise (:func:`lease_ttl`).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

from hookcode.errors import HookcodeError
from hookcode.stash import StashKey
from hookcode.store.records import LEASE_TTL, LEASE_VARIABLE, StoreError, seconds_setting

if TYPE_CHECKING:
    from hookcode.stash import Stash
    from hookcode.store import Store

__all__ = ["LEASES", "LeaseLost", "SessionLease", "lease_ttl"]


def lease_ttl(env: Mapping[str, str]) -> float:
    """How long a run's lease lasts unrenewed: ``HOOKCODE_LEASE_SECONDS`` (1 s to a day), else
    :data:`~hookcode.store.records.LEASE_TTL`; a bad value is a StoreError naming it."""
    return seconds_setting(env, LEASE_VARIABLE, LEASE_TTL, low=1.0, high=86400.0)


class LeaseLost(HookcodeError):
    """Another process took over the session this one was running."""


class SessionLease:
    """The lease of one session, taken by :meth:`acquire` and renewed in the background
    until :meth:`release`; ``with`` does both."""

    def __init__(
        self, store: Store, session_id: str, *, ttl: float = LEASE_TTL, stash: Stash | None = None
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.ttl = ttl
        self.pid = os.getpid()
        #: set when the lease was found lost (:attr:`lost` says why)
        self.lost_event = threading.Event()
        self.lost: str | None = None
        self._stash = stash
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def acquire(self) -> SessionLease:
        """Take the lease (:class:`~hookcode.store.records.SessionBusy` when another live
        process holds it) and start renewing it."""
        self.store.lock_session(self.session_id, self.pid, ttl=self.ttl)
        self._thread = threading.Thread(
            target=self._renew_until_stopped,
            name=f"hookcode-lease {self.session_id}",
            daemon=True,
        )
        self._thread.start()
        if self._stash is not None:
            self._stash.setdefault(LEASES, {})[self.session_id] = self
        return self

    def renew(self) -> bool:
        """Renew the lease now; False (and :attr:`lost` set) when another process holds it.
        A store error leaves the lease as it is (the next renewal tries again)."""
        if self.lost is not None:
            return False
        try:
            held = self.store.renew_session_lock(self.session_id, self.pid, ttl=self.ttl)
        except StoreError:
            return True
        if not held:
            holder = None
            with contextlib.suppress(StoreError):
                holder = self.store.session_lock(self.session_id)
            if holder is not None:
                self.lost = (
                    f"session {self.session_id} was taken over by pid {holder[0]} on "
                    f"{holder[1]}; this run stopped"
                )
            else:
                self.lost = (
                    f"session {self.session_id} lost its lease (another process took it "
                    "over or released it); this run stopped"
                )
            self.lost_event.set()
        return held

    def check(self) -> None:
        """Raise :class:`LeaseLost` when the lease was lost."""
        if self.lost is not None:
            raise LeaseLost(self.lost)

    def _renew_until_stopped(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            if not self.renew():
                return

    def release(self) -> None:
        """Stop renewing and release the lease (only ours: a lease taken over stays)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._stash is not None:
            leases = self._stash.get(LEASES, {})
            if leases.get(self.session_id) is self:
                del leases[self.session_id]
        self.store.unlock_session(self.session_id, self.pid)

    def __enter__(self) -> SessionLease:
        return self.acquire()

    def __exit__(self, *exc_info: object) -> None:
        self.release()


#: the leases a runtime holds, by session id
LEASES = StashKey[dict[str, SessionLease]]()
