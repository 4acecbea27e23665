"""The multiedit tool (reference/tools.md §6): atomic, one ask, one write."""

from __future__ import annotations

import time

from hookcode.errors import PermissionDenied, PermissionRejected
from hookcode.testing import ReplyWith, invoke_tool
from hookcode_tool_edit.replace import AMBIGUOUS, IDENTICAL, NOT_FOUND


def ok(outcome):
    assert outcome.error is None, outcome.error_text
    return outcome.result


def item(old: str, new: str, **extra):
    return {"filePath": "ignored.txt", "oldString": old, "newString": new, **extra}


def setup(hookcode_env, text="alpha\nbeta\ngamma\n", name="f.txt", read=True):
    path = hookcode_env.project / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    rt = hookcode_env.runtime()
    sid = rt.create_session().id
    if read:
        rt.file_times(sid).record(path)
    return rt, sid, path


def test_edits_apply_in_order_each_to_the_previous_result(hookcode_env):
    rt, sid, path = setup(hookcode_env)
    result = ok(
        invoke_tool(
            rt,
            "multiedit",
            {
                "filePath": str(path),
                "edits": [
                    item("alpha", "ALPHA"),
                    item("ALPHA\nbeta", "one\ntwo\nthree"),  # sees the first edit's result
                    item("a", "A", replaceAll=True),
                ],
            },
            session_id=sid,
        )
    )
    assert path.read_text() == "one\ntwo\nthree\ngAmmA\n"
    assert result.output == "Edit applied successfully."
    assert result.title == "f.txt"
    meta = result.metadata
    assert meta["results"] == [
        {"additions": 1, "deletions": 1},
        {"additions": 3, "deletions": 2},
        {"additions": 1, "deletions": 1},
    ]
    assert meta["diagnostics"] == {}
    assert meta["filediff"]["before"] == "alpha\nbeta\ngamma\n"
    assert meta["filediff"]["after"] == "one\ntwo\nthree\ngAmmA\n"
    assert (meta["filediff"]["additions"], meta["filediff"]["deletions"]) == (4, 3)
    assert "+one" in meta["diff"] and "-alpha" in meta["diff"]


def test_a_failing_edit_leaves_the_file_untouched(hookcode_env):
    rt, sid, path = setup(hookcode_env)
    mtime = path.stat().st_mtime_ns
    events = []
    rt.events.subscribe(lambda e: events.append(e) if e.type == "file.edited" else None)
    out = invoke_tool(
        rt,
        "multiedit",
        {
            "filePath": str(path),
            "edits": [item("alpha", "ALPHA"), item("missing", "x"), item("gamma", "GAMMA")],
        },
        session_id=sid,
    )
    assert out.error_text == f"Edit 2 of 3 failed: {NOT_FOUND}"
    assert path.read_text() == "alpha\nbeta\ngamma\n"
    assert path.stat().st_mtime_ns == mtime
    assert events == []


def test_failure_messages_name_the_edit(hookcode_env):
    rt, sid, path = setup(hookcode_env, "x\nx\n")
    cases = [
        ([item("x", "y")], f"Edit 1 of 1 failed: {AMBIGUOUS}"),
        ([item("x\nx", "z"), item("z", "z")], f"Edit 2 of 2 failed: {IDENTICAL}"),
    ]
    for edits, message in cases:
        out = invoke_tool(rt, "multiedit", {"filePath": str(path), "edits": edits}, session_id=sid)
        assert out.error_text == message
    assert path.read_text() == "x\nx\n"


