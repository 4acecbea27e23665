"""The write tool (reference/tools.md §4)."""

from __future__ import annotations

import asyncio
import codecs
import json
import subprocess
import sys
import time

from hookcode.errors import PermissionDenied, PermissionRejected
from hookcode.testing import ReplyWith, ainvoke_tool, invoke_tool


def ok(outcome):
    assert outcome.error is None, outcome.error_text
    return outcome.result


def test_write_creates_a_file_with_parents(hookcode_env):
    rt = hookcode_env.runtime()
    target = hookcode_env.project / "a" / "b" / "new.txt"
    result = ok(invoke_tool(rt, "write", {"filePath": "a/b/new.txt", "content": "x\r\ny\n"}))
    assert target.read_bytes() == b"x\r\ny\n"  # a new file gets the content as given
    assert result.output == "Wrote file successfully."
    assert result.title == "a/b/new.txt"
    assert result.metadata["filepath"] == str(target)
    assert result.metadata["exists"] is False
    assert result.metadata["diagnostics"] == {}


def test_write_empty_content(hookcode_env):
    rt = hookcode_env.runtime()
    ok(invoke_tool(rt, "write", {"filePath": "empty.txt", "content": ""}))
    assert (hookcode_env.project / "empty.txt").read_bytes() == b""


def test_overwrite_needs_a_read(hookcode_env):
    path = hookcode_env.project / "f.txt"
    path.write_text("old\n")
    rt = hookcode_env.runtime()
    sid = rt.create_session().id
    out = invoke_tool(rt, "write", {"filePath": "f.txt", "content": "new\n"}, session_id=sid)
    assert out.error_text == (
        f"You must read file {path} before overwriting it. Use the Read tool first"
    )
    assert path.read_text() == "old\n"

    rt.file_times(sid).record(path)
    result = ok(invoke_tool(rt, "write", {"filePath": "f.txt", "content": "new\n"}, session_id=sid))
    assert path.read_text() == "new\n"
    assert result.metadata["exists"] is True


def test_overwrite_modified_after_read(hookcode_env):
    path = hookcode_env.project / "f.txt"
    path.write_text("old\n")
    rt = hookcode_env.runtime()
    sid = rt.create_session().id
    rt.file_times(sid).record(path, when=time.time() - 60)
    out = invoke_tool(rt, "write", {"filePath": "f.txt", "content": "new\n"}, session_id=sid)
    assert out.error_text.startswith(f"File {path} has been modified since it was last read.")
    assert path.read_text() == "old\n"


def test_overwrite_keeps_crlf_bom_and_mode(hookcode_env):
    path = hookcode_env.project / "w.txt"
    path.write_bytes(codecs.BOM_UTF8 + b"one\r\ntwo\r\n")
    path.chmod(0o700)
    rt = hookcode_env.runtime()
    sid = rt.create_session().id
    rt.file_times(sid).record(path)
    ok(invoke_tool(rt, "write", {"filePath": str(path), "content": "uno\ndos\n"}, session_id=sid))
    assert path.read_bytes() == codecs.BOM_UTF8 + b"uno\r\ndos\r\n"
    assert path.stat().st_mode & 0o777 == 0o700


def test_write_directory_is_refused(hookcode_env):
    (hookcode_env.project / "d").mkdir()
    rt = hookcode_env.runtime()
    out = invoke_tool(rt, "write", {"filePath": "d", "content": "x"})
    assert out.error_text == f"Path is a directory, not a file: {hookcode_env.project / 'd'}"


def test_file_path_is_required(hookcode_env):
    rt = hookcode_env.runtime()
    assert invoke_tool(rt, "write", {"filePath": "", "content": "x"}).error_text == (
        "filePath is required"
    )
    out = invoke_tool(rt, "write", {"content": "x"})
    assert out.error_text.startswith("The write tool was called with invalid arguments: filePath:")


def test_write_ask_patterns_and_metadata(hookcode_env):
    project = hookcode_env.project
    (project / ".git").mkdir()
    sub = project / "pkg"
    sub.mkdir()
    hookcode_env.write_config('[permission]\nedit = "ask"\n')
    front = hookcode_env.register(ReplyWith("once"), "front")
    rt = hookcode_env.runtime(cwd=sub)
    result = ok(invoke_tool(rt, "write", {"filePath": "mod.py", "content": "x = 1\n"}))
    assert result.title == "pkg/mod.py"
    [request] = front.requests
    assert request.permission == "edit"
    assert request.patterns == ["pkg/mod.py"]
    assert request.always == ["*"]
    assert request.metadata["filepath"] == str(sub / "mod.py")
    assert "+x = 1" in request.metadata["diff"]


