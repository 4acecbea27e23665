"""Many users of one database at once: processes writing side by side, processes racing to
migrate a new database and to take one lease (threads sharing a store: the contract suite)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

from hookcode_store_postgres import schema
from hookcode_store_postgres.postgres_store import PostgresStore


def run_python(code: str, *args: str) -> subprocess.Popen[str]:
    """``python -c code args...`` in this environment (the store plugin installed), its
    stdin, stdout and stderr piped."""
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


WRITER = """
import sys
from hookcode.store import ToolPartRecord
from hookcode_store_postgres.postgres_store import PostgresStore

url, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
print("ready", flush=True)
sys.stdin.readline()  # go: every process opens the new database at once
store = PostgresStore(url)
session = store.create_session(project="p", directory="/d", title=name, id="ses_" + name)
for i in range(count):
    store.save_tool_part(
        ToolPartRecord(id=f"{name}_{i}", session_id=session.id, tool="t", state="running",
                       input={"i": i})
    )
    if i % 25 == 0:
        store.add_approval(project="p", permission="bash", pattern=f"cmd {i}")
        store.update_session(session.id, tokens_out=i)
        mid = f"{name}_m{i}"
        store.save_message({"id": mid, "session_id": session.id, "role": "user", "created": i})
        store.save_part({"id": f"{name}_p{i}", "session_id": session.id, "message_id": mid,
                         "type": "text", "text": "x" * i})
store.close()
print("done")
"""


def _released(procs: list[subprocess.Popen[str]]) -> None:
    """Wait until every process is ready, then let them all go at once."""
    for proc in procs:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read() if proc.stderr else ""
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()


def test_processes_migrate_a_new_database_and_write_concurrently(
    postgres_url: str, sql: Any
) -> None:
    """Four processes open a database nobody has opened yet at the same moment: the
    migrations run once (under the advisory lock) and every write of every process lands."""
    count = 200
    names = ("a", "b", "c", "d")
    procs = [run_python(WRITER, postgres_url, name, str(count)) for name in names]
    _released(procs)
    for proc in procs:
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
        assert out.strip() == "done"
    versions = sql.execute("SELECT component, version FROM hookcode_schema").fetchall()
    assert versions == [("store", len(schema.MIGRATIONS))]
    with PostgresStore(postgres_url) as st:
        for name in names:
            parts = st.tool_parts("ses_" + name)
            assert [p.id for p in parts] == [f"{name}_{i}" for i in range(count)]
            assert [p.input for p in parts] == [{"i": i} for i in range(count)]
            texts = [m["parts"][0]["text"] for m in st.messages("ses_" + name)]
            assert texts == ["x" * i for i in range(0, count, 25)]
        # each pattern was approved by every process, stored once
        assert len(st.approvals(project="p")) == len(range(0, count, 25))


LOCK_RACER = """
import sys
from hookcode.store import SessionBusy
from hookcode_store_postgres.postgres_store import PostgresStore

store = PostgresStore(sys.argv[1])
store.get_session(sys.argv[2])  # connected: the race is the lease's alone
print("ready", flush=True)
sys.stdin.readline()  # go
try:
    store.lock_session(sys.argv[2])
except SessionBusy as exc:
    print("busy", exc.pid, flush=True)
else:
    print("won", flush=True)
sys.stdin.readline()  # hold the lease until the other has tried
store.close()
"""


def test_two_processes_racing_for_one_lease_one_wins(postgres_url: str) -> None:
    with PostgresStore(postgres_url) as st:
        session = st.create_session(project="p", directory="/d")
    for _round in range(5):
        racers = [run_python(LOCK_RACER, postgres_url, session.id) for _ in range(2)]
        try:
            _released(racers)
            answers = []
            for proc in racers:
                assert proc.stdout is not None
                answers.append(proc.stdout.readline().split())
            winners = [
                proc for proc, answer in zip(racers, answers, strict=True) if answer == ["won"]
            ]
            assert len(winners) == 1, answers
            loser = next(a for a in answers if a[0] == "busy")
            assert int(loser[1]) == winners[0].pid
        finally:
            for proc in racers:
                _out, err = proc.communicate("done\n", timeout=60)
                assert proc.returncode == 0, err
        # the winner exited without unlocking: a dead pid on this host, taken over next round
