"""fileio: atomic writes that keep how a file was stored; per-path locks."""

from __future__ import annotations

import asyncio
import codecs
import json
import os
import subprocess
import sys
import threading
import time

import pytest
from hookcode.fileio import PathLocks, atomic_write, diff, diff_stats, read_text, write_text


def test_round_trip_keeps_crlf_bom_mode_and_bad_bytes(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes(codecs.BOM_UTF8 + b"one\r\ntwo \xff\r\n")
    os.chmod(path, 0o751)
    before = read_text(path)
    assert before.newline == "\r\n" and before.bom == codecs.BOM_UTF8 and before.mode == 0o751
    write_text(path, before.lf_text.replace("one", "uno"), like=before)
    assert path.read_bytes() == codecs.BOM_UTF8 + b"uno\r\ntwo \xff\r\n"
    assert os.stat(path).st_mode & 0o777 == 0o751


def test_utf16_file_stays_utf16(tmp_path):
    path = tmp_path / "w.txt"
    path.write_bytes(codecs.BOM_UTF16_LE + "héllo\n".encode("utf-16-le"))
    before = read_text(path)
    write_text(path, "héllo wörld\n", like=before)
    assert path.read_bytes() == codecs.BOM_UTF16_LE + "héllo wörld\n".encode("utf-16-le")


def test_new_file_creates_parents_and_uses_umask_mode(tmp_path):
    path = tmp_path / "deep" / "er" / "new.txt"
    write_text(path, "x\n")
    assert path.read_text() == "x\n"
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~umask
    assert read_text(tmp_path / "missing").exists is False


def test_failed_write_leaves_old_file_and_no_temp(tmp_path):
    path = tmp_path / "keep.txt"
    path.write_text("old")

    with pytest.raises(TypeError):
        atomic_write(path, object())  # type: ignore[arg-type]
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


def test_diff_and_stats():
    assert diff_stats("a\nb\nc\n", "a\nB\nc\nd\n") == (2, 1)
    text = diff("f.txt", "a\n", "b\n")
    assert "--- f.txt" in text and "-a" in text and "+b" in text


def test_locks_serialise_async_and_sync_writers(tmp_path):
    locks = PathLocks()
    a, b = tmp_path / "a", tmp_path / "b"
    inside = []

    def sync_writer():
        with locks.hold_sync(b, a):
            inside.append("sync-in")
            time.sleep(0.05)
            inside.append("sync-out")

    async def main():
        thread = threading.Thread(target=sync_writer)
        thread.start()
        await asyncio.sleep(0.01)
        async with locks.hold(a, b):
            inside.append("async")
        thread.join()

    asyncio.run(main())
    assert inside == ["sync-in", "sync-out", "async"]


def test_kill_during_writes_never_leaves_a_torn_file(tmp_path):
    """A writer killed with SIGKILL at random moments leaves the old or the new content."""
    import signal
    import subprocess
    import sys

    target = tmp_path / "big.txt"
    versions = [("a" * 999 + "\n") * 2000, ("b" * 999 + "\n") * 2000]  # 2 MB each
    target.write_text(versions[0])
    script = (
        "import sys\n"
        "from hookcode.fileio import atomic_write\n"
        "versions = [('a' * 999 + '\\n') * 2000, ('b' * 999 + '\\n') * 2000]\n"
        "i = 0\n"
        "print('ready', flush=True)\n"
        "while True:\n"
        "    i += 1\n"
        "    atomic_write(sys.argv[1], versions[i % 2].encode())\n"
    )
    for delay in (0.01, 0.03, 0.05, 0.08, 0.13):
        proc = subprocess.Popen(
            [sys.executable, "-c", script, str(target)], stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert target.read_text() in versions
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != "big.txt"]
    # never a torn target; a temporary file only if the kill fell in the microseconds between
    # its link and the rename (on Linux it has no name before)
    assert all(name.startswith(".big.txt.") and name.endswith(".tmp") for name in leftovers)


def test_diff_stats_of_a_small_edit_in_a_large_repetitive_file_is_fast():
    before = "".join(f"    value = compute({i % 7})\n" for i in range(50_000))
    after = before.replace("compute(3)\n", "compute(3)  # changed\n", 1)
    started = time.perf_counter()
    assert diff_stats(before, after) == (1, 1)
    # a quadratic matcher needs seconds here; this is a correctness guard, not a benchmark
    assert time.perf_counter() - started < 5


# ---------------------------------------------------------------------------------------------
# temporary files: nothing left behind by a writer killed in the middle (issue 16, item 8)
# ---------------------------------------------------------------------------------------------

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="O_TMPFILE and /proc: Linux")


