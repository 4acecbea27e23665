"""store_postgres: one PostgreSQL database as hookcode's store, shared by a team or a fleet of
agents::

    store = "postgresql://bob:secret@db.example.com/hookcode?sslmode=verify-full"

(in the user's config, or ``HOOKCODE_STORE``). The ``store`` hook answers ``postgresql://``
and ``postgres://`` URLs with a :class:`~hookcode_store_postgres.postgres_store.PostgresStore`
(psycopg 3 and its pool are imported only then) and leaves every other URL to other plugins.
A lost connection is retried for 10 s, or the seconds ``HOOKCODE_STORE_RETRY_SECONDS`` sets
(0 to 3600), before a write fails.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hookcode import hookimpl

if TYPE_CHECKING:
    from hookcode_store_postgres.postgres_store import PostgresStore

__all__ = ["SCHEMES", "PostgresStore", "store"]

#: the URL schemes this plugin answers (libpq's two spellings)
SCHEMES = ("postgresql", "postgres")


@hookimpl
def store(url: str, runtime: Any) -> PostgresStore | None:
    """The PostgreSQL store at ``url``, if it is a ``postgresql://`` or ``postgres://`` URL."""
    scheme, sep, _ = url.partition("://")
    if not sep or scheme.lower() not in SCHEMES:
        return None
    from hookcode.store import seconds_setting

    from hookcode_store_postgres.database import RETRY_SECONDS, RETRY_VARIABLE
    from hookcode_store_postgres.postgres_store import PostgresStore

    bound = seconds_setting(runtime.env, RETRY_VARIABLE, RETRY_SECONDS, low=0.0, high=3600.0)
    return PostgresStore(url, retry_seconds=bound)


def __getattr__(name: str) -> Any:
    """``PostgresStore``, imported (with psycopg) when first asked for."""
    if name == "PostgresStore":
        from hookcode_store_postgres.postgres_store import PostgresStore

        return PostgresStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
