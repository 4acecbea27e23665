"""Each session records the machine and the user that created it; sessions can be listed by
machine (``sessions list`` shows this machine's, ``--all-hosts`` every machine's)."""

from __future__ import annotations

import getpass
import json
import socket

from hookcode.store import SessionExport, SessionRecord, Store


def _foreign(id: str, host: str | None, user: str | None, when: float) -> SessionExport:
    """A session as another machine (or an older hookcode, ``host=None``) stored it."""
    record = SessionRecord(
        id=id,
        project="p",
        directory="/elsewhere",
        title=id,
        agent="build",
        model=None,
        parent_id=None,
        created=when,
        updated=when,
        host=host,
        user=user,
    )
    return SessionExport(session=record)


def test_sessions_record_host_and_user_and_filter_by_host(store: Store) -> None:
    here = store.create_session(project="p", directory="/d")
    assert (here.host, here.user) == (socket.gethostname(), getpass.getuser())
    assert store.get_session(here.id) == here
    assert here.to_dict()["host"] == socket.gethostname()
    assert here.to_dict()["user"] == getpass.getuser()
    store.import_session(_foreign("ses_far", "far-away", "ann", 1.0))
    store.import_session(_foreign("ses_old", None, None, 0.0))

    assert [s.id for s in store.list_sessions("p", host=socket.gethostname())] == [here.id]
    assert [s.id for s in store.list_sessions("p", host="far-away")] == ["ses_far"]
    assert [s.id for s in store.list_sessions("p")] == [here.id, "ses_far", "ses_old"]
    assert store.list_sessions("q", host="far-away") == []
    far = store.get_session("ses_far")
    assert far is not None and (far.host, far.user) == ("far-away", "ann")

    # sessions list --json: as to_dict (test_sessions.py::test_sessions_json_is_to_dict)
    rows = [json.loads(row) for row in store.sessions_json("p")]
    assert [row["id"] for row in rows] == [here.id, "ses_far", "ses_old"]
    assert rows[1]["host"] == "far-away" and rows[1]["user"] == "ann"
    assert "host" not in rows[2] and "user" not in rows[2]  # an older session: neither
    assert [json.loads(r)["id"] for r in store.sessions_json("p", host="far-away")] == ["ses_far"]
