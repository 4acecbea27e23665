"""The edit tool (reference/tools.md §5) and its replacer cascade (``hookcode_tool_edit.replace``)."""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import time
from pathlib import Path

import pytest
from hookcode.errors import PermissionDenied, PermissionRejected, ToolError
from hookcode.testing import ReplyWith, ainvoke_tool, invoke_tool
from hookcode_tool_edit import trim_diff
from hookcode_tool_edit.replace import (
    AMBIGUOUS,
    IDENTICAL,
    NOT_FOUND,
    REPLACERS,
    multi_occurrence,
    replace,
)

# ---------------------------------------------------------------------------------------------
# the replacer cascade (a pure function)
# ---------------------------------------------------------------------------------------------


def matching(content: str, find: str) -> list[str]:
    """The replacers that propose at least one candidate present in ``content``."""
    return [r.__name__ for r in REPLACERS if any(c and c in content for c in r(content, find))]


def test_replacer_order_is_the_reference_order():
    assert [r.__name__ for r in REPLACERS] == [
        "simple",
        "line_trimmed",
        "block_anchor",
        "whitespace_normalized",
        "indentation_flexible",
        "escape_normalized",
        "trimmed_boundary",
        "context_aware",
        "multi_occurrence",
    ]


def test_simple_exact_match():
    content = "alpha\nbeta\ngamma\n"
    # an exact match is also every occurrence (multi_occurrence), and a whole-line match
    assert matching(content, "beta")[0] == "simple"
    assert replace(content, "beta", "BETA") == "alpha\nBETA\ngamma\n"


def test_line_trimmed_only():
    # the search's trailing empty line is dropped: only line_trimmed sees the two-line run
    content = "a\n    b\nc"
    find = "a\nb\n"
    assert matching(content, find) == ["line_trimmed"]
    assert replace(content, find, "X") == "X\nc"


def test_block_anchor_only_single_candidate_whatever_the_middle():
    content = "top\nstart\n  alpha = 1\nend\nbottom\n"
    find = "start\nbeta = 2\nend"
    assert matching(content, find) == ["block_anchor"]
    assert replace(content, find, "NEW") == "top\nNEW\nbottom\n"


def test_block_anchor_several_candidates_picks_the_most_similar():
    content = "start\nalpha beta\nend\nstart\ngamma delta\nend\n"
    find = "start\ngamma delt\nend"
    assert matching(content, find) == ["block_anchor"]
    assert replace(content, find, "NEW") == "start\nalpha beta\nend\nNEW\n"


def test_block_anchor_several_candidates_below_threshold_is_not_found():
    content = "start\naaaa\nend\nstart\nbbbb\nend\n"
    with pytest.raises(ToolError) as info:
        replace(content, "start\nzzzz\nend", "NEW")
    assert str(info.value) == NOT_FOUND


def test_whitespace_normalized_only_whole_line():
    content = "x  =   1\ny = 2\n"
    assert matching(content, "x = 1") == ["whitespace_normalized"]
    assert replace(content, "x = 1", "x = 3") == "x = 3\ny = 2\n"


def test_whitespace_normalized_only_span_of_a_line():
    content = "total = add(a,   b) + 1\n"
    assert matching(content, "add(a, b)") == ["whitespace_normalized"]
    assert replace(content, "add(a, b)", "sub(a, b)") == "total = sub(a, b) + 1\n"


def test_indentation_flexible_proposes_the_reindented_block():
    # a block equal once each side's indentation is removed; every such block is also a
    # line_trimmed match, so in the cascade it never decides: check the replacer itself
    from hookcode_tool_edit.replace import indentation_flexible

    content = "class A:\n        def f(self):\n            return 1\n"
    find = "def f(self):\n    return 1"
    assert list(indentation_flexible(content, find)) == [
        "        def f(self):\n            return 1"
    ]
    assert list(indentation_flexible(content, "def f(self):\nreturn 1")) == []
    assert "indentation_flexible" in matching(content, find)