def test_write_rejected_headless(hookcode_env):
    hookcode_env.write_config('[permission]\nedit = "ask"\n')
    rt = hookcode_env.runtime()
    out = invoke_tool(rt, "write", {"filePath": "nope.txt", "content": "x"})
    assert isinstance(out.error, PermissionRejected)
    assert not (hookcode_env.project / "nope.txt").exists()


def test_external_directory_refused_headless(hookcode_env):
    target = hookcode_env.root / "outside" / "f.txt"
    rt = hookcode_env.runtime()
    out = invoke_tool(rt, "write", {"filePath": str(target), "content": "x"})
    assert isinstance(out.error, PermissionRejected)
    assert not target.exists()

    front = hookcode_env.register(ReplyWith("once"), "front")
    rt = hookcode_env.runtime()
    ok(invoke_tool(rt, "write", {"filePath": str(target), "content": "x"}))
    assert target.read_text() == "x"
    [request] = front.requests
    assert request.permission == "external_directory"
    # the missing directory is judged by its nearest existing ancestor, asked as spelled
    assert request.patterns == [f"{target.parent.as_posix()}/*"]


def test_file_edited_event_and_read_time(hookcode_env):
    rt = hookcode_env.runtime()
    sid = rt.create_session().id
    events = []
    rt.events.subscribe(lambda e: events.append(e) if e.type == "file.edited" else None)
    ok(invoke_tool(rt, "write", {"filePath": "e.txt", "content": "1"}, session_id=sid))
    path = hookcode_env.project / "e.txt"
    assert [e.properties["file"] for e in events] == [str(path)]
    # the write counts as a read: writing again needs no read
    assert rt.file_times(sid).last_read(path) is not None
    ok(invoke_tool(rt, "write", {"filePath": "e.txt", "content": "2"}, session_id=sid))
    assert path.read_text() == "2"


def test_edit_permission_deny_pattern(hookcode_env):
    hookcode_env.write_config('[permission]\nedit = { "*" = "allow", "secret/*" = "deny" }\n')
    secret = hookcode_env.project / "secret"
    secret.mkdir()
    (secret / "k.txt").write_text("keep\n")
    rt = hookcode_env.runtime()
    sid = rt.create_session().id
    rt.file_times(sid).record(secret / "k.txt")
    for name in ("k.txt", "new.txt"):
        out = invoke_tool(
            rt, "write", {"filePath": f"secret/{name}", "content": "x"}, session_id=sid
        )
        assert isinstance(out.error, PermissionDenied)
        assert out.error_text.startswith(
            "The user has specified a rule which prevents you from using this specific tool call."
        )
    assert (secret / "k.txt").read_text() == "keep\n"
    assert not (secret / "new.txt").exists()
    ok(invoke_tool(rt, "write", {"filePath": "public.txt", "content": "x"}, session_id=sid))


def test_concurrent_writes_of_one_file_serialize(hookcode_env):
    rt = hookcode_env.runtime()
    sid = rt.create_session().id
    path = hookcode_env.project / "w.txt"

    async def main():
        return await asyncio.gather(
            *(
                ainvoke_tool(
                    rt,
                    "write",
                    {"filePath": "w.txt", "content": f"{i}\n" * 1000},
                    session_id=sid,
                )
                for i in range(5)
            )
        )

    outcomes = asyncio.run(main())
    assert all(o.error is None for o in outcomes)
    lines = set(path.read_text().splitlines())
    assert len(lines) == 1  # one whole write, never a mix


def test_cli_tools_call_write(hookcode_env):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "hookcode.cli",
            "tools",
            "call",
            "write",
            '{"filePath":"new.txt","content":"hi"}',
            "--json",
            "--yes",
        ],
        env=hookcode_env.env,
        cwd=hookcode_env.project,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["error"] is None
    assert result["output"] == "Wrote file successfully."
    assert result["title"] == "new.txt"
    assert result["metadata"]["exists"] is False
    assert (hookcode_env.project / "new.txt").read_text() == "hi"
