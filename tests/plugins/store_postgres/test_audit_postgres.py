"""The audit log in PostgreSQL (``[audit] to = "store"``, hookcode_store_postgres.audit): real
``hookcode`` processes writing through a real server, one chain for many writers, edits found
by ``hookcode audit verify``, and the store's password in no record."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from hookcode.store.audit_log import GENESIS, line_hash
from hookcode_audit.chain import build_line, verify_lines
from hookcode_store_postgres.audit import PostgresAuditLog
from hookcode_store_postgres.postgres_store import PostgresStore
from psycopg import sql

PLUGINS = "audit,policy_rules,tool_read,store_postgres,provider_scripted"
PASSWORD = "Pg-pass-7f3a9c-audit"


@pytest.fixture
def store_url(postgres_url: str) -> Iterator[str]:
    """``postgres_url`` as a role of its own whose password is in the URL (the cluster trusts
    loopback, so the password is carried, not checked: what matters is where it shows)."""
    role = f"u_{uuid.uuid4().hex[:12]}"
    name = sql.Identifier(role)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(name, PASSWORD))
        conn.execute(sql.SQL("GRANT ALL ON SCHEMA public TO {}").format(name))
    base, _, rest = postgres_url.partition("://")
    yield f"{base}://{role}:{PASSWORD}@{rest.partition('@')[2]}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP OWNED BY {} CASCADE").format(name))
        conn.execute(sql.SQL("DROP ROLE {}").format(name))


@pytest.fixture
def env(hookcode_env: Any, store_url: str) -> Any:
    """A hookcode world whose store is ``store_url`` and whose audit log is the store's."""
    hookcode_env.env["HOOKCODE_LOAD_PLUGINS"] = PLUGINS
    hookcode_env.env["HOOKCODE_STORE"] = store_url
    hookcode_env.write_config('[audit]\nto = "store"\n', where="global")
    (hookcode_env.project / "a.txt").write_text("hello\n")
    return hookcode_env


def cli(env: Any, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hookcode", "-C", str(env.project), *args],
        capture_output=True,
        text=True,
        env=env.env,
        timeout=120,
    )


def rows(url: str) -> list[tuple[int, str, str]]:
    with psycopg.connect(url) as conn:
        found = conn.execute("SELECT seq, line, hash FROM audit_log ORDER BY seq").fetchall()
    return [(int(seq), str(line), str(digest)) for seq, line, digest in found]


def records(url: str) -> list[dict[str, Any]]:
    return [json.loads(line) for _, line, _ in rows(url)]


# ---------------------------------------------------------------------------------------------
# real runs write to PostgreSQL
# ---------------------------------------------------------------------------------------------


def test_tools_call_records_land_in_postgres(env, store_url):
    done = cli(env, "tools", "call", "read", '{"filePath": "a.txt"}')
    assert done.returncode == 0, done.stderr
    recs = records(store_url)
    assert [r["type"] for r in recs] == ["tool.call", "permission", "tool.result"]
    assert [r["seq"] for r in recs] == [1, 2, 3] and recs[0]["prev"] == GENESIS
    assert recs[0]["tool"] == "read" and recs[0]["args"]["filePath"] == "a.txt"
    assert "1: hello" in recs[2]["output"]
    assert not (env.data_dir / "audit.jsonl").exists()  # nothing went to the file
    for before, after in zip(rows(store_url), rows(store_url)[1:], strict=False):
        assert json.loads(after[1])["prev"] == line_hash(before[1]) == before[2]

    verified = cli(env, "audit", "verify")
    assert verified.returncode == 0, verified.stderr
    assert "(3 records)" in verified.stdout
    assert f"head: {line_hash(rows(store_url)[-1][1])}" in verified.stdout
    shown = cli(env, "audit", "show", "--tail", "2")
    assert shown.returncode == 0, shown.stderr
    assert "-> allow (policy)" in shown.stdout.splitlines()[0]
    assert cli(env, "audit", "path").stdout.strip().endswith("(audit log)")


def test_a_run_records_its_calls_in_postgres(env, store_url, tmp_path):
    script = tmp_path / "s.json"
    script.write_text(
        json.dumps(
            [
                {
                    "text": "reading",
                    "tool_calls": [{"name": "read", "args": {"filePath": "a.txt"}}],
                },
                {"text": "done"},
            ]
        )
    )
    done = cli(env, "run", "-m", "scripted/x", "--script", str(script), "--format", "json", "go")
    assert done.returncode == 0, done.stderr
    session_id = json.loads(done.stdout.splitlines()[0])["session_id"]
    recs = records(store_url)
    assert [r["type"] for r in recs] == ["tool.call", "permission", "tool.result"]
    assert {r["session_id"] for r in recs} == {session_id}
    assert recs[2]["ok"] is True
    with psycopg.connect(store_url) as conn:  # the session is in the same database
        assert conn.execute("SELECT count(*) FROM sessions WHERE id = %s", [session_id]).fetchone()


