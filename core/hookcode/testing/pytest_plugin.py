"""pytest fixtures of the hookcode test kit (registered through the ``pytest11`` entry point)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hookcode.testing import HookcodeEnv


@pytest.fixture
def hookcode_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HookcodeEnv]:
    """An isolated project, data and config directory; the process env points at them too."""
    env = HookcodeEnv(tmp_path / "hookcode")
    import os

    for key in [k for k in os.environ if k.startswith(("HOOKCODE_", "ANTHROPIC_", "OPENAI_"))]:
        monkeypatch.delenv(key)
    for key in ("HOOKCODE_DATA_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "HOME"):
        monkeypatch.setenv(key, env.env[key])
    yield env
    env.close()


@pytest.fixture
def hookcode_runtime(hookcode_env: HookcodeEnv) -> Any:
    """A runtime for ``hookcode_env.project`` with every installed plugin loaded."""
    return hookcode_env.runtime()


@pytest.fixture
def hookcode_plugins(hookcode_env: HookcodeEnv) -> Any:
    """A fresh plugin manager with the installed plugins loaded."""
    from hookcode.plugins import create_plugins

    return create_plugins(env=hookcode_env.env)