def temp_files(directory) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


@linux_only
def test_the_temporary_file_has_no_name_while_it_is_written(tmp_path, monkeypatch):
    """While the data is written and fsynced, the directory shows nothing new."""
    seen: list[list[str]] = []
    real_fsync = os.fsync

    def fsync(fd):
        seen.append(sorted(p.name for p in tmp_path.iterdir()))
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)  # a look at the directory mid-write
    path = tmp_path / "a.txt"
    path.write_text("old")
    atomic_write(path, b"new", mode=0o640)
    assert seen == [["a.txt"]]
    assert path.read_bytes() == b"new"
    assert os.stat(path).st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]


def test_without_o_tmpfile_the_named_temporary_file_is_recorded(tmp_path, monkeypatch):
    """Where O_TMPFILE is missing (macOS, some file systems) the temporary file has a name:
    it is recorded while it exists, and a later clean-up removes it if the writer died."""
    from hookcode.fileio import PendingWrites

    monkeypatch.delattr(os, "O_TMPFILE", raising=False)
    pending = PendingWrites(tmp_path / "pending")
    records: list[list[str]] = []
    real_fsync = os.fsync

    def fsync(fd):
        records.append([p.read_text() for p in (tmp_path / "pending").iterdir()])
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    work = tmp_path / "work"
    atomic_write(work / "a.txt", b"data", mode=0o600, pending=pending)
    (record,) = records
    (text,) = record
    pid, _start, temp = text.splitlines()
    assert int(pid) == os.getpid()
    assert os.path.basename(temp).startswith(".a.txt.") and temp.endswith(".tmp")
    assert (work / "a.txt").read_bytes() == b"data"
    assert list((tmp_path / "pending").iterdir()) == []  # done: the record is gone
    assert temp_files(work) == []


@linux_only
def test_pending_writes_clean_removes_only_what_dead_writers_left(tmp_path):
    from hookcode.fileio import PendingWrites

    pending = PendingWrites(tmp_path / "pending")
    work = tmp_path / "work"
    work.mkdir()
    dead_temp, live_temp, foreign = work / ".a.txt.x1.tmp", work / ".b.txt.x2.tmp", work / "keep"
    for path in (dead_temp, live_temp, foreign):
        path.write_text("partial")
    live = pending.record(str(live_temp))  # this process: alive
    assert live is not None
    # above the largest pid Linux hands out (2**22): a writer that is surely gone
    (tmp_path / "pending" / "dead").write_text(f"{2**22 + 1}\n1\n{dead_temp}\n")
    (tmp_path / "pending" / "reused").write_text(f"{os.getpid()}\n1\n{foreign}\n")
    assert sorted(pending.clean()) == [str(dead_temp)]
    assert not dead_temp.exists() and live_temp.exists()
    assert foreign.exists()  # not a temporary file's name: never removed
    assert sorted(p.name for p in (tmp_path / "pending").iterdir()) == [live.name]