WRITER = textwrap.dedent(
    """
    import sys
    from hookcode.runtime import Runtime
    from hookcode.testing import invoke_tool

    rt = Runtime(cwd=sys.argv[1])
    session = rt.create_session(title="w").id
    for _ in range(int(sys.argv[2])):
        assert invoke_tool(rt, "read", {"filePath": "a.txt"}, session_id=session).ok
    rt.close()
    """
)


def test_four_processes_appending_at_once_keep_one_valid_chain(env, store_url):
    script = env.root / "writer.py"
    script.write_text(WRITER)
    calls, writers = 15, 4
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(env.project), str(calls)],
            env=env.env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(writers)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    recs = records(store_url)
    assert len(recs) == writers * calls * 3
    assert [r["seq"] for r in recs] == list(range(1, len(recs) + 1))
    assert len({r["pid"] for r in recs}) == writers
    verified = cli(env, "audit", "verify", "--json")
    assert verified.returncode == 0, verified.stderr
    assert json.loads(verified.stdout)["records"] == len(recs)


def test_a_log_the_store_cannot_write_refuses_the_call(env, store_url, postgres_url):
    assert cli(env, "tools", "call", "read", '{"filePath": "a.txt"}').returncode == 0
    with psycopg.connect(postgres_url, autocommit=True) as conn:  # the role may no longer write
        conn.execute("ALTER TABLE audit_log OWNER TO postgres")
    done = cli(env, "tools", "call", "read", '{"filePath": "a.txt"}')
    assert done.returncode == 1
    assert "cannot write the audit log postgresql://" in done.stderr
    assert (
        "permission denied" in done.stderr and "the call was refused before it ran" in done.stderr
    )
    assert PASSWORD not in done.stderr and ":***@" in done.stderr
    assert "Traceback" not in done.stderr
    assert len(rows(postgres_url)) == 3  # nothing of the refused call


# ---------------------------------------------------------------------------------------------
# tampering
# ---------------------------------------------------------------------------------------------


