"""Opening the store a URL names (:func:`open_store`): the SQLite file in the data directory,
a ``sqlite:///`` file, or what a plugin's ``store`` hook returns, failing closed.

A URL no plugin takes, a plugin that fails, or a hook result that is not a
:class:`~hookcode.store.protocol.Store` is a :class:`~hookcode.store.records.StoreError` in one
line, the URL's password masked: hookcode never falls back to another store, since sessions and
approvals written to the wrong one would be lost to the team that expects them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from hookcode.store.protocol import Store
from hookcode.store.records import StoreError
from hookcode.store.urls import mask_url, sqlite_path, url_passwords

if TYPE_CHECKING:
    from hookcode.plugin_manager import PluginsBase

__all__ = ["open_store"]


def open_store(url: str | None, *, data_dir: Path, plugins: PluginsBase, runtime: Any) -> Store:
    """The store ``url`` names: None is ``hookcode.db`` in ``data_dir`` (made private first,
    each problem a warning), ``sqlite:///abs/path.db`` that file, anything else the first
    store a plugin's ``store`` hook returns for it (given ``runtime``)."""
    from hookcode.store.store import SQLiteStore

    if url is None:
        from hookcode.datadir import secure_data_dir

        # the data directory is private (0700, files 0600), tightened if it is not yet
        for problem in secure_data_dir(data_dir):
            plugins.warn(problem)
        return SQLiteStore(data_dir / "hookcode.db")
    try:
        path = sqlite_path(url)
    except ValueError as exc:
        raise StoreError(str(exc)) from None
    if path is not None:
        return SQLiteStore(path)

    def masked(text: str) -> str:
        for password in url_passwords(url):
            text = text.replace(password, "***")
        return text

    for plugin, store, error in plugins.call_each_outcomes("store", url=url, runtime=runtime):
        if isinstance(error, StoreError):
            raise StoreError(masked(str(error))) from None
        if error is not None:  # fail closed: never fall back to another store
            raise StoreError(
                f"plugin {plugin!r} could not open the store {mask_url(url)!r}: "
                f"{type(error).__name__}: {masked(str(error))}"
            ) from None
        if store is None:
            continue
        if not isinstance(store, Store):
            raise StoreError(
                f"plugin {plugin!r}: its store hook returned {type(store).__name__}, "
                "not a hookcode.store.Store"
            )
        return store
    raise StoreError(
        f"no installed plugin provides a store for {mask_url(url)!r} "
        "(pip install hookcode-store-postgres)"
    )
