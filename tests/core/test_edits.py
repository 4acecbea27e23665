"""hookcode.edits: the file-edit transaction (``ctx.edit_files``) on its own: one ask with the
combined diff, all files or none, symlinks, protected paths, locks, sync tools."""

from __future__ import annotations

import asyncio
import codecs
import os
import re
import time
from pathlib import Path
from typing import Annotated, Any

import pytest
from hookcode import Reply, ToolCall, ToolContext, ToolError, hookimpl, tool
from hookcode.edits import EditTransaction, MissingFile, NotAFile, trim_diff
from hookcode.errors import PermissionRejected, ToolAborted
from hookcode.testing import ReplyWith, invoke_tool

ROOT = Path(__file__).resolve().parents[2]


def context(env: Any, **runtime: Any) -> ToolContext:
    rt = env.runtime(**runtime)
    return ToolContext(rt, ToolCall("test", {}, "c", rt.create_session().id))


def events_of(ctx: ToolContext) -> list[tuple[str, bool]]:
    """(file, deleted) of every ``file.edited`` event of ``ctx``'s session, as they come."""
    seen: list[tuple[str, bool]] = []

    def record(event: Any) -> None:
        if event.type == "file.edited":
            assert event.properties["session_id"] == ctx.session_id
            seen.append((event.properties["file"], event.properties["deleted"]))

    ctx.runtime.events.subscribe(record)
    return seen


def edit_requests(front: ReplyWith) -> list[Any]:
    return [r for r in front.requests if r.permission == "edit"]


# ---------------------------------------------------------------------------------------------
# one ask, all files
# ---------------------------------------------------------------------------------------------


def test_one_ask_with_the_combined_diff_of_every_file(hookcode_env: Any) -> None:
    project = hookcode_env.project
    (project / "a.py").write_text("    x = 1\n    y = 2\n")
    hookcode_env.write_config('[permission]\nedit = "ask"\n', where="global")
    front = hookcode_env.register(ReplyWith("once"), "front")
    ctx = context(hookcode_env)
    ctx.files.record(project / "a.py")
    events = events_of(ctx)

    async def main() -> EditTransaction:
        async with ctx.edit_files("a.py", "sub/b.txt") as tx:
            current = tx.read("a.py")
            tx.write("a.py", current.text.replace("1", "2"))
            assert not tx.read("sub/b.txt").exists
            tx.write("sub/b.txt", "new\n")
            assert (project / "a.py").read_text() == "    x = 1\n    y = 2\n"  # not yet
        return tx

    tx = asyncio.run(main())
    [request] = edit_requests(front)
    assert request.patterns == ["a.py", "sub/b.txt"]
    assert request.always == ["*"]
    a, b = project / "a.py", project / "sub" / "b.txt"
    assert request.metadata == {"filepath": f"{a}, {b}", "diff": tx.metadata["diff"]}
    # one diff per file, in order, each with its common indentation removed
    diff = request.metadata["diff"]
    assert diff.startswith(f"--- {a}\n+++ {a}\n")
    assert "-x = 1\n+x = 2\n y = 2\n" in diff
    assert diff.index(f"--- {a}") < diff.index(f"--- {b}\n+++ {b}\n") and "+new\n" in diff
    assert (a.read_text(), b.read_text()) == ("    x = 2\n    y = 2\n", "new\n")
    assert events == [(str(a), False), (str(b), False)]
    # what the transaction wrote counts as read: the next one needs no read
    assert ctx.files.last_read(b) is not None
    assert [(c.path, c.before.exists, c.after, c.stats) for c in tx.changes] == [
        (a, True, "    x = 2\n    y = 2\n", (1, 1)),
        (b, False, "new\n", (1, 0)),
    ]
    assert tx.written == [(a, False), (b, False)]


def test_the_tool_may_add_to_and_replace_the_asked_metadata(hookcode_env: Any) -> None:
    front = hookcode_env.register(ReplyWith("once"), "front")
    hookcode_env.write_config('[permission]\nedit = "ask"\n', where="global")
    ctx = context(hookcode_env)

    async def main() -> EditTransaction:
        async with ctx.edit_files("x.txt") as tx:
            tx.write("x.txt", "x\n")
            tx.metadata.update(filepath="x.txt", files=["x.txt"])
        return tx

    tx = asyncio.run(main())
    [request] = edit_requests(front)
    assert list(request.metadata) == ["filepath", "files", "diff"]
    assert request.metadata["filepath"] == "x.txt"
    assert "+x\n" in request.metadata["diff"]
    assert tx.metadata == request.metadata


