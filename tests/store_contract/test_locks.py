"""Session leases: one live holder runs a session; on this host a dead holder's lease is free;
another machine's lease holds until it expires (by the store's clock), then is taken over; of
two machines racing for one lease exactly one wins.

"Another machine" is a process with a host name of its own (helpers.hosts), holding leases
through its own connection to the same store."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from helpers.hosts import on_host
from helpers.processes import wait_exit
from helpers.stores import TESTS_DIR, Backend
from hookcode.store import SessionBusy, Store, StoreError

#: a process holding leases on one session as its commands on stdin say: ``lock TTL``,
#: ``renew TTL``, ``unlock``; it answers each with one line
HOLDER = """
import socket, sys
from helpers.stores import open_store
from hookcode.store import SessionBusy

store = open_store(sys.argv[1])
session = sys.argv[2]
print("ready", socket.gethostname(), flush=True)
for line in sys.stdin:
    command, *rest = line.split()
    if command == "lock":
        try:
            store.lock_session(session, ttl=float(rest[0]))
        except SessionBusy as exc:
            print("busy", exc.pid, exc.host, flush=True)
        else:
            print("locked", flush=True)
    elif command == "renew":
        print("renewed" if store.renew_session_lock(session, ttl=float(rest[0])) else "lost",
              flush=True)
    elif command == "unlock":
        store.unlock_session(session)
        print("unlocked", flush=True)
store.close()
"""


class Holder:
    """A HOLDER process on the machine ``host``."""

    def __init__(self, backend: Backend, session_id: str, host: str) -> None:
        self.host = host
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(TESTS_DIR), os.environ.get("PYTHONPATH", "")]),
        }
        self.proc = subprocess.Popen(
            on_host(host, [sys.executable, "-c", HOLDER, backend.url, session_id]),
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.read() == f"ready {host}", self.proc.stderr.read() if self.proc.stderr else ""

    @property
    def pid(self) -> int:
        return self.proc.pid

    def send(self, command: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def read(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().strip()

    def ask(self, command: str) -> str:
        self.send(command)
        return self.read()

    def close(self) -> None:
        if self.proc.poll() is None:
            _out, err = self.proc.communicate("", timeout=60)
            assert self.proc.returncode == 0, err
        else:
            self.proc.communicate(timeout=60)


@pytest.fixture
def machines(backend: Backend) -> Iterator[list[Holder]]:
    """The HOLDER processes a test starts (``machines.append(Holder(...))``); ended after it."""
    started: list[Holder] = []
    try:
        yield started
    finally:
        for holder in started:
            holder.close()


def test_session_locks(store: Store) -> None:
    s = store.create_session(project="p", directory="/d")
    store.lock_session(s.id)
    store.lock_session(s.id)  # the same process again: fine
    assert store.session_lock(s.id) == (os.getpid(), socket.gethostname())
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with pytest.raises(SessionBusy, match=f"pid {os.getpid()}"):
            store.lock_session(s.id, pid=sleeper.pid)
        store.unlock_session(s.id)
        store.lock_session(s.id, pid=sleeper.pid)
        with pytest.raises(SessionBusy, match=f"pid {sleeper.pid}"):
            store.lock_session(s.id)
        store.unlock_session(s.id)  # not ours: nothing happens
        assert store.session_lock(s.id) == (sleeper.pid, socket.gethostname())
    finally:
        sleeper.kill()
        sleeper.wait()
    assert store.session_lock(s.id) is None  # dead holders on this host do not count
    store.lock_session(s.id)  # and are taken over
    store.unlock_session(s.id)
    assert store.session_lock(s.id) is None
    assert store.renew_session_lock(s.id) is False  # released: nothing to renew


def test_locking_an_unknown_session_fails(store: Store) -> None:
    with pytest.raises(StoreError):
        store.lock_session("ses_missing")
    assert store.session_lock("ses_missing") is None


def test_an_expired_lease_is_taken_over_and_its_holder_loses_it(
    backend: Backend, store: Store, machines: list[Holder]
) -> None:
    s = store.create_session(project="p", directory="/d")
    far = Holder(backend, s.id, "machine-b")
    machines.append(far)
    assert far.ask("lock 60") == "locked"
    assert store.session_lock(s.id) == (far.pid, "machine-b")
    with pytest.raises(SessionBusy, match=f"pid {far.pid} on machine-b") as caught:
        store.lock_session(s.id)
    assert (caught.value.pid, caught.value.host) == (far.pid, "machine-b")
    store.unlock_session(s.id, pid=far.pid)  # its pid, but another machine's: nothing happens
    assert store.session_lock(s.id) == (far.pid, "machine-b")

    assert far.ask("renew 0") == "renewed"  # its lease now ends at once
    assert store.session_lock(s.id) is None  # alive, but its lease ran out
    store.lock_session(s.id)  # taken over
    me = (os.getpid(), socket.gethostname())
    assert store.session_lock(s.id) == me
    assert far.ask("renew 60") == "lost"
    assert far.ask("lock 60") == f"busy {os.getpid()} {socket.gethostname()}"
    assert far.ask("unlock") == "unlocked"  # not its lease: nothing happens
    assert store.session_lock(s.id) == me
    assert store.renew_session_lock(s.id) is True
    store.lock_session(s.id)  # the holder again: renewed
    store.unlock_session(s.id)
    assert store.session_lock(s.id) is None


def test_a_killed_machines_lease_holds_until_it_expires(
    backend: Backend, store: Store, machines: list[Holder]
) -> None:
    held, expiring = (store.create_session(project="p", directory="/d") for _ in range(2))
    for session, ttl in ((held.id, 60), (expiring.id, 1)):
        far = Holder(backend, session, "machine-b")
        machines.append(far)
        assert far.ask(f"lock {ttl}") == "locked"
        os.kill(far.pid, signal.SIGKILL)
        assert wait_exit(far.pid, 30)
    # a dead process on another machine cannot be seen dead from here: its lease holds ...
    with pytest.raises(SessionBusy, match="on machine-b"):
        store.lock_session(held.id)
    # ... until it expires; then it is taken over
    deadline = time.monotonic() + 30
    while store.session_lock(expiring.id) is not None:
        assert time.monotonic() < deadline, "the lease never expired"
        time.sleep(0.05)
    store.lock_session(expiring.id)
    assert store.session_lock(expiring.id) == (os.getpid(), socket.gethostname())


def test_two_machines_racing_for_one_lease_one_wins(
    backend: Backend, store: Store, machines: list[Holder]
) -> None:
    session = store.create_session(project="p", directory="/d")
    racers = [Holder(backend, session.id, host) for host in ("machine-a", "machine-b")]
    machines.extend(racers)
    for _round in range(5):
        for racer in racers:  # both at once
            racer.send("lock 60")
        answers = [racer.read() for racer in racers]
        winners = [r for r, answer in zip(racers, answers, strict=True) if answer == "locked"]
        assert len(winners) == 1, answers
        (winner,) = winners
        loser = next(answer for answer in answers if answer != "locked")
        assert loser == f"busy {winner.pid} {winner.host}"
        assert store.session_lock(session.id) == (winner.pid, winner.host)
        assert winner.ask("unlock") == "unlocked"
        assert store.session_lock(session.id) is None
