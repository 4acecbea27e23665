"""audit (plugins/audit): the hash-chained log of tool calls and permission decisions, written
by real runtimes and real ``hookcode`` processes, checked by ``hookcode audit verify``."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest
from hookcode.testing import ReplyWith, invoke_tool
from hookcode_audit.chain import GENESIS, AuditLog, line_hash, verify

PLUGINS = "audit,policy_rules,tool_read,tool_edit,tool_write"
SECRET = "s3cr3t-Value-0042"


@pytest.fixture(autouse=True)
def _plugins(hookcode_env: Any) -> None:
    hookcode_env.env["HOOKCODE_LOAD_PLUGINS"] = PLUGINS


@pytest.fixture
def project(hookcode_env: Any) -> Path:
    (hookcode_env.project / "a.txt").write_text("hello\n")
    return hookcode_env.project


def log_of(hookcode_env: Any) -> Path:
    return hookcode_env.data_dir / "audit.jsonl"


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def of_type(recs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [r for r in recs if r["type"] == kind]


def cli(hookcode_env: Any, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hookcode", "-C", str(hookcode_env.project), *args],
        capture_output=True,
        text=True,
        env={**hookcode_env.env, **env},
        timeout=120,
    )


# ---------------------------------------------------------------------------------------------
# what is recorded
# ---------------------------------------------------------------------------------------------


def test_a_successful_call_is_recorded_with_its_permission_decision(hookcode_env, project):
    rt = hookcode_env.runtime()
    outcome = invoke_tool(rt, "read", {"filePath": "a.txt"})
    assert outcome.ok
    recs = records(log_of(hookcode_env))
    assert [r["type"] for r in recs] == ["tool.call", "permission", "tool.result"]
    call, permission, result = recs
    assert call["tool"] == "read" and call["args"]["filePath"] == "a.txt"
    assert call["call_id"] == result["call_id"] == permission["call_id"]
    assert call["session_id"] == outcome.call.session_id
    assert call["prev"] == GENESIS and [r["seq"] for r in recs] == [1, 2, 3]
    assert permission["permission"] == "read" and permission["decision"] == "allow"
    assert permission["by"]["kind"] == "policy"
    assert permission["by"]["votes"]["policy_rules"]["action"] == "allow"
    rule = permission["by"]["rules"][0]["rule"]
    assert rule == {"permission": "read", "pattern": "*", "action": "allow", "source": "agent:base"}
    assert result["ok"] is True and result["title"] == "a.txt" and result["error"] is None
    assert "1: hello" in result["output"] and result["cached"] is False
    assert isinstance(result["time"], str) and result["duration_ms"] >= 0
    assert verify(log_of(hookcode_env)).ok


def test_a_failing_call_is_recorded_with_its_error(hookcode_env, project):
    rt = hookcode_env.runtime()
    assert not invoke_tool(rt, "read", {"filePath": "missing.txt"}).ok
    assert not invoke_tool(rt, "read", {"offset": 3}).ok  # invalid arguments: no tool.call
    first, second = of_type(records(log_of(hookcode_env)), "tool.result")
    assert first["ok"] is False and first["error_type"] == "ToolError"
    assert "missing.txt" in first["error"] and first["title"] is None
    assert second["error_type"] == "InvalidArguments" and second["args"] == {"offset": 3}
    assert verify(log_of(hookcode_env)).ok


def test_a_configured_deny_names_the_rule_and_its_source(hookcode_env, project):
    config = hookcode_env.write_config('[permission]\nread = { "*secret*" = "deny" }\n')
    (project / "secret.txt").write_text("x\n")
    rt = hookcode_env.runtime()
    outcome = invoke_tool(rt, "read", {"filePath": "secret.txt"})
    assert type(outcome.error).__name__ == "PermissionDenied"
    recs = records(log_of(hookcode_env))
    (permission,) = of_type(recs, "permission")
    assert permission["decision"] == "deny" and permission["by"]["kind"] == "policy"
    assert permission["by"]["votes"]["policy_rules"]["action"] == "deny"
    (decided,) = permission["by"]["rules"]
    assert decided["action"] == "deny"
    assert decided["rule"]["pattern"] == "*secret*"
    assert decided["rule"]["source"] == f"config:{config}"
    (result,) = of_type(recs, "tool.result")
    assert result["ok"] is False and result["error_type"] == "PermissionDenied"


@pytest.mark.parametrize("kind", ["once", "always", "reject"])
def test_an_answered_ask_names_the_reply_and_the_front_end(hookcode_env, project, kind):
    hookcode_env.write_config('[permission]\nread = "ask"\n')
    hookcode_env.register(ReplyWith(kind, feedback=None), "front_end")
    rt = hookcode_env.runtime()
    session = rt.create_session(title="t").id
    outcome = invoke_tool(rt, "read", {"filePath": "a.txt"}, session_id=session)
    assert outcome.ok is (kind != "reject")
    second = invoke_tool(rt, "read", {"filePath": "a.txt"}, session_id=session)
    recs = records(log_of(hookcode_env))
    permissions = of_type(recs, "permission")
    first = permissions[0]
    assert first["permission"] == "read" and first["patterns"] == [str(project / "a.txt")]
    assert first["decision"] == kind
    assert first["by"]["kind"] == "user" and first["by"]["front_end"] == "front_end"
    assert first["by"]["reply"] == kind and first["by"]["scope"] == "session"
    if kind == "always":
        # the remembered approval decided the second call: named with its source
        assert second.ok
        later = permissions[1]
        assert later["decision"] == "allow" and later["by"]["kind"] == "policy"
        assert later["by"]["rules"][0]["rule"]["source"].startswith("approval:session:")
    if kind == "reject":
        result = of_type(recs, "tool.result")[0]
        assert result["ok"] is False and result["error_type"] == "PermissionRejected"
    assert verify(log_of(hookcode_env)).ok


def test_a_headless_ask_is_recorded_as_a_headless_reject(hookcode_env, project):
    hookcode_env.write_config('[permission]\nread = "ask"\n')
    rt = hookcode_env.runtime()
    assert not invoke_tool(rt, "read", {"filePath": "a.txt"}).ok
    (permission,) = of_type(records(log_of(hookcode_env)), "permission")
    assert permission["decision"] == "reject"
    assert permission["by"]["kind"] == "headless" and permission["by"]["front_end"] is None


def test_edits_are_recorded_too(hookcode_env, project):
    rt = hookcode_env.runtime()
    session = rt.create_session(title="t").id
    invoke_tool(rt, "read", {"filePath": "a.txt"}, session_id=session)
    outcome = invoke_tool(
        rt,
        "edit",
        {"filePath": "a.txt", "oldString": "hello", "newString": "bye"},
        session_id=session,
    )
    assert outcome.ok, outcome.error_text
    recs = records(log_of(hookcode_env))
    edit_calls = [r for r in of_type(recs, "tool.call") if r["tool"] == "edit"]
    assert edit_calls[0]["args"]["newString"] == "bye"
    assert any(r["permission"] == "edit" for r in of_type(recs, "permission"))


# ---------------------------------------------------------------------------------------------
# secrets
# ---------------------------------------------------------------------------------------------


def test_secrets_are_redacted_in_args_output_and_errors(hookcode_env, project):
    name = f"notes-{SECRET}.txt"
    (project / name).write_text(f"token is {SECRET}\ncustom {'c' * 4}-custom-value-77\n")
    hookcode_env.write_config('[audit]\nredact = ["PLAIN_NAMED"]\n')
    rt = hookcode_env.runtime(MY_API_KEY=SECRET, PLAIN_NAMED="cccc-custom-value-77")
    rt.credentials.set("anthropic", "stored-credential-9999")
    (project / "creds.txt").write_text("stored-credential-9999\n")
    assert invoke_tool(rt, "read", {"filePath": name}).ok
    assert invoke_tool(rt, "read", {"filePath": "creds.txt"}).ok
    assert not invoke_tool(rt, "read", {"filePath": f"gone-{SECRET}.txt"}).ok
    text = log_of(hookcode_env).read_text()
    assert SECRET not in text
    assert "cccc-custom-value-77" not in text
    assert "stored-credential-9999" not in text
    recs = records(log_of(hookcode_env))
    calls = of_type(recs, "tool.call")
    # the markers name where each secret comes from (the runtime's, then [audit] redact's)
    assert calls[0]["args"]["filePath"] == "notes-[redacted: MY_API_KEY].txt"
    results = of_type(recs, "tool.result")
    assert "token is [redacted: MY_API_KEY]" in results[0]["output"]
    assert "custom [redacted: PLAIN_NAMED]" in results[0]["output"]
    assert "[redacted: auth.json anthropic]" in results[1]["output"]
    assert "gone-[redacted: MY_API_KEY].txt" in results[2]["error"]
    assert verify(log_of(hookcode_env)).ok


# ---------------------------------------------------------------------------------------------
# on, off, and failing
# ---------------------------------------------------------------------------------------------


def test_disabled_writes_nothing(hookcode_env, project):
    hookcode_env.write_config("[audit]\nenabled = false\n")
    rt = hookcode_env.runtime()
    assert invoke_tool(rt, "read", {"filePath": "a.txt"}).ok
    assert not log_of(hookcode_env).exists()
    assert not any(hookcode_env.data_dir.rglob("*.jsonl"))


def test_a_configured_path_relative_to_the_data_dir(hookcode_env, project):
    hookcode_env.write_config('[audit]\npath = "logs/trail.jsonl"\n')
    rt = hookcode_env.runtime()
    assert invoke_tool(rt, "read", {"filePath": "a.txt"}).ok
    assert len(records(hookcode_env.data_dir / "logs" / "trail.jsonl")) == 3
    assert not log_of(hookcode_env).exists()


def _unwritable(hookcode_env: Any, fail_closed: bool) -> str:
    blocker = hookcode_env.root / "not-a-dir"
    blocker.write_text("a file where a directory should be\n")
    # a file in place of the directory: unwritable even for root
    return f'[audit]\npath = "{blocker}/audit.jsonl"\nfail_closed = {str(fail_closed).lower()}\n'


def test_an_unwritable_log_refuses_the_call_and_says_why(hookcode_env, project, capsys):
    hookcode_env.write_config(_unwritable(hookcode_env, fail_closed=True))
    rt = hookcode_env.runtime()
    outcome = invoke_tool(rt, "read", {"filePath": "a.txt"})
    assert not outcome.ok
    assert "Plugin 'audit' failed in tool_execute_before" in outcome.error_text
    assert "cannot be written" in outcome.error_text and "not-a-dir" in outcome.error_text
    err = capsys.readouterr().err
    assert "audit: cannot write the audit log" in err and "not-a-dir" in err
    # the run goes on: the next call is refused the same way, reported once
    assert not invoke_tool(rt, "read", {"filePath": "a.txt"}).ok
    assert capsys.readouterr().err.count("cannot write the audit log") == 0


def test_fail_open_runs_the_call_and_reports_on_stderr(hookcode_env, project, capsys):
    hookcode_env.write_config(_unwritable(hookcode_env, fail_closed=False))
    rt = hookcode_env.runtime()
    outcome = invoke_tool(rt, "read", {"filePath": "a.txt"})
    assert outcome.ok, outcome.error_text
    err = capsys.readouterr().err
    assert "cannot write the audit log" in err and "records are being lost" in err


def test_an_unwritable_log_through_the_cli(hookcode_env, project):
    hookcode_env.write_config(_unwritable(hookcode_env, fail_closed=True))
    proc = cli(hookcode_env, "tools", "call", "read", '{"filePath": "a.txt"}')
    assert proc.returncode == 1
    assert "cannot write the audit log" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_cache_hit_is_marked(hookcode_env, project):
    hookcode_env.env["HOOKCODE_LOAD_PLUGINS"] = PLUGINS + ",cache"
    hookcode_env.write_config('[cache]\ntools = ["read"]\n')
    rt = hookcode_env.runtime()
    session = rt.create_session(title="t").id
    for _ in range(2):
        assert invoke_tool(rt, "read", {"filePath": "a.txt"}, session_id=session).ok
    results = of_type(records(log_of(hookcode_env)), "tool.result")
    assert [r["cached"] for r in results] == [False, True]


# ---------------------------------------------------------------------------------------------
# the chain
# ---------------------------------------------------------------------------------------------


def test_each_record_chains_onto_the_exact_previous_line(hookcode_env, project):
    rt = hookcode_env.runtime()
    for _ in range(3):
        invoke_tool(rt, "read", {"filePath": "a.txt"})
    lines = log_of(hookcode_env).read_bytes().split(b"\n")[:-1]
    assert json.loads(lines[0])["prev"] == GENESIS
    for before, line in itertools.pairwise(lines):
        assert json.loads(line)["prev"] == line_hash(before)


def test_a_cut_last_line_is_kept_and_the_chain_goes_on_from_it(tmp_path):
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    log.append({"type": "x"})
    with path.open("ab") as handle:
        handle.write(b'{"seq":2,"type":"cut')  # a write cut short, no newline
    log.append({"type": "y"})
    lines = path.read_bytes().split(b"\n")
    assert json.loads(lines[2])["prev"] == line_hash(lines[1])
    result = verify(path)
    assert not result.ok and result.line == 2 and "not valid JSON" in (result.error or "")


def test_a_log_chains_onto_what_others_wrote_since_its_own_last_line(tmp_path):
    # a log remembers the line it wrote last; whatever happened to the file since (another
    # writer's line, the last line rewritten in place with the same length, the file replaced
    # or emptied), the next record chains onto the line really at the end
    path = tmp_path / "audit.jsonl"
    mine, theirs = AuditLog(path), AuditLog(path)
    mine.append({"type": "a"})
    theirs.append({"type": "b"})  # another writer (another process, as far as mine knows)
    mine.append({"type": "c"})
    assert verify(path).ok and verify(path).records == 3

    last = path.read_bytes().split(b"\n")[-2]
    rewritten = last.replace(b'"type":"c"', b'"type":"d"')
    assert len(rewritten) == len(last)
    path.write_bytes(path.read_bytes()[: -len(last) - 1] + rewritten + b"\n")
    mine.append({"type": "e"})
    lines = path.read_bytes().split(b"\n")
    assert json.loads(lines[-2])["prev"] == line_hash(rewritten)
    assert json.loads(lines[-2])["seq"] == 4

    path.unlink()
    mine.append({"type": "f"})  # a new file: the chain starts again
    first = json.loads(path.read_bytes().split(b"\n")[0])
    assert (first["seq"], first["prev"], first["type"]) == (1, GENESIS, "f")
    path.write_bytes(b"")
    mine.append({"type": "g"})
    first = json.loads(path.read_bytes().split(b"\n")[0])
    assert (first["seq"], first["prev"], first["type"]) == (1, GENESIS, "g")


def test_a_missing_log_directory_is_made(tmp_path):
    path = tmp_path / "deep" / "er" / "audit.jsonl"
    AuditLog(path).append({"type": "x"})
    assert verify(path).ok and verify(path).records == 1


CONCURRENT_WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from hookcode.runtime import Runtime
    from hookcode.testing import invoke_tool

    rt = Runtime(cwd=sys.argv[1])
    session = rt.create_session(title="w").id
    for _ in range(int(sys.argv[2])):
        assert invoke_tool(rt, "read", {"filePath": "a.txt"}, session_id=session).ok
    rt.close()
    """
)


