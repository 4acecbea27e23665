"""The pack's tests, written with hookcode's test kit (fixtures come with hookcode-core).

The pack is registered for each test with ``hookcode_env.register``, so the tests pass from a
checkout (``pytest`` here) as well as against the installed wheel.
"""

from __future__ import annotations

import hookcode_pack_textstats as textstats
import pytest
from hookcode.testing import ReplyWith, invoke_tool


@pytest.fixture
def prompts(hookcode_env):
    """Register the pack, and a front end approving every permission ask (it records them)."""
    reply = ReplyWith("once")
    hookcode_env.register(textstats, "tool_textstats")
    hookcode_env.register(reply, "approve")
    return reply


@pytest.fixture
def runtime(hookcode_env, prompts):
    # entrypoints=False: core plus the plugins registered above, whatever else is installed
    return hookcode_env.runtime(entrypoints=False)


def write(path, text: str | bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_the_pack_contributes_two_tools(runtime):
    entries = runtime.registry.entries
    assert {"wordcount", "todo_scan"} <= set(entries)
    assert entries["wordcount"].plugin == "tool_textstats"
    schema = entries["wordcount"].tool.parameters
    assert schema["required"] == ["filePath"]
    assert "working directory" in schema["properties"]["filePath"]["description"]
    assert entries["wordcount"].tool.description.startswith("Count the lines, words")
    assert entries["todo_scan"].tool.parameters["properties"]["limit"]["default"] == 100


# -- wordcount --------------------------------------------------------------------------------


def test_wordcount_counts_lines_words_and_characters(hookcode_env, runtime, prompts):
    write(hookcode_env.project / "notes" / "a.txt", "one two\nthree\n\nfour  five six")
    outcome = invoke_tool(runtime, "wordcount", {"filePath": "notes/a.txt"})
    assert outcome.ok, outcome.error_text
    result = outcome.result
    assert result.output == "notes/a.txt: 4 lines, 6 words, 29 characters (29 bytes)"
    assert result.title == "notes/a.txt"
    assert result.metadata["lines"] == 4
    assert result.metadata["words"] == 6
    # the tool asked `read` for the absolute path (the pipeline does not pre-check it)
    path = runtime.cwd / "notes" / "a.txt"  # the runtime's cwd is a real path
    assert [(r.permission, r.patterns) for r in prompts.requests] == [("read", [str(path)])]


def test_wordcount_counts_characters_not_bytes(hookcode_env, runtime):
    path = write(hookcode_env.project / "u.txt", "héllo wörld\n")
    outcome = invoke_tool(runtime, "wordcount", {"filePath": str(path)})
    assert outcome.result.output == "u.txt: 1 line, 2 words, 12 characters (14 bytes)"


def test_wordcount_of_an_empty_file(hookcode_env, runtime):
    write(hookcode_env.project / "empty.txt", "")
    outcome = invoke_tool(runtime, "wordcount", {"filePath": "empty.txt"})
    assert outcome.result.output == "empty.txt: 0 lines, 0 words, 0 characters (0 bytes)"


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda p: None, "File not found: {path}"),
        (lambda p: p.mkdir(), "{path} is a directory; wordcount counts one file"),
        (lambda p: write(p, b"\x7fELF\0\0\x01"), "Cannot count words of binary file: {path}"),
    ],
    ids=["missing", "directory", "binary"],
)
def test_wordcount_errors(hookcode_env, runtime, setup, message):
    setup(hookcode_env.project / "x.bin")
    outcome = invoke_tool(runtime, "wordcount", {"filePath": "x.bin"})
    assert not outcome.ok
    assert outcome.error_text == message.format(path=runtime.cwd / "x.bin")


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ({"filePath": 42}, "filePath: Input should be a valid string"),
        ({}, "filePath: required argument is missing"),
        ({"file_path": "a.txt"}, "file_path: unknown argument"),
    ],
)
def test_wordcount_rejects_bad_arguments(runtime, prompts, args, problem):
    outcome = invoke_tool(runtime, "wordcount", args)
    assert not outcome.ok
    assert outcome.error_text.startswith("The wordcount tool was called with invalid arguments")
    assert problem in outcome.error_text
    assert prompts.requests == []  # validation fails before anything is asked


