"""Where the data lives (``location``, in messages and ``store check``), and that no password
in the store's URL is ever shown: not in the location, not in an error."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest
from helpers.stores import Backend, open_store
from hookcode.store import StoreError, ToolPartRecord
from hookcode.store.urls import MASK

PASSWORD = "s3cret-Pa55word"


def test_location_names_the_data_and_never_a_password(backend: Backend) -> None:
    store = open_store(backend.url_with_password(PASSWORD))
    try:
        location = store.location
        assert backend.name in location and PASSWORD not in location
        if backend.kind == "postgres":
            assert f":{MASK}@" in location and f"password={MASK}" in location
        store.create_session(project="p", directory="/d")
        with pytest.raises(StoreError) as caught:
            store.save_tool_part(ToolPartRecord(id="c", session_id="ses_x", tool="t", state="x"))
            store.flush()  # a store writing tool parts behind raises the failure here
        message = str(caught.value)
        assert backend.name in message and PASSWORD not in message
        assert "\n" not in message.strip()
    finally:
        with contextlib.suppress(StoreError):  # a store writing behind stays failed: raised
            store.close()  # at close again (closed all the same)


def test_a_store_that_cannot_be_opened_says_which_without_the_password(
    backend: Backend,
) -> None:
    url = backend.url_with_password(PASSWORD)
    if backend.kind == "sqlite":  # a directory where the database file should be
        Path(url.removeprefix("sqlite://")).mkdir(parents=True)
        bad, name = url, backend.name
    else:
        bad, name = url.replace(f"/{backend.name}?", "/no_such_database?"), "no_such_database"
    started = time.monotonic()
    with pytest.raises(StoreError) as caught:
        open_store(bad).close()
    message = str(caught.value)
    assert name in message and PASSWORD not in message and "\n" not in message.strip()
    assert time.monotonic() - started < 5  # no retrying what no retry mends
