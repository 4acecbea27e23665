"""The MCP client against the MCP reference server, ``@modelcontextprotocol/server-everything``
from npm (pinned in conftest), over stdio and streamable HTTP: an image result, a tool that
needs MCP tasks, text blob resources, resources read by the model, prompts as chat commands,
and a streamable-HTTP server restarted on the same port mid-session."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hookcode_mcp
import pytest
from helpers.mcp_http import STARTUP, run_hookcode
from hookcode.errors import PermissionRejected
from hookcode.testing import invoke_tool
from hookcode_mcp._client import close_all

PLUGINS = "mcp,policy_rules,provider_scripted"
ALLOW = '[permission]\n"every_*" = "allow"\n'
#: the tool of server-everything that needs MCP tasks (execution.taskSupport = required)
TASK_TOOL = "every_simulate-research-query"


@pytest.fixture(autouse=True)
def _plugins(hookcode_env: Any) -> Iterator[None]:
    hookcode_env.env["HOOKCODE_LOAD_PLUGINS"] = PLUGINS
    yield
    close_all()


def configure(env: Any, table: dict[str, Any], extra: str = ALLOW) -> None:
    lines = ["[mcp.every]", *(f"{key} = {json.dumps(value)}" for key, value in table.items())]
    env.write_config("\n".join(lines) + "\n\n" + extra)


@pytest.fixture
def stdio_runtime(hookcode_env: Any, mcp_everything_server: list[str]) -> Any:
    configure(hookcode_env, {"command": [*mcp_everything_server, "stdio"]})
    return hookcode_env.runtime()


# ---------------------------------------------------------------------------------------------
# stdio
# ---------------------------------------------------------------------------------------------


def test_a_tool_that_needs_tasks_is_not_offered_and_list_says_why(stdio_runtime: Any) -> None:
    [status] = hookcode_mcp.status(stdio_runtime)
    assert (status["status"], status["transport"]) == ("connected", "stdio")
    tools = {t["name"]: t for t in status["tools"]}
    assert tools["every_echo"]["registered"] is True
    task = tools[TASK_TOOL]
    assert task["registered"] is False
    assert "execution.taskSupport = required" in task["skipped"]
    assert stdio_runtime.registry.get(TASK_TOOL) is None
    assert stdio_runtime.registry.get("every_echo").plugin == "mcp"
    assert invoke_tool(stdio_runtime, "every_echo", {"message": "hi"}).result.output == "Echo: hi"


def test_an_image_is_an_attachment_and_its_base64_is_not_in_the_text(stdio_runtime: Any) -> None:
    outcome = invoke_tool(stdio_runtime, "every_get-tiny-image", {})
    assert outcome.ok, outcome.error_text
    [image] = outcome.result.attachments
    assert image.mime == "image/png" and image.url.startswith("data:image/png;base64,iVBOR")
    size = len(base64.b64decode(image.url.split(",", 1)[1]))
    assert outcome.result.output == (
        "Here's the image you requested:\n\n"
        f"[image attached: image/png, {size} bytes]\n\n"
        "The image above is the MCP logo."
    )
    assert "iVBOR" not in outcome.result.output


def test_structured_content_is_not_repeated_beside_the_content(stdio_runtime: Any) -> None:
    outcome = invoke_tool(stdio_runtime, "every_get-structured-content", {"location": "Chicago"})
    assert outcome.ok, outcome.error_text
    # the server sends the JSON once as text and once as structuredContent: shown once
    assert outcome.result.output.count('"temperature"') == 1, outcome.result.output


def test_resources_are_listed_and_read_by_the_model(stdio_runtime: Any) -> None:
    listed = invoke_tool(stdio_runtime, "mcp_list_resources", {})
    assert listed.ok, listed.error_text
    text = listed.result.output
    assert text.startswith("server every: ")
    assert "- demo://resource/static/document/architecture.md" in text
    assert "demo://resource/dynamic/blob/{resourceId}" in text and "(template)" in text

    # a text/plain blob: decoded, not "[Binary MCP resource omitted]"
    blob = invoke_tool(
        stdio_runtime,
        "mcp_read_resource",
        {"server": "every", "uri": "demo://resource/dynamic/blob/7"},
    )
    assert blob.ok, blob.error_text
    assert blob.result.output.startswith("Resource 7: This is a base64 blob created at ")
    document = invoke_tool(
        stdio_runtime,
        "mcp_read_resource",
        {"server": "every", "uri": "demo://resource/static/document/architecture.md"},
    )
    assert document.ok and "#" in document.result.output and not document.result.attachments

    unknown = invoke_tool(stdio_runtime, "mcp_read_resource", {"server": "nope", "uri": "x://y"})
    assert (
        not unknown.ok and "no connected MCP server 'nope' offers resources" in unknown.error_text
    )


def test_reading_a_resource_asks_as_the_servers_tools_do(
    hookcode_env: Any, mcp_everything_server: list[str]
) -> None:
    configure(hookcode_env, {"command": [*mcp_everything_server, "stdio"]}, extra="")
    runtime = hookcode_env.runtime()
    uri = "demo://resource/dynamic/text/1"
    refused = invoke_tool(runtime, "mcp_read_resource", {"server": "every", "uri": uri})
    assert isinstance(refused.error, PermissionRejected)  # headless: an ask is a reject
    asked = runtime.refusals[-1]
    assert (asked.permission, asked.patterns) == ("every_read_resource", [uri])
    assert invoke_tool(runtime, "mcp_list_resources", {"server": "every"}).ok  # names only


def test_mcp_list_shows_prompts_resources_and_the_skipped_task_tool(
    hookcode_env: Any, mcp_everything_server: list[str]
) -> None:
    configure(hookcode_env, {"command": [*mcp_everything_server, "stdio"]})
    done = run_hookcode(hookcode_env, "mcp", "list", timeout=120)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "every: connected [stdio]" in out
    assert f"{TASK_TOOL}  (skipped: needs MCP tasks" in out
    assert "  prompts: " in out and "/every:args-prompt <city> [state]" in out
    assert "  resources: " in out
    listing = json.loads(run_hookcode(hookcode_env, "mcp", "list", "--json", timeout=120).stdout)
    [server] = listing
    prompts = {p["name"]: p for p in server["prompts"]}
    assert prompts["args-prompt"]["command"] == "/every:args-prompt"
    assert prompts["args-prompt"]["arguments"] == [
        {"name": "city", "required": True},
        {"name": "state", "required": False},
    ]
    uris = [r["uri"] for r in server["resources"]]
    assert "demo://resource/static/document/architecture.md" in uris


def test_prompts_are_chat_commands(hookcode_env: Any, mcp_everything_server: list[str]) -> None:
    configure(hookcode_env, {"command": [*mcp_everything_server, "stdio"]})
    hookcode_env.env["HOOKCODE_CONFIG_CONTENT"] = 'model = "scripted/echo"'
    lines = [
        "/every:args-prompt Paris state=France",
        "/every:args-prompt",  # its required argument is missing: nothing is sent
        "/every:no-such-prompt",
        "/every:simple-prompt",
        "/help",
        "/exit",
    ]
    done = run_hookcode(hookcode_env, "chat", timeout=120, stdin="\n".join(lines) + "\n")
    assert done.returncode == 0, done.stderr
    # the echo model repeats the user message: the prompt's text was sent
    assert "What's weather in Paris, France?" in done.stdout
    assert "This is a simple prompt without arguments." in done.stdout
    assert "/every:args-prompt: missing argument city (usage: <city> [state])" in done.stderr
    assert "MCP server 'every' has no prompt 'no-such-prompt'" in done.stderr
    assert "/every:simple-prompt" in done.stderr  # the error names the prompts there are
    assert "every:args-prompt" not in done.stdout  # never sent as typed
    # /help lists the prompts, with their arguments
    help_text = done.stderr[done.stderr.index("From plugins (MCP prompts):") :]
    assert "/every:args-prompt" in help_text and "CITY STATE" in help_text
    assert "/every:simple-prompt" in help_text


# ---------------------------------------------------------------------------------------------
# streamable HTTP, and a restart on the same port
# ---------------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class HttpServer:
    """``server-everything streamableHttp`` on ``port``: started, killed, started again."""

    def __init__(self, command: list[str], port: int) -> None:
        self.command = [*command, "streamableHttp"]
        self.port = port
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> None:
        env = {**os.environ, "PORT": str(self.port)}
        proc = subprocess.Popen(
            self.command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        self.proc = proc
        assert proc.stderr is not None
        deadline = time.monotonic() + STARTUP
        seen = ""
        while time.monotonic() < deadline:  # it says so on stderr once it listens
            ready, _, _ = select.select([proc.stderr], [], [], deadline - time.monotonic())
            line = proc.stderr.readline() if ready else ""
            seen += line
            if "listening on port" in line:
                return
            if not line and proc.poll() is not None:
                break
        self.stop()
        pytest.fail(f"server-everything did not start on port {self.port}: {seen!r}")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        proc.kill()
        proc.wait(30)
        if proc.stderr is not None:
            proc.stderr.close()


@pytest.fixture
def http_server(mcp_everything_server: list[str]) -> Iterator[HttpServer]:
    server = HttpServer(mcp_everything_server, _free_port())
    server.start()
    yield server
    server.stop()


def test_streamable_http_results(hookcode_env: Any, http_server: HttpServer) -> None:
    configure(hookcode_env, {"type": "remote", "url": http_server.url, "oauth": False})
    runtime = hookcode_env.runtime()
    [status] = hookcode_mcp.status(runtime)
    assert (status["status"], status["transport"]) == ("connected", "streamable-http"), status
    assert runtime.registry.get(TASK_TOOL) is None
    assert invoke_tool(runtime, "every_get-sum", {"a": 2, "b": 40}).result.output.endswith("42.")
    image = invoke_tool(runtime, "every_get-tiny-image", {})
    assert image.ok and len(image.result.attachments) == 1
    assert "iVBOR" not in image.result.output


def test_a_restarted_http_server_gets_a_new_session_and_the_call_is_made_again(
    hookcode_env: Any, http_server: HttpServer, capsys: pytest.CaptureFixture[str]
) -> None:
    configure(hookcode_env, {"type": "remote", "url": http_server.url, "oauth": False})
    runtime = hookcode_env.runtime()
    assert invoke_tool(runtime, "every_echo", {"message": "one"}).result.output == "Echo: one"

    http_server.stop()
    http_server.start()  # the same port; it knows no session

    outcome = invoke_tool(runtime, "every_echo", {"message": "two"})
    assert outcome.ok, outcome.error_text
    assert outcome.result.output == "Echo: two"
    [status] = hookcode_mcp.status(runtime)
    assert (status["status"], status["error"], status["restarts"]) == ("connected", None, 1)
    err = capsys.readouterr().err
    assert "MCP server 'every' was restarted after: session expired" in err
    # the new session goes on working, its tools re-listed
    again = invoke_tool(runtime, "every_echo", {"message": "three"})
    assert again.ok and again.result.output == "Echo: three"
    assert (
        runtime.registry.get("every_echo").tool
        in hookcode_mcp.manager(runtime).servers["every"].tools
    )
    assert runtime.registry.get(TASK_TOOL) is None  # still not offered after the re-list

    # restarted while idle: the status (a ping) finds the session gone, never "connected"
    http_server.stop()
    http_server.start()
    [status] = hookcode_mcp.status(runtime)
    assert status["status"] == "failed", status
    assert status["error"] == (
        "session expired: the server no longer knows it "
        "(HTTP 400: Bad Request: No valid session ID provided)"
    )
    outcome = invoke_tool(runtime, "every_echo", {"message": "four"})
    assert outcome.ok and outcome.result.output == "Echo: four", outcome.error_text
    [status] = hookcode_mcp.status(runtime)
    assert (status["status"], status["restarts"]) == ("connected", 2)


def test_a_session_the_server_does_not_know_is_recognised(http_server: HttpServer) -> None:
    """What the real server answers to a request with a session id it never issued, as
    hookcode reads it (the response hook of :mod:`hookcode_mcp._http`)."""
    import asyncio

    import httpx2
    from hookcode_mcp._http import session_gone

    async def ask() -> str | None:
        async with httpx2.AsyncClient() as client:
            response = await client.post(
                http_server.url,
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                headers={
                    "Accept": "application/json, text/event-stream",
                    "Mcp-Session-Id": "a-session-from-before-the-restart",
                },
            )
            return await session_gone(response)

    why = asyncio.run(ask())
    assert why == "HTTP 400: Bad Request: No valid session ID provided"


def test_a_call_to_a_stopped_http_server_says_so_and_list_does_not_say_connected(
    hookcode_env: Any, http_server: HttpServer
) -> None:
    configure(hookcode_env, {"type": "remote", "url": http_server.url, "oauth": False})
    runtime = hookcode_env.runtime()
    assert invoke_tool(runtime, "every_echo", {"message": "one"}).ok
    http_server.stop()
    [status] = hookcode_mcp.status(runtime)  # its ping finds nobody
    assert status["status"] == "failed", status
    assert status["error"].startswith("connection lost: the server does not answer"), status
    lost = invoke_tool(runtime, "every_echo", {"message": "two"})
    assert not lost.ok and "MCP server 'every'" in lost.error_text
    assert "restarting it failed" in lost.error_text, lost.error_text
    [status] = hookcode_mcp.status(runtime)
    assert status["status"] == "failed", status


def _server_pids(project: Path) -> list[int]:
    """The server-everything processes running in ``project`` (their working directory)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if any(b"server-everything" in part for part in command) and cwd == str(project):
            found.append(int(entry.name))
    return found