def test_a_transaction_that_changes_nothing_asks_nothing(hookcode_env: Any) -> None:
    front = hookcode_env.register(ReplyWith("once"), "front")
    hookcode_env.write_config('[permission]\nedit = "ask"\n', where="global")
    (hookcode_env.project / "a.txt").write_text("a\n")
    ctx = context(hookcode_env)
    ctx.files.record(hookcode_env.project / "a.txt")

    async def main() -> None:
        async with ctx.edit_files("a.txt") as tx:
            assert tx.read("a.txt").text == "a\n"

    asyncio.run(main())
    assert front.requests == []


def test_a_refused_ask_writes_nothing(hookcode_env: Any) -> None:
    project = hookcode_env.project
    (project / "a.txt").write_text("a\n")
    hookcode_env.write_config('[permission]\nedit = "ask"\n', where="global")
    ctx = context(hookcode_env)  # headless: the ask is a reject
    ctx.files.record(project / "a.txt")
    events = events_of(ctx)

    async def main() -> None:
        async with ctx.edit_files("a.txt", "b.txt", "c.txt") as tx:
            tx.write("a.txt", "A\n")
            tx.write("b.txt", "B\n")
            tx.move("a.txt", "c.txt")

    with pytest.raises(PermissionRejected):
        asyncio.run(main())
    assert sorted(os.listdir(project)) == ["a.txt"]
    assert (project / "a.txt").read_text() == "a\n"
    assert events == []
    assert ctx.files.last_read(project / "b.txt") is None


def test_an_exception_inside_the_block_writes_and_asks_nothing(hookcode_env: Any) -> None:
    front = hookcode_env.register(ReplyWith("once"), "front")
    hookcode_env.write_config('[permission]\nedit = "ask"\n', where="global")
    ctx = context(hookcode_env)

    async def main() -> None:
        async with ctx.edit_files("a.txt", "b.txt") as tx:
            tx.write("a.txt", "A\n")
            tx.write("b.txt", "B\n")
            raise RuntimeError("changed my mind")

    with pytest.raises(RuntimeError, match="changed my mind"):
        asyncio.run(main())
    assert os.listdir(hookcode_env.project) == []
    assert front.requests == []


@pytest.mark.parametrize(
    ("setup", "operation", "message"),
    [
        (lambda p: (p / "b.txt").mkdir(), "write", "Path is a directory, not a file: {b}"),
        (lambda p: (p / "b.txt").write_text("b\n"), "write",
         "You must read file {b} before overwriting it. Use the Read tool first"),
        (lambda p: None, "delete", "File {b} not found"),
        (lambda p: (p / "b.txt").mkdir(), "delete", "Path is a directory, not a file: {b}"),
        (lambda p: None, "move", "File {b} not found"),
        (lambda p: (p / "dd").symlink_to("missing-dir"), "write-under-link",
         "Cannot write {p}/dd/b.txt: {p}/dd is a symbolic link to {p}/missing-dir, which does "
         "not exist"),
    ],
    ids=["directory", "not-read", "delete-missing", "delete-directory", "move-missing",
         "dangling-directory-link"],
)  # fmt: skip
def test_one_failing_check_writes_nothing(
    hookcode_env: Any, setup: Any, operation: str, message: str
) -> None:
    project = hookcode_env.project
    (project / "a.txt").write_text("a\n")
    setup(project)
    before = sorted(os.listdir(project))
    ctx = context(hookcode_env)
    ctx.files.record(project / "a.txt")
    b = project / "b.txt"

    async def main() -> None:
        async with ctx.edit_files("a.txt", "b.txt", "c.txt", "dd/b.txt") as tx:
            tx.write("a.txt", "A\n")  # passes its checks: not written either
            if operation == "write":
                tx.write("b.txt", "B\n")
            elif operation == "delete":
                tx.delete("b.txt")
            elif operation == "move":
                tx.move("b.txt", "c.txt")
            else:
                tx.write("dd/b.txt", "B\n")

    with pytest.raises(ToolError) as caught:
        asyncio.run(main())
    assert str(caught.value).startswith(message.format(b=b, p=project))
    assert sorted(os.listdir(project)) == before
    assert (project / "a.txt").read_text() == "a\n"


