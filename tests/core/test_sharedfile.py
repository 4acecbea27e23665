"""Shared private files (core/hookcode/sharedfile.py): a read-modify-write under a filelock,
written atomically with mode 0600 and only when changed. The stores built on it (auth.json,
trust.json) lose no entry when processes or threads change them at once; mcp-auth.json's own
test is in tests/plugins/test_mcp_oauth.py."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from hookcode.auth import Credentials
from hookcode.sharedfile import lock_path, update
from hookcode.trust import TrustStore


def read_json(path: Path) -> Any:
    return lambda: json.loads(path.read_text()) if path.exists() else {}


def dump(value: Any) -> bytes:
    return json.dumps(value).encode()


def test_a_change_is_written_0600_and_no_change_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "data" / "store.json"
    assert update(path, read_json(path), lambda value: "unchanged", dump) == "unchanged"
    assert not path.exists()
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    lock = lock_path(path)
    assert lock == tmp_path / "data" / "store.json.lock"
    assert stat.S_IMODE(lock.stat().st_mode) == 0o600  # kept: every waiter locks one file

    assert update(path, read_json(path), lambda value: value.update(a=1), dump) is None
    assert json.loads(path.read_text()) == {"a": 1}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    before = path.stat().st_ino
    update(path, read_json(path), lambda value: value.update(a=1), dump)
    assert path.stat().st_ino == before  # the same content is not written again
    update(path, read_json(path), lambda value: value.update(b=2), dump)
    assert path.stat().st_ino != before  # replaced whole (a rename), never rewritten in place


def test_a_failing_change_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "store.json"
    path.write_text('{"a": 1}')

    def change(value: dict[str, Any]) -> None:
        value["b"] = 2
        raise RuntimeError("half-way")

    with pytest.raises(RuntimeError, match="half-way"):
        update(path, read_json(path), change, dump)
    assert json.loads(path.read_text()) == {"a": 1}
    # and the lock was released
    update(path, read_json(path), lambda value: value.update(c=3), dump)
    assert json.loads(path.read_text()) == {"a": 1, "c": 3}


def test_threads_of_one_process_lose_no_entry(tmp_path: Path) -> None:
    credentials = Credentials(tmp_path / "auth.json", {})

    def login(thread: int) -> None:
        for i in range(15):
            credentials.set(f"p{thread}-{i}", f"key-{thread}-{i}-0123456789")

    threads = [threading.Thread(target=login, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(credentials.stored()) == 8 * 15


#: each process adds ENTRIES entries one by one, each a read-modify-write of its own
PROCESSES, ENTRIES = 6, 15

SCRIPTS = {
    "auth.json": (
        "import sys; from pathlib import Path; from hookcode.auth import Credentials\n"
        "store = Credentials(Path(sys.argv[1]) / 'auth.json', {})\n"
        "for i in range(int(sys.argv[3])):\n"
        "    store.set(f'{sys.argv[2]}-{i}', f'key-{sys.argv[2]}-{i}-0123456789')\n"
    ),
    "trust.json": (
        "import sys; from pathlib import Path; from hookcode.trust import TrustStore\n"
        "store = TrustStore(Path(sys.argv[1]))\n"
        "for i in range(int(sys.argv[3])):\n"
        "    store.add(Path(sys.argv[1]).parent / f'{sys.argv[2]}-{i}')\n"
    ),
}


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_concurrent_processes_adding_entries_lose_none(tmp_path: Path, name: str) -> None:
    data = tmp_path / "data"
    procs = [
        subprocess.Popen([sys.executable, "-c", SCRIPTS[name], str(data), f"w{p}", str(ENTRIES)])
        for p in range(PROCESSES)
    ]
    assert [proc.wait(timeout=120) for proc in procs] == [0] * PROCESSES
    expected = {f"w{p}-{i}" for p in range(PROCESSES) for i in range(ENTRIES)}
    if name == "auth.json":
        stored = Credentials(data / "auth.json", {}).stored()
        assert set(stored) == expected
        assert stored["w3-7"] == {"type": "api", "key": "key-w3-7-0123456789"}
    else:
        folders = TrustStore(data).folders()
        assert {f.name for f in folders} == expected and len(folders) == len(expected)
    assert stat.S_IMODE(os.stat(data / name).st_mode) == 0o600
    # no temporary file is left behind
    assert sorted(p.name for p in data.iterdir()) == sorted([name, name + ".lock"])
