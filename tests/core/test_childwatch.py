"""hookcode.childwatch: on Python 3.11 asyncio learns of a child's exit through a pidfd polled
by the event loop, not a thread per child; an application's own watcher is left alone."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading

import pytest
from hookcode.childwatch import ensure_child_watcher

needs_pidfd = pytest.mark.skipif(
    sys.version_info >= (3, 12) or not sys.platform.startswith("linux"),
    reason="Python 3.12+ watches children with pidfds itself; pidfds are Linux's",
)


async def _run(*argv: str) -> tuple[int, bytes]:
    proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate()
    return proc.returncode, out


@needs_pidfd
def test_children_are_watched_without_a_thread() -> None:
    ensure_child_watcher()
    assert type(asyncio.get_child_watcher()).__name__ == "_PidfdChildWatcher"

    async def scenario() -> list[tuple[int, bytes]]:
        before = threading.active_count()
        results = await asyncio.gather(
            *(
                _run(sys.executable, "-c", f"import sys; print({i}); sys.exit({i})")
                for i in range(5)
            )
        )
        assert threading.active_count() == before  # no watcher thread per child
        return results

    results = asyncio.run(scenario())
    assert results == [(i, f"{i}\n".encode()) for i in range(5)]


@needs_pidfd
def test_loops_in_several_threads_each_get_their_children() -> None:
    ensure_child_watcher()
    found: dict[int, tuple[int, bytes]] = {}

    def worker(n: int) -> None:
        found[n] = asyncio.run(_run(sys.executable, "-c", f"print({n}); raise SystemExit(3)"))

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert found == {n: (3, f"{n}\n".encode()) for n in range(3)}


@needs_pidfd
def test_a_watcher_the_application_chose_is_kept() -> None:
    code = textwrap.dedent(
        """
        import asyncio
        from hookcode.childwatch import ensure_child_watcher
        chosen = asyncio.SafeChildWatcher()
        asyncio.set_child_watcher(chosen)
        ensure_child_watcher()
        print(asyncio.get_child_watcher() is chosen)
        """
    )
    out = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "True"


def test_calling_it_again_changes_nothing() -> None:
    ensure_child_watcher()
    watcher = asyncio.get_child_watcher() if sys.version_info < (3, 12) else None
    ensure_child_watcher()
    if watcher is not None:
        assert asyncio.get_child_watcher() is watcher
