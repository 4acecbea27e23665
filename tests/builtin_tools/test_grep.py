"""The grep tool (reference/tools.md §9) on ripgrep (§11)."""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest
from hookcode.errors import PermissionDenied, PermissionRejected, ToolAborted
from hookcode.testing import ReplyWith, invoke_tool


def truncation_note(total: int) -> str:
    return (
        f"(Results truncated: showing 100 of {total} matches ({total - 100} hidden). "
        "Consider using a more specific path or pattern.)"
    )


PARTIAL_NOTE = "(Some paths were inaccessible and skipped)"


def write(path: Path, text: str = "", mtime: float | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def git_init(directory: Path) -> None:
    subprocess.run(["git", "init", "-q", str(directory)], check=True, capture_output=True)


def output(outcome) -> str:
    assert outcome.error is None, outcome.error_text
    return outcome.result.output


def matched_files(outcome) -> list[str]:
    """The file headers of a result, in order."""
    return [
        line[:-1] for line in output(outcome).split("\n") if line.endswith(":") and line[0] == "/"
    ]


def test_matches_and_output_format(hookcode_env, rg):
    project = hookcode_env.project
    a = write(project / "a.py", "import os\nneedle = 1\nx = 2\nprint(needle)\n", 3000)
    b = write(project / "src" / "b.py", "no\nneedle here\n", 2000)
    write(project / "c.txt", "nothing to see\n", 1000)
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "grep", {"pattern": "needle"})

    assert output(outcome) == "\n".join(
        [
            "Found 3 matches",
            f"{a}:",
            "  Line 2: needle = 1",
            "  Line 4: print(needle)",
            "",
            f"{b}:",
            "  Line 2: needle here",
        ]
    )
    assert outcome.result.title == "needle"
    assert outcome.result.metadata == {"matches": 3, "truncated": False}
    assert "outputPath" not in outcome.result.metadata  # the pipeline left it alone


def test_regex_syntax(hookcode_env, rg):
    project = hookcode_env.project
    f = write(
        project / "m.py",
        "def  handle_request(x):\nlog.warn('Error')\nlogging Error: boom\ndef x\nabc123\n",
    )
    rt = hookcode_env.runtime()

    def lines(pattern: str) -> list[str]:
        return [
            ln
            for ln in output(invoke_tool(rt, "grep", {"pattern": pattern})).split("\n")
            if ln.startswith("  Line")
        ]

    assert lines(r"def\s+\w+\(") == ["  Line 1: def  handle_request(x):"]
    assert lines("log.*Error") == ["  Line 2: log.warn('Error')", "  Line 3: logging Error: boom"]
    assert lines(r"^[a-z]+\d{3}$") == ["  Line 5: abc123"]
    assert lines("(?i)ERROR: BOOM") == ["  Line 3: logging Error: boom"]
    assert lines(r"-?\bx\b$") == ["  Line 4: def x"]
    # a pattern starting with "-" is a pattern, not an option
    write(project / "dash.txt", "a --verbose flag\n")
    assert lines("--verbose") == ["  Line 1: a --verbose flag"]
    assert str(f) in output(invoke_tool(rt, "grep", {"pattern": "abc"}))


def test_include_globs(hookcode_env, rg):
    project = hookcode_env.project
    py = write(project / "a.py", "hit\n", 3000)
    txt = write(project / "sub" / "b.txt", "hit\n", 2000)
    write(project / "c.md", "hit\n", 1000)
    write(project / "sub" / "d.pyc", "hit\n", 500)
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "grep", {"pattern": "hit", "include": "*.{py,txt}"})
    assert matched_files(outcome) == [str(py), str(txt)]
    assert outcome.result.metadata == {"matches": 2, "truncated": False}

    assert matched_files(invoke_tool(rt, "grep", {"pattern": "hit", "include": "*.md"})) == [
        str(project / "c.md")
    ]
    # globs with a directory part are matched against the path relative to the search path
    assert matched_files(invoke_tool(rt, "grep", {"pattern": "hit", "include": "sub/*.txt"})) == [
        str(txt)
    ]
    assert matched_files(
        invoke_tool(rt, "grep", {"pattern": "hit", "include": "*.txt", "path": "sub"})
    ) == [str(txt)]
    # a negated glob excludes
    assert matched_files(invoke_tool(rt, "grep", {"pattern": "hit", "include": "!*.md"})) == [
        str(py),
        str(txt),
        str(project / "sub" / "d.pyc"),
    ]
    none = invoke_tool(rt, "grep", {"pattern": "hit", "include": "*.rs"})
    assert output(none) == "No files found"