def test_the_check_errors_are_typed(hookcode_env: Any) -> None:
    (hookcode_env.project / "d").mkdir()
    ctx = context(hookcode_env)

    async def main(operation: str) -> None:
        async with ctx.edit_files("d", "gone.txt") as tx:
            if operation == "read":
                tx.read("d")
            else:
                tx.delete("gone.txt")

    with pytest.raises(NotAFile) as directory:
        asyncio.run(main("read"))
    assert directory.value.path == hookcode_env.project / "d" and directory.value.directory
    with pytest.raises(MissingFile) as missing:
        asyncio.run(main("delete"))
    assert missing.value.path == hookcode_env.project / "gone.txt"


def test_a_file_modified_since_it_was_read_is_refused(hookcode_env: Any) -> None:
    path = hookcode_env.project / "a.txt"
    path.write_text("a\n")
    ctx = context(hookcode_env)
    ctx.files.record(path, when=time.time() - 60)

    async def main() -> None:
        async with ctx.edit_files(path) as tx:
            tx.read(path)

    with pytest.raises(ToolError, match=re.escape(f"File {path} has been modified since")):
        asyncio.run(main())


def test_without_the_read_rule_nothing_needs_a_read_and_nothing_counts_as_read(
    hookcode_env: Any,
) -> None:
    path = hookcode_env.project / "a.txt"
    path.write_text("a\n")
    ctx = context(hookcode_env)

    async def main() -> None:
        async with ctx.edit_files(path, require_read=False) as tx:
            tx.write(path, tx.read(path).text.upper())

    asyncio.run(main())
    assert path.read_text() == "A\n"
    assert ctx.files.last_read(path) is None


def test_a_path_not_given_to_edit_files_is_a_programming_error(hookcode_env: Any) -> None:
    ctx = context(hookcode_env)

    async def main() -> None:
        async with ctx.edit_files("a.txt") as tx:
            tx.write("b.txt", "x")

    with pytest.raises(ValueError, match="is not one of the paths given to edit_files"):
        asyncio.run(main())
    assert os.listdir(hookcode_env.project) == []


# ---------------------------------------------------------------------------------------------
# what the operations see and keep
# ---------------------------------------------------------------------------------------------


def test_each_operation_sees_the_earlier_ones(hookcode_env: Any) -> None:
    project = hookcode_env.project
    (project / "gone.txt").write_text("bye\n")
    ctx = context(hookcode_env)
    ctx.files.record(project / "gone.txt")
    events = events_of(ctx)

    async def main() -> None:
        async with ctx.edit_files("new.txt", "moved.txt", "gone.txt") as tx:
            tx.write("new.txt", "one\n")
            assert tx.read("new.txt").text == "one\n"
            tx.move("new.txt", "moved.txt", "two\n")
            assert not tx.read("new.txt").exists
            assert tx.read("moved.txt").text == "two\n"
            tx.delete("gone.txt")
            assert not tx.read("gone.txt").exists
            with pytest.raises(MissingFile):
                tx.delete("gone.txt")

    asyncio.run(main())
    assert sorted(os.listdir(project)) == ["moved.txt"]
    assert (project / "moved.txt").read_text() == "two\n"
    assert events == [
        (str(project / "moved.txt"), False),
        (str(project / "gone.txt"), True),
    ]


