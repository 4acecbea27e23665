"""Open a hookcode store by URL, the way a test or a process it starts names one:
``sqlite:///abs/path.db`` (the embedded SQLite store) or ``postgresql://...`` (the
``hookcode-store-postgres`` plugin's store). The store contract suite (tests/store_contract)
runs every test against each; the processes it starts open theirs with this too."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hookcode.store import Store

#: the directory holding ``helpers``
TESTS_DIR = Path(__file__).resolve().parents[1]


def sqlite_url(path: Path) -> str:
    """The URL of the SQLite store at ``path``."""
    return f"sqlite:///{Path(path).resolve()}"


def open_store(url: str) -> Store:
    """The store at ``url``: core's SQLite store for a ``sqlite:///`` URL, else what the
    PostgreSQL plugin's ``store`` hook returns for it (as a runtime asks it)."""
    from hookcode.store import SQLiteStore
    from hookcode.store.urls import sqlite_path

    path = sqlite_path(url)
    if path is not None:
        return SQLiteStore(path)
    from types import SimpleNamespace

    import hookcode_store_postgres

    # the hook reads the runtime's environment only (HOOKCODE_STORE_RETRY_SECONDS)
    opened = hookcode_store_postgres.store(url=url, runtime=SimpleNamespace(env=dict(os.environ)))
    if opened is None:
        raise ValueError(f"no store for {url!r} in the tests")
    return opened


@dataclass
class Backend:
    """One store under test: ``kind`` ("sqlite" or "postgres") and the URL of its data."""

    kind: str
    url: str
    #: what the store's error messages name its database by (a file name, a database name)
    name: str

    def open(self) -> Store:
        """A new store (its own connection) on the same data."""
        return open_store(self.url)

    def url_with_password(self, password: str) -> str:
        """The URL as a user with ``password`` writes it (the test cluster trusts loopback, so
        the server takes it whatever it is); a file path has no password: the URL as it is."""
        if self.kind == "sqlite":
            return self.url
        scheme, _, rest = self.url.partition("://")
        user, _, host = rest.partition("@")
        return f"{scheme}://{user}:{password}@{host}?password={password}&application_name=t"


def run_python(code: str, *args: str) -> subprocess.Popen[str]:
    """``python -c CODE ARGS`` in a new process that can import hookcode and these helpers
    (``from helpers.stores import open_store``); stdout and stderr piped, as text."""
    paths = [str(TESTS_DIR), os.environ.get("PYTHONPATH", "")]
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
