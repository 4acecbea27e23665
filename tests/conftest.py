"""Fixtures every test directory shares."""

from __future__ import annotations

import os

import pytest
from hookcode.testing import missing

#: xdist workers per core for ``-n auto`` (pyproject's addopts): most tests wait on processes
#: they started (the CLI, servers, language servers), so more workers than cores keep the
#: cores busy (``-n N`` on the command line sets the number outright, ``-n 0`` runs serially)
WORKERS_PER_CORE = 2


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """How many workers ``-n auto`` starts."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return WORKERS_PER_CORE * (cores or 1)


@pytest.fixture
def rg() -> str:
    """The rg binary (hookcode-ripgrep's pinned ripgrep wheel) that glob, grep and list run;
    missing, the test fails in CI and skips elsewhere."""
    from hookcode_ripgrep import RipgrepMissing, find_rg

    try:
        return find_rg()
    except RipgrepMissing as exc:
        missing(str(exc))
