"""The glob tool (reference/tools.md §8) and the ripgrep helper it runs on (§11)."""

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


def test_rg_next_to_the_interpreter_wins_over_path(monkeypatch, tmp_path):
    from hookcode.ripgrep import find_rg

    venv_bin, path_bin = tmp_path / "venv-bin", tmp_path / "path-bin"
    for directory in (venv_bin, path_bin):
        directory.mkdir()
        fake = directory / "rg"
        fake.write_text("#!/bin/sh\n")
        fake.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(venv_bin / "python"))
    monkeypatch.setattr(sysconfig, "get_path", lambda *a, **k: str(tmp_path / "none"))
    monkeypatch.setenv("PATH", str(path_bin))
    assert find_rg() == str(venv_bin / "rg")

    monkeypatch.setattr(sys, "executable", str(tmp_path / "none" / "python"))
    assert find_rg() == str(path_bin / "rg")


def test_abort_kills_ripgrep(hookcode_env, monkeypatch, tmp_path):
    """A slow rg (a stand-in that sleeps) is killed as soon as the abort signal fires."""
    import hookcode.ripgrep
    from hookcode.pipeline import invoke
    from hookcode.tools import AbortSignal, ToolCall, ToolContext

    pid_file = tmp_path / "rg.pid"
    fake = tmp_path / "rg"
    fake.write_text(f"#!/bin/sh\necho $$ > '{pid_file}'\nexec sleep 60\n")
    fake.chmod(0o755)
    monkeypatch.setattr(hookcode.ripgrep, "find_rg", lambda: str(fake))
    rt = hookcode_env.runtime()
    session = rt.create_session(title="abort")

    async def run():
        abort = AbortSignal()
        call = ToolCall(tool="glob", args={"pattern": "*"}, call_id="call_1", session_id=session.id)
        ctx = ToolContext(rt, session_id=session.id, call_id="call_1", abort=abort, tool="glob")
        task = asyncio.ensure_future(invoke(call, ctx))
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


def test_abort_kills_ripgrep_without_the_pipeline(monkeypatch, tmp_path):
    """The helper honours the signal itself (a caller that is not cancelled)."""
    import hookcode.ripgrep
    from hookcode.tools import AbortSignal

    fake = tmp_path / "rg"
    fake.write_text("#!/bin/sh\nexec sleep 60\n")
    fake.chmod(0o755)
    monkeypatch.setattr(hookcode.ripgrep, "find_rg", lambda: str(fake))

    async def run():
        abort = AbortSignal()
        asyncio.get_running_loop().call_later(0.2, abort.abort)
        return await hookcode.ripgrep.files(tmp_path, limit=10, abort=abort)

    started = time.monotonic()
    with pytest.raises(ToolAborted):
        asyncio.run(asyncio.wait_for(run(), 10))
    assert time.monotonic() - started < 10


@pytest.mark.parametrize("limit", [3, 10, 1000])
@pytest.mark.parametrize("select", ["name_glob", "match"])
def test_files_reports_each_kept_path_once_as_found(tmp_path, rg, limit, select):
    """``on_path`` sees exactly the paths returned, once each, in their order: for a search
    stopped at the limit (the last paths are reported while rg is being stopped) and for one
    that ran to its end; names outside ASCII included."""
    import hookcode.ripgrep

    names = [f"d{i % 4}/f{i}.py" for i in range(40)] + ["d0/é ü 文.py", "d1/x.txt"]
    for name in names:
        touch(tmp_path / name)
    seen: list[str] = []
    options = (
        {"name_glob": "*.py"}
        if select == "name_glob"
        else {"match": hookcode.ripgrep.glob_filter("**/*.py")}
    )

    async def run():
        return await hookcode.ripgrep.files(tmp_path, limit=limit, on_path=seen.append, **options)

    found, more = asyncio.run(run())
    assert seen == found
    assert len(found) == min(limit, 41) and more == (limit < 41)
    assert set(found) <= {name for name in names if name.endswith(".py")}
    if limit == 1000:
        assert "d0/é ü 文.py" in found