def test_escape_normalized_only():
    content = 'print("a\nb")\n'
    find = 'print("a\\nb")'  # the model sent a literal backslash-n
    assert matching(content, find) == ["escape_normalized"]
    assert replace(content, find, "print(1)") == "print(1)\n"


def test_escape_normalized_block_whose_unescaped_text_matches():
    from hookcode_tool_edit.replace import escape_normalized

    content = "say \\'hi\\'\nnext\n"  # the file itself has escapes
    assert list(escape_normalized(content, "say 'hi'")) == ["say \\'hi\\'"]


def test_trimmed_boundary_only():
    content = "prefix_foo\nbar_suffix"
    find = "\n foo\nbar \n"
    assert matching(content, find) == ["trimmed_boundary"]
    assert replace(content, find, "X") == "prefix_X_suffix"


def test_context_aware_only():
    # two anchor blocks, the best middle similarity is < 0.3 (blank lines count in the mean),
    # so block_anchor proposes nothing; half the non-blank middle lines match exactly
    block = "A\nkeep\nother\n\n\n\n\nZ"
    content = f"{block}\nA\nzzz\nyyy\n\n\n\n\nZ\n"
    find = "A\nkeep\nMISMATCH\n\n\n\n\nZ"
    assert matching(content, find) == ["context_aware"]
    assert replace(content, find, "NEW") == "NEW\nA\nzzz\nyyy\n\n\n\n\nZ\n"


def test_multi_occurrence_yields_every_exact_occurrence():
    # whatever it proposes, simple proposed first: it matters only for replaceAll
    assert list(multi_occurrence("a.a.a", "a")) == ["a", "a", "a"]
    assert list(multi_occurrence("abc", "x")) == []


def test_an_earlier_replacer_wins():
    # simple finds the second line; whitespace_normalized would have taken the first
    content = "  x  =  1\nx = 1"
    assert replace(content, "x = 1", "NEW") == "  x  =  1\nNEW"
    # line_trimmed finds the second line; whitespace_normalized would have taken the first
    content = "x  =  1\n    x = 1"
    assert replace(content, "x = 1\n", "NEW") == "x  =  1\nNEW"


def test_an_ambiguous_candidate_falls_through_to_the_next_replacer():
    # "x = 1" occurs twice (simple: ambiguous); line_trimmed's candidate is the whole first line
    content = "    x = 1\nx = 10\n"
    assert replace(content, "x = 1", "y = 2") == "y = 2\nx = 10\n"


def test_not_found_and_ambiguous_messages():
    with pytest.raises(ToolError) as info:
        replace("alpha\n", "omega", "x")
    assert str(info.value) == NOT_FOUND
    assert NOT_FOUND == (
        "Could not find oldString in the file. It must match exactly, including whitespace, "
        "indentation, and line endings."
    )
    with pytest.raises(ToolError) as info:
        replace("x\nx\n", "x", "y")
    assert str(info.value) == AMBIGUOUS
    assert AMBIGUOUS == (
        "Found multiple matches for oldString. Provide more surrounding context to make the "
        "match unique."
    )
    with pytest.raises(ToolError) as info:
        replace("x", "x", "x")
    assert str(info.value) == IDENTICAL


def test_replace_all():
    assert replace("a.b.a", "a", "c", replace_all=True) == "c.b.c"
    # replaceAll replaces every occurrence of the first candidate found (here line_trimmed's)
    assert replace("  v = 1\n  v = 1\n", "v = 1 \n", "w", replace_all=True) == "w\nw\n"


def test_new_string_is_inserted_literally():
    assert replace("a b", "a", "$& $1 \\1", replace_all=True) == "$& $1 \\1 b"
    assert replace("a b", "a", "$&") == "$& b"


def test_empty_old_string_is_the_whole_content():
    assert replace("old", "", "new") == "new"


def test_whitespace_only_old_string_never_matches_everywhere():
    with pytest.raises(ToolError) as info:
        replace("a\n\nb", "   ", "x", replace_all=True)
    assert str(info.value) == NOT_FOUND


