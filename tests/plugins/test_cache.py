"""cache (plugins/cache): the opt-in result cache for read-only tools, on real files, with the
real read/grep/edit tools, real permission rules and a real local HTTP server for webfetch."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import hookcode_cache
import pytest
from hookcode import ToolContext, ToolResult, hookimpl, tool
from hookcode.errors import ConfigError
from hookcode.permission import Reply, Rule
from hookcode.testing import ReplyWith, invoke_tool

PLUGINS = "cache,policy_rules,tool_read,tool_edit,tool_grep,tool_glob,tool_list"


@pytest.fixture(autouse=True)
def _plugins(hookcode_env: Any) -> None:
    hookcode_env.env["HOOKCODE_LOAD_PLUGINS"] = PLUGINS


@pytest.fixture
def project(hookcode_env: Any) -> Path:
    (hookcode_env.project / "a.txt").write_text("hello\n")
    (hookcode_env.project / "b.txt").write_text("bravo\n")
    (hookcode_env.project / "c.txt").write_text("charlie\n")
    return hookcode_env.project


def configure(hookcode_env: Any, text: str) -> Any:
    hookcode_env.write_config(text)
    rt = hookcode_env.runtime()
    rt.test_session = rt.create_session(title="cache").id
    return rt


def call(rt: Any, name: str, args: dict[str, Any], *, session: str | None = None) -> Any:
    return invoke_tool(rt, name, args, session_id=session or rt.test_session)


def read(rt: Any, path: str, **kwargs: Any) -> Any:
    outcome = call(rt, "read", {"filePath": path}, **kwargs)
    assert outcome.ok, outcome.error_text
    return outcome.result


def cached(result: ToolResult) -> bool:
    return result.metadata.get("cached") is True


# ---------------------------------------------------------------------------------------------
# on and off
# ---------------------------------------------------------------------------------------------


def test_off_by_default(hookcode_env, project):
    rt = configure(hookcode_env, "")
    first, second = read(rt, "a.txt"), read(rt, "a.txt")
    assert not cached(first) and not cached(second)
    assert hookcode_cache.stats(rt) == {"entries": 0, "bytes": 0, "hits": 0, "misses": 0}


def test_an_empty_tool_list_is_off(hookcode_env, project):
    rt = configure(hookcode_env, "[cache]\ntools = []\n")
    read(rt, "a.txt")
    assert not cached(read(rt, "a.txt"))


def test_a_second_read_is_served_from_the_cache(hookcode_env, project):
    rt = configure(hookcode_env, '[cache]\ntools = ["read"]\n')
    first = read(rt, "a.txt")
    second = read(rt, "a.txt")
    assert not cached(first) and cached(second)
    assert second.output == first.output and "1: hello" in second.output
    assert second.title == first.title
    assert hookcode_cache.stats(rt)["hits"] == 1
    # other arguments are another entry
    assert not cached(read(rt, "b.txt"))
    assert not cached(call(rt, "read", {"filePath": "a.txt", "offset": 1}).result)


def test_only_the_named_tools_are_cached(hookcode_env, project):
    rt = configure(hookcode_env, '[cache]\ntools = ["read"]\n')
    outcomes = [call(rt, "glob", {"pattern": "*.txt"}) for _ in range(2)]
    assert outcomes[1].ok and not cached(outcomes[1].result)


def test_failures_are_not_cached(hookcode_env, project):
    rt = configure(hookcode_env, '[cache]\ntools = ["read"]\n')
    assert not call(rt, "read", {"filePath": "later.txt"}).ok
    (project / "later.txt").write_text("now here\n")
    result = read(rt, "later.txt")
    assert not cached(result) and "now here" in result.output


# ---------------------------------------------------------------------------------------------
# invalidation
# ---------------------------------------------------------------------------------------------


def test_an_edit_through_the_edit_tool_invalidates(hookcode_env, project):
    rt = configure(hookcode_env, '[cache]\ntools = ["read"]\n')
    read(rt, "a.txt")
    assert cached(read(rt, "a.txt"))
    outcome = call(rt, "edit", {"filePath": "a.txt", "oldString": "hello", "newString": "howdy"})
    assert outcome.ok, outcome.error_text
    after = read(rt, "a.txt")
    assert not cached(after) and "1: howdy" in after.output


def test_a_change_on_disk_invalidates(hookcode_env, project):
    rt = configure(hookcode_env, '[cache]\ntools = ["read"]\n')
    read(rt, "a.txt")
    (project / "a.txt").write_text("changed elsewhere\n")
    after = read(rt, "a.txt")
    assert not cached(after) and "changed elsewhere" in after.output


def test_a_same_size_change_with_the_mtime_set_back_invalidates(hookcode_env, project):
    rt = configure(hookcode_env, '[cache]\ntools = ["read"]\n')
    target = project / "a.txt"
    before = target.stat()
    read(rt, "a.txt")
    time.sleep(0.01)
    target.write_text("jello\n")  # same size
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))  # same mtime: ctime moved
    after = read(rt, "a.txt")
    assert not cached(after) and "1: jello" in after.output


def test_grep_is_invalidated_by_edits_under_its_root(hookcode_env, project, rg):
    rt = configure(hookcode_env, '[cache]\ntools = ["grep"]\n')
    (project / "sub").mkdir()
    (project / "sub" / "deep.txt").write_text("needle one\n")
    first = call(rt, "grep", {"pattern": "needle"}).result
    assert "Found 1 matches" in first.output
    assert cached(call(rt, "grep", {"pattern": "needle"}).result)
    read(rt, "sub/deep.txt")
    outcome = call(
        rt,
        "edit",
        {
            "filePath": "sub/deep.txt",
            "oldString": "needle one",
            "newString": "needle one\nneedle two",
        },
    )
    assert outcome.ok, outcome.error_text
    after = call(rt, "grep", {"pattern": "needle"}).result
    assert not cached(after) and "Found 2 matches" in after.output


@tool
def touch_file(ctx: ToolContext, name: str) -> str:
    """Write a file without telling anyone (like bash does)."""
    ctx.resolve(name).write_text("needle from a writer\n")
    return "done"


class Writer:
    @hookimpl
    def register_tools(self, register):
        register(touch_file)


def test_directory_searches_are_dropped_when_another_tool_may_have_written(
    hookcode_env, project, rg
):
    hookcode_env.register(Writer(), "tool_writer")
    rt = configure(hookcode_env, '[cache]\ntools = ["grep", "glob"]\n')
    (project / "one.txt").write_text("needle\n")
    call(rt, "grep", {"pattern": "needle"})
    call(rt, "glob", {"pattern": "*.txt"})
    assert cached(call(rt, "grep", {"pattern": "needle"}).result)
    assert call(rt, "touch_file", {"name": "sub-two.txt"}).ok
    grep = call(rt, "grep", {"pattern": "needle"}).result
    glob = call(rt, "glob", {"pattern": "*.txt"}).result
    assert not cached(grep) and "Found 2 matches" in grep.output
    assert not cached(glob) and "sub-two.txt" in glob.output


def test_the_ttl_expires_entries(hookcode_env, project):
    rt = configure(hookcode_env, '[cache]\ntools = ["read"]\nttl = { read = 0.3 }\n')
    read(rt, "a.txt")
    assert cached(read(rt, "a.txt"))
    time.sleep(0.4)
    assert not cached(read(rt, "a.txt"))
    assert cached(read(rt, "a.txt"))


def test_a_default_ttl_for_every_tool(hookcode_env, project):
    rt = configure(hookcode_env, '[cache]\ntools = ["read"]\nttl = { "*" = 0.3 }\n')
    read(rt, "a.txt")
    time.sleep(0.4)
    assert not cached(read(rt, "a.txt"))


# ---------------------------------------------------------------------------------------------
# bounds
# ---------------------------------------------------------------------------------------------


def test_at_most_max_entries_least_recently_used_first(hookcode_env, project):
    rt = configure(hookcode_env, '[cache]\ntools = ["read"]\nmax_entries = 2\n')
    read(rt, "a.txt")
    read(rt, "b.txt")
    assert cached(read(rt, "a.txt"))  # a is now the most recently used
    read(rt, "c.txt")  # evicts b
    assert hookcode_cache.stats(rt)["entries"] == 2
    assert cached(read(rt, "a.txt"))
    assert cached(read(rt, "c.txt"))
    assert not cached(read(rt, "b.txt"))


def test_at_most_max_bytes(hookcode_env, project):
    for name in ("big1.txt", "big2.txt"):
        (project / name).write_text("".join(f"{name} line {i:04} {'x' * 40}\n" for i in range(60)))
    # measure the entries first
    probe = configure(hookcode_env, '[cache]\ntools = ["read"]\n')
    sizes = {}
    for name in ("a.txt", "big1.txt", "big2.txt"):
        before = hookcode_cache.stats(probe)["bytes"]
        read(probe, name)
        sizes[name] = hookcode_cache.stats(probe)["bytes"] - before
    assert sizes["big1.txt"] > 10 * sizes["a.txt"]
    limit = sizes["a.txt"] + sizes["big1.txt"] + sizes["big2.txt"] // 2
    rt = configure(hookcode_env, f'[cache]\ntools = ["read"]\nmax_bytes = {limit}\n')
    read(rt, "a.txt")
    read(rt, "big1.txt")
    assert hookcode_cache.stats(rt)["entries"] == 2
    read(rt, "big2.txt")  # a goes, and big1 too: together they leave too little room
    stats = hookcode_cache.stats(rt)
    assert stats["bytes"] <= limit and stats["entries"] == 1
    assert cached(read(rt, "big2.txt"))
    assert not cached(read(rt, "a.txt"))
    assert not cached(read(rt, "big1.txt"))
    (project / "huge.txt").write_text("y\n" * (limit + 10))
    read(rt, "huge.txt")  # larger than the whole cache: never stored
    assert not cached(read(rt, "huge.txt"))


# ---------------------------------------------------------------------------------------------
# never for tools that write
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["edit", "bash", "apply_patch", "write"])
def test_tools_that_write_are_a_config_error(hookcode_env, project, name):
    hookcode_env.write_config(f'[cache]\ntools = ["read", "{name}"]\n')
    with pytest.raises(ConfigError) as info:
        hookcode_env.runtime()
    message = str(info.value)
    assert f"'{name}'" in message and "cache.tools" in message and "read-only" in message


def test_a_writer_in_the_config_fails_the_cli_with_a_clear_message(hookcode_env, project):
    hookcode_env.write_config('[cache]\ntools = ["bash"]\n')
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "hookcode",
            "-C",
            str(project),
            "tools",
            "call",
            "read",
            '{"filePath": "a.txt"}',
        ],
        capture_output=True,
        text=True,
        env=hookcode_env.env,
        timeout=120,
    )
    assert proc.returncode == 1
    assert "'bash' runs commands" in proc.stderr and "Traceback" not in proc.stderr


@tool
def shout(text: str) -> str:
    """Say it loud (a plugin tool the cache does not know)."""
    shout.calls += 1
    return text.upper()


shout.calls = 0


@tool(permission="edit")
def sneaky_writer(ctx: ToolContext, text: str) -> str:
    """A tool asking the edit permission: it writes."""
    sneaky_writer.calls += 1
    return text


sneaky_writer.calls = 0


class Unknown:
    @hookimpl
    def register_tools(self, register):
        register(shout, sneaky_writer)


def test_unknown_tools_are_cached_with_a_warning_but_never_writers(hookcode_env, project, capsys):
    shout.calls = sneaky_writer.calls = 0
    hookcode_env.register(Unknown(), "tool_unknown")
    rt = configure(hookcode_env, '[cache]\ntools = ["shout", "sneaky_writer"]\n')
    assert [call(rt, "shout", {"text": "hi"}).result.output for _ in range(2)] == ["HI", "HI"]
    assert shout.calls == 1
    for _ in range(2):
        assert call(rt, "sneaky_writer", {"text": "x"}).ok
    assert sneaky_writer.calls == 2
    err = capsys.readouterr().err
    assert "'shout' is not a tool the cache knows to be read-only" in err
    assert "'sneaky_writer' asks the 'edit' permission, so it is never cached" in err


# ---------------------------------------------------------------------------------------------
# permissions are checked on every hit
# ---------------------------------------------------------------------------------------------


def test_a_read_whose_permission_is_now_denied_is_not_served(hookcode_env, project):
    rt = configure(hookcode_env, '[cache]\ntools = ["read"]\n')
    read(rt, "a.txt")
    assert cached(read(rt, "a.txt"))
    rt.session_rules[rt.test_session] = [Rule("read", "*a.txt", "deny", "test")]
    outcome = call(rt, "read", {"filePath": "a.txt"})
    assert type(outcome.error).__name__ == "PermissionDenied"
    # another session, without the rule, is still served
    other = rt.create_session(title="other").id
    assert cached(read(rt, "a.txt", session=other))


class Answers:
    """A front end answering from a list, recording what it was asked."""

    def __init__(self, *kinds: str) -> None:
        self.kinds = list(kinds)
        self.asked: list[tuple[str, list[str]]] = []

    @hookimpl
    def permission_prompt(self, request: Any) -> Reply:
        self.asked.append((request.permission, list(request.patterns)))
        return Reply(self.kinds.pop(0))  # type: ignore[arg-type]


def test_a_hit_asks_again_as_the_tool_would_and_a_reject_refuses_it(hookcode_env, project):
    answers = hookcode_env.register(Answers("once", "once", "reject"), "front_end")
    rt = configure(hookcode_env, '[cache]\ntools = ["read"]\n[permission]\nread = "ask"\n')
    read(rt, "a.txt")
    assert cached(read(rt, "a.txt"))
    outcome = call(rt, "read", {"filePath": "a.txt"})
    assert type(outcome.error).__name__ == "PermissionRejected"
    pattern = str(project / "a.txt")
    assert answers.asked == [("read", [pattern])] * 3


def test_a_hit_replays_the_external_directory_ask(hookcode_env, project, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.txt").write_text("far away\n")
    front = hookcode_env.register(ReplyWith("once"), "front_end")
    rt = configure(hookcode_env, '[cache]\ntools = ["read"]\n')
    first = read(rt, str(outside / "x.txt"))
    second = read(rt, str(outside / "x.txt"))
    assert not cached(first) and cached(second)
    asked = [(r.permission, r.patterns) for r in front.requests]
    assert asked == [("external_directory", [f"{outside}/*"])] * 2


def test_a_hit_counts_as_a_read_for_a_later_edit(hookcode_env, project):
    rt = configure(hookcode_env, '[cache]\ntools = ["read"]\n')
    read(rt, "a.txt")
    other = rt.create_session(title="other").id
    assert cached(read(rt, "a.txt", session=other))
    outcome = call(
        rt, "edit", {"filePath": "a.txt", "oldString": "hello", "newString": "hi"}, session=other
    )
    assert outcome.ok, outcome.error_text


# ---------------------------------------------------------------------------------------------
# webfetch against a local server
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[tuple[str, list[str]]]:
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            body = f"page {self.path} #{len(hits)}".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", hits
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.skipif(
    importlib.util.find_spec("hookcode_tool_webfetch") is None, reason="no webfetch tool"
)
def test_webfetch_is_served_from_the_cache(hookcode_env, project, server):
    base, hits = server
    hookcode_env.env["HOOKCODE_LOAD_PLUGINS"] = PLUGINS + ",tool_webfetch"
    rt = configure(hookcode_env, '[cache]\ntools = ["webfetch"]\n')
    args = {"url": f"{base}/doc", "format": "text"}
    first = call(rt, "webfetch", args)
    second = call(rt, "webfetch", args)
    assert first.ok and second.ok, (first.error_text, second.error_text)
    assert "page /doc #1" in first.result.output
    assert second.result.output == first.result.output and cached(second.result)
    assert hits == ["/doc"]
    other = call(rt, "webfetch", {"url": f"{base}/other", "format": "text"})
    assert not cached(other.result) and hits == ["/doc", "/other"]
    # a denied URL is not served from the cache
    rt.session_rules[rt.test_session] = [Rule("webfetch", f"{base}/doc", "deny", "test")]
    assert type(call(rt, "webfetch", args).error).__name__ == "PermissionDenied"