def test_processes_writing_at_once_keep_one_valid_chain(hookcode_env, project):
    script = hookcode_env.root / "writer.py"
    script.write_text(CONCURRENT_WRITER)
    calls, writers = 40, 4
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(project), str(calls)],
            env=hookcode_env.env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(writers)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    recs = records(log_of(hookcode_env))
    assert len(recs) == writers * calls * 3
    assert [r["seq"] for r in recs] == list(range(1, len(recs) + 1))
    assert len({r["pid"] for r in recs}) == writers
    result = verify(log_of(hookcode_env))
    assert result.ok and result.records == len(recs), result.error


def test_cli_runs_in_parallel_keep_one_valid_chain(hookcode_env, project):
    rounds = 5
    failures: list[str] = []

    def worker() -> None:
        for _ in range(rounds):
            proc = cli(hookcode_env, "tools", "call", "read", '{"filePath": "a.txt"}')
            if proc.returncode != 0:
                failures.append(proc.stderr)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
    recs = records(log_of(hookcode_env))
    assert len(recs) == 2 * rounds * 3
    assert len({r["pid"] for r in recs}) == 2 * rounds
    proc = cli(hookcode_env, "audit", "verify")
    assert proc.returncode == 0, proc.stderr
    assert f"({len(recs)} records)" in proc.stdout


