"""Fixtures of the PostgreSQL store's tests.

``store``: a :class:`PostgresStore` on a fresh database (``postgres_url``, tests/conftest.py).
``sql``: a connection of the test's own to that database (autocommit), to look at or arrange
rows as another machine would leave them. ``private_cluster``: a cluster of this test's own
(start/stop/restart), for the tests that stop or restart the server: never the shared one.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hookcode.testing import missing
from hookcode_store_postgres.postgres_store import PostgresStore


@pytest.fixture
def store(postgres_url: str) -> Iterator[PostgresStore]:
    st = PostgresStore(postgres_url)
    yield st
    st.close()


@pytest.fixture
def sql(postgres_url: str) -> Iterator[Any]:
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        yield conn


class PrivateCluster:
    """A PostgreSQL cluster of one test's own, in ``directory``, at ``url``."""

    def __init__(self, directory: Path) -> None:
        from helpers import postgres

        self.directory = directory
        self.url = postgres.start(directory)

    def restart(self) -> None:
        """Restart the server (fast: every connection is cut), on the same port."""
        from helpers import postgres

        postgres.restart(self.directory)

    def halt(self) -> None:
        """Stop the server, keeping its data for :meth:`resume`."""
        from helpers import postgres

        postgres._run([*postgres._as_server_user(), str(postgres.bin_dir() / "pg_ctl"), "-D",
                       str(self.directory / "data"), "-m", "fast", "-w", "stop"])  # fmt: skip

    def resume(self) -> None:
        """Start the halted server again (same port, same options as before)."""
        from helpers import postgres

        port = (self.directory / "port").read_text()
        options = f"-p {port} -k {self.directory} {postgres._SERVER_OPTIONS}"
        postgres._run([*postgres._as_server_user(), str(postgres.bin_dir() / "pg_ctl"), "-D",
                       str(self.directory / "data"), "-l", str(self.directory / "log"), "-w",
                       "-o", options, "start"], stdin=subprocess.DEVNULL)  # fmt: skip

    def stop(self) -> None:
        """Stop the server for good (its directory goes too)."""
        from helpers import postgres

        postgres.stop(self.directory)


@pytest.fixture
def private_cluster() -> Iterator[PrivateCluster]:
    from helpers import postgres

    try:
        postgres.bin_dir()
    except postgres.PostgresMissing as exc:
        missing(str(exc))
    cluster = PrivateCluster(postgres.cluster_directory())
    try:
        yield cluster
    finally:
        cluster.stop()
