"""OAuth for remote MCP servers (plugins/mcp), against a real OAuth-protected MCP server on
loopback (mcp_servers/oauth_server.py: the mcp SDK's own authorization server, approving every
login at once) and a stand-in browser (mcp_servers/browser.py, named by ``BROWSER``) that
follows the authorization redirect to hookcode's callback server. ``hookcode mcp auth`` and
``logout`` run as real processes."""

from __future__ import annotations

import json
import socket
import stat
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import hookcode_mcp
import pytest
from helpers.mcp_http import run_hookcode, serve
from hookcode.testing import invoke_tool
from hookcode_mcp._client import close_all

SERVERS = Path(__file__).parent / "mcp_servers"
PLUGINS = "mcp,policy_rules"
#: generous: the machine may be loaded; a login takes a second or two when it is not
CLI_TIMEOUT = 180


# ---------------------------------------------------------------------------------------------
# fixtures
# ---------------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _plugins(hookcode_env: Any) -> Iterator[None]:
    hookcode_env.env["HOOKCODE_LOAD_PLUGINS"] = PLUGINS
    yield
    close_all()


_serve = contextmanager(serve)


@pytest.fixture
def oauth_url() -> Iterator[str]:
    """An OAuth-protected MCP server of this test only (its logins are its own)."""
    with _serve("oauth_server.py") as url:
        yield url


class Browser:
    """The ``BROWSER`` of the hookcode processes a test runs: records every URL it is asked to
    open and, in mode ``follow``, completes the login."""

    def __init__(self, env: Any, root: Path) -> None:
        self.env = env
        self.log = root / "browser.log"
        self.log.touch()
        wrapper = root / "browser"
        wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{SERVERS / "browser.py"}" "$@"\n')
        wrapper.chmod(0o755)
        env.env.update(BROWSER=str(wrapper), TEST_BROWSER_LOG=str(self.log))
        self.mode("follow")

    def mode(self, mode: str) -> None:
        self.env.env["TEST_BROWSER_MODE"] = mode

    def opened(self) -> list[str]:
        return self.log.read_text().splitlines()

    def opened_once_started(self, within: float = 60) -> list[str]:
        """:meth:`opened`, once the browser has recorded a URL: a process of its own, it may
        still be starting when hookcode gave up waiting for it."""
        end = time.monotonic() + within
        while not self.opened() and time.monotonic() < end:
            time.sleep(0.02)
        return self.opened()


@pytest.fixture
def browser(hookcode_env: Any, tmp_path: Path) -> Browser:
    return Browser(hookcode_env, tmp_path)


def _toml(value: Any) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }"
    return json.dumps(value)


def write_remote(env: Any, servers: dict[str, dict[str, Any]], extra: str = "") -> None:
    """``[mcp.NAME]`` tables (``oauth`` may be False or a table), every tool allowed."""
    lines = []
    for name, table in servers.items():
        lines += [f"[mcp.{name}]", 'type = "remote"']
        oauth = table.get("oauth")
        for key, value in table.items():
            if key != "oauth" or value is False:
                lines.append(f"{key} = {_toml(value)}")
        if isinstance(oauth, dict):
            lines.append(f"[mcp.{name}.oauth]")
            lines += [f"{key} = {_toml(value)}" for key, value in oauth.items()]
        lines.append("")
    rules = "".join(f'"{name}_*" = "allow"\n' for name in servers)
    env.write_config("\n".join(lines) + "\n[permission]\n" + rules + extra)


def hookcode(env: Any, *args: str) -> subprocess.CompletedProcess[str]:
    return run_hookcode(env, *args, timeout=CLI_TIMEOUT)


