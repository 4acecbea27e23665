"""A throwaway PostgreSQL cluster for the tests, and one fresh database per test.

CI (``.ci/run``) starts one cluster before the tests and exports its URL as
``HOOKCODE_TEST_POSTGRES_URL``; without it, the first test that needs PostgreSQL starts a
cluster of its own (one per xdist worker) and stops it at exit. Either way the cluster is
Debian's ``postgresql`` server: ``initdb`` into a temporary directory, ``pg_ctl start`` on a
free loopback port, ``trust`` authentication for the cluster's superuser ``postgres`` (the
tests make password users of their own where a password matters). PostgreSQL refuses to run
as root, so as root the server runs as the ``postgres`` system user (``runuser``), in a
directory that user can reach (not under pytest's private temporary root).

Run as a script, it is what CI uses::

    python tests/helpers/postgres.py start DIR   # prints the URL; the cluster lives in DIR
    python tests/helpers/postgres.py stop DIR
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

#: the variable CI sets to the URL of the cluster it started
URL_VARIABLE = "HOOKCODE_TEST_POSTGRES_URL"
#: settings for a cluster whose data nobody needs after the run (durability off: faster)
_SERVER_OPTIONS = (
    "-c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off "
    "-c full_page_writes=off -c max_connections=300 -c shared_buffers=64MB"
)


class PostgresMissing(RuntimeError):
    """No PostgreSQL server binaries on this machine."""


def bin_dir() -> Path:
    """The directory holding ``initdb`` and ``pg_ctl`` (Debian keeps them out of PATH)."""
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(candidate) / "pg_ctl").is_file():
            return Path(candidate)
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    raise PostgresMissing(
        "PostgreSQL is not installed (no pg_ctl in /usr/lib/postgresql/*/bin or on PATH): "
        "apt-get install postgresql"
    )


def _as_server_user() -> list[str]:
    """The command prefix that runs the server's programs: ``runuser -u postgres --`` as root."""
    if os.geteuid() != 0:
        return []
    return ["runuser", "-u", "postgres", "--"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, **kwargs)  # type: ignore[call-overload]
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {result.stderr.strip() or result.stdout}")
    return result


def start(directory: Path) -> str:
    """Create and start a cluster in ``directory`` (made if missing); return its URL."""
    binaries = bin_dir()
    directory.mkdir(parents=True, exist_ok=True)
    prefix = _as_server_user()
    if prefix:
        shutil.chown(directory, "postgres", "postgres")
        directory.chmod(0o700)
    data = directory / "data"
    _run([*prefix, str(binaries / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust",
          "-E", "UTF8", "--no-sync"])  # fmt: skip
    port = _free_port()
    (directory / "port").write_text(str(port))
    resume(directory)
    return f"postgresql://postgres@127.0.0.1:{port}/postgres"


def resume(directory: Path) -> None:
    """Start the (stopped) cluster in ``directory`` on its port."""
    port = int((directory / "port").read_text())
    _run(
        [*_as_server_user(), str(bin_dir() / "pg_ctl"), "-D", str(directory / "data"),
         "-l", str(directory / "log"), "-w", "-t", "60",
         "-o", f"-p {port} -k {directory} {_SERVER_OPTIONS}", "start"],
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def pause(directory: Path) -> None:
    """Stop the cluster in ``directory`` (fast: connections are cut), keeping its data for
    :func:`resume`."""
    _run([*_as_server_user(), str(bin_dir() / "pg_ctl"), "-D", str(directory / "data"),
          "-m", "fast", "-w", "stop"])  # fmt: skip


def stop(directory: Path) -> None:
    """Stop the cluster in ``directory`` (fast shutdown) and remove the directory."""
    data = directory / "data"
    if (data / "postmaster.pid").exists():
        with contextlib.suppress(RuntimeError, PostgresMissing):
            _run([*_as_server_user(), str(bin_dir() / "pg_ctl"), "-D", str(data), "-m", "fast",
                  "-w", "stop"])  # fmt: skip
    shutil.rmtree(directory, ignore_errors=True)


def restart(directory: Path) -> None:
    """Restart the cluster in ``directory`` (fast: connections are cut), on the same port."""
    # -l: a server logging to pg_ctl's stdout would hold the pipe _run reads open for good
    _run([*_as_server_user(), str(bin_dir() / "pg_ctl"), "-D", str(directory / "data"),
          "-l", str(directory / "log"), "-m", "fast", "-w", "restart"],
         stdin=subprocess.DEVNULL)  # fmt: skip


def cluster_directory() -> Path:
    """A fresh directory the server's user can reach (``/tmp`` itself, never pytest's 0700
    temporary root)."""
    return Path(tempfile.mkdtemp(prefix="hookcode-pg-", dir="/tmp"))


@contextlib.contextmanager
def server() -> Iterator[str]:
    """The URL of a PostgreSQL server's ``postgres`` database (superuser, loopback): CI's
    cluster (:data:`URL_VARIABLE`) when one is exported, else a cluster started for the
    ``with`` block and stopped at its end (:class:`PostgresMissing` without PostgreSQL)."""
    url = os.environ.get(URL_VARIABLE)
    if url:
        yield url
        return
    bin_dir()  # PostgresMissing, before a directory is made
    directory = cluster_directory()
    try:
        yield start(directory)
    finally:
        stop(directory)


@contextlib.contextmanager
def database(server_url: str) -> Iterator[str]:
    """A fresh, empty database on the server at ``server_url`` for the ``with`` block
    (dropped at its end); its URL."""
    url = create_database(server_url)
    try:
        yield url
    finally:
        drop_database(server_url, url)


def create_database(server_url: str) -> str:
    """A fresh, empty database on the server at ``server_url``; its URL."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
    base, _, _ = server_url.rpartition("/")
    return f"{base}/{name}"


def drop_database(server_url: str, url: str) -> None:
    """Drop the database at ``url`` (its connections are cut first)."""
    import psycopg

    name = url.rpartition("/")[2].partition("?")[0]
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    action, where = sys.argv[1], Path(sys.argv[2])
    if action == "start":
        print(start(where))
    elif action == "stop":
        stop(where)
    else:
        sys.exit(f"usage: {sys.argv[0]} start|stop DIR")