def test_encoding_bom_line_endings_and_mode_are_kept(hookcode_env: Any) -> None:
    project = hookcode_env.project
    source = project / "w.txt"
    source.write_bytes(codecs.BOM_UTF16_LE + "one\r\ntwo\r\n".encode("utf-16-le"))
    source.chmod(0o750)
    mixed = project / "mixed.txt"
    mixed.write_bytes(b"a\r\nb\nc\xff\r\n")
    ctx = context(hookcode_env)
    for path in (source, mixed):
        ctx.files.record(path)

    async def main() -> None:
        async with ctx.edit_files(source, "moved.txt", mixed) as tx:
            current = tx.read(source)
            assert (current.encoding, current.newline, current.mode) == ("utf-16-le", "\r\n", 0o750)
            tx.move(source, "moved.txt", current.text.replace("two", "deux"))
            text = tx.read(mixed).text
            tx.write(mixed, text.replace("b", "B"))  # written as given: mixed endings stay

    asyncio.run(main())
    moved = project / "moved.txt"
    assert moved.read_bytes() == codecs.BOM_UTF16_LE + "one\r\ndeux\r\n".encode("utf-16-le")
    assert moved.stat().st_mode & 0o777 == 0o750
    assert mixed.read_bytes() == b"a\r\nB\nc\xff\r\n"


# ---------------------------------------------------------------------------------------------
# symlinks
# ---------------------------------------------------------------------------------------------


def test_writes_go_through_links_and_deletes_remove_the_link(hookcode_env: Any) -> None:
    project = hookcode_env.project
    (project / "real.txt").write_text("real\n")
    (project / "link.txt").symlink_to("real.txt")
    (project / "other.txt").write_text("other\n")
    (project / "gone-link").symlink_to("other.txt")
    (project / "dangling").symlink_to("made.txt")
    ctx = context(hookcode_env)
    for name in ("real.txt", "other.txt"):
        ctx.files.record(project / name)
    events = events_of(ctx)

    async def main() -> None:
        async with ctx.edit_files("link.txt", "gone-link", "dangling") as tx:
            assert tx.read("link.txt").path == project / "real.txt"
            tx.write("link.txt", "through\n")
            tx.delete("gone-link")
            tx.write("dangling", "made\n")

    asyncio.run(main())
    assert (project / "link.txt").is_symlink() and (project / "real.txt").read_text() == "through\n"
    assert not os.path.lexists(project / "gone-link")
    assert (project / "other.txt").read_text() == "other\n"
    assert (project / "dangling").is_symlink() and (project / "made.txt").read_text() == "made\n"
    assert events == [
        (str(project / "link.txt"), False),
        (str(project / "dangling"), False),
        (str(project / "gone-link"), True),
    ]


def test_a_link_changed_while_the_ask_waits_writes_nothing(hookcode_env: Any) -> None:
    project = hookcode_env.project
    (project / "sub").mkdir()
    elsewhere = hookcode_env.root / "elsewhere"
    elsewhere.mkdir()

    class SwapThenApprove:
        @hookimpl
        def permission_prompt(self, request: Any) -> Reply:
            (project / "sub").rename(project / "moved-away")
            (project / "sub").symlink_to(elsewhere)
            return Reply("once")

    hookcode_env.write_config('[permission]\nedit = "ask"\n', where="global")
    hookcode_env.register(SwapThenApprove(), "front")
    ctx = context(hookcode_env)

    async def main() -> None:
        async with ctx.edit_files("a.txt", "sub/new.txt") as tx:
            tx.write("a.txt", "a\n")
            tx.write("sub/new.txt", "new\n")

    with pytest.raises(ToolError) as caught:
        asyncio.run(main())
    assert str(caught.value).startswith(f"Not written: {project / 'sub/new.txt'} now leads to")
    assert list(elsewhere.iterdir()) == []
    assert not (project / "a.txt").exists()


def test_an_abort_while_the_ask_waits_writes_nothing(hookcode_env: Any) -> None:
    hookcode_env.write_config('[permission]\nedit = "ask"\n', where="global")
    ctx: ToolContext

    class AbortThenApprove:
        @hookimpl
        def permission_prompt(self, request: Any) -> Reply:
            ctx.abort.abort("stop")
            return Reply("once")

    hookcode_env.register(AbortThenApprove(), "front")
    ctx = context(hookcode_env)

    async def main() -> None:
        async with ctx.edit_files("a.txt") as tx:
            tx.write("a.txt", "a\n")

    with pytest.raises(ToolAborted):
        asyncio.run(main())
    assert not (hookcode_env.project / "a.txt").exists()


