"""The list tool (reference/tools.md §10)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hookcode.errors import PermissionRejected
from hookcode.testing import ReplyWith, invoke_tool


def touch(path: Path, text: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def ok(outcome):
    assert outcome.error is None, outcome.error_text
    return outcome.result


def tree(root: Path, *lines: str) -> str:
    return f"{root}/\n" + "".join(line + "\n" for line in lines)


def test_tree_subdirectories_first_then_files_sorted(hookcode_env, rg):
    project = hookcode_env.project
    for name in (
        "b.txt",
        "a.txt",
        "src/main.py",
        "src/util/z.py",
        "src/util/helpers.py",
        "docs/index.md",
        ".hidden/x",
        "src/a/b/c/deep.txt",
        "Zeta.txt",
    ):
        touch(project / name)
    rt = hookcode_env.runtime()

    result = ok(invoke_tool(rt, "list", {}))

    assert result.output == tree(
        project,
        "  .hidden/",
        "    x",
        "  docs/",
        "    index.md",
        "  src/",
        "    a/",
        "      b/",
        "        c/",
        "          deep.txt",
        "    util/",
        "      helpers.py",
        "      z.py",
        "    main.py",
        "  Zeta.txt",
        "  a.txt",
        "  b.txt",
    )
    assert result.title == "."
    assert result.metadata == {"count": 9, "truncated": False}


def test_ignore_list_applies_at_any_depth(hookcode_env, rg):
    project = hookcode_env.project
    touch(project / "keep.txt")
    for ignored in (
        "node_modules",
        "__pycache__",
        "dist",
        "build",
        "target",
        "vendor",
        "bin",
        "obj",
        ".idea",
        ".vscode",
        ".zig-cache",
        "zig-out",
        ".coverage",
        "coverage",
        "tmp",
        "temp",
        ".cache",
        "cache",
        "logs",
        ".venv",
        "venv",
        "env",
    ):
        touch(project / ignored / "inside.txt")
        touch(project / "src" / ignored / "nested.txt")
    touch(project / "src" / "code.py")
    touch(project / "lib" / ".coverage")  # the reference also ignores these names as files
    touch(project / "lib" / "zig-out")
    touch(project / "lib" / ".coveragerc")
    touch(project / "lib" / "build.py")  # a file named like an ignored directory is kept
    touch(project / "lib" / "tmp")  # a file (not a directory) named tmp is kept
    rt = hookcode_env.runtime()

    result = ok(invoke_tool(rt, "list", {}))

    assert result.output == tree(
        project,
        "  lib/",
        "    .coveragerc",
        "    build.py",
        "    tmp",
        "  src/",
        "    code.py",
        "  keep.txt",
    )


def test_extra_ignore_globs(hookcode_env, rg):
    project = hookcode_env.project
    for name in (
        "a.md",
        "b.txt",
        "docs/guide.md",
        "docs/img/logo.png",
        "src/x.py",
        "src/gen/out.py",
        "other/gen/keep.py",
    ):
        touch(project / name)
    rt = hookcode_env.runtime()

    result = ok(invoke_tool(rt, "list", {"ignore": ["*.md", "src/gen/", "img"]}))

    assert result.output == tree(
        project,
        "  other/",
        "    gen/",
        "      keep.py",
        "  src/",
        "    x.py",
        "  b.txt",
    )


def test_gitignore_hidden_files_and_dot_git(hookcode_env, rg):
    project = hookcode_env.project
    subprocess.run(["git", "init", "-q", str(project)], check=True, capture_output=True)
    touch(project / ".gitignore", "secret.txt\ngenerated/\n")
    touch(project / "secret.txt")
    touch(project / "generated" / "big.bin")
    touch(project / ".env.example")
    touch(project / "main.py")
    rt = hookcode_env.runtime()

    result = ok(invoke_tool(rt, "list", {}))

    assert result.output == tree(project, "  .env.example", "  .gitignore", "  main.py")


def test_limit_of_100_files(hookcode_env, rg):
    project = hookcode_env.project
    for i in range(150):
        touch(project / f"d{i // 50}" / f"f{i:03}.txt")
    rt = hookcode_env.runtime()

    result = ok(invoke_tool(rt, "list", {}))

    file_lines = [line for line in result.output.splitlines()[1:] if not line.endswith("/")]
    assert len(file_lines) == 100
    assert result.metadata == {"count": 100, "truncated": True}
    assert "outputPath" not in result.metadata  # the pipeline's truncation left it alone
    # path order: the first 100 files are d0 and d1 entirely
    assert result.output.splitlines()[1:3] == ["  d0/", "    f000.txt"]
    assert "  d2/" not in result.output


@pytest.mark.parametrize(("files", "truncated"), [(99, False), (100, True)])
def test_truncated_once_100_files_are_reached(hookcode_env, rg, files, truncated):
    for i in range(files):
        touch(hookcode_env.project / f"f{i:03}.txt")
    rt = hookcode_env.runtime()

    result = ok(invoke_tool(rt, "list", {}))

    assert result.metadata == {"count": files, "truncated": truncated}
    assert result.output.count("\n") == files + 1


def test_relative_path_and_title(hookcode_env, rg):
    project = hookcode_env.project
    touch(project / "pkg" / "sub" / "m.py")
    touch(project / "pkg" / "n.py")
    touch(project / "top.py")
    rt = hookcode_env.runtime()

    result = ok(invoke_tool(rt, "list", {"path": "pkg"}))

    assert result.output == tree(project / "pkg", "  sub/", "    m.py", "  n.py")
    assert result.title == "pkg"


def test_empty_directory(hookcode_env, rg):
    (hookcode_env.project / "empty").mkdir()
    rt = hookcode_env.runtime()

    result = ok(invoke_tool(rt, "list", {"path": "empty"}))

    assert result.output == f"{hookcode_env.project / 'empty'}/\n"
    assert result.metadata == {"count": 0, "truncated": False}


def test_missing_directory(hookcode_env, rg):
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "list", {"path": "missing"})

    assert outcome.error_text == f"No such file or directory: '{hookcode_env.project / 'missing'}'"


def test_a_file_given_as_the_directory(hookcode_env, rg):
    (hookcode_env.project / "a.txt").write_text("x\n")
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "list", {"path": "a.txt"})

    assert outcome.error_text == f"Not a directory: '{hookcode_env.project / 'a.txt'}'"


def test_outside_project_is_refused_headless(hookcode_env, rg):
    outside = hookcode_env.root / "outside"
    touch(outside / "x.txt")
    rt = hookcode_env.runtime()

    outcome = invoke_tool(rt, "list", {"path": str(outside)})

    assert isinstance(outcome.error, PermissionRejected)
    assert [r.permission for r in rt.refusals] == ["external_directory"]


def test_outside_project_approved(hookcode_env, rg):
    outside = hookcode_env.root / "outside"
    touch(outside / "x.txt")
    reply = hookcode_env.register(ReplyWith("once"), "reply")
    hookcode_env.write_config({"permission": {"list": "ask"}})
    rt = hookcode_env.runtime()

    result = ok(invoke_tool(rt, "list", {"path": str(outside)}))

    assert result.output == tree(outside, "  x.txt")
    assert result.title == "../outside"
    external, own = reply.requests
    assert external.permission == "external_directory"
    assert external.patterns == external.always == [f"{outside.as_posix()}/*"]
    assert external.metadata == {"filepath": str(outside), "parentDir": str(outside)}
    assert own.permission == "list"
    assert own.patterns == [str(outside)]
    assert own.always == ["*"]
    assert own.metadata == {"path": str(outside)}


def test_list_permission_pattern_is_the_absolute_directory(hookcode_env, rg):
    project = hookcode_env.project
    touch(project / "private" / "k.txt")
    touch(project / "public" / "p.txt")
    hookcode_env.write_config({"permission": {"list": {"*": "allow", "*/private": "deny"}}})
    rt = hookcode_env.runtime()

    assert invoke_tool(rt, "list", {"path": "public"}).error is None
    denied = invoke_tool(rt, "list", {"path": "private"})
    assert denied.error is not None
    assert type(denied.error).__name__ == "PermissionDenied"


def test_render_tree_adds_every_parent_directory():
    from hookcode_tool_list import render_tree

    assert render_tree(["a/b/c.txt", "a/d.txt", "e.txt", "a/b2/f.txt"]) == (
        "  a/\n    b/\n      c.txt\n    b2/\n      f.txt\n    d.txt\n  e.txt\n"
    )
    assert render_tree([]) == ""


# ---------------------------------------------------------------------------------------------
# the read rules and symlinks
# ---------------------------------------------------------------------------------------------


def test_paths_the_read_rules_deny_are_not_listed_nor_counted(hookcode_env, rg):
    project = hookcode_env.project
    hookcode_env.write_config(
        '[permission.read]\n"*" = "allow"\n"*.env" = "deny"\n"*/private/*" = "deny"\n',
        where="global",
    )
    for i in range(150):
        touch(project / "a-many" / f"{i:03}.env")  # first in path order
    touch(project / "private" / "notes.txt")
    touch(project / ".env.local.env")
    touch(project / "b.txt")
    touch(project / "c.env.example")  # asks? no: allowed by the default rules; shown either way
    rt = hookcode_env.runtime()
    result = ok(invoke_tool(rt, "list", {}))
    assert result.output == tree(project, "  b.txt", "  c.env.example")
    assert result.metadata == {"count": 2, "truncated": False}


def test_names_of_paths_whose_reading_asks_are_listed(hookcode_env, rg):
    project = hookcode_env.project
    touch(project / ".env", "SECRET=1\n")
    rt = hookcode_env.runtime()
    assert ok(invoke_tool(rt, "list", {})).output == tree(project, "  .env")


def test_a_dangling_link_to_outside_is_outside(hookcode_env, rg):
    hookcode_env.write_config('[permission]\nexternal_directory = "deny"\n', where="global")
    outside = hookcode_env.root / "outside"
    touch(outside / "o.txt")
    project = hookcode_env.project
    (project / "out").symlink_to(outside)
    (project / "gone").symlink_to(outside / "missing")
    (project / "chain").symlink_to("gone")
    rt = hookcode_env.runtime()
    for name in ("out", "gone", "chain"):
        outcome = invoke_tool(rt, "list", {"path": name})
        assert type(outcome.error).__name__ == "PermissionDenied", (name, outcome.error_text)