def test_gitignore_honoured_in_a_git_repository_also_with_include(hookcode_env, rg):
    project = hookcode_env.project
    git_init(project)
    write(project / ".gitignore", "ignored.py\nbuild-out/\n")
    kept = write(project / "kept.py", "needle\n")
    write(project / "ignored.py", "needle\n")
    write(project / "build-out" / "gen.py", "needle\n")
    write(project / ".git" / "notes.txt", "needle\n")
    rt = hookcode_env.runtime()

    assert matched_files(invoke_tool(rt, "grep", {"pattern": "needle"})) == [str(kept)]
    for include in ("*.py", "ignored.py", "**/gen.py", "build-out/**", "*.{py,txt}", "**"):
        outcome = invoke_tool(rt, "grep", {"pattern": "needle", "include": include})
        assert str(project / "ignored.py") not in output(outcome), include
        assert "build-out" not in output(outcome), include
        assert "/.git/" not in output(outcome), include


def test_gitignore_only_counts_inside_a_git_repository(hookcode_env, rg):
    project = hookcode_env.project
    write(project / ".gitignore", "ignored.py\n")
    write(project / "ignored.py", "needle\n")
    rt = hookcode_env.runtime()

    assert matched_files(invoke_tool(rt, "grep", {"pattern": "needle"})) == [
        str(project / "ignored.py")
    ]


def test_hidden_files_are_searched(hookcode_env, rg):
    project = hookcode_env.project
    git_init(project)
    dotfile = write(project / ".npmrc", "registry=needle\n", 2000)
    inner = write(project / ".config" / "app.toml", "key = 'needle'\n", 1000)
    rt = hookcode_env.runtime()

    assert matched_files(invoke_tool(rt, "grep", {"pattern": "needle"})) == [
        str(dotfile),
        str(inner),
    ]


def test_path_may_be_a_file(hookcode_env, rg):
    project = hookcode_env.project
    target = write(project / "src" / "one.py", "needle 1\nfoo\nneedle 2\n")
    write(project / "src" / "two.py", "needle\n")
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "grep", {"pattern": "needle", "path": "src/one.py"})

    assert output(outcome) == f"Found 2 matches\n{target}:\n  Line 1: needle 1\n  Line 3: needle 2"
    # rg searches a file it is given whatever the include says
    outcome = invoke_tool(rt, "grep", {"pattern": "needle", "path": str(target), "include": "*.md"})
    assert outcome.result.metadata["matches"] == 2


def test_newest_file_first_and_line_order_within_a_file(hookcode_env, rg):
    project = hookcode_env.project
    now = time.time()
    old = write(project / "old.txt", "x\n" * 3, now - 300)
    newest = write(project / "z" / "newest.txt", "x\n", now)
    middle = write(project / "a" / "middle.txt", "x\nx\n", now - 100)
    # equal times: path order
    tie_b = write(project / "tie_b.txt", "x\n", now - 200)
    tie_a = write(project / "tie_a.txt", "x\n", now - 200)
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "grep", {"pattern": "x"})

    assert matched_files(outcome) == [str(newest), str(middle), str(tie_a), str(tie_b), str(old)]
    assert output(outcome).split(f"{old}:\n")[1] == "  Line 1: x\n  Line 2: x\n  Line 3: x"


def test_limit_of_100_and_truncation_footer(hookcode_env, rg):
    project = hookcode_env.project
    newest = write(project / "newest.txt", "hit\n" * 60, 3000)
    middle = write(project / "middle.txt", "hit\n" * 60, 2000)
    write(project / "oldest.txt", "hit\n" * 60, 1000)
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "grep", {"pattern": "hit"})

    expected = ["Found 180 matches (showing first 100)", f"{newest}:"]
    expected += [f"  Line {n}: hit" for n in range(1, 61)]
    expected += ["", f"{middle}:"]
    expected += [f"  Line {n}: hit" for n in range(1, 41)]
    expected += ["", truncation_note(180)]
    assert output(outcome).split("\n") == expected
    assert outcome.result.metadata == {"matches": 180, "truncated": True}
    assert "outputPath" not in outcome.result.metadata


