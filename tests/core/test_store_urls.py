"""Store URLs: masking every password a URL can carry, and ``sqlite:///`` paths."""

from __future__ import annotations

from pathlib import Path

import pytest
from hookcode.store.urls import mask_url, sqlite_path, url_passwords


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("postgresql://bob:s3cret@host/db", "postgresql://bob:***@host/db"),
        (
            "postgresql://bob:s3cret@host:5432/db?sslmode=require",
            "postgresql://bob:***@host:5432/db?sslmode=require",
        ),
        ("postgres://bob:p@ss@host/db", "postgres://bob:***@host/db"),  # "@" in the password
        ("postgresql://bob:a?b@host/db", "postgresql://bob:***@host/db"),  # "?" in it
        ("postgresql://bob@host/db", "postgresql://bob@host/db"),  # no password
        (
            "postgresql://host/db?user=bob&password=s3cret",
            "postgresql://host/db?user=bob&password=***",
        ),
        (
            "postgresql://h/db?sslpassword=k3y&sslmode=verify-full",
            "postgresql://h/db?sslpassword=***&sslmode=verify-full",
        ),
        ("host=h password=s3cret dbname=x", "host=h password=*** dbname=x"),
        ("host=h password='se cret' dbname=x", "host=h password=*** dbname=x"),
        ("sqlite:///home/me/hookcode.db", "sqlite:///home/me/hookcode.db"),
        ("/home/me/hookcode.db", "/home/me/hookcode.db"),
    ],
)
def test_mask_url(url: str, masked: str) -> None:
    assert mask_url(url) == masked
    for password in url_passwords(url):
        assert password not in mask_url(url)


def test_url_passwords_finds_every_form() -> None:
    assert url_passwords("postgresql://bob:p%40ss@h/db?password=two") == ["p%40ss", "p@ss", "two"]
    assert url_passwords("host=h password='it\\'s' port=1") == ["it's"]
    assert url_passwords("postgresql://bob@h/db") == []


def test_sqlite_path() -> None:
    assert sqlite_path("sqlite:///tmp/a b.db") == Path("/tmp/a b.db")
    assert sqlite_path("sqlite:////tmp/x.db") == Path("/tmp/x.db")
    assert sqlite_path("sqlite:///tmp/a%20b.db") == Path("/tmp/a b.db")
    assert sqlite_path("postgresql://h/db") is None
    for bad in ("sqlite://host/x.db", "sqlite:///", "sqlite:relative.db"):
        with pytest.raises(ValueError, match="sqlite:/// and an absolute path"):
            sqlite_path(bad)