def test_outside_files_ask_external_directory_once_per_directory(hookcode_env: Any) -> None:
    outside = hookcode_env.root / "outside"
    outside.mkdir()
    front = hookcode_env.register(ReplyWith("once"), "front")
    ctx = context(hookcode_env)

    async def main() -> None:
        async with ctx.edit_files(outside / "a.txt", outside / "b.txt", "in.txt") as tx:
            tx.write(outside / "a.txt", "a")
            tx.write(outside / "b.txt", "b")

    asyncio.run(main())
    external = [r for r in front.requests if r.permission == "external_directory"]
    assert [r.patterns for r in external] == [[f"{outside.as_posix()}/*"]]
    assert sorted(os.listdir(outside)) == ["a.txt", "b.txt"]


def test_a_refused_external_directory_never_runs_the_block(hookcode_env: Any) -> None:
    outside = hookcode_env.root / "outside"
    ctx = context(hookcode_env)  # headless: external_directory asks, so it is refused
    ran = []

    async def main() -> None:
        async with ctx.edit_files(outside / "a.txt"):
            ran.append(True)

    with pytest.raises(PermissionRejected):
        asyncio.run(main())
    assert ran == [] and not outside.exists()


# ---------------------------------------------------------------------------------------------
# protected paths
# ---------------------------------------------------------------------------------------------


def test_protected_paths_mark_the_one_ask(hookcode_env: Any) -> None:
    hookcode_env.write_config('[permission]\nedit = "allow"\n', where="global")
    front = hookcode_env.register(ReplyWith("once"), "front")
    ctx = context(hookcode_env)

    async def main() -> None:
        async with ctx.edit_files("notes.txt", ".envrc") as tx:
            tx.write("notes.txt", "n\n")
            tx.write(".envrc", "export A=1\n")

    asyncio.run(main())
    [request] = edit_requests(front)
    assert request.patterns == ["notes.txt", ".envrc"]
    assert request.metadata["protected"] == {".envrc": ".envrc"}
    assert request.always == ["notes.txt", ".envrc"]  # never `*` for a protected path
    assert (hookcode_env.project / ".envrc").read_text() == "export A=1\n"


def test_a_protected_path_is_refused_headless_even_where_edit_allows(hookcode_env: Any) -> None:
    hookcode_env.write_config('[permission]\nedit = "allow"\n', where="global")
    project = hookcode_env.project
    (project / "cfg").symlink_to(".git")
    (project / ".git").mkdir()
    ctx = context(hookcode_env)

    async def main() -> None:
        async with ctx.edit_files("plain.txt", "cfg/config") as tx:
            tx.write("plain.txt", "p\n")
            tx.write("cfg/config", "[core]\n")

    with pytest.raises(PermissionRejected):
        asyncio.run(main())
    assert ctx.runtime.refusals[-1].metadata["protected"] == {".git/config": ".git"}
    assert not (project / "plain.txt").exists() and not (project / ".git" / "config").exists()


# ---------------------------------------------------------------------------------------------
# concurrency
# ---------------------------------------------------------------------------------------------


def test_concurrent_transactions_on_one_path_run_one_after_the_other(hookcode_env: Any) -> None:
    path = hookcode_env.project / "count.txt"
    path.write_text("0")
    rt = hookcode_env.runtime()
    sid = rt.create_session().id
    rt.file_times(sid).record(path)
    order: list[str] = []

    async def increment(name: str, via: str) -> None:
        ctx = ToolContext(rt, ToolCall("test", {}, name, sid))
        async with ctx.edit_files(via) as tx:
            order.append(f"{name} in")
            value = int(tx.read(via).text)
            await asyncio.sleep(0.05)  # another transaction would read the same value here
            tx.write(via, str(value + 1))
        order.append(f"{name} out")

    async def main() -> None:
        (hookcode_env.project / "alias.txt").symlink_to("count.txt")
        await asyncio.gather(
            *(increment(f"t{i}", "alias.txt" if i % 2 else "count.txt") for i in range(4))
        )

    asyncio.run(main())
    assert path.read_text() == "4"  # no increment lost: each read what the previous wrote
    assert order == [step for i in range(4) for step in (f"t{i} in", f"t{i} out")]