def test_trim_diff_removes_common_indentation():
    patch = "--- f\n+++ f\n@@ -1,2 +1,2 @@\n-    a = 1\n+    a = 3\n     b = 2\n \n"
    assert trim_diff(patch) == "--- f\n+++ f\n@@ -1,2 +1,2 @@\n-a = 1\n+a = 3\n b = 2\n \n"
    unindented = "--- f\n+++ f\n@@ -1 +1 @@\n-a\n+b\n"
    assert trim_diff(unindented) == unindented


# ---------------------------------------------------------------------------------------------
# the tool
# ---------------------------------------------------------------------------------------------


def setup(hookcode_env, name: str = "f.txt", data: bytes | str = "hello world\n", read=True):
    path: Path = hookcode_env.project / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    rt = hookcode_env.runtime()
    sid = rt.create_session().id
    if read:
        rt.file_times(sid).record(path)
    return rt, sid, path


def ok(outcome):
    assert outcome.error is None, outcome.error_text
    return outcome.result


def test_edit_replaces_and_reports(hookcode_env):
    rt, sid, path = setup(hookcode_env, "src/f.py", "def f():\n    a = 1\n    b = 2\n")
    result = ok(
        invoke_tool(
            rt,
            "edit",
            {"filePath": str(path), "oldString": "a = 1", "newString": "a = 3"},
            session_id=sid,
        )
    )
    assert path.read_text() == "def f():\n    a = 3\n    b = 2\n"
    assert result.output == "Edit applied successfully."
    assert result.title == "src/f.py"
    meta = result.metadata
    assert meta["diagnostics"] == {}
    assert "-    a = 1" in meta["diff"] and "+    a = 3" in meta["diff"]
    assert meta["filediff"] == {
        "file": str(path),
        "before": "def f():\n    a = 1\n    b = 2\n",
        "after": "def f():\n    a = 3\n    b = 2\n",
        "additions": 1,
        "deletions": 1,
    }


def test_edit_relative_path_and_replace_all(hookcode_env):
    rt, sid, path = setup(hookcode_env, "f.txt", "foo bar foo\n")
    out = invoke_tool(
        rt, "edit", {"filePath": "f.txt", "oldString": "foo", "newString": "baz"}, session_id=sid
    )
    assert out.error_text == AMBIGUOUS
    ok(
        invoke_tool(
            rt,
            "edit",
            {"filePath": "f.txt", "oldString": "foo", "newString": "baz", "replaceAll": True},
            session_id=sid,
        )
    )
    assert path.read_text() == "baz bar baz\n"


def test_edit_not_found_leaves_the_file(hookcode_env):
    rt, sid, path = setup(hookcode_env)
    out = invoke_tool(
        rt, "edit", {"filePath": str(path), "oldString": "nope", "newString": "x"}, session_id=sid
    )
    assert out.error_text == NOT_FOUND
    assert path.read_text() == "hello world\n"


def test_crlf_file_stays_crlf(hookcode_env):
    rt, sid, path = setup(hookcode_env, "w.txt", b"one\r\ntwo\r\nthree\r\n")
    ok(
        invoke_tool(
            rt,
            "edit",
            {"filePath": str(path), "oldString": "one\ntwo", "newString": "1\n2\n2b"},
            session_id=sid,
        )
    )
    assert path.read_bytes() == b"1\r\n2\r\n2b\r\nthree\r\n"
    # CRLF in the arguments matches an LF file too, and is written as LF
    rt, sid, path = setup(hookcode_env, "u.txt", b"one\ntwo\n")
    ok(
        invoke_tool(
            rt,
            "edit",
            {"filePath": str(path), "oldString": "one\r\ntwo", "newString": "a\r\nb"},
            session_id=sid,
        )
    )
    assert path.read_bytes() == b"a\nb\n"


def test_mixed_line_endings_outside_the_edit_are_kept(hookcode_env):
    rt, sid, path = setup(hookcode_env, "m.txt", b"a\r\nb\nc\r\n")
    ok(
        invoke_tool(
            rt, "edit", {"filePath": str(path), "oldString": "c", "newString": "C"}, session_id=sid
        )
    )
    assert path.read_bytes() == b"a\r\nb\nC\r\n"