@pytest.mark.parametrize("limit", [5, 1000])
def test_files_raises_what_on_path_raised_and_leaves_no_process(tmp_path, rg, limit):
    import hookcode.ripgrep

    for i in range(30):
        touch(tmp_path / f"f{i}.py")
    calls: list[str] = []

    def on_path(path: str) -> None:
        calls.append(path)
        if len(calls) == 2:
            raise LookupError(f"cannot date {path}")

    async def run():
        return await hookcode.ripgrep.files(
            tmp_path, limit=limit, name_glob="*.py", on_path=on_path
        )

    with pytest.raises(LookupError, match="cannot date"):
        asyncio.run(run())
    assert len(calls) == 2  # nothing reported after the failure
    children = subprocess.run(
        ["ps", "-o", "pid=,stat=,comm=", "--ppid", str(os.getpid())],
        capture_output=True,
        text=True,
    ).stdout
    assert " rg" not in children and "rg\n" not in children, children


DIFFERENTIAL_PATTERNS = [
    "*.py",
    "**/*.py",
    "*",
    "**",
    "src",
    "src/",
    "src/*",
    "src/**",
    "src/**/*.py",
    "/top.py",
    "top.py",
    "/src/*.py",
    "**/test_*.py",
    "*.{py,md}",
    "{src,docs}/**",
    "src/**/b*.py",
    "[ab].py",
    "[!a]*.py",
    "[^a]*.py",
    "?.py",
    "a/**/c.py",
    "**/deep/**",
    "*.PY",
    "\\*.txt",
    "docs/*.md",
    "**/*.{txt,md}",
    "x{.py,}",
    "{a,}.py",
    "a[!x]b.py",
    "[]x]*",
    "[a-c]*.py",
    "[-a]*",
    "src/**/",
    "**/",
    "a**",
    "**a.py",
    "*/c.py",
    "src/*/c.py",
    "src/**/**/c.py",
    "**/**/c.py",
    "{**/c.py,top.py}",
    "src**",
    "a?c.py",
    "*.tar.gz",
    ".*",
    "**/.*",
    "!*.py",
    "#comment",
    "  ",
    "te st.txt",
    "te\\ st.txt",
    "[[]*",
    "[&&]*",
    "*.py ",
    "a/**/",
    "{**,x}",
    "**/**",
    "src/**/*",
    "/**/c.py",
    "/src",
    "/src/**",
    "**/src/**",
    "s*/**/c.py",
    "*/*/*.py",
    "{src/**/c.py,docs/*}",
    "src/{a,b}.py",
    "**/{a,b}/*.py",
    "[!-]*.py",
    "[a-]*.py",
]


def test_glob_filter_agrees_with_rg_glob(tmp_path, rg):
    """Without ignore files, filtering rg's listing gives what ``rg --glob`` gives."""
    from hookcode.ripgrep import glob_filter

    tree = [
        "top.py",
        "a.py",
        "b.py",
        "c.py",
        "ab.py",
        "README.md",
        "*.txt",
        "te st.txt",
        "x.py",
        "x",
        "[x].py",
        "a/b.py",
        "a/b/c.py",
        "a/x/y/c.py",
        "src/a.py",
        "src/b.py",
        "src/bb.py",
        "src/sub/b2.py",
        "src/sub/deep/c.py",
        "src/deep/test_x.py",
        "docs/index.md",
        "docs/notes.txt",
        "pkg.tar.gz",
        ".hidden.py",
        ".cfg/settings.toml",
        "A.PY",
        "-dash.py",
        "]bracket.py",
        "&amp.py",
        "srcx/z.py",
    ]
    for name in tree:
        touch(tmp_path / name)
    listing = subprocess.run(
        [rg, "--no-config", "--files", "--hidden"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    listing = [p for p in listing if p]
    for pattern in DIFFERENTIAL_PATTERNS:
        expected = subprocess.run(
            [rg, "--no-config", "--files", "--hidden", f"--glob={pattern}"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
        ).stdout.split("\n")
        match = glob_filter(pattern)
        if match is None:
            continue  # given to rg as a --glob itself
        assert sorted(p for p in listing if match(p)) == sorted(p for p in expected if p), pattern


def test_glob_filter_leaves_exclusions_comments_and_errors_to_rg():
    from hookcode.ripgrep import glob_filter

    for pattern in ("!*.py", "#x", "", "   ", "{a", "a}", "[a", "{a,{b}}", "a\\", "[b-a]"):
        assert glob_filter(pattern) is None, pattern
    escaped = glob_filter("\\!x")
    assert escaped is not None and escaped("!x") and not escaped("x")


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
