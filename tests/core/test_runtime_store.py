"""Which store a runtime opens: the SQLite file in the data directory, a ``sqlite:///`` URL, or
what a plugin's ``store`` hook returns; the URL from HOOKCODE_STORE or the user's config only,
its password masked and redacted everywhere (issue 21)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hookcode import hookimpl
from hookcode.store import SQLiteStore, StoreError
from hookcode.testing import HookcodeEnv

URL = "postgresql://bob:Sup3rSecretPw@db.example.com/hookcode?sslmode=require"
MASKED = "postgresql://bob:***@db.example.com/hookcode?sslmode=require"


def test_no_url_is_the_sqlite_file_in_the_data_directory(hookcode_env: HookcodeEnv) -> None:
    store = hookcode_env.runtime().store
    assert isinstance(store, SQLiteStore)
    assert store.location == str(hookcode_env.data_dir / "hookcode.db")


def test_a_sqlite_url_names_the_file_and_the_environment_wins(
    hookcode_env: HookcodeEnv, tmp_path: Path
) -> None:
    hookcode_env.write_config(f'store = "sqlite://{tmp_path}/from-config.db"\n', where="global")
    runtime = hookcode_env.runtime()
    assert runtime.store.location == f"{tmp_path}/from-config.db"
    runtime = hookcode_env.runtime(HOOKCODE_STORE=f"sqlite://{tmp_path}/from-env.db")
    assert runtime.store.location == f"{tmp_path}/from-env.db"
    runtime.create_session(title="hi")
    assert (tmp_path / "from-env.db").exists()
    assert not (hookcode_env.data_dir / "hookcode.db").exists()
    with pytest.raises(StoreError, match="sqlite:/// and an absolute path"):
        _ = hookcode_env.runtime(HOOKCODE_STORE="sqlite://relative.db").store


@pytest.mark.parametrize("trusted", [True, False])
def test_a_project_config_cannot_choose_the_store(
    hookcode_env: HookcodeEnv, tmp_path: Path, trusted: bool
) -> None:
    path = hookcode_env.write_config(f'store = "sqlite://{tmp_path}/theirs.db"\n')
    runtime = hookcode_env.runtime(trusted=trusted)
    assert runtime.config.store is None
    assert any(
        f"config key 'store' in {path} is ignored" in warning for warning in runtime.config.warnings
    )
    assert runtime.store.location == str(hookcode_env.data_dir / "hookcode.db")
    assert not (tmp_path / "theirs.db").exists()


def test_a_url_no_plugin_takes_is_one_clear_error(hookcode_env: HookcodeEnv) -> None:
    # the workspace installs hookcode-store-postgres: blocked here, nothing takes the URL
    runtime = hookcode_env.runtime(
        HOOKCODE_STORE="postgresql://bob:Sup3rSecretPw@h/db",
        HOOKCODE_BLOCK_PLUGINS="store_postgres",
    )
    with pytest.raises(StoreError) as caught:
        _ = runtime.store
    assert str(caught.value) == (
        "no installed plugin provides a store for 'postgresql://bob:***@h/db' "
        "(pip install hookcode-store-postgres)"
    )


class MemoryStores:
    """A store plugin for ``memory://`` URLs (an in-memory SQLite store each)."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    @hookimpl
    def store(self, url: str, runtime: object) -> SQLiteStore | None:
        self.asked.append(url)
        if url.startswith("memory://"):
            return SQLiteStore(":memory:")
        if url.startswith("broken://"):
            raise ConnectionError(f"cannot reach {url}")
        return None


def test_a_plugin_provides_the_store_for_its_urls(hookcode_env: HookcodeEnv) -> None:
    plugin = hookcode_env.register(MemoryStores(), "store_memory")
    runtime = hookcode_env.runtime(HOOKCODE_STORE="memory://team")
    session = runtime.create_session(title="hi")
    assert runtime.store.location == ":memory:"
    assert runtime.store.get_session(session.id) is not None
    assert plugin.asked == ["memory://team"]  # type: ignore[attr-defined]
    # a plugin that fails: one line naming it, the password masked, no fallback
    runtime = hookcode_env.runtime(HOOKCODE_STORE="broken://bob:Sup3rSecretPw@h/db")
    with pytest.raises(StoreError) as caught:
        _ = runtime.store
    message = str(caught.value)
    assert "Sup3rSecretPw" not in message
    assert message.startswith("plugin 'store_memory' could not open the store")
    assert "ConnectionError: cannot reach broken://bob:***@h/db" in message


def test_the_store_password_is_masked_and_redacted(
    hookcode_env: HookcodeEnv, capsys: pytest.CaptureFixture[str]
) -> None:
    from hookcode.secrets import mask_config

    hookcode_env.write_config(f'store = "{URL}"\n', where="global")
    runtime = hookcode_env.runtime()
    assert runtime.config.store == URL
    shown = mask_config(runtime.config.to_dict(), runtime.secrets.redactor().redact)
    assert shown["store"] == MASKED
    assert "Sup3rSecretPw" not in json.dumps(shown)
    assert "Sup3rSecretPw" not in runtime.secrets.redact("echo Sup3rSecretPw")
    # from the environment too
    runtime = hookcode_env.runtime(HOOKCODE_STORE="postgresql://ann:An0therSecret@h/db")
    assert runtime.secrets.redact("An0therSecret") == "[redacted: store URL]"
