"""Credentials: env first, then auth.json (0600); the CLI never prints a secret."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hookcode import hookimpl
from hookcode.auth import Credentials, redact
from hookcode.errors import HookcodeError

SECRET = "sk-test-0123456789abcdef"


def test_env_wins_over_stored_and_file_is_private(tmp_path):
    creds = Credentials(tmp_path / "auth.json", {"MY_KEY": "from-env-123"})
    assert creds.get("acme", ["MY_KEY"]) == "from-env-123"
    creds.set("acme", SECRET)
    assert stat.S_IMODE(os.stat(tmp_path / "auth.json").st_mode) == 0o600
    assert creds.lookup("acme", ["MY_KEY"]).source == "env:MY_KEY"
    assert creds.lookup("acme", ["OTHER"]).source == "stored"
    assert creds.get("acme") == SECRET
    assert SECRET not in repr(creds.lookup("acme"))
    assert creds.remove("acme") and creds.get("acme") is None
    assert not creds.remove("acme")


def test_broken_auth_file_names_the_file(tmp_path):
    path = tmp_path / "auth.json"
    path.write_text("{not json")
    with pytest.raises(HookcodeError) as err:
        Credentials(path, {}).get("acme")
    assert str(path) in str(err.value)


def test_redact():
    assert redact(f"bad key {SECRET}!", [SECRET, "short"]) == "bad key [redacted]!"


def test_provider_hook_receives_config_and_credentials(hookcode_env):
    seen = {}

    class Provider:
        id = "acme"
        name = "Acme"

        def models(self):
            return []

        async def stream(self, request):  # pragma: no cover - not called
            yield None

    class Plugin:
        @hookimpl
        def provider(self, config, credentials):
            seen["config"], seen["credentials"] = config, credentials
            return [Provider()]

    hookcode_env.register(Plugin(), "acme")
    rt = hookcode_env.runtime(ACME_API_KEY="k-from-env-9")
    assert "acme" in rt.providers()
    assert seen["config"] is rt.config
    assert seen["credentials"].get("acme", ["ACME_API_KEY"]) == "k-from-env-9"


def _cli(env, *args, stdin=None):
    return subprocess.run(
        [sys.executable, "-m", "hookcode.cli", *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cli_login_list_logout_never_print_the_secret(hookcode_env, tmp_path):
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "acme_auth.py").write_text(
        "from hookcode import hookimpl\n"
        "from hookcode.providers import AuthMethod\n"
        "@hookimpl\n"
        "def auth():\n"
        "    return [AuthMethod(provider='acme', type='api', label='API key', env=['ACME_API_KEY'])]\n"
    )
    dist = pack / "acme_auth-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-auth\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[hookcode]\nauth_acme = acme_auth\n")
    env = {**hookcode_env.env, "PYTHONPATH": str(pack)}
    env.pop("ACME_API_KEY", None)

    done = _cli(env, "auth", "login", "acme", "--key-stdin", stdin=SECRET + "\n")
    assert done.returncode == 0, done.stderr
    assert SECRET not in done.stdout + done.stderr
    listed = _cli(env, "auth", "list", "--json")
    assert listed.returncode == 0 and SECRET not in listed.stdout
    assert '"source": "stored"' in listed.stdout
    assert _cli(env, "auth", "login", "nobody", "--key-stdin", stdin="x\n").returncode == 1
    assert _cli(env, "auth", "logout", "acme").returncode == 0
    assert _cli(env, "auth", "logout", "acme").returncode == 1


def _reading_stdin(pid: int) -> bool:
    """Whether process ``pid`` is blocked reading its standard input (Linux's /proc)."""
    try:
        wchan = Path(f"/proc/{pid}/wchan").read_text()
        syscall = Path(f"/proc/{pid}/syscall").read_text().split()
    except OSError:
        return False
    return "pipe_read" in wchan and len(syscall) > 1 and syscall[1] == "0x0"


def test_cli_logins_racing_each_other_keep_every_key(hookcode_env):
    """``hookcode auth login`` in several processes at once: each waits for its key on stdin,
    the keys are sent together, so that every process writes auth.json at the same moment."""
    names = [f"p{i}" for i in range(6)]
    hookcode_env.write_config(
        "".join(
            f'[provider.{name}]\ntype = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
            for name in names
        ),
        where="global",
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "hookcode.cli", "auth", "login", name, "--key-stdin"],
            env=hookcode_env.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in names
    ]
    deadline = time.monotonic() + 120
    while not all(_reading_stdin(proc.pid) for proc in procs):
        assert time.monotonic() < deadline and all(proc.poll() is None for proc in procs)
        time.sleep(0.02)
    for proc, name in zip(procs, names, strict=True):
        assert proc.stdin is not None
        proc.stdin.write(f"key-of-{name}-0123456789\n")
        proc.stdin.flush()
    outputs = [proc.communicate(timeout=60) for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * len(names), outputs
    stored = Credentials(hookcode_env.data_dir / "auth.json", {}).stored()
    assert stored == {name: {"type": "api", "key": f"key-of-{name}-0123456789"} for name in names}