def login(env: Any, name: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """``hookcode mcp auth NAME`` on a free port (19876 may be taken on a test machine)."""
    return hookcode(env, "mcp", "auth", name, "--port", "0", "--timeout", "120", *extra)


def stored(env: Any) -> dict[str, Any]:
    path = env.data_dir / "mcp-auth.json"
    return json.loads(path.read_text()) if path.exists() else {}


def statuses(env: Any) -> dict[str, dict[str, Any]]:
    listed = hookcode(env, "mcp", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    return {server["name"]: server for server in json.loads(listed.stdout)}


def output(outcome: Any) -> str:
    """The output of a tool call that must have succeeded."""
    assert outcome.ok and outcome.result is not None, outcome.error_text
    return outcome.result.output


def call_json(runtime: Any, tool: str, args: dict[str, Any] | None = None) -> Any:
    return json.loads(output(invoke_tool(runtime, tool, args or {})))


# ---------------------------------------------------------------------------------------------
# before a login
# ---------------------------------------------------------------------------------------------


def test_before_login_needs_auth_and_the_others_work(
    hookcode_env: Any, browser: Browser, oauth_url: str
) -> None:
    with _serve("http_server.py") as plain_url:
        write_remote(hookcode_env, {"secure": {"url": oauth_url}, "web": {"url": plain_url}})
        runtime = hookcode_env.runtime()
        started = time.monotonic()
        by_name = {s["name"]: s for s in hookcode_mcp.status(runtime)}
        # no browser, no waiting for a login: the status is known at once
        assert time.monotonic() - started < 25
        secure = by_name["secure"]
        assert secure["status"] == "needs_auth", secure
        assert secure["error"] == (
            "the server requires an OAuth login: run `hookcode mcp auth secure`"
        )
        assert secure["tools"] == []
        assert by_name["web"]["status"] == "connected"
        assert output(invoke_tool(runtime, "web_add", {"a": 2, "b": 3})) == "5"
        assert "secure_add" not in runtime.registry.entries

        listed = hookcode(hookcode_env, "mcp", "list")
        assert listed.returncode == 0, listed.stderr
        assert (
            "secure: needs_auth: the server requires an OAuth login: "
            "run `hookcode mcp auth secure`" in listed.stdout
        )
        assert "web: connected [streamable-http]" in listed.stdout
        assert "MCP server 'secure' is not authorized" in listed.stderr
        called = hookcode(hookcode_env, "tools", "call", "web_add", '{"a":1,"b":1}', "--json")
        assert called.returncode == 0, called.stderr
        assert json.loads(called.stdout)["output"] == "2"

    # finding out opened no browser and stored nothing ...
    assert browser.opened() == []
    assert not (hookcode_env.data_dir / "mcp-auth.json").exists()
    # ... nor registered a client with the server: the login's registration is its first
    assert login(hookcode_env, "secure").returncode == 0
    close_all()
    runtime = hookcode_env.runtime()
    assert call_json(runtime, "secure_stats")["registrations"] == 1


# ---------------------------------------------------------------------------------------------
# logging in, using, refreshing, logging out
# ---------------------------------------------------------------------------------------------


def test_login_then_tools_work_then_logout(
    hookcode_env: Any, browser: Browser, oauth_url: str
) -> None:
    write_remote(hookcode_env, {"secure": {"url": oauth_url}})
    done = login(hookcode_env, "secure")
    assert done.returncode == 0, done.stderr
    assert "Logged in to MCP server 'secure'" in done.stdout
    [asked] = browser.opened()
    assert asked in done.stdout  # the URL is printed too
    assert asked.startswith(oauth_url.removesuffix("/mcp") + "/authorize?")
    assert "code_challenge_method=S256" in asked and "state=" in asked

    path = hookcode_env.data_dir / "mcp-auth.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    entry = stored(hookcode_env)["secure"]
    assert entry["serverUrl"] == oauth_url
    assert entry["tokens"]["access_token"] and entry["tokens"]["refresh_token"]
    assert entry["expiresAt"] > time.time()
    client_id = entry["clientInfo"]["client_id"]  # registered dynamically

    assert statuses(hookcode_env)["secure"]["status"] == "connected"
    runtime = hookcode_env.runtime()
    added = invoke_tool(runtime, "secure_add", {"a": 2, "b": 40})
    assert output(added) == "42"
    assert call_json(runtime, "secure_whoami") == {"client_id": client_id, "scopes": ["read"]}
    assert call_json(runtime, "secure_stats") == {
        "registrations": 1,
        "authorizations": 1,
        "exchanges": 1,
    }
    called = hookcode(hookcode_env, "tools", "call", "secure_add", '{"a":1,"b":2}', "--json")
    assert called.returncode == 0 and json.loads(called.stdout)["output"] == "3", called.stderr
    close_all()

    out = hookcode(hookcode_env, "mcp", "logout", "secure")
    assert out.returncode == 0, out.stderr
    assert "Removed the OAuth login of MCP server 'secure'" in out.stdout
    assert "secure" not in stored(hookcode_env)
    after = statuses(hookcode_env)["secure"]
    assert after["status"] == "needs_auth"
    assert "run `hookcode mcp auth secure`" in after["error"]

    again = hookcode(hookcode_env, "mcp", "logout", "secure")
    assert again.returncode == 1
    assert "no stored OAuth login for MCP server 'secure'" in again.stderr
    assert len(browser.opened()) == 1


def expire_login(env: Any, url: str, name: str) -> dict[str, Any]:
    """End the life of the access token of the stored login ``name``: on the server
    (``POST /test/expire``) and in the store (``expiresAt`` is past), as an hour going by
    would; the test decides when, so no token expires in the middle of a step. Returns the
    stored entry as it was."""
    urllib.request.urlopen(url.removesuffix("/mcp") + "/test/expire", b"", timeout=60).close()
    path = env.data_dir / "mcp-auth.json"
    data = json.loads(path.read_text())
    before = json.loads(json.dumps(data[name]))
    data[name]["expiresAt"] = time.time() - 1
    path.write_text(json.dumps(data))
    return before


def test_an_expired_token_is_refreshed_without_a_browser(
    hookcode_env: Any, browser: Browser
) -> None:
    with _serve("oauth_server.py") as url:
        write_remote(hookcode_env, {"secure": {"url": url}})
        done = login(hookcode_env, "secure")
        assert done.returncode == 0, done.stderr
        before = expire_login(hookcode_env, url, "secure")

        # a new process: the token's expiry comes from the store, so it is refreshed up front
        server = statuses(hookcode_env)["secure"]
        assert server["status"] == "connected", server
        after = stored(hookcode_env)["secure"]
        assert after["tokens"]["access_token"] != before["tokens"]["access_token"]
        assert after["tokens"]["refresh_token"] != before["tokens"]["refresh_token"]  # rotated
        assert after["expiresAt"] > before["expiresAt"]
        assert after["clientInfo"] == before["clientInfo"]
        path = hookcode_env.data_dir / "mcp-auth.json"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600

        runtime = hookcode_env.runtime()
        counts = call_json(runtime, "secure_stats")
        assert counts["authorizations"] == 1 and counts["refreshes"] >= 1, counts
        assert len(browser.opened()) == 1  # the login's only


def test_an_sse_server_with_oauth(hookcode_env: Any, browser: Browser) -> None:
    with _serve("oauth_server.py", "--sse") as url:
        write_remote(hookcode_env, {"old": {"url": url}})
        before = statuses(hookcode_env)["old"]
        assert before["status"] == "needs_auth", before
        assert before["error"].endswith("run `hookcode mcp auth old`")
        done = login(hookcode_env, "old")
        assert done.returncode == 0, done.stderr
        runtime = hookcode_env.runtime()
        [server] = hookcode_mcp.status(runtime)
        assert (server["status"], server["transport"]) == ("connected", "sse"), server
        assert output(invoke_tool(runtime, "old_add", {"a": 20, "b": 22})) == "42"


def test_a_revoked_login_needs_auth_again(hookcode_env: Any, browser: Browser) -> None:
    with _serve("oauth_server.py") as url:
        write_remote(hookcode_env, {"secure": {"url": url}})
        assert login(hookcode_env, "secure").returncode == 0
        entry = stored(hookcode_env)["secure"]
        form = urllib.parse.urlencode(
            {
                "token": entry["tokens"]["refresh_token"],
                "token_type_hint": "refresh_token",
                "client_id": entry["clientInfo"]["client_id"],
                "client_secret": "",  # a public client (the SDK's handler wants the field)
            }
        ).encode()
        urllib.request.urlopen(url.removesuffix("/mcp") + "/revoke", form, timeout=60).close()
        expire_login(hookcode_env, url, "secure")

        server = statuses(hookcode_env)["secure"]
        assert server["status"] == "needs_auth", server
        assert server["error"] == (
            "the stored OAuth login was refused or could not be refreshed: "
            "run `hookcode mcp auth secure`"
        )
        assert len(browser.opened()) == 1  # the login's only


def test_a_login_for_another_url_is_not_used(
    hookcode_env: Any, browser: Browser, oauth_url: str
) -> None:
    write_remote(hookcode_env, {"secure": {"url": oauth_url}})
    assert login(hookcode_env, "secure").returncode == 0
    with _serve("oauth_server.py") as other_url:
        write_remote(hookcode_env, {"secure": {"url": other_url}})
        server = statuses(hookcode_env)["secure"]
        assert server["status"] == "needs_auth"
        assert server["error"] == (
            f"the stored OAuth login is for another URL ({oauth_url}): "
            "run `hookcode mcp auth secure`"
        )
        # logging in again replaces the entry
        assert login(hookcode_env, "secure").returncode == 0
        assert stored(hookcode_env)["secure"]["serverUrl"] == other_url
        assert statuses(hookcode_env)["secure"]["status"] == "connected"


# ---------------------------------------------------------------------------------------------
# logins that do not happen
# ---------------------------------------------------------------------------------------------


def test_a_refused_authorization_stores_nothing(hookcode_env: Any, browser: Browser) -> None:
    with _serve("oauth_server.py", "--deny") as url:
        write_remote(hookcode_env, {"secure": {"url": url}})
        done = login(hookcode_env, "secure")
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "hookcode: error: MCP server 'secure': OAuth login failed: the authorization was "
        "refused: access_denied (the resource owner said no); nothing stored"
    )
    assert len(browser.opened()) == 1
    assert "Traceback" not in done.stderr + done.stdout
    assert stored(hookcode_env) == {}


def test_a_callback_with_a_wrong_state_is_rejected(
    hookcode_env: Any, browser: Browser, oauth_url: str
) -> None:
    write_remote(hookcode_env, {"secure": {"url": oauth_url}})
    browser.mode("wrong-state")
    done = login(hookcode_env, "secure")
    assert done.returncode == 1
    assert "the callback's state parameter does not match the authorization request" in (
        done.stderr
    )
    assert stored(hookcode_env) == {}
    assert statuses(hookcode_env)["secure"]["status"] == "needs_auth"


def test_a_login_nobody_completes_times_out(
    hookcode_env: Any, browser: Browser, oauth_url: str
) -> None:
    write_remote(hookcode_env, {"secure": {"url": oauth_url}})
    browser.mode("none")
    done = hookcode(hookcode_env, "mcp", "auth", "secure", "--port", "0", "--timeout", "1")
    assert done.returncode == 1
    assert "no authorization came back within 1 s (--timeout to wait longer)" in done.stderr
    assert len(browser.opened_once_started()) == 1
    assert stored(hookcode_env) == {}


def test_without_dynamic_registration_a_client_id_is_needed(
    hookcode_env: Any, browser: Browser
) -> None:
    with _serve("oauth_server.py", "--no-registration") as url:
        write_remote(hookcode_env, {"secure": {"url": url}})
        server = statuses(hookcode_env)["secure"]
        assert server["status"] == "needs_client_registration", server
        issuer = url.removesuffix("/mcp")
        assert server["error"] == (
            f"the server's authorization server ({issuer}) offers no dynamic client "
            "registration: register a client there with redirect URI "
            "http://127.0.0.1:19876/mcp/oauth/callback, set [mcp.secure.oauth] clientId = "
            '"..." (and clientSecret if it has one), then run `hookcode mcp auth secure`'
        )
        done = login(hookcode_env, "secure")
    assert done.returncode == 1
    assert "offers no dynamic client registration" in done.stderr
    assert "[mcp.secure.oauth] clientId" in done.stderr
    assert browser.opened() == [] and stored(hookcode_env) == {}


def test_a_pre_registered_client_and_its_scope(hookcode_env: Any, browser: Browser) -> None:
    client = {"clientId": "hookcode-test", "clientSecret": "s3cret-value", "scope": "read write"}
    with _serve(
        "oauth_server.py", "--no-registration", "--client", "hookcode-test:s3cret-value"
    ) as url:
        write_remote(hookcode_env, {"secure": {"url": url, "oauth": client}})
        before = statuses(hookcode_env)["secure"]
        assert before["status"] == "needs_auth", before

        done = login(hookcode_env, "secure")
        assert done.returncode == 0, done.stderr
        [asked] = browser.opened()
        assert "client_id=hookcode-test" in asked and "scope=read+write" in asked
        entry = stored(hookcode_env)["secure"]
        assert entry["clientId"] == "hookcode-test" and "clientInfo" not in entry
        assert "s3cret-value" not in (hookcode_env.data_dir / "mcp-auth.json").read_text()

        runtime = hookcode_env.runtime()
        assert call_json(runtime, "secure_whoami") == {
            "client_id": "hookcode-test",
            "scopes": ["read", "write"],
        }
        assert call_json(runtime, "secure_stats").get("registrations", 0) == 0


def test_oauth_false_keeps_the_static_header_behaviour(
    hookcode_env: Any, browser: Browser, oauth_url: str
) -> None:
    write_remote(hookcode_env, {"secure": {"url": oauth_url, "oauth": False}})
    server = statuses(hookcode_env)["secure"]
    assert server["status"] == "needs_auth"
    assert server["error"] == (
        'the server requires authorization (HTTP 401); set headers = { Authorization = "Bearer '
        '..." } (OAuth is off: oauth = false)'
    )
    done = login(hookcode_env, "secure")
    assert done.returncode == 1
    assert "MCP server 'secure' has OAuth turned off (oauth = false in [mcp.secure])" in (
        done.stderr
    )
    assert browser.opened() == []


def test_a_server_without_oauth_metadata(hookcode_env: Any, browser: Browser) -> None:
    with _serve("http_server.py", "--bearer", "static-token-123") as url:
        write_remote(hookcode_env, {"plain": {"url": url}})
        server = statuses(hookcode_env)["plain"]
        assert server["status"] == "needs_auth"
        assert server["error"].startswith(
            "the server requires authorization (HTTP 401) and publishes no OAuth metadata: "
            'set headers = { Authorization = "Bearer ..." }'
        )
        done = login(hookcode_env, "plain")
        assert done.returncode == 1
        assert "the server publishes no OAuth metadata" in done.stderr
        assert "does not support an OAuth login" in done.stderr
        assert stored(hookcode_env) == {} and browser.opened() == []

        # a static token still works with OAuth on (the default)
        headers = {"Authorization": "Bearer static-token-123"}
        write_remote(hookcode_env, {"plain": {"url": url, "headers": headers}})
        runtime = hookcode_env.runtime()
        assert hookcode_mcp.status(runtime)[0]["status"] == "connected"
        assert output(invoke_tool(runtime, "plain_add", {"a": 1, "b": 2})) == "3"


def test_mcp_auth_needs_a_configured_remote_server(hookcode_env: Any, browser: Browser) -> None:
    hookcode_env.write_config(
        '[mcp.local]\ncommand = ["python", "-m", "nothing"]\n'
        '[mcp.far]\ntype = "remote"\nurl = "http://127.0.0.1:9/mcp"\n'
    )
    unknown = hookcode(hookcode_env, "mcp", "auth", "nope")
    assert unknown.returncode == 1
    assert unknown.stderr.strip() == (
        "hookcode: error: unknown MCP server 'nope'; configured servers: local, far"
    )
    local = hookcode(hookcode_env, "mcp", "auth", "local")
    assert local.returncode == 1
    assert "MCP server 'local' is local (stdio): OAuth is for remote servers" in local.stderr
    bad_port = hookcode(hookcode_env, "mcp", "auth", "far", "--port", "70000")
    assert bad_port.returncode == 2  # an argument error
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        busy = hookcode(hookcode_env, "mcp", "auth", "far", "--port", str(port))
    assert busy.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port} for the OAuth callback" in busy.stderr
    unreachable = login(hookcode_env, "far")
    assert unreachable.returncode == 1
    assert "cannot reach http://127.0.0.1:9/mcp" in unreachable.stderr
    assert browser.opened() == [] and stored(hookcode_env) == {}