def test_exactly_100_matches_is_not_truncated(hookcode_env, rg):
    write(hookcode_env.project / "f.txt", "hit\n" * 100)
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "grep", {"pattern": "hit"})

    assert output(outcome).startswith("Found 100 matches\n")
    assert "truncated" not in output(outcome)
    assert outcome.result.metadata == {"matches": 100, "truncated": False}


def test_the_100_shown_are_the_first_in_order_whatever_rg_reports_first(hookcode_env, rg):
    """The bounded selection agrees with sorting every match (many files, random times)."""
    project = hookcode_env.project
    rng = random.Random(7)
    expected = []
    for i in range(60):
        mtime = 1_000_000 + rng.randrange(20) * 10  # many equal times
        count = rng.randrange(1, 8)
        path = write(project / f"d{i % 5}" / f"f{i:02}.txt", "hit\n" * count, mtime)
        expected += [(-mtime * 10**9, str(path), n) for n in range(1, count + 1)]
    expected.sort()
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "grep", {"pattern": "hit"})

    shown, current = [], None
    for line in output(outcome).split("\n")[1:]:
        if line.startswith("/"):
            current = line[:-1]
        elif line.startswith("  Line "):
            shown.append((current, int(line[7:].split(":")[0])))
    assert shown == [(path, n) for _, path, n in expected[:100]]
    assert outcome.result.metadata == {"matches": len(expected), "truncated": len(expected) > 100}


def test_long_lines_are_cut(hookcode_env, rg):
    project = hookcode_env.project
    write(project / "long.txt", "a" * 2500 + "\n" + "b" * 2000 + "\n", 2000)
    rt = hookcode_env.runtime()

    lines = output(invoke_tool(rt, "grep", {"pattern": "a|b"})).split("\n")

    assert lines[2] == "  Line 1: " + "a" * 2000 + "..."
    assert lines[3] == "  Line 2: " + "b" * 2000


def test_text_and_paths_with_separators_survive(hookcode_env, rg):
    project = hookcode_env.project
    odd = write(project / "we|ird:name.txt", "a|b|c: 12:34 | x\nwin\r\n", 2000)
    rt = hookcode_env.runtime()

    assert output(invoke_tool(rt, "grep", {"pattern": r"a\|b"})) == (
        f"Found 1 matches\n{odd}:\n  Line 1: a|b|c: 12:34 | x"
    )
    # CRLF line endings are not part of the text
    assert output(invoke_tool(rt, "grep", {"pattern": "win"})).endswith("  Line 2: win")


def test_non_utf8_text(hookcode_env, rg):
    project = hookcode_env.project
    (project / "latin1.txt").write_bytes(b"caf\xe9 needle\n")
    rt = hookcode_env.runtime()

    assert output(invoke_tool(rt, "grep", {"pattern": "needle"})).endswith(
        "  Line 1: caf\ufffd needle"
    )


def test_no_matches(hookcode_env, rg):
    write(hookcode_env.project / "a.txt", "hello\n")
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "grep", {"pattern": "absent"})

    assert output(outcome) == "No files found"
    assert outcome.result.title == "absent"
    assert outcome.result.metadata == {"matches": 0, "truncated": False}


def test_empty_pattern_is_refused_before_asking(hookcode_env):
    reply = hookcode_env.register(ReplyWith("once"), "reply")
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "grep", {"pattern": ""})

    assert outcome.error is not None
    assert outcome.error_text == "pattern is required"
    assert reply.requests == []


def test_invalid_regex_reports_ripgrep_error(hookcode_env, rg):
    write(hookcode_env.project / "a.txt", "a(\n")
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "grep", {"pattern": "a("})

    assert outcome.error is not None
    assert outcome.error_text.startswith("ripgrep failed: ")
    assert "regex parse error" in outcome.error_text
    # no PCRE2 in the wheel: look-around is an error too, not a silent "no match"
    assert invoke_tool(rt, "grep", {"pattern": "a(?=b)"}).error_text.startswith("ripgrep failed: ")


def test_invalid_include_glob_reports_ripgrep_error(hookcode_env, rg):
    write(hookcode_env.project / "a.txt", "x\n")
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "grep", {"pattern": "x", "include": "{a"})

    assert outcome.error_text.startswith("ripgrep failed: ")


def test_missing_path(hookcode_env, rg):
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "grep", {"pattern": "x", "path": "nowhere"})

    assert outcome.error_text == f"No such file or directory: '{hookcode_env.project / 'nowhere'}'"


