"""hookcode.writes: where a write lands (symlinks, dangling ones too) and the ``edit`` request."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hookcode import ToolCall, ToolContext
from hookcode.errors import ToolError
from hookcode.writes import edit_request, write_target


def test_a_plain_path_is_itself_missing_directories_included(tmp_path: Path) -> None:
    assert write_target(tmp_path / "a" / "b" / "c.txt") == tmp_path / "a" / "b" / "c.txt"
    (tmp_path / "f.txt").write_text("x")
    assert write_target(tmp_path / "f.txt") == tmp_path / "f.txt"


def test_links_are_followed_to_where_the_os_writes(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "f.txt").write_text("x")
    (tmp_path / "dir-link").symlink_to("real")
    (tmp_path / "file-link").symlink_to("real/f.txt")
    (tmp_path / "dangling").symlink_to("real/new.txt")
    (tmp_path / "chain").symlink_to("dangling")
    assert write_target(tmp_path / "dir-link" / "f.txt") == real / "f.txt"
    assert write_target(tmp_path / "dir-link" / "x" / "y.txt") == real / "x" / "y.txt"
    assert write_target(tmp_path / "file-link") == real / "f.txt"
    assert write_target(tmp_path / "dangling") == real / "new.txt"
    assert write_target(tmp_path / "chain") == real / "new.txt"


@pytest.mark.parametrize(
    ("links", "path", "message"),
    [
        (
            {"dd": "missing"},
            "dd/f.txt",
            "Cannot write {root}/dd/f.txt: {root}/dd is a symbolic link to {root}/missing, "
            "which does not exist, so it cannot hold a file. Create that directory first or "
            "write to a real path.",
        ),
        (
            {"dd": "missing", "outer": "dd"},
            "outer/deeper/f.txt",
            "Cannot write {root}/outer/deeper/f.txt: {root}/outer is a symbolic link to "
            "{root}/missing, which does not exist, so it cannot hold a file. Create that "
            "directory first or write to a real path.",
        ),
        ({"loop": "loop"}, "loop", "Cannot write {root}/loop: it is a symbolic link that loops"),
        (
            {"loop": "loop"},
            "loop/f.txt",
            "Cannot write {root}/loop/f.txt: {root}/loop is a symbolic link that loops",
        ),
        (
            {"dl": "gone/f.txt"},
            "dl",
            "Cannot write {root}/dl: it is a symbolic link to {root}/gone/f.txt, whose "
            "directory {root}/gone does not exist",
        ),
        ({}, "plain/inner.txt", "Cannot write {root}/plain/inner.txt: {root}/plain is not a "
         "directory"),
    ],
    ids=["dangling-dir", "chain-to-dangling-dir", "loop", "under-a-loop", "file-link-missing-dir",
         "under-a-file"],
)  # fmt: skip
def test_what_cannot_be_written_is_one_line_naming_the_culprit(
    tmp_path: Path, links: dict[str, str], path: str, message: str
) -> None:
    (tmp_path / "plain").write_text("x")
    for name, target in links.items():
        (tmp_path / name).symlink_to(target)
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(ToolError) as caught:
        write_target(tmp_path / path)
    assert str(caught.value).startswith(message.format(root=tmp_path))
    assert "\n" not in str(caught.value)
    assert sorted(os.listdir(tmp_path)) == before


def context(env: Any) -> ToolContext:
    rt = env.runtime()
    return ToolContext(rt, ToolCall("write", {}, "c", rt.create_session().id))


def test_edit_request_patterns_protected_entries_and_always(hookcode_env: Any) -> None:
    project = hookcode_env.project
    (project / "a.txt").write_text("a")
    (project / "alias").symlink_to("a.txt")
    (project / "cfg").symlink_to(".git")
    ctx = context(hookcode_env)

    plain = edit_request(ctx, [project / "a.txt", project / "alias", project / "new.txt"])
    assert plain.patterns == ["a.txt", "alias", "new.txt"]  # alias resolves to a.txt: once
    assert plain.protected == {} and plain.always == ["*"]

    marked = edit_request(ctx, [project / "cfg" / "hooks" / "x", project / "hookcode.toml"])
    assert marked.patterns == ["cfg/hooks/x", ".git/hooks/x", "hookcode.toml"]
    assert marked.protected == {".git/hooks/x": ".git", "hookcode.toml": "hookcode.toml"}
    assert marked.always == marked.patterns


def test_protected_entries_outside_the_project_are_protected_too(hookcode_env: Any) -> None:
    ctx = context(hookcode_env)
    other = hookcode_env.root / "other-repo" / ".git" / "config"
    request = edit_request(ctx, [other, hookcode_env.data_dir / "hookcode.db"])
    assert list(request.protected.values()) == [".git", "hookcode/data"]
