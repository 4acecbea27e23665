"""The glob tool (reference/tools.md §8), on ripgrep (§11; the library's own tests are in
tests/libs/test_ripgrep.py)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest
from hookcode.errors import PermissionDenied, PermissionRejected, ToolAborted
from hookcode.testing import ReplyWith, invoke_tool

TRUNCATION_NOTE = (
    "(Results are truncated: showing first 100 results. "
    "Consider using a more specific path or pattern.)"
)


def touch(path: Path, mtime: float | None = None, text: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def git_init(directory: Path) -> None:
    subprocess.run(["git", "init", "-q", str(directory)], check=True, capture_output=True)


def lines(outcome) -> list[str]:
    assert outcome.error is None, outcome.error_text
    return outcome.result.output.split("\n")


def test_glob_lists_matching_files_as_absolute_paths(hookcode_env, rg):
    project = hookcode_env.project
    touch(project / "a.py", 1000)
    touch(project / "src" / "b.py", 2000)
    touch(project / "src" / "deep" / "c.py", 3000)
    touch(project / "README.md", 4000)
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "glob", {"pattern": "**/*.py"})

    assert lines(outcome) == [
        str(project / "src" / "deep" / "c.py"),
        str(project / "src" / "b.py"),
        str(project / "a.py"),
    ]
    assert outcome.result.title == "."
    assert outcome.result.metadata == {"count": 3, "truncated": False}


def test_glob_newest_modification_first(hookcode_env, rg):
    project = hookcode_env.project
    now = time.time()
    touch(project / "old.txt", now - 300)
    touch(project / "newest.txt", now)
    touch(project / "middle.txt", now - 100)
    touch(project / "sub" / "older.txt", now - 200)
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "glob", {"pattern": "*.txt"})

    assert [Path(p).name for p in lines(outcome)] == [
        "newest.txt",
        "middle.txt",
        "older.txt",
        "old.txt",
    ]


def test_glob_honours_gitignore_includes_hidden_and_skips_dot_git(hookcode_env, rg):
    project = hookcode_env.project
    git_init(project)
    touch(project / ".gitignore", text="ignored.py\nbuild-out/\n")
    touch(project / "kept.py")
    touch(project / "ignored.py")
    touch(project / "build-out" / "gen.py")
    touch(project / ".hidden" / "secret.py")
    touch(project / ".dotfile.py")
    touch(project / ".git" / "hooks" / "custom.py")
    touch(project / ".git" / "top.py")
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "glob", {"pattern": "**/*.py"})
    assert sorted(lines(outcome)) == sorted(
        [
            str(project / "kept.py"),
            str(project / ".hidden" / "secret.py"),
            str(project / ".dotfile.py"),
        ]
    )

    # a pattern matching everything still cannot reach into .git
    everything = lines(invoke_tool(rt, "glob", {"pattern": "*"}))
    assert not [p for p in everything if "/.git/" in p]
    assert str(project / ".gitignore") in everything
    # ignore files still count when the pattern names ignored files or directories
    assert str(project / "ignored.py") not in everything
    for pattern in ("ignored.py", "build-out/**", "**/gen.py"):
        assert invoke_tool(rt, "glob", {"pattern": pattern}).result.output == "No files found"


def test_gitignore_only_counts_inside_a_git_repository(hookcode_env, rg):
    project = hookcode_env.project
    touch(project / ".gitignore", text="ignored.py\n")
    touch(project / "ignored.py")
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "glob", {"pattern": "*.py"})
    assert lines(outcome) == [str(project / "ignored.py")]


def test_glob_does_not_follow_symlinks(hookcode_env, rg):
    project = hookcode_env.project
    elsewhere = hookcode_env.root / "elsewhere"
    touch(elsewhere / "linked.py")
    touch(project / "real.py")
    (project / "link").symlink_to(elsewhere, target_is_directory=True)
    rt = hookcode_env.runtime()

    assert lines(invoke_tool(rt, "glob", {"pattern": "**/*.py"})) == [str(project / "real.py")]


def test_glob_in_a_subdirectory(hookcode_env, rg):
    project = hookcode_env.project
    git_init(project)
    touch(project / "top.py")
    touch(project / "pkg" / "mod.py")
    touch(project / "pkg" / "sub" / "inner.py")
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "glob", {"pattern": "*.py", "path": "pkg"})

    assert sorted(lines(outcome)) == [
        str(project / "pkg" / "mod.py"),
        str(project / "pkg" / "sub" / "inner.py"),
    ]
    assert outcome.result.title == "pkg"

    # the title is relative to the worktree (the git root), not the working directory
    rt_sub = hookcode_env.runtime(cwd=project / "pkg")
    outcome = invoke_tool(rt_sub, "glob", {"pattern": "*.py", "path": "sub"})
    assert lines(outcome) == [str(project / "pkg" / "sub" / "inner.py")]
    assert outcome.result.title == "pkg/sub"


def test_no_files_found(hookcode_env, rg):
    touch(hookcode_env.project / "a.txt")
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "glob", {"pattern": "**/*.rs"})

    assert outcome.error is None
    assert outcome.result.output == "No files found"
    assert outcome.result.metadata == {"count": 0, "truncated": False}


@pytest.mark.parametrize("pattern", ["", "  "])
def test_empty_pattern_is_refused_before_asking(hookcode_env, pattern):
    touch(hookcode_env.project / "a.txt")
    reply = hookcode_env.register(ReplyWith("once"), "reply")
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "glob", {"pattern": pattern})

    assert outcome.error_text == "pattern is required"
    assert reply.requests == []


def test_limit_of_100_and_truncation_message(hookcode_env, rg):
    project = hookcode_env.project
    for i in range(105):
        touch(project / "many" / f"f{i:03}.txt", 1_000_000 + i)
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "glob", {"pattern": "*.txt"})

    out = lines(outcome)
    assert len(out) == 102
    assert out[-2:] == ["", TRUNCATION_NOTE]
    paths = out[:100]
    assert len(set(paths)) == 100
    mtimes = [os.stat(p).st_mtime for p in paths]
    assert mtimes == sorted(mtimes, reverse=True)
    assert outcome.result.metadata == {"count": 100, "truncated": True}
    assert "outputPath" not in outcome.result.metadata  # the pipeline left it alone


def test_exactly_100_files_is_not_truncated(hookcode_env, rg):
    for i in range(100):
        touch(hookcode_env.project / f"f{i:03}.txt")
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "glob", {"pattern": "*.txt"})

    assert len(lines(outcome)) == 100
    assert outcome.result.metadata == {"count": 100, "truncated": False}


def test_missing_directory(hookcode_env, rg):
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "glob", {"pattern": "*", "path": "nowhere"})

    assert outcome.error is not None
    assert outcome.error_text == f"No such file or directory: '{hookcode_env.project / 'nowhere'}'"


def test_a_file_given_as_the_directory(hookcode_env, rg):
    (hookcode_env.project / "a.txt").write_text("x\n")
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "glob", {"pattern": "*", "path": "a.txt"})

    assert outcome.error_text == f"Not a directory: '{hookcode_env.project / 'a.txt'}'"


def test_invalid_glob_reports_ripgrep_error(hookcode_env, rg):
    touch(hookcode_env.project / "a.txt")
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "glob", {"pattern": "{a"})

    assert outcome.error_text.startswith("ripgrep failed: ")
    assert "glob" in outcome.error_text


def test_outside_project_is_refused_headless(hookcode_env, rg):
    outside = hookcode_env.root / "outside"
    touch(outside / "x.py")
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "glob", {"pattern": "*.py", "path": str(outside)})

    assert isinstance(outcome.error, PermissionRejected)
    assert [r.permission for r in rt.refusals] == ["external_directory"]


def test_outside_project_asks_external_directory_and_runs_when_approved(hookcode_env, rg):
    outside = hookcode_env.root / "outside"
    touch(outside / "x.py")
    reply = hookcode_env.register(ReplyWith("once"), "reply")
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "glob", {"pattern": "*.py", "path": str(outside)})

    assert lines(outcome) == [str(outside / "x.py")]
    assert outcome.result.title == "../outside"
    [request] = reply.requests
    assert request.permission == "external_directory"
    assert request.patterns == request.always == [f"{outside.as_posix()}/*"]
    assert request.metadata == {"filepath": str(outside), "parentDir": str(outside)}


def test_inside_project_asks_nothing(hookcode_env, rg):
    touch(hookcode_env.project / "x.py")
    reply = hookcode_env.register(ReplyWith("reject"), "reply")
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "glob", {"pattern": "*.py", "path": str(hookcode_env.project)})

    assert outcome.error is None
    assert reply.requests == []


def test_glob_permission_patterns_are_the_pattern(hookcode_env, rg):
    touch(hookcode_env.project / ".env")
    hookcode_env.write_config({"permission": {"glob": {"*": "allow", "*.env": "deny"}}})
    rt = hookcode_env.runtime()

    assert invoke_tool(rt, "glob", {"pattern": "*.py"}).error is None
    denied = invoke_tool(rt, "glob", {"pattern": "*.env"})
    assert isinstance(denied.error, PermissionDenied)

    hookcode_env.write_config({"permission": {"glob": "ask"}})
    reply = hookcode_env.register(ReplyWith("once"), "reply")
    rt = hookcode_env.runtime()
    assert invoke_tool(rt, "glob", {"pattern": "src/**"}).error is None
    [request] = reply.requests
    assert request.permission == "glob"
    assert request.patterns == ["src/**"]
    assert request.always == ["*"]
    assert request.metadata == {"pattern": "src/**", "path": None}


def test_missing_rg_names_the_package(hookcode_env, monkeypatch, tmp_path):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setattr(sys, "executable", str(empty / "python"))
    monkeypatch.setattr(sysconfig, "get_path", lambda *a, **k: str(empty))
    monkeypatch.setenv("PATH", str(empty))
    touch(hookcode_env.project / "a.py")
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "glob", {"pattern": "*.py"})

    assert outcome.error is not None
    assert "pip install ripgrep==14.1.0" in outcome.error_text


def test_abort_kills_ripgrep(hookcode_env, monkeypatch, tmp_path):
    """A slow rg (a stand-in that sleeps) is killed as soon as the abort signal fires."""
    import hookcode_ripgrep
    from hookcode.pipeline import invoke
    from hookcode.tools import AbortSignal, ToolCall

    pid_file = tmp_path / "rg.pid"
    fake = tmp_path / "rg"
    fake.write_text(f"#!/bin/sh\necho $$ > '{pid_file}'\nexec sleep 60\n")
    fake.chmod(0o755)
    monkeypatch.setattr(hookcode_ripgrep, "find_rg", lambda: str(fake))
    rt = hookcode_env.runtime()
    session = rt.create_session(title="abort")

    async def run():
        abort = AbortSignal()
        call = ToolCall(tool="glob", args={"pattern": "*"}, call_id="call_1", session_id=session.id)
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
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


# ---------------------------------------------------------------------------------------------
# the read rules: denied paths never show nor count; names of `ask` paths may show
# ---------------------------------------------------------------------------------------------


def test_paths_the_read_rules_deny_are_left_out_before_the_limit(hookcode_env, rg):
    project = hookcode_env.project
    hookcode_env.write_config(
        '[permission.read]\n"*" = "allow"\n"*.env" = "deny"\n"*/private/*" = "deny"\n',
        where="global",
    )
    for i in range(150):
        touch(project / "many" / f"{i:03}.env", 5000 + i)  # newest: they would come first
    touch(project / "private" / "notes.txt", 6000)
    kept = [touch(project / f"f{i}.txt", 1000 + i) for i in range(30)]
    rt = hookcode_env.runtime()
    outcome = invoke_tool(rt, "glob", {"pattern": "**/*"})
    assert lines(outcome) == [str(p) for p in reversed(kept)]
    assert outcome.result.metadata == {"count": 30, "truncated": False}
    assert lines(invoke_tool(rt, "glob", {"pattern": "*.env"})) == ["No files found"]


def test_names_of_paths_whose_reading_asks_are_shown(hookcode_env, rg):
    project = hookcode_env.project
    env_file = touch(project / ".env", 2000, "SECRET=1\n")  # the default rules ask for *.env
    rt = hookcode_env.runtime()
    assert lines(invoke_tool(rt, "glob", {"pattern": "*.env"})) == [str(env_file)]


def test_a_symlinked_search_root_is_judged_where_it_leads(hookcode_env, rg):
    project = hookcode_env.project
    hookcode_env.write_config(
        '[permission]\nexternal_directory = "deny"\n[permission.read]\n"*" = "allow"\n'
        '"*/vault/*" = "deny"\n',
        where="global",
    )
    touch(project / "vault" / "key.txt")
    (project / "door").symlink_to("vault")
    outside = hookcode_env.root / "outside"
    touch(outside / "o.txt")
    (project / "out").symlink_to(outside)
    (project / "gone").symlink_to(outside / "missing")
    rt = hookcode_env.runtime()
    assert lines(invoke_tool(rt, "glob", {"pattern": "*", "path": "door"})) == ["No files found"]
    for name in ("out", "gone"):
        outcome = invoke_tool(rt, "glob", {"pattern": "*", "path": name})
        assert isinstance(outcome.error, PermissionDenied), (name, outcome.error_text)