def test_grep_permission_is_asked_first_with_the_pattern(hookcode_env, rg):
    write(hookcode_env.project / "a.py", "x\n")
    hookcode_env.write_config({"permission": {"grep": "ask"}})
    reply = hookcode_env.register(ReplyWith("once"), "reply")
    rt = hookcode_env.runtime()

    assert invoke_tool(rt, "grep", {"pattern": "x", "include": "*.py"}).error is None
    [request] = reply.requests
    assert request.permission == "grep"
    assert request.patterns == ["x"]
    assert request.always == ["*"]
    assert request.metadata == {"pattern": "x", "path": None, "include": "*.py"}

    hookcode_env.write_config({"permission": {"grep": {"*": "allow", "secret*": "deny"}}})
    rt = hookcode_env.runtime()
    assert isinstance(invoke_tool(rt, "grep", {"pattern": "secret_key"}).error, PermissionDenied)


def test_outside_project_is_refused_headless(hookcode_env, rg):
    outside = hookcode_env.root / "outside"
    write(outside / "x.py", "needle\n")
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "grep", {"pattern": "needle", "path": str(outside)})

    assert isinstance(outcome.error, PermissionRejected)
    assert [r.permission for r in rt.refusals] == ["external_directory"]


def test_outside_project_asks_grep_then_external_directory(hookcode_env, rg):
    outside = hookcode_env.root / "outside"
    found = write(outside / "x.py", "needle\n")
    hookcode_env.write_config({"permission": {"grep": "ask"}})
    reply = hookcode_env.register(ReplyWith("once"), "reply")
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "grep", {"pattern": "needle", "path": str(outside)})

    assert output(outcome) == f"Found 1 matches\n{found}:\n  Line 1: needle"
    grep_ask, external = reply.requests
    assert grep_ask.permission == "grep"
    assert grep_ask.metadata == {"pattern": "needle", "path": str(outside), "include": None}
    assert external.permission == "external_directory"
    assert external.patterns == external.always == [f"{outside.as_posix()}/*"]
    assert external.metadata == {"filepath": str(outside), "parentDir": str(outside)}

    # a file outside: its directory is asked about
    reply.requests.clear()
    assert invoke_tool(rt, "grep", {"pattern": "needle", "path": str(found)}).error is None
    external = reply.requests[-1]
    assert external.patterns == [f"{outside.as_posix()}/*"]
    assert external.metadata == {"filepath": str(found), "parentDir": str(outside)}


def test_inside_project_asks_nothing(hookcode_env, rg):
    write(hookcode_env.project / "x.py", "needle\n")
    reply = hookcode_env.register(ReplyWith("reject"), "reply")
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "grep", {"pattern": "needle", "path": str(hookcode_env.project)})

    assert outcome.error is None
    assert reply.requests == []


def test_unreachable_subdirectory_is_skipped_with_a_note(hookcode_env, rg):
    """A directory whose path is longer than PATH_MAX cannot be opened (by root neither)."""
    project = hookcode_env.project
    found = write(project / "ok.txt", "needle\n")
    fd = os.open(project, os.O_RDONLY)
    try:
        for i in range(25):  # 25 x 203 characters > 4096
            name = f"{i:02}" + "d" * 201
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        out = os.open("deep.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(out, b"needle\n")
        os.close(out)
    finally:
        os.close(fd)
    try:
        rt = hookcode_env.runtime()
        outcome = invoke_tool(rt, "grep", {"pattern": "needle"})
        # nothing readable matched: no note, just nothing found
        nothing = invoke_tool(rt, "grep", {"pattern": "absent"})
    finally:
        shutil.rmtree(project / ("00" + "d" * 201))

    assert output(outcome) == f"Found 1 matches\n{found}:\n  Line 1: needle\n\n{PARTIAL_NOTE}"
    assert output(nothing) == "No files found"


def fake_rg(tmp_path: Path, monkeypatch, script: str) -> Path:
    import hookcode_ripgrep

    fake = tmp_path / "fake-rg"
    fake.write_text("#!/bin/sh\n" + script)
    fake.chmod(0o755)
    monkeypatch.setattr(hookcode_ripgrep, "find_rg", lambda: str(fake))
    return fake


def rg_json(path: str, *lines: tuple[int, str]) -> str:
    messages = [{"type": "begin", "data": {"path": {"text": path}}}]
    messages += [
        {
            "type": "match",
            "data": {
                "path": {"text": path},
                "lines": {"text": text + "\n"},
                "line_number": n,
                "absolute_offset": 0,
                "submatches": [],
            },
        }
        for n, text in lines
    ]
    messages.append({"type": "end", "data": {"path": {"text": path}}})
    return "\n".join(json.dumps(m, separators=(",", ":")) for m in messages) + "\n"


def test_matches_of_files_that_cannot_be_stated_are_dropped(hookcode_env, monkeypatch, tmp_path):
    project = hookcode_env.project
    real = write(project / "real.txt", "needle\n")
    stream = tmp_path / "stream.jsonl"
    stream.write_text(
        rg_json("./gone.txt", (1, "needle"), (2, "needle"))
        + rg_json("./real.txt", (1, "needle"))
        + '{"data":{},"type":"summary"}\n'
    )
    fake_rg(tmp_path, monkeypatch, f"cat '{stream}'\n")
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "grep", {"pattern": "needle"})

    assert output(outcome) == f"Found 1 matches\n{real}:\n  Line 1: needle"
    assert outcome.result.metadata == {"matches": 1, "truncated": False}

    stream.write_text(rg_json("./gone.txt", (1, "needle")))
    outcome = invoke_tool(rt, "grep", {"pattern": "needle"})
    assert output(outcome) == "No files found"
    assert outcome.result.metadata == {"matches": 0, "truncated": False}


