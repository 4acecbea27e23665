"""Fixtures shared by the built-in tools' tests."""

from __future__ import annotations

import pytest
from hookcode.testing import missing


@pytest.fixture
def rg() -> str:
    """The rg binary (the ripgrep wheel); missing, the test fails in CI and skips elsewhere."""
    from hookcode.ripgrep import RipgrepMissing, find_rg

    try:
        return find_rg()
    except RipgrepMissing as exc:
        missing(str(exc))