def test_one_ask_with_the_combined_diff(hookcode_env):
    project = hookcode_env.project
    (project / ".git").mkdir()
    path = project / "lib" / "m.py"
    path.parent.mkdir()
    path.write_text("a = 1\nb = 2\n")
    hookcode_env.write_config('[permission]\nedit = "ask"\n')
    front = hookcode_env.register(ReplyWith("once"), "front")
    rt = hookcode_env.runtime()
    sid = rt.create_session().id
    rt.file_times(sid).record(path)
    ok(
        invoke_tool(
            rt,
            "multiedit",
            {"filePath": "lib/m.py", "edits": [item("a = 1", "a = 10"), item("b = 2", "b = 20")]},
            session_id=sid,
        )
    )
    [request] = front.requests
    assert request.permission == "edit"
    assert request.patterns == ["lib/m.py"]
    assert request.always == ["*"]
    diff = request.metadata["diff"]
    assert "+a = 10" in diff and "+b = 20" in diff
    assert path.read_text() == "a = 10\nb = 20\n"


def test_rejected_ask_writes_nothing(hookcode_env):
    hookcode_env.write_config('[permission]\nedit = "ask"\n')
    rt, sid, path = setup(hookcode_env)
    out = invoke_tool(
        rt, "multiedit", {"filePath": str(path), "edits": [item("alpha", "A")]}, session_id=sid
    )
    assert isinstance(out.error, PermissionRejected)
    assert path.read_text() == "alpha\nbeta\ngamma\n"


def test_create_with_an_empty_first_old_string(hookcode_env):
    rt = hookcode_env.runtime()
    sid = rt.create_session().id
    target = hookcode_env.project / "made" / "n.txt"
    ok(
        invoke_tool(
            rt,
            "multiedit",
            {"filePath": str(target), "edits": [item("", "one\ntwo\n"), item("two", "2")]},
            session_id=sid,
        )
    )
    assert target.read_text() == "one\n2\n"


def test_missing_file_and_directory(hookcode_env):
    rt = hookcode_env.runtime()
    target = hookcode_env.project / "nope.txt"
    out = invoke_tool(rt, "multiedit", {"filePath": "nope.txt", "edits": [item("a", "b")]})
    assert out.error_text == f"Edit 1 of 1 failed: File {target} not found"
    (hookcode_env.project / "d").mkdir()
    out = invoke_tool(rt, "multiedit", {"filePath": "d", "edits": [item("a", "b")]})
    assert out.error_text == f"Path is a directory, not a file: {hookcode_env.project / 'd'}"


def test_read_before_write(hookcode_env):
    rt, sid, path = setup(hookcode_env, read=False)
    out = invoke_tool(
        rt, "multiedit", {"filePath": str(path), "edits": [item("alpha", "A")]}, session_id=sid
    )
    assert out.error_text == (
        f"You must read file {path} before overwriting it. Use the Read tool first"
    )
    rt.file_times(sid).record(path, when=time.time() - 60)
    out = invoke_tool(
        rt, "multiedit", {"filePath": str(path), "edits": [item("alpha", "A")]}, session_id=sid
    )
    assert out.error_text.startswith(f"File {path} has been modified since it was last read.")
    assert path.read_text() == "alpha\nbeta\ngamma\n"


def test_crlf_bom_and_mode_kept(hookcode_env):
    rt, sid, path = setup(hookcode_env, b"\xef\xbb\xbfalpha\r\nbeta\r\n")
    path.chmod(0o640)
    ok(
        invoke_tool(
            rt,
            "multiedit",
            {"filePath": str(path), "edits": [item("alpha\nbeta", "a\nb\nc"), item("c", "C")]},
            session_id=sid,
        )
    )
    assert path.read_bytes() == b"\xef\xbb\xbfa\r\nb\r\nC\r\n"
    assert path.stat().st_mode & 0o777 == 0o640


def test_external_directory_refused_headless(hookcode_env):
    outside = hookcode_env.root / "out"
    outside.mkdir()
    target = outside / "f.txt"
    target.write_text("alpha\n")
    rt = hookcode_env.runtime()
    sid = rt.create_session().id
    rt.file_times(sid).record(target)
    out = invoke_tool(
        rt, "multiedit", {"filePath": str(target), "edits": [item("alpha", "A")]}, session_id=sid
    )
    assert isinstance(out.error, PermissionRejected)
    assert target.read_text() == "alpha\n"