def writing(pid: int, directory) -> bool:
    """Whether ``pid`` has a temporary file of ``directory`` open: an unnamed one
    (``/dir/#123 (deleted)``) or a named ``.NAME.*.tmp``."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith(f"{directory}/#") or (
            target.startswith(f"{directory}/.") and target.endswith(".tmp")
        ):
            return True
    return False


def kill_mid_write(argv: list[str], env: dict[str, str], data: bytes, directory) -> bool:
    """Run ``argv`` with ``data`` on stdin; SIGKILL it as soon as it writes a temporary file
    in ``directory``. True when it was caught writing (False: it finished first)."""
    proc = subprocess.Popen(
        argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    stdin, stderr = proc.stdin, proc.stderr
    assert stdin is not None and stderr is not None
    feeder = threading.Thread(target=lambda: (stdin.write(data), stdin.close()))
    feeder.start()
    caught = False
    try:
        while proc.poll() is None:
            if writing(proc.pid, directory):
                proc.kill()
                caught = True
                break
    finally:
        proc.kill()
        proc.wait()
        feeder.join()
        stderr.close()
    return caught


#: replaces os.O_TMPFILE's absence (macOS, file systems without it) in a real hookcode
NO_TMPFILE = "import os, sys; del os.O_TMPFILE; from hookcode.cli import main; sys.exit(main())"
BIG = 4 * 1024 * 1024


@linux_only
@pytest.mark.parametrize("tool", ["write", "apply_patch"])
def test_kill_9_in_the_middle_of_a_write_leaves_no_temporary_file(hookcode_env, tool):
    """``hookcode tools call`` killed while it writes a big file: no temporary file in the
    worktree, and the file is either the old content or the new, never a part."""
    project = hookcode_env.project
    target = project / "big.txt"
    old = b"old line\n" * (BIG // 9)
    new = old.replace(b"old", b"new", 1)
    caught = 0
    for attempt in range(6):
        if tool == "write":
            target.unlink(missing_ok=True)  # write needs a read before it replaces a file
            args = {"filePath": str(target), "content": new.decode()}
        else:
            target.write_bytes(old)
            patch = "*** Begin Patch\n*** Update File: big.txt\n@@\n-old line\n+new line\n"
            args = {"patchText": patch + "*** End Patch"}
        argv = [sys.executable, "-m", "hookcode.cli", "-C", str(project), "tools", "call"]
        caught += kill_mid_write(
            [*argv, tool, "-", "--yes"], hookcode_env.env, json.dumps(args).encode(), project
        )
        assert temp_files(project) == [], f"attempt {attempt}"
        if target.exists():
            assert (
                target.read_bytes() in (old, new)
                if tool == "apply_patch"
                else (target.read_bytes() == new)
            )
        if caught >= 2:
            break
    assert caught, "never caught in the middle of a write"


def test_without_o_tmpfile_a_later_run_removes_what_a_killed_write_left(hookcode_env):
    project = hookcode_env.project
    target = project / "big.txt"
    new = b"new line\n" * (BIG // 9)
    args = json.dumps({"filePath": str(target), "content": new.decode()}).encode()
    argv = [sys.executable, "-c", NO_TMPFILE, "-C", str(project), "tools", "call"]
    caught = False
    for _attempt in range(6):
        target.unlink(missing_ok=True)
        if kill_mid_write([*argv, "write", "-", "--yes"], hookcode_env.env, args, project):
            caught = True
            break
    assert caught, "never caught in the middle of a write"
    left = temp_files(project)
    assert len(left) == 1 and left[0].startswith(".big.txt.")  # recorded, not yet removed
    records = list((hookcode_env.data_dir / "pending-writes").iterdir())
    assert len(records) == 1 and left[0] in records[0].read_text()
    small = json.dumps({"filePath": str(project / "small.txt"), "content": "x"})
    done = subprocess.run(
        [*argv, "write", small, "--yes"], env=hookcode_env.env, capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert temp_files(project) == []
    assert list((hookcode_env.data_dir / "pending-writes").iterdir()) == []