def test_a_tool_list_refresh_running_at_exit_is_cancelled_quietly(
    hookcode_env: Any, stdio_runtime: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """``notifications/tools/list_changed`` starts a re-list; closing while it runs ends it
    without a word (it used to print ``re-listing tools failed: Connection closed``). The
    server is stopped (SIGSTOP) so that the re-list is surely still waiting at the close."""
    import signal

    from hookcode_mcp._client import _LOOP
    from mcp import types

    manager = hookcode_mcp.manager(stdio_runtime)
    manager.start()
    server = manager.servers["every"]
    assert server.status == "connected"
    [pid] = _server_pids(hookcode_env.project)
    os.kill(pid, signal.SIGSTOP)
    try:
        _LOOP.submit(server._on_message(types.ToolListChangedNotification())).result(10)
        assert server._refreshes, "the re-list did not start"
        manager.close()  # the stopped server is killed after its grace period
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
    assert not server._refreshes and server.status == "closed"
    assert "re-listing tools failed" not in capsys.readouterr().err


def test_text_blobs_are_decoded_with_their_charset() -> None:
    """A blob's text is decoded with the charset its MIME type names (UTF-8 by default); an
    undecodable one, or a binary type, is named instead."""
    from hookcode_mcp._content import resource_parts
    from mcp.types import BlobResourceContents

    def blob(data: bytes, mime: str) -> Any:
        encoded = base64.b64encode(data).decode()
        return BlobResourceContents(uri="file:///x", mime_type=mime, blob=encoded)

    assert resource_parts(blob("café".encode(), "text/plain")) == (["café"], [])
    assert resource_parts(blob("café".encode("latin-1"), "text/csv; charset=ISO-8859-1")) == (
        ["café"],
        [],
    )
    assert resource_parts(blob(b'{"a": 1}', "application/json")) == (['{"a": 1}'], [])
    [omitted], [] = resource_parts(blob(b"\xff\xfe\xfa", "text/plain"))  # not UTF-8
    assert omitted == "[Binary MCP resource omitted: file:///x (text/plain, 3 bytes)]"
    [omitted], [] = resource_parts(blob(b"\x00\x01", "application/octet-stream"))
    assert omitted.startswith("[Binary MCP resource omitted: file:///x")