def test_edit_permission_deny_pattern(hookcode_env):
    hookcode_env.write_config('[permission]\nedit = { "*" = "allow", "secret/*" = "deny" }\n')
    rt, sid, path = setup(hookcode_env, name="secret/s.txt")
    out = invoke_tool(
        rt, "multiedit", {"filePath": str(path), "edits": [item("alpha", "A")]}, session_id=sid
    )
    assert isinstance(out.error, PermissionDenied)
    assert path.read_text() == "alpha\nbeta\ngamma\n"


def test_file_edited_event_once(hookcode_env):
    rt, sid, path = setup(hookcode_env)
    events = []
    rt.events.subscribe(lambda e: events.append(e) if e.type == "file.edited" else None)
    ok(
        invoke_tool(
            rt,
            "multiedit",
            {"filePath": "f.txt", "edits": [item("alpha", "A"), item("beta", "B")]},
            session_id=sid,
        )
    )
    assert [e.properties["file"] for e in events] == [str(path)]


def test_arguments_and_schema(hookcode_env):
    rt = hookcode_env.runtime()
    out = invoke_tool(rt, "multiedit", {"filePath": "f.txt", "edits": []})
    assert out.error_text.startswith("The multiedit tool was called with invalid arguments: edits:")
    out = invoke_tool(rt, "multiedit", {"filePath": "f.txt", "edits": [{"oldString": "a"}]})
    assert "edits.0.filePath" in out.error_text and "edits.0.newString" in out.error_text
    assert (
        invoke_tool(rt, "multiedit", {"filePath": "", "edits": [item("a", "b")]}).error_text
        == "filePath is required"
    )

    entry = rt.registry.get("multiedit")
    assert entry is not None
    tool = entry.tool
    assert tool.permission_name == "edit" and tool.asks_permission
    schema = tool.parameters
    assert list(schema["properties"]) == ["filePath", "edits"]
    edits = schema["properties"]["edits"]
    assert edits["type"] == "array" and edits["minItems"] == 1
    ref = edits["items"]["$ref"].rsplit("/", 1)[-1]
    item_schema = schema["$defs"][ref]
    assert list(item_schema["properties"]) == ["filePath", "oldString", "newString", "replaceAll"]
    assert item_schema["required"] == ["filePath", "oldString", "newString"]
    assert item_schema["properties"]["replaceAll"]["type"] == "boolean"


def test_modules_import_neither_pydantic_nor_typing_extensions():
    import subprocess
    import sys

    code = (
        "import sys, hookcode_tool_write, hookcode_tool_edit, hookcode_tool_multiedit\n"
        "heavy = {'pydantic', 'typing_extensions'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_protected_multiedit_is_refused_headless_even_where_edit_allows(hookcode_env):
    hookcode_env.write_config('[permission]\nedit = "allow"\n', where="global")
    rt, sid, path = setup(hookcode_env, "[permission]\n", name="sub/hookcode.toml")
    out = invoke_tool(
        rt,
        "multiedit",
        {
            "filePath": "sub/hookcode.toml",
            "edits": [item("[permission]", '[permission]\n"*" = "allow"')],
        },
        session_id=sid,
    )
    assert isinstance(out.error, PermissionRejected)
    assert path.read_text() == "[permission]\n"
    assert rt.refusals[-1].metadata["protected"] == {"sub/hookcode.toml": "hookcode.toml"}


def test_multiedit_through_a_symlink_keeps_the_link(hookcode_env):
    rt, sid, real = setup(hookcode_env)
    link = hookcode_env.project / "link.txt"
    link.symlink_to(real.name)
    edits = [item("alpha", "ALPHA"), item("gamma", "GAMMA")]
    ok(invoke_tool(rt, "multiedit", {"filePath": "link.txt", "edits": edits}, session_id=sid))
    assert link.is_symlink() and real.read_text() == "ALPHA\nbeta\nGAMMA\n"