# ---------------------------------------------------------------------------------------------
# hookcode audit verify / show
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def filled_log(hookcode_env, project) -> Path:
    rt = hookcode_env.runtime()
    for _ in range(3):
        invoke_tool(rt, "read", {"filePath": "a.txt"})
    rt.close()
    path = log_of(hookcode_env)
    assert len(records(path)) == 9
    return path


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines(keepends=True)


def test_verify_ok(hookcode_env, filled_log):
    proc = cli(hookcode_env, "audit", "verify")
    assert proc.returncode == 0, proc.stderr
    assert "audit log ok" in proc.stdout and "(9 records)" in proc.stdout
    head = line_hash(filled_log.read_bytes().split(b"\n")[-2])
    assert f"head: {head}" in proc.stdout
    data = json.loads(cli(hookcode_env, "audit", "verify", "--json").stdout)
    assert data["ok"] is True and data["records"] == 9 and data["error"] is None


def test_verify_an_edited_line(hookcode_env, filled_log):
    lines = _lines(filled_log)
    lines[3] = lines[3].replace('"a.txt"', '"b.txt"')
    filled_log.write_text("".join(lines))
    proc = cli(hookcode_env, "audit", "verify")
    assert proc.returncode == 1
    assert "line 4: edited" in proc.stderr and "line 5" in proc.stderr