def test_exit_codes(hookcode_env, monkeypatch, tmp_path):
    fake = fake_rg(tmp_path, monkeypatch, "exit 2\n")
    rt = hookcode_env.runtime()
    # exit 2 without output or message: nothing found
    assert output(invoke_tool(rt, "grep", {"pattern": "x"})) == "No files found"

    fake.write_text("#!/bin/sh\necho 'rg: something broke' >&2\nexit 3\n")
    outcome = invoke_tool(rt, "grep", {"pattern": "x"})
    assert outcome.error_text == "ripgrep failed: rg: something broke"


def test_missing_rg_names_the_package(hookcode_env, monkeypatch, tmp_path):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setattr(sys, "executable", str(empty / "python"))
    monkeypatch.setattr(sysconfig, "get_path", lambda *a, **k: str(empty))
    monkeypatch.setenv("PATH", str(empty))
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "grep", {"pattern": "x"})

    assert outcome.error is not None
    assert "pip install ripgrep==14.1.0" in outcome.error_text


def test_abort_kills_ripgrep(hookcode_env, monkeypatch, tmp_path):
    from hookcode.pipeline import invoke
    from hookcode.tools import AbortSignal, ToolCall

    pid_file = tmp_path / "rg.pid"
    fake_rg(tmp_path, monkeypatch, f"echo $$ > '{pid_file}'\nexec sleep 60\n")
    rt = hookcode_env.runtime()
    session = rt.create_session(title="abort")

    async def run():
        abort = AbortSignal()
        call = ToolCall(tool="grep", args={"pattern": "x"}, call_id="call_1", session_id=session.id)
        task = asyncio.ensure_future(invoke(rt, call, abort=abort))
        for _ in range(200):
            if pid_file.exists() and pid_file.read_text().strip():
                break
            await asyncio.sleep(0.02)
        abort.abort("test")
        return await asyncio.wait_for(task, 10)

    started = time.monotonic()
    outcome = asyncio.run(run())

    assert isinstance(outcome.error, ToolAborted)
    assert time.monotonic() - started < 10
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


# ---------------------------------------------------------------------------------------------
# the read rules apply: denied files are never shown or counted; `ask` ones are named only
# ---------------------------------------------------------------------------------------------


def unread_note(*paths: Path, more: int = 0) -> str:
    count = len(paths) + more
    files = "1 file matches" if count == 1 else f"{count} files match"
    names = ", ".join(str(p) for p in paths) + (f" and {more} more" if more else "")
    return (
        f"{files} whose contents need the read permission (read them with the read tool, "
        f"which asks for it): {names}"
    )


