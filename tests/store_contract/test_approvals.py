"""Remembered approvals: project and session scopes, their order, no duplicates."""

from __future__ import annotations

import pytest
from hookcode.store import ApprovalRecord, Store, StoreError


def test_approvals_scope_order_and_dedup(store: Store) -> None:
    s1 = store.create_session(project="p", directory="/d")
    s2 = store.create_session(project="p", directory="/d")
    sess_a = store.add_approval(project="p", permission="edit", pattern="*", session_id=s1.id)
    proj_a = store.add_approval(project="p", permission="bash", pattern="git *")
    sess_b = store.add_approval(project="p", permission="bash", pattern="ls *", session_id=s1.id)
    proj_b = store.add_approval(project="p", permission="read", pattern="*.env")
    other_sess = store.add_approval(project="p", permission="edit", pattern="*", session_id=s2.id)
    other_proj = store.add_approval(project="q", permission="bash", pattern="git *")

    assert isinstance(proj_a, ApprovalRecord)
    assert proj_a.id.startswith("apr_") and proj_a.session_id is None
    assert sess_a.session_id == s1.id

    # duplicates return the existing row
    assert store.add_approval(project="p", permission="bash", pattern="git *") == proj_a
    assert (
        store.add_approval(project="p", permission="edit", pattern="*", session_id=s1.id) == sess_a
    )

    assert store.approvals(project="p") == [proj_a, proj_b]
    assert store.approvals(project="p", session_id=s1.id) == [proj_a, proj_b, sess_a, sess_b]
    assert store.approvals(project="p", session_id=s2.id) == [proj_a, proj_b, other_sess]
    assert store.approvals(project="q") == [other_proj]
    assert store.approvals(project="none") == []

    assert store.remove_approval(proj_b.id) is True
    assert store.remove_approval(proj_b.id) is False
    assert store.approvals(project="p") == [proj_a]

    assert store.clear_approvals(project="p", session_id=s1.id) == 2
    assert store.approvals(project="p", session_id=s1.id) == [proj_a]
    assert store.approvals(project="p", session_id=s2.id) == [proj_a, other_sess]
    assert store.clear_approvals(project="p") == 1
    assert store.approvals(project="p", session_id=s2.id) == [other_sess]
    assert store.approvals(project="q") == [other_proj]


def test_session_approval_for_unknown_session_fails(store: Store) -> None:
    with pytest.raises(StoreError):
        store.add_approval(project="p", permission="edit", pattern="*", session_id="ses_x")
