"""Session locks: one live process runs a session; a dead holder's lock is taken over."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest
from hookcode.store import SessionBusy, Store


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
    assert store.session_lock(s.id) is None  # dead holders do not count
    store.lock_session(s.id)  # and are taken over
    store.unlock_session(s.id)
    assert store.session_lock(s.id) is None
