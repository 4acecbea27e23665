"""The dispatch fast paths (issue 9): the cached approvals follow writes from this store and
from other connections; the abort guard without a timeout still aborts, still propagates the
caller's cancellation and leaves no callback on a long-lived abort signal."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace

import pytest
from hookcode.errors import ToolAborted
from hookcode.pipeline import _guarded
from hookcode.store import SQLiteStore
from hookcode.tools import AbortSignal


def test_cached_approvals_follow_every_writer(tmp_path):
    a = SQLiteStore(tmp_path / "x.db")
    b = SQLiteStore(tmp_path / "x.db")  # another connection: another process in real life
    try:
        s = a.create_session(project="p", directory="d")
        assert a.approvals(project="p", session_id=s.id) == []
        b.add_approval(project="p", permission="bash", pattern="ls *")
        found = a.approvals(project="p", session_id=s.id)
        assert [r.pattern for r in found] == ["ls *"]
        a.add_approval(project="p", permission="edit", pattern="*", session_id=s.id)
        assert len(a.approvals(project="p", session_id=s.id)) == 2
        b.remove_approval(found[0].id)
        assert [r.permission for r in a.approvals(project="p", session_id=s.id)] == ["edit"]
        a.delete_session(s.id)  # cascades to the session's approvals
        assert a.approvals(project="p", session_id=s.id) == []
        # a caller changing its answer does not change the cache
        b.add_approval(project="p", permission="read", pattern="*")
        a.approvals(project="p")[0].pattern = "changed"
        assert a.approvals(project="p")[0].pattern == "*"
    finally:
        a.close()
        b.close()


def _ctx() -> SimpleNamespace:
    return SimpleNamespace(abort=AbortSignal())


async def _slow() -> None:
    await asyncio.sleep(10)


def test_guard_without_timeout_aborts_from_the_loop_and_from_a_thread():
    async def main() -> None:
        ctx = _ctx()
        asyncio.get_running_loop().call_later(0.02, ctx.abort.abort)
        with pytest.raises(ToolAborted):
            await _guarded(_slow(), ctx, None)
        ctx = _ctx()
        threading.Timer(0.02, ctx.abort.abort).start()
        with pytest.raises(ToolAborted):
            await _guarded(_slow(), ctx, None)

    asyncio.run(main())


def test_guard_without_timeout_returns_and_forgets_its_abort_callback():
    async def quick() -> int:
        return 42

    async def main() -> None:
        ctx = _ctx()
        for _ in range(3):
            assert await _guarded(quick(), ctx, None) == 42
        assert ctx.abort._callbacks == []
        task = asyncio.ensure_future(_guarded(_slow(), ctx, None))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert ctx.abort._callbacks == []

    asyncio.run(main())
