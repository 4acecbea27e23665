"""The ripgrep library (libs/ripgrep, ``hookcode_ripgrep``; reference/tools.md §11): finding rg,
listing files with a limit, abort and failures, and ``glob_filter`` against ``rg --glob`` itself.
The tools' own tests (glob, grep, list) run it through the pipeline."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest
from hookcode.errors import ToolAborted


def touch(path: Path, mtime: float | None = None, text: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def test_rg_next_to_the_interpreter_wins_over_path(monkeypatch, tmp_path):
    from hookcode_ripgrep import find_rg

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


def test_abort_kills_ripgrep_without_the_pipeline(monkeypatch, tmp_path):
    """The helper honours the signal itself (a caller that is not cancelled)."""
    import hookcode_ripgrep
    from hookcode.tools import AbortSignal

    fake = tmp_path / "rg"
    fake.write_text("#!/bin/sh\nexec sleep 60\n")
    fake.chmod(0o755)
    monkeypatch.setattr(hookcode_ripgrep, "find_rg", lambda: str(fake))

    async def run():
        abort = AbortSignal()
        asyncio.get_running_loop().call_later(0.2, abort.abort)
        return await hookcode_ripgrep.files(tmp_path, limit=10, abort=abort)

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
    import hookcode_ripgrep

    names = [f"d{i % 4}/f{i}.py" for i in range(40)] + ["d0/é ü 文.py", "d1/x.txt"]
    for name in names:
        touch(tmp_path / name)
    seen: list[str] = []
    options = (
        {"name_glob": "*.py"}
        if select == "name_glob"
        else {"match": hookcode_ripgrep.glob_filter("**/*.py")}
    )

    async def run():
        return await hookcode_ripgrep.files(tmp_path, limit=limit, on_path=seen.append, **options)

    found, more = asyncio.run(run())
    assert seen == found
    assert len(found) == min(limit, 41) and more == (limit < 41)
    assert set(found) <= {name for name in names if name.endswith(".py")}
    if limit == 1000:
        assert "d0/é ü 文.py" in found


@pytest.mark.parametrize("limit", [5, 1000])
def test_files_raises_what_on_path_raised_and_leaves_no_process(tmp_path, rg, limit):
    import hookcode_ripgrep

    for i in range(30):
        touch(tmp_path / f"f{i}.py")
    calls: list[str] = []

    def on_path(path: str) -> None:
        calls.append(path)
        if len(calls) == 2:
            raise LookupError(f"cannot date {path}")

    async def run():
        return await hookcode_ripgrep.files(
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
    from hookcode_ripgrep import glob_filter

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
    from hookcode_ripgrep import glob_filter

    for pattern in ("!*.py", "#x", "", "   ", "{a", "a}", "[a", "{a,{b}}", "a\\", "[b-a]"):
        assert glob_filter(pattern) is None, pattern
    escaped = glob_filter("\\!x")
    assert escaped is not None and escaped("!x") and not escaped("x")