def test_verify_a_removed_line(hookcode_env, filled_log):
    lines = _lines(filled_log)
    del lines[4]
    filled_log.write_text("".join(lines))
    proc = cli(hookcode_env, "audit", "verify", "--path", str(filled_log), "--json")
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert data["ok"] is False and data["line"] == 5
    assert "1 record(s) removed before it" in data["error"]


def test_verify_a_removed_first_line(hookcode_env, filled_log):
    filled_log.write_text("".join(_lines(filled_log)[1:]))
    proc = cli(hookcode_env, "audit", "verify")
    assert proc.returncode == 1 and "line 1: records removed from the start" in proc.stderr


def test_verify_reordered_lines(hookcode_env, filled_log):
    lines = _lines(filled_log)
    lines[2], lines[3] = lines[3], lines[2]
    filled_log.write_text("".join(lines))
    proc = cli(hookcode_env, "audit", "verify")
    assert proc.returncode == 1
    assert "line 3: out of order" in proc.stderr


def test_verify_a_truncated_last_line(hookcode_env, filled_log):
    data = filled_log.read_bytes()
    filled_log.write_bytes(data[:-25])
    proc = cli(hookcode_env, "audit", "verify")
    assert proc.returncode == 1
    assert "line 9: truncated" in proc.stderr


