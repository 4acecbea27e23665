"""A running session holds a lease, renewed in the background; a run whose lease another
process took over stops at the next step boundary instead of writing on (issue 21)."""

from __future__ import annotations

import asyncio
import os
import socket
import time
from pathlib import Path

import pytest
from hookcode import ToolContext, hookimpl, tool
from hookcode.session import run_session
from hookcode.session.lease import LEASES, LeaseLost, SessionLease
from hookcode.store import SessionBusy, SQLiteStore, StoreError
from hookcode.testing import ScriptedModel, ToolCallSpec, Turn


@pytest.fixture
def store(tmp_path: Path):
    st = SQLiteStore(tmp_path / "hookcode.db")
    yield st
    st.close()


def _expires(store: SQLiteStore, session_id: str) -> float:
    row = store._conn.execute(
        "SELECT expires FROM session_locks WHERE session_id = ?", (session_id,)
    ).fetchone()
    return float(row[0])


def _take_over(store: SQLiteStore, session_id: str) -> None:
    """What another machine does once our lease has expired: its own lease in our row."""
    store._conn.execute(
        "UPDATE session_locks SET pid = 4242, host = 'other-host', acquired = ?, expires = ? "
        "WHERE session_id = ?",
        (time.time(), time.time() + 60, session_id),
    )


def test_the_lease_is_renewed_in_the_background(store: SQLiteStore) -> None:
    session = store.create_session(project="p", directory="/d")
    with SessionLease(store, session.id, ttl=0.3) as lease:
        first = _expires(store, session.id)
        deadline = time.monotonic() + 30
        while _expires(store, session.id) == first:  # renewed every ttl / 3
            assert time.monotonic() < deadline, "the lease was never renewed"
            time.sleep(0.01)
        assert store.session_lock(session.id) == (os.getpid(), socket.gethostname())
        assert lease.lost is None
        lease.check()
    assert store.session_lock(session.id) is None  # released


def test_a_lease_taken_over_is_found_lost_and_not_released(store: SQLiteStore) -> None:
    session = store.create_session(project="p", directory="/d")
    lease = SessionLease(store, session.id, ttl=0.3).acquire()
    try:
        _take_over(store, session.id)
        assert lease.lost_event.wait(30), "the renewal never noticed the takeover"
        assert lease.lost == (
            f"session {session.id} was taken over by pid 4242 on other-host; this run stopped"
        )
        with pytest.raises(LeaseLost, match="taken over by pid 4242 on other-host"):
            lease.check()
        assert lease.renew() is False
    finally:
        lease.release()
    assert store.session_lock(session.id) == (4242, "other-host")  # theirs stays


def test_a_busy_session_is_not_leased(store: SQLiteStore) -> None:
    session = store.create_session(project="p", directory="/d")
    store._conn.execute(
        "INSERT INTO session_locks (session_id, pid, host, acquired, expires) "
        "VALUES (?, 7, 'other-host', ?, ?)",
        (session.id, time.time(), time.time() + 60),
    )
    with pytest.raises(SessionBusy, match="pid 7 on other-host"):
        SessionLease(store, session.id).acquire()


@tool
def steal(ctx: ToolContext) -> str:
    """Another machine takes the session over while this call runs."""
    store = ctx.runtime.store
    assert isinstance(store, SQLiteStore)
    _take_over(store, ctx.session_id)
    lease = ctx.runtime.stash[LEASES][ctx.session_id]
    assert lease.renew() is False  # what the renewing thread finds at its next tick
    return "stolen"


class Pack:
    def __init__(self, model: ScriptedModel):
        self.model = model

    @hookimpl
    def register_tools(self, register):
        register(steal)

    @hookimpl
    def provider(self):
        return [self.model]


def test_a_run_whose_lease_was_taken_over_stops_at_the_next_step(hookcode_env) -> None:
    model = ScriptedModel([Turn(tool_calls=[ToolCallSpec("steal", {})]), "never sent"], id="script")
    hookcode_env.register(Pack(model), "pack")
    rt = hookcode_env.runtime(HOOKCODE_LOAD_PLUGINS="policy_rules")
    result = asyncio.run(run_session(rt, "go", model="script/test"))
    assert result.finish == "error"
    assert result.error is not None
    assert result.error == (
        f"session {result.session_id} was taken over by pid 4242 on other-host; this run stopped"
    )
    assert len(model.requests) == 1  # the second step never started
    assert rt.store.session_lock(result.session_id) == (4242, "other-host")
    assert LEASES not in rt.stash or not rt.stash[LEASES]


def test_a_run_leases_its_session_for_the_seconds_the_operator_sets(hookcode_env) -> None:
    """``HOOKCODE_LEASE_SECONDS`` sets a run's lease (a fleet wants quick takeovers); a value
    that is not seconds from 1 to a day fails the run in one line naming the variable."""
    seen: list[float] = []

    @tool
    async def look(ctx: ToolContext) -> str:
        """Look at the lease."""
        (lease,) = ctx.runtime.stash[LEASES].values()
        seen.append(lease.ttl)
        return "ok"

    class Looker:
        @hookimpl
        def register_tools(self, register):
            register(look)

        @hookimpl
        def provider(self):
            return [model]

    model = ScriptedModel([Turn(tool_calls=[ToolCallSpec("look", {})]), "done"], id="script")
    hookcode_env.register(Looker(), "looker")
    rt = hookcode_env.runtime(HOOKCODE_LOAD_PLUGINS="policy_rules", HOOKCODE_LEASE_SECONDS="4.5")
    result = asyncio.run(run_session(rt, "go", model="script/test"))
    assert result.finish != "error", result.error
    assert seen == [4.5]
    for bad in ("soon", "0", "nan", "90000"):
        rt = hookcode_env.runtime(HOOKCODE_LOAD_PLUGINS="policy_rules", HOOKCODE_LEASE_SECONDS=bad)
        with pytest.raises(StoreError, match=r"HOOKCODE_LEASE_SECONDS=.*expected seconds"):
            asyncio.run(run_session(rt, "go", model="script/test"))