def test_bom_encoding_and_mode_are_kept(hookcode_env):
    data = codecs.BOM_UTF8 + "héllo wörld\n".encode()
    rt, sid, path = setup(hookcode_env, "bom.txt", data)
    path.chmod(0o751)
    ok(
        invoke_tool(
            rt,
            "edit",
            {"filePath": str(path), "oldString": "wörld", "newString": "wörld!"},
            session_id=sid,
        )
    )
    assert path.read_bytes() == codecs.BOM_UTF8 + "héllo wörld!\n".encode()
    assert path.stat().st_mode & 0o777 == 0o751
    # a UTF-16 file stays UTF-16
    data16 = codecs.BOM_UTF16_LE + "x = 1\r\n".encode("utf-16-le")
    rt, sid, path16 = setup(hookcode_env, "wide.txt", data16)
    ok(
        invoke_tool(
            rt, "edit", {"filePath": "wide.txt", "oldString": "1", "newString": "2"}, session_id=sid
        )
    )
    assert path16.read_bytes() == codecs.BOM_UTF16_LE + "x = 2\r\n".encode("utf-16-le")


def test_empty_old_string_creates_a_file(hookcode_env):
    rt = hookcode_env.runtime()
    sid = rt.create_session().id
    target = hookcode_env.project / "new" / "dir" / "made.txt"
    result = ok(
        invoke_tool(
            rt,
            "edit",
            {"filePath": str(target), "oldString": "", "newString": "made\r\nhere\n"},
            session_id=sid,
        )
    )
    assert target.read_bytes() == b"made\r\nhere\n"  # a new file gets newString as given
    assert result.metadata["filediff"]["before"] == ""
    assert result.metadata["filediff"]["additions"] == 2
    # the write counts as a read: a following edit needs no read
    ok(
        invoke_tool(
            rt,
            "edit",
            {"filePath": str(target), "oldString": "here", "newString": "there"},
            session_id=sid,
        )
    )
    assert target.read_bytes() == b"made\r\nthere\n"


def test_empty_old_string_overwrites_a_read_file_keeping_its_style(hookcode_env):
    rt, sid, path = setup(hookcode_env, "o.txt", b"old\r\ncontent\r\n")
    ok(
        invoke_tool(
            rt,
            "edit",
            {"filePath": str(path), "oldString": "", "newString": "new\nstuff\n"},
            session_id=sid,
        )
    )
    assert path.read_bytes() == b"new\r\nstuff\r\n"


def test_empty_old_string_over_an_unread_file_needs_a_read(hookcode_env):
    rt, sid, path = setup(hookcode_env, read=False)
    out = invoke_tool(
        rt, "edit", {"filePath": str(path), "oldString": "", "newString": "x"}, session_id=sid
    )
    assert out.error_text == (
        f"You must read file {path} before overwriting it. Use the Read tool first"
    )
    assert path.read_text() == "hello world\n"


def test_identical_strings(hookcode_env):
    rt, sid, path = setup(hookcode_env)
    for old in ("hello", ""):
        out = invoke_tool(
            rt,
            "edit",
            {"filePath": str(path), "oldString": old, "newString": old},
            session_id=sid,
        )
        assert out.error_text == IDENTICAL
        assert IDENTICAL == "No changes to apply: oldString and newString are identical."
    # checked before external_directory: no ask for a file outside the project
    outside = hookcode_env.root / "outside.txt"
    out = invoke_tool(rt, "edit", {"filePath": str(outside), "oldString": "a", "newString": "a"})
    assert out.error_text == IDENTICAL


def test_file_path_is_required(hookcode_env):
    rt = hookcode_env.runtime()
    out = invoke_tool(rt, "edit", {"filePath": "", "oldString": "a", "newString": "b"})
    assert out.error_text == "filePath is required"
    out = invoke_tool(rt, "edit", {"oldString": "a", "newString": "b"})
    assert out.error_text.startswith("The edit tool was called with invalid arguments: filePath:")