def test_verify_garbage_and_a_missing_log(hookcode_env, filled_log):
    lines = _lines(filled_log)
    lines[6] = "this is not json\n"
    filled_log.write_text("".join(lines))
    proc = cli(hookcode_env, "audit", "verify")
    assert proc.returncode == 1 and "line 7: not valid JSON" in proc.stderr
    proc = cli(hookcode_env, "audit", "verify", "--path", str(filled_log.with_name("nope.jsonl")))
    assert proc.returncode == 1 and "no audit log at" in proc.stderr


def test_verify_with_an_anchor_catches_removal_from_the_end(hookcode_env, filled_log):
    head = json.loads(cli(hookcode_env, "audit", "verify", "--json").stdout)["head"]
    assert cli(hookcode_env, "audit", "verify", "--anchor", head).returncode == 0
    filled_log.write_text("".join(_lines(filled_log)[:-2]))  # still a valid, shorter chain
    assert cli(hookcode_env, "audit", "verify").returncode == 0
    proc = cli(hookcode_env, "audit", "verify", "--anchor", head)
    assert proc.returncode == 1 and "anchor" in proc.stderr


def test_show_prints_the_last_records(hookcode_env, filled_log):
    proc = cli(hookcode_env, "audit", "show", "--tail", "3")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 3
    assert "tool.call read" in lines[0] and "-> allow (policy)" in lines[1]
    assert lines[2].split()[0] == "9"
    proc = cli(hookcode_env, "audit", "show", "--tail", "1", "--json")
    assert json.loads(proc.stdout)["seq"] == 9