def test_denied_files_are_neither_shown_nor_counted(hookcode_env, rg):
    project = hookcode_env.project
    hookcode_env.write_config(
        '[permission.read]\n"*" = "allow"\n"*.env" = "deny"\n', where="global"
    )
    write(project / ".env", "SECRET=needle\n")
    write(project / "deep" / "prod.env", "needle\n")
    shown = write(project / "b.txt", "needle\n")
    for i in range(150):  # more denied matches than the limit: no truncation note
        write(project / "many" / f"{i}.env", "needle\n")
    rt = hookcode_env.runtime()
    outcome = invoke_tool(rt, "grep", {"pattern": "needle"})
    assert output(outcome) == f"Found 1 matches\n{shown}:\n  Line 1: needle"
    assert outcome.result.metadata == {"matches": 1, "truncated": False}
    outcome = invoke_tool(rt, "grep", {"pattern": "SECRET", "include": ".env"})
    assert output(outcome) == "No files found"


def test_files_whose_reading_asks_are_named_not_shown(hookcode_env, rg):
    project = hookcode_env.project
    env_file = write(project / ".env", "SECRET=needle\n")  # the default rules ask for *.env
    shown = write(project / "b.txt", "needle\n")
    write(project / ".env.example", "needle\n", 1000)  # allowed by default
    rt = hookcode_env.runtime()
    outcome = invoke_tool(rt, "grep", {"pattern": "needle"})
    text = output(outcome)
    assert "SECRET" not in text
    assert text.startswith("Found 2 matches\n")
    assert f"{shown}:" in text and f"{project / '.env.example'}:" in text
    assert text.endswith(f"\n\n(Not shown: {unread_note(env_file)})")
    assert outcome.result.metadata == {"matches": 2, "truncated": False, "unread": 1}

    outcome = invoke_tool(rt, "grep", {"pattern": "SECRET"})
    assert output(outcome) == f"No matches shown: {unread_note(env_file)}"

    # once the read is approved for good, grep shows it
    front = hookcode_env.register(ReplyWith("always"), "front")
    rt = hookcode_env.runtime()
    sid = rt.create_session().id
    assert invoke_tool(rt, "read", {"filePath": ".env"}, session_id=sid).error is None
    assert front.requests
    outcome = invoke_tool(rt, "grep", {"pattern": "SECRET"}, session_id=sid)
    assert output(outcome) == f"Found 1 matches\n{env_file}:\n  Line 1: SECRET=needle"


def test_at_most_twenty_unread_files_are_named(hookcode_env, rg):
    project = hookcode_env.project
    names = [write(project / f"s{i:02}.env", "needle\n") for i in range(25)]
    rt = hookcode_env.runtime()
    outcome = invoke_tool(rt, "grep", {"pattern": "needle"})
    assert output(outcome) == f"No matches shown: {unread_note(*names[:20], more=5)}"


def test_a_denied_file_named_as_path_is_refused(hookcode_env, rg):
    project = hookcode_env.project
    hookcode_env.write_config(
        '[permission.read]\n"*" = "allow"\n"*/secret.txt" = "deny"\n', where="global"
    )
    secret = write(project / "secret.txt", "needle\n")
    (project / "alias.txt").symlink_to("secret.txt")  # a link is judged where it leads
    rt = hookcode_env.runtime()
    for name in ("secret.txt", "alias.txt"):
        outcome = invoke_tool(rt, "grep", {"pattern": "needle", "path": name})
        assert isinstance(outcome.error, PermissionDenied), name
        assert outcome.error_text == (
            f"The read rules deny {project / name}: grep does not search it."
        )
    assert "needle" not in output(invoke_tool(rt, "grep", {"pattern": "needle"}))
    assert secret.exists()


def test_a_root_reached_through_links_is_judged_where_it_leads(hookcode_env, rg):
    project = hookcode_env.project
    hookcode_env.write_config(
        '[permission]\nexternal_directory = "deny"\n[permission.read]\n"*" = "allow"\n'
        '"*/vault/*" = "deny"\n',
        where="global",
    )
    write(project / "vault" / "key.txt", "needle\n")
    (project / "door").symlink_to("vault")
    outside = hookcode_env.root / "outside"
    write(outside / "o.txt", "needle\n")
    (project / "out").symlink_to(outside)
    (project / "gone").symlink_to(outside / "missing")  # dangling
    rt = hookcode_env.runtime()
    assert output(invoke_tool(rt, "grep", {"pattern": "needle", "path": "door"})) == (
        "No files found"
    )
    for name in ("out", "gone", "out/o.txt"):
        outcome = invoke_tool(rt, "grep", {"pattern": "needle", "path": name})
        assert isinstance(outcome.error, PermissionDenied), (name, outcome.error_text)
