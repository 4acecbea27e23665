"""The plugin as hookcode finds it: the ``store`` hook answers PostgreSQL URLs only, its module
imports nothing heavy, and a real ``hookcode run`` with ``HOOKCODE_STORE`` set stores its
session in PostgreSQL, where ``hookcode sessions list`` (from another data directory too)
reads it back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import hookcode_store_postgres
import pytest
from hookcode.store import SQLiteStore, StoreError
from hookcode_store_postgres.postgres_store import PostgresStore

REPO = Path(__file__).resolve().parents[3]
DEMO = REPO / "examples" / "scripts" / "demo.json"


def test_the_hook_answers_postgres_urls_only(postgres_url: str) -> None:
    # the store's own module is imported by now: it must not shadow the hook
    assert hookcode_store_postgres.PostgresStore is PostgresStore
    assert callable(hookcode_store_postgres.store)
    for url in ("sqlite:///tmp/x.db", "mysql://h/db", "memory://", "postgresql", "/tmp/x.db"):
        assert hookcode_store_postgres.store(url=url, runtime=None) is None
    runtime = SimpleNamespace(env={})  # what the hook reads of the runtime: its environment
    for scheme in ("postgresql", "postgres", "PostgreSQL"):
        url = scheme + postgres_url.removeprefix("postgresql")
        store = hookcode_store_postgres.store(url=url, runtime=runtime)
        assert isinstance(store, PostgresStore)
        store.create_session(project="p", directory="/d", id=f"ses_{scheme}")  # the pool's
        store.close()


def test_the_module_imports_no_driver_until_a_url_is_its_own() -> None:
    code = (
        "import sys, hookcode_store_postgres as m\n"
        "assert m.store(url='sqlite:///x.db', runtime=None) is None\n"
        "heavy = sorted(n for n in sys.modules if n.split('.')[0] in "
        "('psycopg', 'psycopg_pool', 'psycopg_binary', 'hookcode_store_postgres.postgres_store'))\n"
        "heavy += [n for n in sys.modules if n.startswith('hookcode_store_postgres.')]\n"
        "print(heavy)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"


def _hookcode(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hookcode.cli", "-C", str(cwd), *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_run_stores_its_session_in_postgresql(
    hookcode_env: Any, postgres_url: str, tmp_path: Path
) -> None:
    env = {**hookcode_env.env, "HOOKCODE_STORE": postgres_url}
    env.pop("HOOKCODE_SCRIPT", None)
    project = hookcode_env.project
    done = _hookcode(
        env, "run", "--model", "scripted/demo", "--script", str(DEMO), "--yes", "Fix it",
        cwd=project,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert 'the script now prints "Hello, hookcode!"' in done.stdout
    # nothing in the data directory's SQLite file: the session is in PostgreSQL
    assert not (hookcode_env.data_dir / "hookcode.db").exists()
    with PostgresStore(postgres_url) as store:
        (session,) = store.list_sessions()
        assert (session.title, session.model) == ("Fix it", "scripted/demo")
        messages = store.messages(session.id)
        assert [m["role"] for m in messages] == ["user"] + ["assistant"] * 5
        tools = [p for m in messages for p in m["parts"] if p["type"] == "tool"]
        assert [t["tool"] for t in tools] == ["write", "read", "bash", "edit", "bash"]
        assert all(t["state"]["status"] == "completed" for t in tools)
        assert store.session_lock(session.id) is None  # the run released its lease

    listed = _hookcode(env, "sessions", "list", "--json", cwd=project)
    assert listed.returncode == 0, listed.stderr
    (item,) = json.loads(listed.stdout)
    assert item == session.to_dict()

    # another user's data directory and home on this machine: the same shared sessions
    other = tmp_path / "other"
    other_env = {
        **env,
        "HOME": str(other / "home"),
        "HOOKCODE_DATA_DIR": str(other / "data"),
        "XDG_CONFIG_HOME": str(other / "config"),
    }
    shown = _hookcode(other_env, "sessions", "show", session.id, "--json", cwd=project)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["session"]["id"] == session.id


def test_an_unreachable_store_fails_the_cli_in_one_line_without_the_password(
    hookcode_env: Any, private_cluster: Any
) -> None:
    url = private_cluster.url.replace("postgres@", "postgres:Hunter2Pw@", 1)
    private_cluster.stop()
    env = {**hookcode_env.env, "HOOKCODE_STORE": url, "HOOKCODE_STORE_RETRY_SECONDS": "1.5"}
    done = _hookcode(env, "sessions", "list", cwd=hookcode_env.project)
    assert done.returncode == 1
    assert "Hunter2Pw" not in done.stdout + done.stderr
    masked = url.replace("Hunter2Pw", "***")
    assert f"PostgreSQL store {masked} unreachable for 1.5 s" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("value", ["soon", "-1", "nan", "7200"])
def test_a_bad_retry_bound_is_one_line_naming_the_variable(
    hookcode_env: Any, postgres_url: str, value: str
) -> None:
    env = {**hookcode_env.env, "HOOKCODE_STORE": postgres_url}
    env["HOOKCODE_STORE_RETRY_SECONDS"] = value
    done = _hookcode(env, "sessions", "list", cwd=hookcode_env.project)
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert f"HOOKCODE_STORE_RETRY_SECONDS={value!r}: expected seconds from 0 to 3600" in line


def test_sqlite_and_postgres_stores_are_interchangeable(postgres_url: str, tmp_path: Path) -> None:
    """The same calls give the same answers from both stores (the contract suite's seed)."""
    stores = [SQLiteStore(tmp_path / "a.db"), PostgresStore(postgres_url)]
    try:
        answers = []
        for store in stores:
            s = store.create_session(project="p", directory="/d", id="ses_1", title="t")
            store.add_approval(project="p", permission="bash", pattern="ls *", directory="/d")
            store.set_todos(s.id, [{"content": "a"}])
            with pytest.raises(StoreError):
                store.update_session("ses_missing", title="x")
            answers.append(
                (
                    [r.to_dict().keys() for r in store.list_sessions()],
                    [(a.permission, a.pattern) for a in store.approvals(project="p")],
                    store.todos(s.id),
                    store.counts(),
                )
            )
        assert answers[0] == answers[1]
    finally:
        for store in stores:
            store.close()
    assert os.path.exists(tmp_path / "a.db")


def test_store_migrate_copies_a_sqlite_store_into_postgresql_and_check_reads_it(
    hookcode_env: Any, postgres_url: str
) -> None:
    from hookcode.store import ToolPartRecord

    with SQLiteStore(hookcode_env.data_dir / "hookcode.db") as lite:
        ids = []
        for n in range(4):
            s = lite.create_session(
                project="git:abc", directory="/w", title=f"s{n}", parent_id=ids[-1] if n else None
            )
            ids.append(s.id)
            lite.save_message({"id": f"{s.id}_m", "session_id": s.id, "role": "user", "created": n})
            lite.save_part(
                {"id": f"{s.id}_p", "session_id": s.id, "message_id": f"{s.id}_m", "type": "text"}
            )
            lite.save_tool_part(
                ToolPartRecord(id=f"{s.id}_c", session_id=s.id, tool="t", state="completed")
            )
            lite.set_todos(s.id, [{"content": "a"}])
            lite.set_state(s.id, "k", {"n": n, "z": [1.5, "é"]})
            lite.add_approval(project="git:abc", permission="edit", pattern="*", session_id=s.id)
        lite.add_approval(project="git:abc", permission="bash", pattern="ls *", directory="/w")
        expected = lite.counts()
        exports = [lite.export_session(id) for id in ids]
        approvals = lite.approval_records()
    url = postgres_url.replace("postgres@", "postgres:Migrat3Pw@", 1)
    env = hookcode_env.env
    for copied in (4, 0):  # a second run finds everything there
        done = _hookcode(env, "store", "migrate", "--to", url, cwd=hookcode_env.project)
        assert done.returncode == 0, done.stderr
        assert f"sessions: 4/4 ({copied} copied, {4 - copied} already there)" in done.stdout
        assert "verified" in done.stdout
        assert "Migrat3Pw" not in done.stdout + done.stderr
    with PostgresStore(url) as store:
        assert store.counts() == expected
        assert [store.export_session(id) for id in ids] == exports
        assert store.approval_records() == approvals
    checked = _hookcode({**env, "HOOKCODE_STORE": url}, "store", "check", cwd=hookcode_env.project)
    assert checked.returncode == 0, checked.stderr
    assert url.replace("Migrat3Pw", "***") in checked.stdout
    assert "Migrat3Pw" not in checked.stdout + checked.stderr
