"""hookcode.datadir: the data directory and what hookcode writes in it are private
(directories 0700, files 0600), and a looser one is tightened without following links."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest
from hookcode.datadir import private_dir, private_file, secure_data_dir
from hookcode.errors import HookcodeError


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_private_dir_creates_missing_parents_private(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "c"
    assert private_dir(target) == target
    for path in (tmp_path / "a", tmp_path / "a" / "b", target):
        assert mode(path) == 0o700, path
    loose = tmp_path / "loose"
    loose.mkdir()
    os.chmod(loose, 0o755)
    private_dir(loose, tighten=False)
    assert mode(loose) == 0o755  # left alone: a directory that is not ours to tighten
    private_dir(loose)
    assert mode(loose) == 0o700


def test_private_file_creates_or_tightens(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh.db"
    private_file(fresh)
    assert fresh.exists() and mode(fresh) == 0o600
    old = tmp_path / "old.db"
    old.write_bytes(b"data")
    os.chmod(old, 0o644)
    private_file(old)
    assert mode(old) == 0o600 and old.read_bytes() == b"data"
    missing = tmp_path / "missing-wal"
    try:
        private_file(missing, create=False)
    except FileNotFoundError:
        pass
    else:  # pragma: no cover - the test fails here
        raise AssertionError("create=False made a file")
    assert not missing.exists()


def test_secure_data_dir_tightens_everything_and_follows_no_link(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "tool-output").mkdir(parents=True)
    (data / "cache" / "skills").mkdir(parents=True)
    for directory in (data, data / "tool-output", data / "cache", data / "cache" / "skills"):
        os.chmod(directory, 0o755)
    spill = data / "tool-output" / "tool_0123456789ab"
    spill.write_text("output\n")
    os.chmod(spill, 0o644)
    outside_dir = tmp_path / "outside"
    outside_dir.mkdir()
    os.chmod(outside_dir, 0o755)
    outside_file = tmp_path / "outside.txt"
    outside_file.write_text("x\n")
    os.chmod(outside_file, 0o644)
    (data / "file-link").symlink_to(outside_file)
    (data / "dir-link").symlink_to(outside_dir)
    (data / "dangling").symlink_to(tmp_path / "nowhere")
    os.mkfifo(data / "fifo", 0o644)

    assert secure_data_dir(data) == []
    assert mode(data) == mode(data / "tool-output") == 0o700
    assert mode(data / "cache") == mode(data / "cache" / "skills") == 0o700
    assert mode(spill) == 0o600
    assert mode(outside_file) == 0o644 and mode(outside_dir) == 0o755
    assert stat.S_ISFIFO((data / "fifo").lstat().st_mode)  # not opened, not changed

    # a private data directory is not walked again (one stat on the common path)
    os.chmod(spill, 0o644)
    assert secure_data_dir(data) == []
    assert mode(spill) == 0o644


def test_secure_data_dir_creates_a_missing_one_private(tmp_path: Path) -> None:
    data = tmp_path / "x" / "data"
    assert secure_data_dir(data) == []
    assert mode(data) == 0o700 and mode(tmp_path / "x") == 0o700


def test_a_data_directory_of_another_user_is_refused(tmp_path: Path, monkeypatch: Any) -> None:
    """Someone else made the directory (a shared /tmp path): they could read what is kept
    there, so it is not used. (This process runs as another user than the directory's owner;
    root may use any.)"""
    data = tmp_path / "shared"
    data.mkdir(mode=0o777)
    owner = data.stat().st_uid
    monkeypatch.setattr(os, "geteuid", lambda: owner + 1000)
    with pytest.raises(HookcodeError, match="belongs to another user") as err:
        secure_data_dir(data)
    assert str(data) in str(err.value) and "HOOKCODE_DATA_DIR" in str(err.value)
    monkeypatch.setattr(os, "geteuid", lambda: owner)
    assert secure_data_dir(data) == [] and mode(data) == 0o700


def test_the_cli_says_so_in_one_line(
    tmp_path: Path, monkeypatch: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from hookcode.cli import main

    data = tmp_path / "shared"
    data.mkdir(mode=0o777)
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setenv("HOOKCODE_DATA_DIR", str(data))
    monkeypatch.setenv("HOOKCODE_LOAD_PLUGINS", "")
    monkeypatch.setattr(os, "geteuid", lambda: data.stat().st_uid + 1000)
    assert main(["-C", str(project), "sessions", "list"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("hookcode: error: ")
    assert "belongs to another user" in err[0]
    assert not (data / "hookcode.db").exists()