def test_missing_file(hookcode_env):
    rt = hookcode_env.runtime()
    target = hookcode_env.project / "missing.txt"
    out = invoke_tool(rt, "edit", {"filePath": "missing.txt", "oldString": "a", "newString": "b"})
    assert out.error_text == f"File {target} not found"
    assert not target.exists()


def test_directory(hookcode_env):
    rt = hookcode_env.runtime()
    (hookcode_env.project / "pkg").mkdir()
    for old in ("a", ""):
        out = invoke_tool(rt, "edit", {"filePath": "pkg", "oldString": old, "newString": "b"})
        assert out.error_text == f"Path is a directory, not a file: {hookcode_env.project / 'pkg'}"


def test_read_before_write_never_read(hookcode_env):
    rt, sid, path = setup(hookcode_env, read=False)
    out = invoke_tool(
        rt,
        "edit",
        {"filePath": str(path), "oldString": "hello", "newString": "bye"},
        session_id=sid,
    )
    assert out.error_text == (
        f"You must read file {path} before overwriting it. Use the Read tool first"
    )
    assert path.read_text() == "hello world\n"


def test_read_before_write_modified_after_read(hookcode_env):
    rt, sid, path = setup(hookcode_env, read=False)
    rt.file_times(sid).record(path, when=time.time() - 60)
    out = invoke_tool(
        rt,
        "edit",
        {"filePath": str(path), "oldString": "hello", "newString": "bye"},
        session_id=sid,
    )
    assert out.error_text.startswith(f"File {path} has been modified since it was last read.\n")
    assert out.error_text.endswith("Please read the file again before modifying it.")
    assert path.read_text() == "hello world\n"


def test_read_in_another_session_does_not_count(hookcode_env):
    rt, _sid, path = setup(hookcode_env)
    other = rt.create_session().id
    out = invoke_tool(
        rt,
        "edit",
        {"filePath": str(path), "oldString": "hello", "newString": "bye"},
        session_id=other,
    )
    assert out.error_text.startswith("You must read file")


def test_concurrent_edits_of_one_file_serialize(hookcode_env):
    text = "".join(f"marker{i}\n" for i in range(10))
    rt, sid, path = setup(hookcode_env, "many.txt", text)

    async def main():
        return await asyncio.gather(
            *(
                ainvoke_tool(
                    rt,
                    "edit",
                    {"filePath": str(path), "oldString": f"marker{i}\n", "newString": f"done{i}\n"},
                    session_id=sid,
                )
                for i in range(10)
            )
        )

    outcomes = asyncio.run(main())
    assert [o.error_text for o in outcomes] == [None] * 10
    assert path.read_text() == "".join(f"done{i}\n" for i in range(10))


def test_an_edit_cancelled_while_waiting_for_the_lock_does_not_keep_it(hookcode_env):
    rt, sid, path = setup(hookcode_env, "l.txt", "one two\n")

    def args(old: str, new: str) -> dict:
        return {"filePath": str(path), "oldString": old, "newString": new}

    async def main():
        async with rt.path_locks.hold(path):
            waiting = asyncio.ensure_future(
                ainvoke_tool(rt, "edit", args("one", "1"), session_id=sid)
            )
            await asyncio.sleep(0.05)
            waiting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await waiting
        return await asyncio.wait_for(
            ainvoke_tool(rt, "edit", args("two", "2"), session_id=sid), timeout=10
        )

    assert asyncio.run(main()).error is None
    assert path.read_text() == "one 2\n"


def test_edit_ask_patterns_are_worktree_relative(hookcode_env):
    project = hookcode_env.project
    (project / ".git").mkdir()
    sub = project / "sub"
    sub.mkdir()
    path = sub / "code.py"
    path.write_text("    value = 1\n")
    hookcode_env.write_config('[permission]\nedit = "ask"\n')
    front = hookcode_env.register(ReplyWith("once"), "front")
    rt = hookcode_env.runtime(cwd=sub)
    sid = rt.create_session().id
    rt.file_times(sid).record(path)
    result = ok(
        invoke_tool(
            rt,
            "edit",
            {"filePath": "code.py", "oldString": "1", "newString": "2"},
            session_id=sid,
        )
    )
    assert result.title == "sub/code.py"
    [request] = front.requests
    assert request.permission == "edit"
    assert request.patterns == ["sub/code.py"]
    assert request.always == ["*"]
    assert request.metadata["filepath"] == str(path)
    # the diff in the ask has its common indentation removed
    assert "-value = 1" in request.metadata["diff"]
    assert "+value = 2" in request.metadata["diff"]
    assert path.read_text() == "    value = 2\n"