def test_wordcount_reads_nothing_when_the_user_rejects(hookcode_env):
    write(hookcode_env.project / "secret.env", "TOKEN=1\n")
    hookcode_env.register(textstats, "tool_textstats")
    hookcode_env.register(ReplyWith("reject"), "reject")
    runtime = hookcode_env.runtime(entrypoints=False)
    outcome = invoke_tool(runtime, "wordcount", {"filePath": "secret.env"})
    assert not outcome.ok
    assert outcome.result is None


def test_wordcount_outside_the_project_asks_external_directory(hookcode_env, runtime, prompts):
    outside = write(hookcode_env.root / "elsewhere" / "b.txt", "x y\n")
    outcome = invoke_tool(runtime, "wordcount", {"filePath": str(outside)})
    assert outcome.result.output == f"{outside}: 1 line, 2 words, 4 characters (4 bytes)"
    assert [(r.permission, r.patterns) for r in prompts.requests] == [
        ("external_directory", [f"{outside.parent.as_posix()}/*"]),
        ("read", [str(outside)]),
    ]


# -- todo_scan --------------------------------------------------------------------------------


@pytest.fixture
def tree(hookcode_env):
    root = hookcode_env.project
    write(root / "src" / "app.py", "import os\n# TODO: handle errors\nx = 1  # FIXME off by one\n")
    write(root / "src" / "util" / "io.py", "def f():\n    pass  # HACK until 2.0\n")
    write(root / "README.md", "# Demo\n\nTODOS are not TODO markers... this line is one.\n")
    write(root / "clean.py", "print('nothing to do')\n")
    write(root / ".git" / "HEAD", "TODO in git internals\n")
    write(root / "node_modules" / "m.js", "// TODO vendored\n")
    write(root / "blob.bin", b"\0\0TODO binary\n")
    return root


def test_todo_scan_lists_marked_lines(runtime, tree, prompts):
    outcome = invoke_tool(runtime, "todo_scan", {})
    assert outcome.ok, outcome.error_text
    assert outcome.result.output.splitlines() == [
        "README.md:3: TODOS are not TODO markers... this line is one.",
        "src/app.py:2: # TODO: handle errors",
        "src/app.py:3: x = 1  # FIXME off by one",
        "src/util/io.py:2: pass  # HACK until 2.0",
    ]
    assert outcome.result.title == "."
    meta = outcome.result.metadata
    assert (meta["count"], meta["files"], meta["more"]) == (4, 3, False)
    # the pipeline pre-checked the tool's own permission
    assert [(r.permission, r.patterns) for r in prompts.requests] == [("todo_scan", ["*"])]


@pytest.mark.parametrize(
    ("args", "files"),
    [
        ({"include": "*.py"}, ["src/app.py", "src/app.py", "src/util/io.py"]),
        ({"include": "util/*.py", "path": "src"}, ["src/util/io.py"]),
        ({"include": "**/io.py"}, ["src/util/io.py"]),
        ({"path": "src/util"}, ["src/util/io.py"]),
        ({"include": "*.rs"}, []),
    ],
)
def test_todo_scan_path_and_include(runtime, tree, args, files):
    outcome = invoke_tool(runtime, "todo_scan", args)
    assert outcome.ok, outcome.error_text
    if files:
        assert [line.split(":")[0] for line in outcome.result.output.splitlines()] == files
    else:
        assert outcome.result.output == "No TODO, FIXME, HACK or XXX comments found in ."


def test_todo_scan_stops_at_the_limit(runtime, tree):
    outcome = invoke_tool(runtime, "todo_scan", {"limit": 2})
    lines = outcome.result.output.splitlines()
    assert lines[:2] == [
        "README.md:3: TODOS are not TODO markers... this line is one.",
        "src/app.py:2: # TODO: handle errors",
    ]
    assert lines[2] == ""
    assert lines[3].startswith("(Showing the first 2 comments; there are more.")
    assert outcome.result.metadata["more"] is True


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({"limit": 0}, "limit must be at least 1"),
        ({"path": "README.md"}, "Not a directory: {project}/README.md"),
        ({"limit": "lots"}, "limit: Input should be a valid integer"),
    ],
)
def test_todo_scan_errors(runtime, tree, args, error):
    outcome = invoke_tool(runtime, "todo_scan", args)
    assert not outcome.ok
    assert error.format(project=runtime.cwd) in outcome.error_text
