"""``hookcode store migrate --to postgresql://...`` from a SQLite store holding real sessions
(``hookcode run`` with the demo script: real tools), and ``hookcode store check`` on the
PostgreSQL store it fills: idempotent, resumable after a failure half-way, verified by counts,
the password never shown (issue 21, item 6)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from hookcode.store import SQLiteStore
from hookcode_store_postgres.postgres_store import PostgresStore

REPO = Path(__file__).resolve().parents[3]
DEMO = REPO / "examples" / "scripts" / "demo.json"
PASSWORD = "Mig8rate-Secret"


def hookcode(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "hookcode.cli", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert PASSWORD not in done.stdout + done.stderr
    return done


def test_migrate_real_sessions_to_postgresql_and_check_it(
    hookcode_env: Any, postgres_url: str
) -> None:
    env, project = dict(hookcode_env.env), hookcode_env.project
    for args in (
        ["-m", "scripted/demo", "--script", str(DEMO), "--yes", "Fix it"],
        ["-m", "scripted/echo", "hello"],
        ["-c", "and again"],
    ):
        done = hookcode(env, project, "run", *args)
        assert done.returncode == 0, done.stderr
    source_path = hookcode_env.data_dir / "hookcode.db"
    with SQLiteStore(source_path) as source:
        ids = source.session_ids()
        counts = source.counts()
    assert len(ids) == 2 and counts["tool_parts"] == 5 and counts["messages"] == 10

    # the target fails on the second session (as a full disk would): whole sessions or none
    target = postgres_url.replace("postgres@", f"postgres:{PASSWORD}@", 1)
    PostgresStore(postgres_url).close()  # its tables
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(
            "CREATE FUNCTION full_disk() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'could not extend file: No space left on device'; END $$"
        )
        conn.execute(
            "CREATE TRIGGER disk_full BEFORE INSERT ON sessions FOR EACH ROW "
            f"WHEN (NEW.id = '{ids[1]}') EXECUTE FUNCTION full_disk()"
        )
    failed = hookcode(env, project, "store", "migrate", "--to", target)
    assert failed.returncode == 1
    (line,) = failed.stderr.splitlines()
    assert f"copying session {ids[1]} failed" in line and "No space left on device" in line
    assert line.endswith("(run the same command again to resume)")
    with PostgresStore(postgres_url) as half:
        assert half.session_ids() == ids[:1]
        assert half.export_session(ids[1]) is None
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("DROP TRIGGER disk_full ON sessions")

    resumed = hookcode(env, project, "store", "migrate", "--to", target)
    assert resumed.returncode == 0, resumed.stderr
    assert "sessions: 2/2 (1 copied, 1 already there)" in resumed.stdout
    assert "verified: the target holds everything the source does" in resumed.stdout
    again = hookcode(env, project, "store", "migrate", "--to", target)
    assert again.returncode == 0, again.stderr
    assert "sessions: 2/2 (0 copied, 2 already there)" in again.stdout

    with SQLiteStore(source_path) as source, PostgresStore(postgres_url) as copied:
        assert copied.counts() == source.counts() == counts
        assert copied.approval_records() == source.approval_records()
        for id in ids:
            assert copied.export_session(id) == source.export_session(id)
            assert copied.messages(id) == source.messages(id)

    # store check on the PostgreSQL store: where (password masked), the schema, the counts
    env["HOOKCODE_STORE"] = target
    checked = hookcode(env, project, "store", "check", "--json")
    assert checked.returncode == 0, checked.stderr
    report = json.loads(checked.stdout)
    assert report["ok"] is True and report["counts"] == counts
    assert report["location"] == target.replace(PASSWORD, "***")

    # and the migrated sessions go on from PostgreSQL
    listed = json.loads(hookcode(env, project, "sessions", "list", "--json").stdout)
    assert sorted(s["id"] for s in listed) == sorted(ids)
    go_on = hookcode(env, project, "run", "-c", "from postgres now")
    assert go_on.returncode == 0, go_on.stderr
    assert "from postgres now" in go_on.stdout
    with PostgresStore(postgres_url) as copied:
        assert copied.counts()["messages"] == counts["messages"] + 2
