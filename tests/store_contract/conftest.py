"""The store contract: every test here runs against each store hookcode ships (the embedded
SQLite store, and the PostgreSQL store of ``hookcode-store-postgres`` on a fresh database of the
test cluster), so what one store guarantees the other does too (hookcode.store.protocol).

``backend`` is the store under test (its kind and URL: open another connection to the same
data with ``backend.open()``); ``store`` is one open store on it, closed after the test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.stores import Backend, sqlite_url
from hookcode.store import Store


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "sqlite":
        path = tmp_path / "data" / "hookcode.db"
        return Backend("sqlite", sqlite_url(path), path.name)
    url: str = request.getfixturevalue("postgres_url")
    return Backend("postgres", url, url.rpartition("/")[2])


@pytest.fixture
def store(backend: Backend) -> Iterator[Store]:
    opened = backend.open()
    try:
        yield opened
    finally:
        opened.close()