def test_the_log_file_is_private(hookcode_env, filled_log):
    assert os.stat(filled_log).st_mode & 0o077 == 0


# ---------------------------------------------------------------------------------------------
# [audit] to = "store" with a store that keeps no audit log (the embedded SQLite store; the
# PostgreSQL store's log: tests/plugins/store_postgres/test_audit_postgres.py)
# ---------------------------------------------------------------------------------------------

NO_LOG = '[audit] to = "store", but the store'


def test_to_store_without_a_store_log_is_one_error_at_start_and_calls_are_refused(
    hookcode_env, project
):
    hookcode_env.write_config('[audit]\nto = "store"\n', where="global")
    proc = cli(hookcode_env, "tools", "call", "read", '{"filePath": "a.txt"}')
    assert proc.returncode == 1
    lines = [line for line in proc.stderr.splitlines() if "keeps no audit log" in line]
    start, refusal = lines  # reported when the run starts, then the refused call says why
    assert start.startswith(f"hookcode: audit: {NO_LOG} {hookcode_env.data_dir}")
    assert "the embedded SQLite store does not" in start
    assert "tool calls are refused" in start
    assert "the call was refused before it ran" in refusal
    assert "Traceback" not in proc.stderr
    assert not log_of(hookcode_env).exists()


def test_to_store_without_a_store_log_fails_open_when_asked(hookcode_env, project, capsys):
    hookcode_env.write_config('[audit]\nto = "store"\nfail_closed = false\n', where="global")
    rt = hookcode_env.runtime()
    rt.create_session(title="t")  # the run starts: the error is reported at once
    err = capsys.readouterr().err
    assert err.count(NO_LOG) == 1 and "records are being lost" in err
    assert invoke_tool(rt, "read", {"filePath": "a.txt"}).ok
    assert invoke_tool(rt, "read", {"filePath": "a.txt"}).ok
    assert NO_LOG not in capsys.readouterr().err  # said once
    assert not log_of(hookcode_env).exists()


def test_verify_and_show_name_the_setting_when_the_store_keeps_no_log(hookcode_env, project):
    hookcode_env.write_config('[audit]\nto = "store"\n', where="global")
    for command in ("verify", "show", "path"):
        proc = cli(hookcode_env, "audit", command)
        assert proc.returncode == 1, command
        assert NO_LOG in proc.stderr and "Traceback" not in proc.stderr, command


def test_a_project_config_cannot_move_the_log(hookcode_env, project, capsys):
    # to is a trusted-only setting: an untrusted folder's config can neither send the records
    # to the store nor, under a user config that does, back to a file
    hookcode_env.write_config('[audit]\nto = "store"\n')
    rt = hookcode_env.runtime(trusted=False)
    assert invoke_tool(rt, "read", {"filePath": "a.txt"}).ok
    assert len(records(log_of(hookcode_env))) == 3
    assert "skipped: audit.to (hookcode.toml)" in capsys.readouterr().err
    rt.close()
    log_of(hookcode_env).unlink()

    hookcode_env.write_config('[audit]\nto = "store"\n', where="global")
    hookcode_env.write_config('[audit]\nto = "file"\n')
    rt = hookcode_env.runtime(trusted=False)
    outcome = invoke_tool(rt, "read", {"filePath": "a.txt"})
    assert not outcome.ok and NO_LOG in (outcome.error_text or "")
    assert not log_of(hookcode_env).exists()