def test_transactions_on_overlapping_sets_of_paths_do_not_deadlock(hookcode_env: Any) -> None:
    ctx = context(hookcode_env)

    async def both(first: str, second: str) -> None:
        async with ctx.edit_files(first, second) as tx:
            await asyncio.sleep(0.01)
            tx.write(first, first)
            tx.write(second, second)

    async def main() -> None:
        await asyncio.wait_for(
            asyncio.gather(*(both("a", "b") if i % 2 else both("b", "a") for i in range(6))), 10
        )

    asyncio.run(main())
    assert (hookcode_env.project / "a").read_text() == "a"


# ---------------------------------------------------------------------------------------------
# tools: a sync tool, and the tool-pack guide's example as written
# ---------------------------------------------------------------------------------------------


@tool(name="append_line", permission="edit", asks_permission=True)
def append_line(ctx: ToolContext, path: Annotated[str, "File"], line: str) -> str:
    """Append a line to a file (a sync tool: ``with``, not ``async with``)."""
    with ctx.edit_files(path) as tx:
        current = tx.read(path)
        tx.write(path, current.text + line + current.newline)
    return tx.metadata["diff"]


class SyncPack:
    @hookimpl
    def register_tools(self, register: Any) -> None:
        register(append_line)


def test_a_sync_tool_uses_the_same_transaction(hookcode_env: Any) -> None:
    path = hookcode_env.project / "log.txt"
    path.write_bytes(b"one\r\n")
    hookcode_env.register(SyncPack(), "sync_pack")
    hookcode_env.write_config('[permission]\nedit = "ask"\n', where="global")
    front = hookcode_env.register(ReplyWith("once"), "front")
    rt = hookcode_env.runtime()
    sid = rt.create_session().id
    out = invoke_tool(rt, "append_line", {"path": "log.txt", "line": "two"}, session_id=sid)
    assert (
        out.error_text
        == f"You must read file {path} before overwriting it. Use the Read tool first"
    )
    rt.file_times(sid).record(path)
    out = invoke_tool(rt, "append_line", {"path": "log.txt", "line": "two"}, session_id=sid)
    assert out.error is None, out.error_text
    assert "+two\n" in out.result.output
    assert path.read_bytes() == b"one\r\ntwo\r\n"
    [request] = edit_requests(front)
    assert request.patterns == ["log.txt"]


def guide_example() -> str:
    """The Python block of docs/tool-packs.md's "Changing files" section."""
    text = (ROOT / "docs" / "tool-packs.md").read_text()
    section = text[text.index("### Changing files") :]
    return section[section.index("```python\n") + 10 : section.index("```\n", 10)]


def test_the_tool_pack_guides_example_works_as_written(hookcode_env: Any) -> None:
    namespace: dict[str, Any] = {}
    exec(compile(guide_example(), "tool-packs.md", "exec"), namespace)

    class GuidePack:
        @hookimpl
        def register_tools(self, register: Any) -> None:
            register(namespace["shout"])

    path = hookcode_env.project / "a.txt"
    path.write_text("    hello\n")
    hookcode_env.register(GuidePack(), "guide_pack")
    rt = hookcode_env.runtime()
    sid = rt.create_session().id
    assert invoke_tool(rt, "shout", {"filePath": "a.txt"}, session_id=sid).error_text.startswith(
        "You must read file"
    )
    ok = invoke_tool(rt, "read", {"filePath": "a.txt"}, session_id=sid)
    assert ok.error is None, ok.error_text
    out = invoke_tool(rt, "shout", {"filePath": "a.txt"}, session_id=sid)
    assert out.error is None, out.error_text
    assert path.read_text() == "    HELLO\n"
    assert out.result.title == "a.txt"
    assert "-hello\n+HELLO\n" in out.result.metadata["diff"]
    missing = invoke_tool(rt, "shout", {"filePath": "nope.txt"}, session_id=sid)
    assert missing.error_text == f"File {hookcode_env.project / 'nope.txt'} not found"


def test_trim_diff_removes_the_common_indentation_of_body_lines() -> None:
    patch = "--- f\n+++ f\n@@ -1,2 +1,2 @@\n-    a = 1\n+    a = 3\n     b = 2\n \n"
    assert trim_diff(patch) == "--- f\n+++ f\n@@ -1,2 +1,2 @@\n-a = 1\n+a = 3\n b = 2\n \n"
    assert trim_diff("--- f\n+++ f\n-x\n") == "--- f\n+++ f\n-x\n"