def test_a_damaged_login_file_is_reported(hookcode_env: Any, oauth_url: str) -> None:
    write_remote(hookcode_env, {"secure": {"url": oauth_url}})
    path = hookcode_env.data_dir / "mcp-auth.json"
    path.write_text("{not json")
    server = statuses(hookcode_env)["secure"]
    assert server["status"] == "failed"
    assert server["error"] == (
        f"{path}: cannot read the stored MCP logins (JSONDecodeError); fix or delete the file, "
        "then run `hookcode mcp auth NAME` again"
    )
    out = hookcode(hookcode_env, "mcp", "logout", "secure")
    assert out.returncode == 1 and "cannot read the stored MCP logins" in out.stderr


STORE_WRITER = """
import sys
from pathlib import Path
from hookcode_mcp._auth import AuthStore

store = AuthStore(Path(sys.argv[1]))
for i in range(int(sys.argv[3])):
    name = f"{sys.argv[2]}-{i}"
    store.put(name, {"serverUrl": f"https://{name}.example/mcp", "tokens": {"access_token": "a"}})
    # a token refresh of the shared server's entry, racing the others' refreshes
    store.merge("shared", "https://shared.example/mcp", {sys.argv[2]: i})
"""


def test_concurrent_processes_adding_logins_lose_none(hookcode_env: Any) -> None:
    from hookcode_mcp._auth import AuthStore

    data, processes, entries = hookcode_env.data_dir, 6, 15
    procs = [
        subprocess.Popen([sys.executable, "-c", STORE_WRITER, str(data), f"w{p}", str(entries)])
        for p in range(processes)
    ]
    assert [proc.wait(timeout=120) for proc in procs] == [0] * processes
    stored = AuthStore(data).entries()
    names = {f"w{p}-{i}" for p in range(processes) for i in range(entries)}
    assert set(stored) == names | {"shared"}
    assert stored["shared"] == {
        "serverUrl": "https://shared.example/mcp",
        **{f"w{p}": entries - 1 for p in range(processes)},
    }
    path = data / "mcp-auth.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
