"""The read tool (reference/tools.md §3; permissions.md §7 for external_directory)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import hookcode_tool_read
import pytest
from hookcode.errors import PermissionRejected
from hookcode.testing import ReplyWith, invoke_tool

REJECTED = "The user rejected permission to use this specific tool call."


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_bytes(data.encode("utf-8"))
    return path


def runtime(hookcode_env: Any, *, approve: ReplyWith | None = None) -> Any:
    if approve is not None:
        hookcode_env.register(approve, "test_reply")
    return hookcode_env.runtime()


def call(rt: Any, file_path: str | Path, **args: Any) -> Any:
    return invoke_tool(rt, "read", {"filePath": str(file_path), **args})


def ok(rt: Any, file_path: str | Path, **args: Any) -> Any:
    outcome = call(rt, file_path, **args)
    assert outcome.ok, outcome.error_text
    return outcome.result


def error(rt: Any, file_path: str | Path, **args: Any) -> str:
    outcome = call(rt, file_path, **args)
    assert not outcome.ok, outcome.result
    return outcome.error_text


def file_output(path: Path, numbered: list[str], footer: str) -> str:
    return (f"<path>{path}</path>\n<type>file</type>\n<content>\n" + "\n".join(numbered)
            + f"\n\n{footer}\n</content>")


def expected_text(data: bytes, start: int = 1, limit: int = 2000) -> tuple[list[str], str]:
    """A straightforward (non-streaming) model of the text mode: numbered lines and footer."""
    raw = data.split(b"\n")
    if raw and raw[-1] == b"":
        raw.pop()
    total = len(raw)
    kept: list[str] = []
    size = 0
    capped = False
    for line in raw[start - 1 : start - 1 + limit]:
        if line.endswith(b"\r"):
            line = line[:-1]
        text = line.decode("utf-8", "replace")
        if len(text) > 2000:
            text = text[:2000] + "... (line truncated to 2000 chars)"
        cost = len(text.encode()) + (1 if kept else 0)
        if size + cost > 51200:
            capped = True
            break
        kept.append(text)
        size += cost
    last = start + len(kept) - 1
    if capped:
        footer = f"(Output capped at 50 KB. Showing lines {start}-{last}. Use offset={last + 1} to continue.)"
    elif total > last:
        footer = f"(Showing lines {start}-{last} of {total}. Use offset={last + 1} to continue.)"
    else:
        footer = f"(End of file - total {total} lines)"
    return [f"{start + i}: {t}" for i, t in enumerate(kept)], footer


@pytest.fixture
def rt(hookcode_env: Any) -> Any:
    """A runtime with no front end: asks are rejected (headless)."""
    return hookcode_env.runtime()


# ---------------------------------------------------------------------------------------------
# registration and schema
# ---------------------------------------------------------------------------------------------


def test_registered_with_camel_case_parameters(rt: Any) -> None:
    entry = rt.registry.resolve("read", "build", None, None)
    assert entry.tool.asks_permission is True
    params = entry.tool.parameters
    assert set(params["properties"]) == {"filePath", "offset", "limit"}
    assert params["required"] == ["filePath"]
    registered: list[Any] = []
    hookcode_tool_read.register_tools(lambda *tools: registered.extend(tools))
    assert registered == [hookcode_tool_read.read]


def test_module_imports_only_stdlib_and_hookcode() -> None:
    code = (
        "import sys; before = set(sys.modules); import hookcode_tool_read; "
        "new = set(sys.modules) - before; "
        "bad = sorted(m for m in new if m.split('.')[0] in ('pydantic', 'typer', 'rich')); "
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------------------------------------
# text
# ---------------------------------------------------------------------------------------------


def test_text_output_format_title_and_metadata(hookcode_env: Any, rt: Any) -> None:
    path = write(hookcode_env.project / "src" / "a.txt", "alpha\nbeta\ngamma\n")
    result = ok(rt, "src/a.txt")
    assert result.output == (
        f"<path>{path}</path>\n<type>file</type>\n<content>\n"
        "1: alpha\n2: beta\n3: gamma\n\n(End of file - total 3 lines)\n</content>"
    )
    assert result.title == "src/a.txt"
    assert result.metadata == {"preview": "alpha\nbeta\ngamma", "truncated": False, "loaded": []}
    assert result.attachments == []


def test_title_is_relative_to_the_worktree(hookcode_env: Any) -> None:
    (hookcode_env.project / ".git").mkdir()
    sub = hookcode_env.project / "pkg"
    write(sub / "m.py", "x = 1\n")
    rt = hookcode_env.runtime(cwd=sub)
    result = ok(rt, "m.py")  # relative to the working directory
    assert result.title == "pkg/m.py"
    assert f"<path>{sub / 'm.py'}</path>" in result.output


def test_crlf_and_last_line_without_newline(hookcode_env: Any, rt: Any) -> None:
    path = write(hookcode_env.project / "crlf.txt", b"one\r\ntwo\r\n\r\nlast")
    result = ok(rt, path)
    assert result.output == file_output(
        path, ["1: one", "2: two", "3: ", "4: last"], "(End of file - total 4 lines)"
    )
    assert result.metadata["preview"] == "one\ntwo\n\nlast"


def test_empty_file(hookcode_env: Any, rt: Any) -> None:
    path = write(hookcode_env.project / "empty.txt", b"")
    result = ok(rt, path)
    assert result.output == (
        f"<path>{path}</path>\n<type>file</type>\n<content>\n\n\n"
        "(End of file - total 0 lines)\n</content>"
    )
    assert result.metadata["truncated"] is False
    assert error(rt, path, offset=2) == "Offset 2 is out of range for this file (0 lines)"


def test_offset_and_limit_paging(hookcode_env: Any, rt: Any) -> None:
    path = write(hookcode_env.project / "ten.txt", "".join(f"line {i}\n" for i in range(1, 11)))
    result = ok(rt, path, offset=3, limit=4)
    assert result.output == file_output(
        path, [f"{i}: line {i}" for i in range(3, 7)],
        "(Showing lines 3-6 of 10. Use offset=7 to continue.)",
    )
    assert result.metadata["truncated"] is True
    assert result.metadata["preview"] == "line 3\nline 4\nline 5\nline 6"
    tail = ok(rt, path, offset=8, limit=3)
    assert tail.output == file_output(
        path, [f"{i}: line {i}" for i in range(8, 11)], "(End of file - total 10 lines)"
    )
    assert tail.metadata["truncated"] is False
    last = ok(rt, path, offset=10)
    assert "10: line 10\n\n(End of file - total 10 lines)" in last.output


def test_default_limit_is_2000_lines_and_pipeline_leaves_read_alone(
    hookcode_env: Any, rt: Any
) -> None:
    path = write(hookcode_env.project / "long.txt", "".join(f"{i}\n" for i in range(1, 2501)))
    result = ok(rt, path)
    lines = result.output.split("\n")
    assert lines[3] == "1: 1"
    assert "2000: 2000" in lines
    assert "2001: 2001" not in lines
    assert result.output.endswith(
        "\n\n(Showing lines 1-2000 of 2500. Use offset=2001 to continue.)\n</content>"
    )
    assert result.metadata["truncated"] is True
    assert "outputPath" not in result.metadata  # the truncation layer did not cut it
    assert len(result.metadata["preview"].split("\n")) == 20


def test_offset_errors(hookcode_env: Any, rt: Any) -> None:
    path = write(hookcode_env.project / "three.txt", "a\nb\nc\n")
    assert error(rt, path, offset=0) == "offset must be greater than or equal to 1"
    assert error(rt, path, offset=-5) == "offset must be greater than or equal to 1"
    assert error(rt, path, offset=4) == "Offset 4 is out of range for this file (3 lines)"
    assert error(rt, path, offset=100) == "Offset 100 is out of range for this file (3 lines)"
    assert error(rt, path, limit=0) == "limit must be greater than or equal to 1"


def test_long_lines_are_cut_at_2000_characters(hookcode_env: Any, rt: Any) -> None:
    suffix = "... (line truncated to 2000 chars)"
    lines = ["a" * 2500, "é" * 3000, "\U0001f600" * 2001, "b" * 2000, "ü" * 2000 + "\r"]
    path = write(hookcode_env.project / "wide.txt", "\n".join(lines) + "\n")
    result = ok(rt, path)
    assert result.output == file_output(
        path,
        [f"1: {'a' * 2000}{suffix}", f"2: {'é' * 2000}{suffix}",
         f"3: {chr(0x1F600) * 2000}{suffix}", f"4: {'b' * 2000}", f"5: {'ü' * 2000}"],
        "(End of file - total 5 lines)",
    )


def test_a_huge_single_line_is_cut_without_loading_it(hookcode_env: Any, rt: Any) -> None:
    path = write(hookcode_env.project / "one.txt", b"x" * (5 << 20) + b"\nend\n")
    result = ok(rt, path)
    assert result.output == file_output(
        path, [f"1: {'x' * 2000}... (line truncated to 2000 chars)", "2: end"],
        "(End of file - total 2 lines)",
    )


def test_output_capped_at_50_kb(hookcode_env: Any, rt: Any) -> None:
    data = "".join(f"{i:04d}" + "x" * 96 + "\n" for i in range(1, 1001)).encode()
    path = write(hookcode_env.project / "big.txt", data)
    # 100 bytes per line + 1 per separator: 100 + 101 * (n - 1) <= 51200 -> n = 506
    result = ok(rt, path)
    numbered, footer = expected_text(data)
    assert len(numbered) == 506
    assert footer == "(Output capped at 50 KB. Showing lines 1-506. Use offset=507 to continue.)"
    assert result.output == file_output(path, numbered, footer)
    assert result.metadata["truncated"] is True
    again = ok(rt, path, offset=507)
    assert again.output.startswith(f"<path>{path}</path>\n<type>file</type>\n<content>\n507: 0507")
    # the cap counts UTF-8 bytes, not characters
    wide = ("é" * 1000 + "\n") * 40  # 2000 bytes per line: 2000 + 2001 * (n - 1) <= 51200
    path2 = write(hookcode_env.project / "wide.txt", wide)
    assert "Showing lines 1-25. Use offset=26" in ok(rt, path2).output


def test_invalid_utf8_is_replaced(hookcode_env: Any, rt: Any) -> None:
    path = write(hookcode_env.project / "latin1.txt", "café\n".encode("latin-1") + b"ok\n")
    result = ok(rt, path)
    assert "1: caf\ufffd\n2: ok\n" in result.output


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 7, 64])
def test_streaming_matches_a_plain_split_across_chunk_boundaries(
    hookcode_env: Any, rt: Any, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(hookcode_tool_read, "CHUNK_SIZE", chunk)
    data = b"first\r\n\nsecond line\r\n" + "é\U0001f600x\n".encode() * 5 + b"\r\nno newline"
    path = write(hookcode_env.project / "mixed.txt", data)
    total = len(data.split(b"\n"))
    for start in range(1, total + 1):
        for limit in (1, 2, 3, 2000):
            numbered, footer = expected_text(data, start, limit)
            result = ok(rt, path, offset=start, limit=limit)
            assert result.output == file_output(path, numbered, footer), (start, limit)
    assert error(rt, path, offset=total + 1) == (
        f"Offset {total + 1} is out of range for this file ({total} lines)"
    )


def test_read_time_is_recorded_for_text_files_only(hookcode_env: Any, rt: Any) -> None:
    text = write(hookcode_env.project / "t.txt", "x\n")
    image = write(hookcode_env.project / "i.png", b"\x89PNG\r\n\x1a\n")
    session = rt.create_session(title="s").id
    before = time.time()
    assert invoke_tool(rt, "read", {"filePath": str(text)}, session_id=session).ok
    assert invoke_tool(rt, "read", {"filePath": str(image)}, session_id=session).ok
    assert invoke_tool(rt, "read", {"filePath": str(hookcode_env.project)},
                       session_id=session).ok
    files = rt.file_times(session)
    recorded = files.last_read(text)
    assert recorded is not None and recorded >= before - 0.01
    assert files.last_read(image) is None
    assert files.last_read(hookcode_env.project) is None
    files.assert_fresh(text)  # the read-before-write rule is satisfied
    assert rt.file_times(rt.create_session(title="other").id).last_read(text) is None


# ---------------------------------------------------------------------------------------------
# missing paths
# ---------------------------------------------------------------------------------------------


def test_missing_file_suggests_up_to_three_names(hookcode_env: Any, rt: Any) -> None:
    project = hookcode_env.project
    for name in ("config.py", "config_test.py", "CONFIG.md", "my_config.toml", "other.txt"):
        write(project / name, "")
    missing = project / "config"
    assert error(rt, "config") == (
        f"File not found: {missing}\n\nDid you mean one of these?\n"
        f"{project / 'CONFIG.md'}\n{project / 'config.py'}\n{project / 'config_test.py'}"
    )
    # an entry contained in the missing name counts too
    assert error(rt, "other.txt.bak") == (
        f"File not found: {project / 'other.txt.bak'}\n\nDid you mean one of these?\n"
        f"{project / 'other.txt'}"
    )


def test_missing_file_without_suggestions(hookcode_env: Any, rt: Any) -> None:
    project = hookcode_env.project
    assert error(rt, "nothing.txt") == f"File not found: {project / 'nothing.txt'}"
    assert error(rt, "no/such/dir/x.txt") == f"File not found: {project / 'no/such/dir/x.txt'}"


# ---------------------------------------------------------------------------------------------
# directories
# ---------------------------------------------------------------------------------------------


def test_directory_listing_and_paging(hookcode_env: Any, rt: Any) -> None:
    root = hookcode_env.project / "tree"
    write(root / "b.txt", "")
    write(root / "A.txt", "")
    write(root / "sub" / "x", "")
    write(root / ".hidden", "")
    (root / "link").symlink_to(root / "sub")
    (root / "filelink").symlink_to(root / "b.txt")
    result = ok(rt, "tree")
    assert result.output == (
        f"<path>{root}</path>\n<type>directory</type>\n<entries>\n"
        ".hidden\nA.txt\nb.txt\nfilelink\nlink/\nsub/\n\n(6 entries)\n</entries>"
    )
    assert result.title == "tree"
    assert result.metadata == {
        "preview": ".hidden\nA.txt\nb.txt\nfilelink\nlink/\nsub/", "truncated": False, "loaded": [],
    }
    page = ok(rt, root, offset=2, limit=3)
    assert page.output == (
        f"<path>{root}</path>\n<type>directory</type>\n<entries>\n"
        "A.txt\nb.txt\nfilelink\n\n"
        "(Showing 3 of 6 entries. Use 'offset' parameter to read beyond entry 5)\n</entries>"
    )
    assert page.metadata["truncated"] is True
    rest = ok(rt, root, offset=5)
    assert rest.output.endswith("<entries>\nlink/\nsub/\n\n(6 entries)\n</entries>")


def test_empty_directory(hookcode_env: Any, rt: Any) -> None:
    empty = hookcode_env.project / "empty"
    empty.mkdir()
    assert ok(rt, empty).output == (
        f"<path>{empty}</path>\n<type>directory</type>\n<entries>\n\n(0 entries)\n</entries>"
    )


# ---------------------------------------------------------------------------------------------
# images, PDFs, binaries
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "mime", "message"),
    [
        ("pic.png", "image/png", "Image read successfully"),
        ("photo.JPG", "image/jpeg", "Image read successfully"),
        ("anim.gif", "image/gif", "Image read successfully"),
        ("doc.pdf", "application/pdf", "PDF read successfully"),
    ],
)
def test_images_and_pdfs_are_attachments(
    hookcode_env: Any, rt: Any, name: str, mime: str, message: str
) -> None:
    data = b"\x89PNG\r\n\x1a\n\x00\x00binary\x00" if mime != "application/pdf" else b"%PDF-1.4\n\x00"
    path = write(hookcode_env.project / name, data)
    result = ok(rt, path)
    assert result.output == message
    assert result.title == name
    assert result.metadata["truncated"] is False
    assert len(result.attachments) == 1
    attachment = result.attachments[0]
    assert attachment.mime == mime
    assert attachment.url == f"data:{mime};base64," + base64.b64encode(data).decode()


def test_svg_and_fbs_are_read_as_text(hookcode_env: Any, rt: Any) -> None:
    svg = write(hookcode_env.project / "icon.svg", '<svg xmlns="http://www.w3.org/2000/svg"/>\n')
    result = ok(rt, svg)
    assert result.attachments == []
    assert "1: <svg" in result.output
    fbs = write(hookcode_env.project / "schema.fbs", "table Monster { hp: short; }\n")
    assert "1: table Monster" in ok(rt, fbs).output


@pytest.mark.parametrize("name", ["a.zip", "lib.so", "x.PYC", "data.dat", "m.wasm", "t.tar.gz"])
def test_binary_by_extension(hookcode_env: Any, rt: Any, name: str) -> None:
    path = write(hookcode_env.project / name, "plain text really\n")
    assert error(rt, path) == f"Cannot read binary file: {path}"


def test_binary_by_nul_byte_in_the_first_4096_bytes(hookcode_env: Any, rt: Any) -> None:
    path = write(hookcode_env.project / "nul.txt", b"a" * 4000 + b"\x00" + b"b" * 100)
    assert error(rt, path) == f"Cannot read binary file: {path}"
    late = write(hookcode_env.project / "late.txt", b"a" * 4096 + b"\x00\n")
    assert ok(rt, late).output.startswith(f"<path>{late}</path>")


def test_binary_by_control_characters(hookcode_env: Any, rt: Any) -> None:
    many = write(hookcode_env.project / "ctl.txt", b"\x01\x02\x1f" * 40 + b"a" * 200)  # 37.5 %
    assert error(rt, many) == f"Cannot read binary file: {many}"
    few = write(hookcode_env.project / "few.txt", b"\x01\x02\x1f" * 30 + b"a" * 300)  # 23 %
    assert ok(rt, few).metadata["truncated"] is False
    # tabs, newlines, carriage returns and form feeds are not control characters here
    ws = write(hookcode_env.project / "ws.txt", b"\t\n\r\x0b\x0c" * 100)
    assert ok(rt, ws).output.startswith(f"<path>{ws}</path>")


def test_special_files_are_refused(hookcode_env: Any, rt: Any) -> None:
    fifo = hookcode_env.project / "pipe"
    os.mkfifo(fifo)
    assert error(rt, fifo) == f"Cannot read {fifo}: not a regular file"


# ---------------------------------------------------------------------------------------------
# permissions
# ---------------------------------------------------------------------------------------------


def test_env_files_ask_and_env_example_is_allowed(hookcode_env: Any, rt: Any) -> None:
    write(hookcode_env.project / ".env", "SECRET=1\n")
    write(hookcode_env.project / "prod.env", "SECRET=2\n")
    write(hookcode_env.project / ".env.local", "SECRET=3\n")
    write(hookcode_env.project / ".env.example", "SECRET=\n")
    outcome = call(rt, ".env")
    assert isinstance(outcome.error, PermissionRejected)
    assert outcome.error_text == REJECTED
    assert isinstance(call(rt, "prod.env").error, PermissionRejected)
    assert isinstance(call(rt, ".env.local").error, PermissionRejected)
    assert "1: SECRET=" in ok(rt, ".env.example").output
    # the ask happens before the existence check
    assert isinstance(call(rt, "missing.env").error, PermissionRejected)
    assert [r.permission for r in rt.refusals] == ["read"] * 4
    assert rt.refusals[0].patterns == [str(hookcode_env.project / ".env")]
    assert rt.refusals[0].always == ["*"]


def test_env_file_read_once_approved(hookcode_env: Any) -> None:
    reply = ReplyWith("once")
    rt = runtime(hookcode_env, approve=reply)
    write(hookcode_env.project / ".env", "SECRET=1\n")
    assert "1: SECRET=1" in ok(rt, ".env").output
    assert [(r.permission, r.patterns) for r in reply.requests] == [
        ("read", [str(hookcode_env.project / ".env")])
    ]


def test_symlink_to_an_env_file_still_asks(hookcode_env: Any, rt: Any) -> None:
    write(hookcode_env.project / ".env", "SECRET=1\n")
    (hookcode_env.project / "notes.txt").symlink_to(hookcode_env.project / ".env")
    assert isinstance(call(rt, "notes.txt").error, PermissionRejected)
    assert rt.refusals[-1].patterns == [
        str(hookcode_env.project / "notes.txt"), str(hookcode_env.project / ".env")
    ]


def test_configured_deny(hookcode_env: Any) -> None:
    hookcode_env.write_config({"permission": {"read": {"*": "allow", "*secret*": "deny"}}})
    rt = hookcode_env.runtime()
    write(hookcode_env.project / "secret.txt", "s\n")
    text = error(rt, "secret.txt")
    assert text.startswith("The user has specified a rule which prevents you")


def test_outside_file_asks_external_directory(hookcode_env: Any, rt: Any) -> None:
    outside = hookcode_env.root / "outside"
    path = write(outside / "notes.txt", "out there\n")
    outcome = call(rt, path)
    assert isinstance(outcome.error, PermissionRejected)
    request = rt.refusals[-1]
    assert request.permission == "external_directory"
    assert request.patterns == [f"{outside}/*"]
    assert request.always == [f"{outside}/*"]
    assert request.metadata == {"filepath": str(path), "parentDir": str(outside)}
    # asked before the existence check as well
    assert isinstance(call(rt, outside / "missing.txt").error, PermissionRejected)


def test_outside_file_approved(hookcode_env: Any) -> None:
    reply = ReplyWith("once")
    rt = runtime(hookcode_env, approve=reply)
    outside = hookcode_env.root / "outside"
    path = write(outside / "notes.txt", "out there\n")
    result = ok(rt, path)
    assert "1: out there" in result.output
    assert result.title == "../outside/notes.txt"
    assert [(r.permission, r.patterns) for r in reply.requests] == [
        ("external_directory", [f"{outside}/*"])  # `read` itself is allowed by the rules
    ]
    listing = ok(rt, outside)
    assert "<entries>\nnotes.txt\n\n(1 entries)\n</entries>" in listing.output
    directory_request = reply.requests[-1]
    assert directory_request.patterns == [f"{outside}/*"]
    assert directory_request.metadata == {"filepath": str(outside), "parentDir": str(outside)}


def test_spill_directory_is_read_without_asking(hookcode_env: Any, rt: Any) -> None:
    spill = write(hookcode_env.data_dir / "tool-output" / "tool_123", "full output\n")
    result = ok(rt, spill)
    assert "1: full output" in result.output
    assert rt.refusals == []


def test_symlink_inside_the_project_pointing_outside_asks(hookcode_env: Any, rt: Any) -> None:
    outside = hookcode_env.root / "secrets"
    write(outside / "key.txt", "k\n")
    link = hookcode_env.project / "link"
    link.symlink_to(outside)
    outcome = call(rt, "link/key.txt")
    assert isinstance(outcome.error, PermissionRejected)
    request = rt.refusals[-1]
    assert request.permission == "external_directory"
    assert request.patterns == [f"{outside}/*"]  # the real directory (symlinks resolved)
    # and the link itself, read as a directory
    assert isinstance(call(rt, "link").error, PermissionRejected)
    assert rt.refusals[-1].permission == "external_directory"
    assert rt.refusals[-1].patterns == [f"{outside}/*"]


def test_symlink_outside_pointing_into_the_project_does_not_ask(
    hookcode_env: Any, rt: Any
) -> None:
    path = write(hookcode_env.project / "inside.txt", "in\n")
    alias = hookcode_env.root / "alias.txt"
    alias.symlink_to(path)
    assert "1: in" in ok(rt, alias).output


# ---------------------------------------------------------------------------------------------
# instruction files
# ---------------------------------------------------------------------------------------------


def test_instruction_files_are_appended_once_per_session(hookcode_env: Any, rt: Any) -> None:
    project = hookcode_env.project
    write(project / "AGENTS.md", "root rules (system prompt)\n")
    write(project / "pkg" / "AGENTS.md", "pkg rules\n")
    write(project / "pkg" / "CLAUDE.md", "not used: AGENTS.md comes first\n")
    write(project / "pkg" / "deep" / "CLAUDE.md", "deep rules\n")
    write(project / "pkg" / "deep" / "mid" / "CONTEXT.md", "mid context\n")
    target = write(project / "pkg" / "deep" / "mid" / "f.py", "x = 1\n")
    session = rt.create_session(title="s").id

    first = invoke_tool(rt, "read", {"filePath": str(target)}, session_id=session).result
    mid, deep, pkg = (project / "pkg/deep/mid/CONTEXT.md", project / "pkg/deep/CLAUDE.md",
                      project / "pkg/AGENTS.md")
    assert first.output == file_output(target, ["1: x = 1"], "(End of file - total 1 lines)") + (
        f"\n\n<system-reminder>\nInstructions from: {mid}\nmid context\n</system-reminder>"
        f"\n\n<system-reminder>\nInstructions from: {deep}\ndeep rules\n</system-reminder>"
        f"\n\n<system-reminder>\nInstructions from: {pkg}\npkg rules\n</system-reminder>"
    )
    assert first.metadata["loaded"] == [str(mid), str(deep), str(pkg)]

    other = write(project / "pkg" / "deep" / "g.py", "y = 2\n")
    again = invoke_tool(rt, "read", {"filePath": str(other)}, session_id=session).result
    assert "<system-reminder>" not in again.output
    assert again.metadata["loaded"] == []

    fresh = invoke_tool(rt, "read", {"filePath": str(other)}).result  # a new session
    assert fresh.metadata["loaded"] == [str(deep), str(pkg)]


def test_instructions_survive_a_new_runtime_for_the_same_session(hookcode_env: Any) -> None:
    write(hookcode_env.project / "pkg" / "AGENTS.md", "pkg rules\n")
    target = write(hookcode_env.project / "pkg" / "a.py", "a\n")
    rt1 = hookcode_env.runtime()
    session = rt1.create_session(title="s").id
    first = invoke_tool(rt1, "read", {"filePath": str(target)}, session_id=session).result
    assert first.metadata["loaded"] == [str(hookcode_env.project / "pkg" / "AGENTS.md")]
    rt1.close()
    rt2 = hookcode_env.runtime()  # a resumed session: the store remembers what was loaded
    second = invoke_tool(rt2, "read", {"filePath": str(target)}, session_id=session).result
    assert second.metadata["loaded"] == []


def test_no_instructions_for_the_working_directory_or_outside(hookcode_env: Any) -> None:
    project = hookcode_env.project
    (project / ".git").mkdir()
    write(project / "AGENTS.md", "root\n")
    write(project / "app" / "AGENTS.md", "app (the working directory)\n")
    write(project / "lib" / "AGENTS.md", "lib\n")
    hookcode_env.register(ReplyWith("once"), "test_reply")  # the outside read below
    rt = hookcode_env.runtime(cwd=project / "app")
    in_cwd = write(project / "app" / "main.py", "m\n")
    assert ok(rt, in_cwd).metadata["loaded"] == []
    at_root = write(project / "setup.py", "s\n")
    assert ok(rt, at_root).metadata["loaded"] == []
    sibling = write(project / "lib" / "util.py", "u\n")  # in the worktree, beside the cwd
    assert ok(rt, sibling).metadata["loaded"] == [str(project / "lib" / "AGENTS.md")]
    # reading an instruction file itself does not append it
    assert ok(rt, project / "lib" / "AGENTS.md").metadata["loaded"] == []
    outside = hookcode_env.root / "elsewhere"
    write(outside / "AGENTS.md", "outside\n")
    target = write(outside / "x.txt", "x\n")
    assert ok(rt, target).metadata["loaded"] == []


# ---------------------------------------------------------------------------------------------
# streaming: memory stays bounded
# ---------------------------------------------------------------------------------------------


def test_reading_near_the_end_of_a_huge_file_streams(hookcode_env: Any, rt: Any) -> None:
    block_lines = 1 << 16
    block = b"0123456789abcdef\n" * block_lines  # 1.1 MB
    blocks = 270  # ~300 MB
    path = hookcode_env.project / "huge.log"
    with open(path, "wb") as handle:
        for _ in range(blocks):
            handle.write(block)
        handle.write(b"the very last line\n")
    total = blocks * block_lines + 1
    size = path.stat().st_size
    assert size > 290 * 1000 * 1000
    ok(rt, write(hookcode_env.project / "warm.txt", "w\n"))  # build schemas, open the store

    started = time.monotonic()
    tracemalloc.start()
    try:
        result = ok(rt, path, offset=total - 2499, limit=2000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    elapsed = time.monotonic() - started
    path.unlink()

    assert result.output.endswith(
        f"\n\n(Showing lines {total - 2499}-{total - 500} of {total}. "
        f"Use offset={total - 499} to continue.)\n</content>"
    )
    assert f"\n{total - 2499}: 0123456789abcdef\n" in result.output
    assert peak < 20 * 1024 * 1024, f"peak {peak} bytes for a {size} byte file"
    assert peak < size / 15
    assert elapsed < 10, elapsed


# ---------------------------------------------------------------------------------------------
# the CLI
# ---------------------------------------------------------------------------------------------


def test_cli_tools_call_read(hookcode_env: Any) -> None:
    path = write(hookcode_env.project / "x.txt", "hello\nworld\n")
    env = {**hookcode_env.env, "HOOKCODE_DATA_DIR": str(hookcode_env.data_dir)}
    env.pop("HOOKCODE_LOAD_PLUGINS", None)
    done = subprocess.run(
        [sys.executable, "-m", "hookcode", "tools", "call", "read", '{"filePath": "x.txt"}',
         "--json"],
        cwd=hookcode_env.project, env=env, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["error"] is None
    assert data["title"] == "x.txt"
    assert data["output"] == file_output(path, ["1: hello", "2: world"],
                                         "(End of file - total 2 lines)")
    assert data["metadata"] == {"preview": "hello\nworld", "truncated": False, "loaded": []}

    refused = subprocess.run(
        [sys.executable, "-m", "hookcode", "tools", "call", "read", '{"filePath": ".env"}'],
        cwd=hookcode_env.project, env=env, capture_output=True, text=True, timeout=60,
    )
    assert refused.returncode == 1
    assert "read: refused, nobody to approve read " in refused.stderr  # said to a person
    assert os.path.exists(hookcode_env.data_dir / "hookcode.db")


# ---------------------------------------------------------------------------------------------
# read rules in listings and instruction files; dangling links
# ---------------------------------------------------------------------------------------------


def test_directory_listing_leaves_out_what_the_read_rules_deny(hookcode_env: Any) -> None:
    hookcode_env.write_config(
        '[permission.read]\n"*" = "allow"\n"*.pem" = "deny"\n"*/vault/*" = "deny"\n',
        where="global",
    )
    root = hookcode_env.project / "d"
    write(root / "a.txt", "a")
    write(root / "key.pem", "secret")
    write(hookcode_env.project / "vault" / "x", "x")
    (root / "alias").symlink_to(root / "key.pem")  # judged where it leads
    (root / "door").symlink_to(hookcode_env.project / "vault" / "x")
    (root / ".env").write_text("asks: its name is shown")
    rt = hookcode_env.runtime()
    result = ok(rt, root)
    assert result.output == (
        f"<path>{root}</path>\n<type>directory</type>\n<entries>\n.env\na.txt\n\n(2 entries)\n"
        "</entries>"
    )


def test_instruction_files_the_read_rules_do_not_allow_are_not_attached(hookcode_env: Any) -> None:
    hookcode_env.write_config(
        '[permission.read]\n"*" = "allow"\n"*/pkg/AGENTS.md" = "deny"\n', where="global"
    )
    project = hookcode_env.project
    write(project / "pkg" / "AGENTS.md", "hidden rules\n")
    write(project / "pkg" / "sub" / "CLAUDE.md", "sub rules\n")
    target = write(project / "pkg" / "sub" / "f.py", "x\n")
    rt = hookcode_env.runtime()
    result = ok(rt, target)
    assert "hidden rules" not in result.output
    assert result.metadata["loaded"] == [str(project / "pkg" / "sub" / "CLAUDE.md")]


def test_dangling_links_to_outside_are_outside(hookcode_env: Any) -> None:
    hookcode_env.write_config('[permission]\nexternal_directory = "deny"\n', where="global")
    outside = hookcode_env.root / "outside"
    outside.mkdir()
    project = hookcode_env.project
    (project / "dl").symlink_to(outside / "file")
    (project / "chain").symlink_to("dl")
    rt = hookcode_env.runtime()
    for name in ("dl", "chain"):
        outcome = call(rt, name)
        assert type(outcome.error).__name__ == "PermissionDenied", outcome.error_text
    write(outside / "file", "now it exists\n")
    assert type(call(rt, "chain").error).__name__ == "PermissionDenied"