def test_edit_rejected_leaves_the_file(hookcode_env):
    hookcode_env.write_config('[permission]\nedit = "ask"\n')
    rt, sid, path = setup(hookcode_env)  # headless: no front end, an ask is a reject
    out = invoke_tool(
        rt,
        "edit",
        {"filePath": str(path), "oldString": "hello", "newString": "bye"},
        session_id=sid,
    )
    assert isinstance(out.error, PermissionRejected)
    assert path.read_text() == "hello world\n"


def test_external_directory_is_asked_and_refused_headless(hookcode_env):
    outside = hookcode_env.root / "elsewhere"
    outside.mkdir()
    target = outside / "f.txt"
    target.write_text("abc\n")
    rt = hookcode_env.runtime()
    sid = rt.create_session().id
    rt.file_times(sid).record(target)
    out = invoke_tool(
        rt,
        "edit",
        {"filePath": str(target), "oldString": "abc", "newString": "xyz"},
        session_id=sid,
    )
    assert isinstance(out.error, PermissionRejected)
    assert target.read_text() == "abc\n"

    front = hookcode_env.register(ReplyWith("once"), "front")
    rt = hookcode_env.runtime()
    sid = rt.create_session().id
    rt.file_times(sid).record(target)
    ok(
        invoke_tool(
            rt,
            "edit",
            {"filePath": str(target), "oldString": "abc", "newString": "xyz"},
            session_id=sid,
        )
    )
    assert target.read_text() == "xyz\n"
    [request] = front.requests  # edit itself is allowed by the build agent's defaults
    assert request.permission == "external_directory"
    assert request.patterns == [f"{outside.as_posix()}/*"]


def test_file_edited_event(hookcode_env):
    rt, sid, path = setup(hookcode_env)
    events = []
    rt.events.subscribe(lambda e: events.append(e) if e.type == "file.edited" else None)
    ok(
        invoke_tool(
            rt,
            "edit",
            {"filePath": "f.txt", "oldString": "world", "newString": "there"},
            session_id=sid,
        )
    )
    assert [e.properties["file"] for e in events] == [str(path)]
    assert events[0].properties["session_id"] == sid


def test_edit_records_the_read_time(hookcode_env):
    rt, sid, path = setup(hookcode_env)
    before = rt.file_times(sid).last_read(path)
    ok(
        invoke_tool(
            rt,
            "edit",
            {"filePath": "f.txt", "oldString": "world", "newString": "there"},
            session_id=sid,
        )
    )
    after = rt.file_times(sid).last_read(path)
    assert after is not None and before is not None and after >= before
    assert os.stat(path).st_mtime <= after + 0.05


def test_edit_permission_deny_pattern(hookcode_env):
    hookcode_env.write_config('[permission]\nedit = { "*" = "allow", "secret/*" = "deny" }\n')
    rt, sid, path = setup(hookcode_env, "secret/key.txt", "k = 1\n")
    out = invoke_tool(
        rt, "edit", {"filePath": str(path), "oldString": "1", "newString": "2"}, session_id=sid
    )
    assert isinstance(out.error, PermissionDenied)
    assert out.error_text.startswith(
        "The user has specified a rule which prevents you from using this specific tool call."
    )
    assert "secret/*" in out.error_text
    assert path.read_text() == "k = 1\n"


