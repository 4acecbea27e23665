"""fileio: atomic writes that keep how a file was stored; per-path locks."""

from __future__ import annotations

import asyncio
import codecs
import os
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
    # a killed writer may leave its temporary file behind, never a torn target
    assert all(name.startswith(".big.txt.") and name.endswith(".tmp") for name in leftovers)


def test_diff_stats_of_a_small_edit_in_a_large_repetitive_file_is_fast():
    before = "".join(f"    value = compute({i % 7})\n" for i in range(50_000))
    after = before.replace("compute(3)\n", "compute(3)  # changed\n", 1)
    started = time.perf_counter()
    assert diff_stats(before, after) == (1, 1)
    # a quadratic matcher needs seconds here; this is a correctness guard, not a benchmark
    assert time.perf_counter() - started < 5