def _edit(url: str, seq: int, old: str, new: str) -> None:
    """Edit one row by hand, as the table's owner: the trigger that keeps the log append-only
    stops mistakes, not the owner, who can switch it off."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ALTER TABLE audit_log DISABLE TRIGGER USER")
        conn.execute(
            "UPDATE audit_log SET line = replace(line, %s, %s) WHERE seq = %s", [old, new, seq]
        )
        conn.execute("ALTER TABLE audit_log ENABLE TRIGGER USER")


@pytest.fixture
def filled(env, store_url) -> str:
    for _ in range(3):
        done = cli(env, "tools", "call", "read", '{"filePath": "a.txt"}')
        assert done.returncode == 0, done.stderr
    assert len(rows(store_url)) == 9
    return store_url


def test_a_row_edited_by_hand_fails_verify_naming_the_record(env, filled):
    _edit(filled, 4, '"a.txt"', '"b.txt"')
    verified = cli(env, "audit", "verify")
    assert verified.returncode == 1
    assert "record 4: edited: its SHA-256 no longer matches the 'prev' recorded by record 5" in (
        verified.stderr
    )
    data = json.loads(cli(env, "audit", "verify", "--json").stdout)
    assert data["ok"] is False and data["line"] == 4


def test_an_edited_last_row_is_exposed_by_the_next_record(env, filled):
    # the next record chains onto the hash stored when the row was written, not onto the
    # edited text: the edit cannot become the base of a valid chain
    _edit(filled, 9, '"ok":true', '"ok":false')
    assert cli(env, "audit", "verify").returncode == 0  # a valid, shorter-looking chain...
    assert cli(env, "tools", "call", "read", '{"filePath": "a.txt"}').returncode == 0
    verified = cli(env, "audit", "verify")
    assert verified.returncode == 1 and "record 9: edited" in verified.stderr


def test_removed_and_reordered_rows_are_reported(env, filled):
    with psycopg.connect(filled, autocommit=True) as conn:
        conn.execute("ALTER TABLE audit_log DISABLE TRIGGER USER")
        conn.execute("DELETE FROM audit_log WHERE seq = 5")
    verified = cli(env, "audit", "verify")
    assert verified.returncode == 1
    assert "record 5: 1 record(s) removed before it (seq jumps from 4 to 6)" in verified.stderr
    with psycopg.connect(filled, autocommit=True) as conn:  # lines 2 and 3 swap places
        conn.execute("UPDATE audit_log SET seq = seq + 1000 WHERE seq IN (2, 3)")
        conn.execute(
            "UPDATE audit_log SET seq = CASE seq WHEN 1002 THEN 3 ELSE 2 END WHERE seq > 1000"
        )
    verified = cli(env, "audit", "verify")
    assert verified.returncode == 1 and "record 2: out of order" in verified.stderr


def test_the_table_is_append_only(postgres_url):
    store = PostgresStore(postgres_url)
    try:
        for i in range(3):
            store.audit_log().append(lambda seq, prev, i=i: build_line({"i": i}, seq, prev))
    finally:
        store.close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        for statement in (
            "UPDATE audit_log SET line = 'x' WHERE seq = 1",
            "DELETE FROM audit_log WHERE seq = 3",
            "TRUNCATE audit_log",
        ):
            with pytest.raises(psycopg.errors.RaiseException, match="audit_log is append-only"):
                conn.execute(statement)
    assert len(rows(postgres_url)) == 3


def test_a_role_granted_only_select_and_insert_cannot_change_the_log(postgres_url):
    # docs/teams.md's recipe: the owner creates the tables, the agents' role writes records
    # but can neither change them nor switch the trigger off
    owner = PostgresStore(postgres_url)
    owner.audit_log()
    owner.close()
    role = f"a_{uuid.uuid4().hex[:12]}"
    name = sql.Identifier(role)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(name))
        for grant in (
            "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {}",
            "GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {}",
            "GRANT CREATE ON SCHEMA public TO {}",
            "REVOKE UPDATE, DELETE ON audit_log, hookcode_schema FROM {}",
        ):
            conn.execute(sql.SQL(grant).format(name))
    base, _, rest = postgres_url.partition("://")
    url = f"{base}://{role}@{rest.partition('@')[2]}"
    try:
        store = PostgresStore(url)
        try:
            store.audit_log().append(lambda seq, prev: build_line({"n": 1}, seq, prev))
            assert store.create_session(project="p", directory="/w").id
        finally:
            store.close()
        with psycopg.connect(url, autocommit=True) as conn:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("UPDATE audit_log SET line = 'x'")
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("ALTER TABLE audit_log DISABLE TRIGGER USER")
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("DELETE FROM audit_log")
        assert len(rows(postgres_url)) == 1
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP OWNED BY {} CASCADE").format(name))
            conn.execute(sql.SQL("DROP ROLE {}").format(name))


# ---------------------------------------------------------------------------------------------
# the password
# ---------------------------------------------------------------------------------------------


def test_the_store_password_never_appears_in_a_record(env, store_url):
    # a file holding the URL, read by a tool: the output names it, the record must not
    (env.project / "settings.txt").write_text(f"HOOKCODE_STORE={store_url}\n")
    done = cli(env, "tools", "call", "read", '{"filePath": "settings.txt"}')
    assert done.returncode == 0, done.stderr
    assert PASSWORD not in done.stdout + done.stderr
    everything = "\n".join(line for _, line, _ in rows(store_url))
    assert "settings.txt" in everything and "HOOKCODE_STORE=" in everything
    assert PASSWORD not in everything
    for command in ("verify", "show", "path"):
        proc = cli(env, "audit", command)
        assert proc.returncode == 0, proc.stderr
        assert PASSWORD not in proc.stdout + proc.stderr, command
    assert ":***@" in cli(env, "audit", "path").stdout


# ---------------------------------------------------------------------------------------------
# the module itself: migrations, text, a store that is not there
# ---------------------------------------------------------------------------------------------


def test_the_log_migrates_once_and_keeps_text_exactly(postgres_url):
    database = PostgresStore(postgres_url)
    try:
        log = database.audit_log()
        assert database.audit_log() is log
        PostgresAuditLog(database)  # another opener (another process) finds the work done
        for text in ("é 日本", "\udcff", "nul \x00 here"):
            log.append(lambda seq, prev, text=text: build_line({"type": "x", "s": text}, seq, prev))
        lines = list(log.lines())
        assert [json.loads(line)["s"] for line in lines] == ["é 日本", "?", "nul \x00 here"]
        result = verify_lines([line.encode() for line in lines], "db", unit="record")
        assert result.ok and result.records == 3
        versions = database.query("SELECT version FROM hookcode_schema WHERE component = 'audit'")
        assert versions == [(1,)]
    finally:
        database.close()


def test_build_raising_writes_nothing(postgres_url):
    database = PostgresStore(postgres_url)
    try:
        log = database.audit_log()

        def broken(seq: int, prev: str) -> str:
            raise ValueError("no line")

        with pytest.raises(ValueError, match="no line"):
            log.append(broken)
        assert list(log.lines()) == []
        log.append(lambda seq, prev: build_line({"type": "x"}, seq, prev))
        assert json.loads(next(log.lines()))["seq"] == 1
    finally:
        database.close()


def test_appends_survive_a_server_restart(private_cluster: Any) -> None:
    """Two threads keep appending while the server restarts under them (each stops 20 appends
    after the restart is over): every append returns, and the log holds each record once, in
    one valid chain."""
    store = PostgresStore(private_cluster.url)
    try:
        log = store.audit_log()
        appending, restarted = threading.Event(), threading.Event()
        written: list[str] = []
        errors: list[BaseException] = []

        def append(name: str) -> None:
            after, i = 0, 0
            try:
                while after < 20:
                    record = {"writer": name, "i": i}
                    log.append(lambda seq, prev, r=record: build_line(r, seq, prev))
                    written.append(f"{name}{i}")
                    i += 1
                    appending.set()
                    after += restarted.is_set()
            except BaseException as exc:
                errors.append(exc)
                appending.set()

        writers = [threading.Thread(target=append, args=(name,)) for name in "ab"]
        for writer in writers:
            writer.start()
        assert appending.wait(60)
        private_cluster.restart()
        restarted.set()
        for writer in writers:
            writer.join(60)
            assert not writer.is_alive()
        assert errors == []
        lines = list(log.lines())
        stored = [f"{r['writer']}{r['i']}" for r in map(json.loads, lines)]
        assert sorted(stored) == sorted(written) and len(set(stored)) == len(stored)
        result = verify_lines([line.encode() for line in lines], "db", unit="record")
        assert result.ok and result.records == len(written), result.error
    finally:
        store.close()


def _cut_other_connections(url: str) -> None:
    """End every other connection to the test database (the appender's among them)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )


def test_a_connection_lost_mid_append_writes_the_record_once(postgres_url):
    store = PostgresStore(postgres_url)
    try:
        log = store.audit_log()
        log.append(lambda seq, prev: build_line({"n": 0}, seq, prev))
        built: list[int] = []

        def lost_before_the_insert(seq: int, prev: str) -> str:
            built.append(seq)
            if len(built) == 1:
                _cut_other_connections(postgres_url)
            return build_line({"n": 1}, seq, prev)

        log.append(lost_before_the_insert)  # retried on a fresh connection
        assert built == [2, 2]
        built.clear()

        # lost after the commit (the acknowledgement never came): here the row is put there
        # by hand before the connection is cut, as the server would have committed it
        def lost_after_the_commit(seq: int, prev: str) -> str:
            line = build_line({"n": 2}, seq, prev)
            built.append(seq)
            if len(built) == 1:
                with psycopg.connect(postgres_url, autocommit=True) as conn:
                    conn.execute(
                        "INSERT INTO audit_log (seq, line, hash) VALUES (%s, %s, %s)",
                        [seq, line, line_hash(line)],
                    )
                _cut_other_connections(postgres_url)
            return line

        log.append(lost_after_the_commit)
        lines = list(log.lines())
        assert [json.loads(line)["n"] for line in lines] == [0, 1, 2]  # not written twice
        assert built == [3]  # the retry found its line at its seq and wrote nothing
        result = verify_lines([line.encode() for line in lines], "db", unit="record")
        assert result.ok and result.records == 3
    finally:
        store.close()


def test_lines_are_read_in_batches_in_order(postgres_url, monkeypatch):
    import hookcode_store_postgres.audit as audit

    monkeypatch.setattr(audit, "_BATCH", 4)
    database = PostgresStore(postgres_url)
    try:
        log = database.audit_log()
        for i in range(10):
            log.append(lambda seq, prev, i=i: build_line({"i": i}, seq, prev))
        assert [json.loads(line)["i"] for line in log.lines()] == list(range(10))
    finally:
        database.close()
