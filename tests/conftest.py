"""Fixtures every test directory shares."""

from __future__ import annotations

import pytest
from hookcode.testing import missing


@pytest.fixture
def rg() -> str:
    """The rg binary (hookcode-ripgrep's pinned ripgrep wheel) that glob, grep and list run;
    missing, the test fails in CI and skips elsewhere."""
    from hookcode_ripgrep import RipgrepMissing, find_rg

    try:
        return find_rg()
    except RipgrepMissing as exc:
        missing(str(exc))