def test_edit_is_hidden_by_an_edit_deny(hookcode_env):
    hookcode_env.write_config('[permission]\nedit = "deny"\n')
    rt = hookcode_env.runtime()
    names = {entry.name for entry in rt.registry.available("build")}
    assert not names & {"edit", "write", "multiedit"}
    rt = hookcode_env.runtime(HOOKCODE_CONFIG_CONTENT='{"permission": {"edit": "allow"}}')
    names = {entry.name for entry in rt.registry.available("build")}
    assert {"edit", "write", "multiedit"} <= names


def test_edit_schema_is_camel_case(hookcode_env):
    rt = hookcode_env.runtime()
    entry = rt.registry.get("edit")
    assert entry is not None
    schema = entry.tool.parameters
    assert list(schema["properties"]) == ["filePath", "oldString", "newString", "replaceAll"]
    assert schema["required"] == ["filePath", "oldString", "newString"]
    assert schema["properties"]["replaceAll"]["default"] is False
    assert entry.tool.permission_name == "edit"
    assert entry.tool.asks_permission is True


# ---------------------------------------------------------------------------------------------
# the cascade's fast paths (docs/benchmarks.md) propose exactly what trying every window would
# ---------------------------------------------------------------------------------------------


def test_anchor_blocks_close_at_the_first_last_anchor_two_lines_below():
    from hookcode_tool_edit.replace import block_anchor, context_aware

    # the "end" right below the first "start" is too close; the one two below closes it
    content = "start\nend\nmid\nend\nstart\nx\ny\nend"
    # two blocks; the first one's middle line "end" is 1/3 like "mid", the second's "x" not
    assert list(block_anchor(content, "start\nmid\nend")) == ["start\nend\nmid\nend"]
    assert list(context_aware(content, "start\nend\nmid\nend")) == ["start\nend\nmid\nend"]
    # a closing anchor that only occurs above the first anchor closes nothing
    content = "end\n" + "start\nbody\nother\n" * 50
    assert list(block_anchor(content, "start\nbody\nend")) == []
    assert list(context_aware(content, "start\nbody\nend")) == []


def test_block_anchor_ties_keep_the_first_best_block():
    from hookcode_tool_edit.replace import block_anchor

    # both blocks are perfect once trimmed: the first is proposed
    content = "s\n same\ne\ns\n  same\ne"
    assert list(block_anchor(content, "s\nsame\ne")) == ["s\n same\ne"]
    assert replace(content, "s\nsame\ne", "X") == "X\ns\n  same\ne"


def test_levenshtein_distances():
    from hookcode_tool_edit.replace import levenshtein

    assert levenshtein("kitten", "sitting") == 3
    assert levenshtein("", "abc") == 3
    assert levenshtein("héllo", "hello") == 1
    assert levenshtein("\U0001f600ab", "ab") == 1


def test_whitespace_normalized_blocks_skip_blank_lines_and_find_spans_in_any_line():
    from hookcode_tool_edit.replace import whitespace_normalized

    content = "a  b\n\n   \nc\nx = f(a,\tb) + g(a, b)\n"
    # a block's blank lines vanish in its normalised text
    assert list(whitespace_normalized(content, "a b\n \n\nc")) == ["a  b\n\n   \nc"]
    # every line holding the words yields its own span, in line order
    assert list(whitespace_normalized(content, "f(a, b)")) == ["f(a,\tb)"]
    assert list(whitespace_normalized("g(a,  b)\nf(a, b)", "(a, b)")) == ["(a,  b)", "(a, b)"]
    # a whitespace-only find proposes only blank lines (which replace() never takes)
    assert list(whitespace_normalized("a\n  \nb", " ")) == ["  "]


def test_indentation_flexible_with_a_blank_first_line():
    from hookcode_tool_edit.replace import indentation_flexible

    content = "x\n\n    if a:\n        b\n"
    assert list(indentation_flexible(content, "\nif a:\n    b")) == ["\n    if a:\n        b"]


def test_escape_normalized_backslash_newline_across_lines():
    from hookcode_tool_edit.replace import escape_normalized

    # the file has a line continuation: a block whose first line ends with a backslash
    content = "top\nx = 1 + \\\n2\n"
    assert list(escape_normalized(content, "x = 1 + \\\n2")) == ["x = 1 + \\\n2"]
    assert list(escape_normalized(content, "x = 1 + \n2")) == ["x = 1 + \\\n2"]


def test_trimmed_boundary_block_with_blank_first_line():
    from hookcode_tool_edit.replace import trimmed_boundary

    content = "  \nfoo  \n"
    assert list(trimmed_boundary(content, "\n foo\n")) == ["foo", "  \nfoo  \n"]
    assert list(trimmed_boundary("foo\n", "  foo  ")) == ["foo", "foo"]


def test_a_candidate_proposed_again_has_the_same_outcome():
    # "x" lines are ambiguous for every replacer that proposes them: still AMBIGUOUS
    with pytest.raises(ToolError) as info:
        replace("  x\n  x\n", " x ", "y")
    assert str(info.value) == AMBIGUOUS


# ---------------------------------------------------------------------------------------------
# protected paths and symlinks
# ---------------------------------------------------------------------------------------------


def test_protected_edit_is_refused_headless_even_where_edit_allows(hookcode_env):
    hookcode_env.write_config('[permission]\nedit = "allow"\n', where="global")
    rt, sid, path = setup(hookcode_env, ".git/config", "[core]\n\tbare = false\n")
    args = {"filePath": ".git/config", "oldString": "bare = false", "newString": "fsmonitor = x"}
    out = invoke_tool(rt, "edit", args, session_id=sid)
    assert isinstance(out.error, PermissionRejected)
    assert path.read_text() == "[core]\n\tbare = false\n"
    assert rt.refusals[-1].metadata["protected"] == {".git/config": ".git"}
    assert rt.refusals[-1].always == [".git/config"]


def test_protected_edit_with_a_front_end_or_a_naming_rule(hookcode_env):
    hookcode_env.write_config('[permission]\nedit = { ".hookcode/*" = "allow" }\n', where="global")
    rt, sid, path = setup(hookcode_env, ".hookcode/agents/x.md", "old\n")
    args = {"filePath": str(path), "oldString": "old", "newString": "new"}
    ok(invoke_tool(rt, "edit", args, session_id=sid))
    assert path.read_text() == "new\n"

    hookcode_env.write_config('[permission]\nedit = "allow"\n', where="global")
    front = hookcode_env.register(ReplyWith("once"), "front")
    rt, sid, path = setup(hookcode_env, ".envrc", "A=1\n")
    ok(
        invoke_tool(
            rt, "edit", {"filePath": ".envrc", "oldString": "1", "newString": "2"}, session_id=sid
        )
    )
    assert path.read_text() == "A=2\n"
    [request] = front.requests
    assert request.metadata["protected"] == {".envrc": ".envrc"}


def test_edit_through_a_symlink_keeps_the_link(hookcode_env):
    rt, sid, real = setup(hookcode_env, "real.txt", "one\n")
    link = hookcode_env.project / "link.txt"
    link.symlink_to("real.txt")
    ok(
        invoke_tool(
            rt,
            "edit",
            {"filePath": "link.txt", "oldString": "one", "newString": "two"},
            session_id=sid,
        )
    )
    assert link.is_symlink() and real.read_text() == "two\n"


def test_edit_creating_through_dangling_links(hookcode_env):
    project = hookcode_env.project
    outside = hookcode_env.root / "outside"
    outside.mkdir()
    (project / "dl").symlink_to(outside / "file")
    (project / "dd").symlink_to("missing-dir")
    hookcode_env.write_config('[permission]\nexternal_directory = "deny"\n', where="global")
    rt = hookcode_env.runtime()
    out = invoke_tool(rt, "edit", {"filePath": "dl", "oldString": "", "newString": "x"})
    assert isinstance(out.error, PermissionDenied)
    assert list(outside.iterdir()) == []
    out = invoke_tool(rt, "edit", {"filePath": "dd/f.txt", "oldString": "", "newString": "x"})
    assert out.error_text.startswith(f"Cannot write {project / 'dd/f.txt'}: {project / 'dd'} is")
    assert sorted(os.listdir(project)) == ["dd", "dl"]
