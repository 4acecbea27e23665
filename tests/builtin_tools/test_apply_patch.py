"""The apply_patch tool (reference/tools.md §7) and its parser (offline-testing.md §3).

Codex's fixture scenarios 001-024 are copied by hand into ``SCENARIOS`` (input tree, patch,
expected tree, expected message); whole trees are compared as bytes, empty directories
included. Where ours differs from Codex (scenario 015: nothing is written) the table says ours.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hookcode.errors import PermissionRejected
from hookcode.testing import ReplyWith, invoke_tool

# ---------------------------------------------------------------------------------------------
# trees
# ---------------------------------------------------------------------------------------------

Tree = dict[str, bytes | None]  # relative path -> bytes; "dir/" -> None for an empty directory


def write_tree(root: Path, tree: Tree) -> None:
    for name, data in tree.items():
        path = root / name
        if data is None:
            path.mkdir(parents=True, exist_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)


def snapshot(root: Path, *, ignore: tuple[str, ...] = ("hookcode.toml",)) -> Tree:
    """Every file (bytes) and every empty directory (``name/`` -> None) below ``root``."""
    tree: Tree = {}
    for directory, dirs, files in os.walk(root):
        rel_dir = os.path.relpath(directory, root)
        if directory != str(root) and not dirs and not files:
            tree[rel_dir.replace(os.sep, "/") + "/"] = None
        for name in files:
            rel = os.path.relpath(os.path.join(directory, name), root).replace(os.sep, "/")
            if rel not in ignore:
                tree[rel] = Path(directory, name).read_bytes()
    return tree


def patch(*lines: str) -> str:
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Codex's scenarios
# ---------------------------------------------------------------------------------------------


@dataclass
class Scenario:
    id: str
    given: Tree
    patch: str
    expected: Tree | None = None  # None: unchanged
    error: str | None = None  # the exact message; "{root}" is the project directory
    output: list[str] = field(default_factory=list)  # summary lines, when checked


SCENARIOS = [
    Scenario(
        "001_add_file",
        {},
        patch("*** Begin Patch", "*** Add File: bar.md", "+This is a new file", "*** End Patch"),
        {"bar.md": b"This is a new file\n"},
        output=["A bar.md"],
    ),
    Scenario(
        "002_multiple_operations",
        {"delete.txt": b"obsolete\n", "modify.txt": b"line1\nline2\n"},
        patch(
            "*** Begin Patch",
            "*** Add File: nested/new.txt",
            "+created",
            "*** Delete File: delete.txt",
            "*** Update File: modify.txt",
            "@@",
            "-line2",
            "+changed",
            "*** End Patch",
        ),
        {"nested/new.txt": b"created\n", "modify.txt": b"line1\nchanged\n"},
        output=["A nested/new.txt", "D delete.txt", "M modify.txt"],
    ),
    Scenario(
        "003_multiple_chunks",
        {"multi.txt": b"line1\nline2\nline3\nline4\n"},
        patch(
            "*** Begin Patch",
            "*** Update File: multi.txt",
            "@@",
            "-line2",
            "+changed2",
            "@@",
            "-line4",
            "+changed4",
            "*** End Patch",
        ),
        {"multi.txt": b"line1\nchanged2\nline3\nchanged4\n"},
        output=["M multi.txt"],
    ),
    Scenario(
        "004_move_to_new_directory",
        {"old/name.txt": b"old content\n", "old/other.txt": b"unrelated\n"},
        patch(
            "*** Begin Patch",
            "*** Update File: old/name.txt",
            "*** Move to: renamed/dir/name.txt",
            "@@",
            "-old content",
            "+new content",
            "*** End Patch",
        ),
        {"old/other.txt": b"unrelated\n", "renamed/dir/name.txt": b"new content\n"},
        output=["M renamed/dir/name.txt"],
    ),
    Scenario(
        "005_rejects_empty_patch",
        {"foo.txt": b"stable\n"},
        patch("*** Begin Patch", "*** End Patch"),
        error="patch rejected: empty patch",
    ),
    Scenario(
        "006_rejects_missing_context",
        {"modify.txt": b"line1\nline2\n"},
        patch(
            "*** Begin Patch",
            "*** Update File: modify.txt",
            "@@",
            "-missing",
            "+changed",
            "*** End Patch",
        ),
        error="apply_patch verification failed: Failed to find expected lines in "
        "{root}/modify.txt:\nmissing",
    ),
    Scenario(
        "007_rejects_missing_file_delete",
        {"foo.txt": b"stable\n"},
        patch("*** Begin Patch", "*** Delete File: missing.txt", "*** End Patch"),
        error="apply_patch verification failed: [Errno 2] No such file or directory: "
        "'{root}/missing.txt'",
    ),
    Scenario(
        "008_rejects_empty_update_hunk",
        {"foo.txt": b"stable\n"},
        patch("*** Begin Patch", "*** Update File: foo.txt", "*** End Patch"),
        error="apply_patch verification failed: Update file hunk for path 'foo.txt' is empty",
    ),
    Scenario(
        "009_requires_existing_file_for_update",
        {"foo.txt": b"stable\n"},
        patch(
            "*** Begin Patch",
            "*** Update File: missing.txt",
            "@@",
            "-old",
            "+new",
            "*** End Patch",
        ),
        error="apply_patch verification failed: Failed to read file to update: {root}/missing.txt",
    ),
    Scenario(
        "010_move_overwrites_existing_destination",
        {
            "old/name.txt": b"from\n",
            "old/other.txt": b"unrelated\n",
            "renamed/dir/name.txt": b"existing\n",
        },
        patch(
            "*** Begin Patch",
            "*** Update File: old/name.txt",
            "*** Move to: renamed/dir/name.txt",
            "@@",
            "-from",
            "+new",
            "*** End Patch",
        ),
        {"old/other.txt": b"unrelated\n", "renamed/dir/name.txt": b"new\n"},
        output=["M renamed/dir/name.txt"],
    ),
    Scenario(
        "011_add_overwrites_existing_file",
        {"duplicate.txt": b"old content\n"},
        patch("*** Begin Patch", "*** Add File: duplicate.txt", "+new content", "*** End Patch"),
        {"duplicate.txt": b"new content\n"},
        output=["A duplicate.txt"],
    ),
    Scenario(
        "012_delete_directory_fails",
        {"dir/foo.txt": b"stable\n"},
        patch("*** Begin Patch", "*** Delete File: dir", "*** End Patch"),
        error="apply_patch verification failed: [Errno 21] Is a directory: '{root}/dir'",
    ),
    Scenario(
        "013_rejects_invalid_hunk_header",
        {"foo.txt": b"stable\n"},
        patch("*** Begin Patch", "*** Frobnicate File: foo", "*** End Patch"),
        error="apply_patch verification failed: '*** Frobnicate File: foo' is not a valid hunk "
        "header. Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', "
        "'*** Update File: {path}'",
    ),
    Scenario(
        "014_update_file_appends_trailing_newline",
        {"no_newline.txt": b"no newline at end"},
        patch(
            "*** Begin Patch",
            "*** Update File: no_newline.txt",
            "@@",
            "-no newline at end",
            "+first line",
            "+second line",
            "*** End Patch",
        ),
        {"no_newline.txt": b"first line\nsecond line\n"},
    ),
    Scenario(
        # ours: atomic, so the add is not written either (Codex keeps created.txt)
        "015_failure_after_partial_success_writes_nothing",
        {},
        patch(
            "*** Begin Patch",
            "*** Add File: created.txt",
            "+hello",
            "*** Update File: missing.txt",
            "@@",
            "-old",
            "+new",
            "*** End Patch",
        ),
        error="apply_patch verification failed: Failed to read file to update: {root}/missing.txt",
    ),
    Scenario(
        "016_pure_addition_update_chunk",
        {"input.txt": b"line1\nline2\n"},
        patch(
            "*** Begin Patch",
            "*** Update File: input.txt",
            "@@ line1",
            "+added line 1",
            "+added line 2",
            "*** End Patch",
        ),
        {"input.txt": b"line1\nline2\nadded line 1\nadded line 2\n"},
    ),
    Scenario(
        "017_whitespace_padded_hunk_header",
        {"foo.txt": b"old\n"},
        patch(
            "*** Begin Patch", "  *** Update File: foo.txt", "@@", "-old", "+new", "*** End Patch"
        ),
        {"foo.txt": b"new\n"},
        output=["M foo.txt"],
    ),
    Scenario(
        "018_whitespace_padded_patch_markers",
        {"file.txt": b"one\n"},
        patch(
            " *** Begin Patch", "*** Update File: file.txt", "@@", "-one", "+two", "*** End Patch "
        ),
        {"file.txt": b"two\n"},
    ),
    Scenario(
        "019_unicode_simple",
        {"foo.txt": "héllo wörld\n日本語のテキスト\nΩmega ≠ alpha\n".encode()},
        patch(
            "*** Begin Patch",
            "*** Update File: foo.txt",
            "@@",
            " héllo wörld",
            "-日本語のテキスト",
            "+日本語の新しいテキスト 🎉",
            "*** End Patch",
        ),
        {"foo.txt": "héllo wörld\n日本語の新しいテキスト 🎉\nΩmega ≠ alpha\n".encode()},
    ),
    Scenario(
        "020_delete_file_success",
        {"keep.txt": b"keep\n", "obsolete.txt": b"obsolete\n"},
        patch("*** Begin Patch", "*** Delete File: obsolete.txt", "*** End Patch"),
        {"keep.txt": b"keep\n"},
        output=["D obsolete.txt"],
    ),
    Scenario(
        "020b_whitespace_padded_patch_marker_lines",
        {"file.txt": b"one\n"},
        patch(
            "*** Begin Patch ", "*** Update File: file.txt", "@@", "-one", "+two", " *** End Patch"
        ),
        {"file.txt": b"two\n"},
    ),
    Scenario(
        "021_update_file_deletion_only",
        {"lines.txt": b"line1\nline2\nline3\n"},
        patch(
            "*** Begin Patch",
            "*** Update File: lines.txt",
            "@@",
            " line1",
            "-line2",
            " line3",
            "*** End Patch",
        ),
        {"lines.txt": b"line1\nline3\n"},
    ),
    Scenario(
        "022_update_file_end_of_file_marker",
        {"tail.txt": b"first\nsecond\n"},
        patch(
            "*** Begin Patch",
            "*** Update File: tail.txt",
            "@@",
            " first",
            "-second",
            "+second updated",
            "*** End of File",
            "*** End Patch",
        ),
        {"tail.txt": b"first\nsecond updated\n"},
    ),
    Scenario(
        "023_crlf_file_stays_crlf",
        {"crlf.txt": b"alpha\r\nbeta\r\ngamma\r\n"},
        patch(
            "*** Begin Patch",
            "*** Update File: crlf.txt",
            "@@",
            " alpha",
            "-beta",
            "+BETA",
            "+beta two",
            " gamma",
            "*** End Patch",
        ),
        {"crlf.txt": b"alpha\r\nBETA\r\nbeta two\r\ngamma\r\n"},
    ),
    Scenario(
        "024_mixed_line_endings",
        {"mixed.txt": b"one\r\ntwo\nthree\r\nfour\nfive"},
        patch(
            "*** Begin Patch",
            "*** Update File: mixed.txt",
            "@@",
            " two",
            "-three",
            "+THREE",
            " four",
            "*** End Patch",
        ),
        # untouched and context lines keep their own ending; the new line takes the file's
        # style (CRLF: it has some); the last line gets one too (the result ends with one)
        {"mixed.txt": b"one\r\ntwo\nTHREE\r\nfour\nfive\r\n"},
    ),
]


def run_patch(hookcode_env, text: str, **runtime_env: str):
    rt = hookcode_env.runtime(**runtime_env)
    return invoke_tool(rt, "apply_patch", {"patchText": text})


def summary(*lines: str) -> str:
    return "Success. Updated the following files:\n" + "\n".join(lines)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.id)
def test_codex_scenario(hookcode_env, scenario: Scenario):
    project = hookcode_env.project
    write_tree(project, scenario.given)
    before = snapshot(project)

    outcome = run_patch(hookcode_env, scenario.patch)

    if scenario.error is not None:
        assert outcome.error_text == scenario.error.replace("{root}", str(project))
        assert snapshot(project) == before
    else:
        assert outcome.error is None, outcome.error_text
        assert snapshot(project) == scenario.expected
        if scenario.output:
            assert outcome.result.output == summary(*scenario.output)
            assert outcome.result.title == outcome.result.output


# ---------------------------------------------------------------------------------------------
# extra cases (offline-testing.md §3)
# ---------------------------------------------------------------------------------------------


def test_an_unknown_header_beside_valid_sections_changes_nothing(hookcode_env):
    project = hookcode_env.project
    write_tree(project, {"keep.txt": b"old\n"})
    before = snapshot(project)
    text = patch(
        "*** Begin Patch",
        "*** Add File: new.txt",
        "+x",
        "*** Rename File: keep.txt",
        "*** Update File: keep.txt",
        "@@",
        "-old",
        "+new",
        "*** End Patch",
    )

    outcome = run_patch(hookcode_env, text)

    assert outcome.error_text.startswith(
        "apply_patch verification failed: '*** Rename File: keep.txt' is not a valid hunk header."
    )
    assert snapshot(project) == before


BODY = patch("*** Begin Patch", "*** Update File: f.txt", "@@", "-a", "+b", "*** End Patch")


@pytest.mark.parametrize(
    "wrapped",
    [
        f"cat <<'EOF'\n{BODY}EOF\n",
        f"<<EOF\n{BODY}EOF",
        f'cat <<"PATCH"\n{BODY}PATCH\n',
    ],
    ids=["cat-quoted", "bare", "double-quoted"],
)
def test_heredoc_wrapped_patch(hookcode_env, wrapped):
    (hookcode_env.project / "f.txt").write_text("a\n")
    outcome = run_patch(hookcode_env, wrapped)
    assert outcome.error is None, outcome.error_text
    assert (hookcode_env.project / "f.txt").read_bytes() == b"b\n"


@pytest.mark.parametrize(
    ("given", "lines", "expected"),
    [
        # trailing whitespace ignored (pass 2)
        ("foo   \nbar\n", ["-foo", "+FOO"], "FOO\nbar\n"),
        # leading whitespace ignored (pass 3)
        ("    foo\nbar\n", ["-foo", "+    FOO"], "    FOO\nbar\n"),
        # typographic quotes, dashes, ellipsis and non-breaking space folded (pass 4)
        ("say(“hi”) — ok…\n", ['-say("hi") - ok...', "+say('bye')"], "say('bye')\n"),
        ("it‘s\u00a0fine\n", ["-it's fine", "+it is fine"], "it is fine\n"),
        # a context line found by a tolerant pass keeps the file's own text
        ("x = “q”\ny = 1\n", [' x = "q"', "-y = 1", "+y = 2"], "x = “q”\ny = 2\n"),
    ],
    ids=["trailing", "leading", "quotes-dashes", "single-quote-nbsp", "context-kept"],
)
def test_tolerant_matching(hookcode_env, given, lines, expected):
    (hookcode_env.project / "f.txt").write_text(given)
    text = patch("*** Begin Patch", "*** Update File: f.txt", "@@", *lines, "*** End Patch")
    outcome = run_patch(hookcode_env, text)
    assert outcome.error is None, outcome.error_text
    assert (hookcode_env.project / "f.txt").read_text() == expected


def test_exact_match_wins_over_earlier_tolerant_match(hookcode_env):
    (hookcode_env.project / "f.txt").write_text("foo \nfoo\n")
    text = patch("*** Begin Patch", "*** Update File: f.txt", "@@", "-foo", "+bar", "*** End Patch")
    assert run_patch(hookcode_env, text).error is None
    assert (hookcode_env.project / "f.txt").read_text() == "foo \nbar\n"


def test_context_header_chooses_between_duplicates(hookcode_env):
    source = "def a():\n    return 1\n\ndef b():\n    return 1\n"
    (hookcode_env.project / "m.py").write_text(source)
    text = patch(
        "*** Begin Patch",
        "*** Update File: m.py",
        "@@ def b():",
        "-    return 1",
        "+    return 2",
        "*** End Patch",
    )
    outcome = run_patch(hookcode_env, text)
    assert outcome.error is None, outcome.error_text
    assert (hookcode_env.project / "m.py").read_text() == (
        "def a():\n    return 1\n\ndef b():\n    return 2\n"
    )


def test_missing_context_header(hookcode_env):
    (hookcode_env.project / "m.py").write_text("def a():\n    pass\n")
    text = patch(
        "*** Begin Patch",
        "*** Update File: m.py",
        "@@ def zz():",
        "-    pass",
        "+    x",
        "*** End Patch",
    )
    outcome = run_patch(hookcode_env, text)
    assert outcome.error_text == (
        f"apply_patch verification failed: Failed to find context 'def zz():' in "
        f"{hookcode_env.project / 'm.py'}"
    )


def test_repeated_lines(hookcode_env):
    (hookcode_env.project / "r.txt").write_text("a\nb\n")
    text = patch(
        "*** Begin Patch",
        "*** Update File: r.txt",
        "@@",
        "-a",
        "-b",
        "+b",
        "+b",
        "+a",
        "*** End Patch",
    )
    assert run_patch(hookcode_env, text).error is None
    assert (hookcode_env.project / "r.txt").read_text() == "b\nb\na\n"


def test_first_chunk_without_at_at(hookcode_env):
    (hookcode_env.project / "f.txt").write_text("first\nsecond\n")
    text = patch(
        "*** Begin Patch",
        "*** Update File: f.txt",
        " first",
        "-second",
        "+second updated",
        "*** End of File",
        "*** End Patch",
    )
    outcome = run_patch(hookcode_env, text)
    assert outcome.error is None, outcome.error_text
    assert (hookcode_env.project / "f.txt").read_text() == "first\nsecond updated\n"


def test_end_of_file_marker_anchors_at_the_end(hookcode_env):
    (hookcode_env.project / "f.txt").write_text("x\ny\nx\n")
    text = patch(
        "*** Begin Patch",
        "*** Update File: f.txt",
        "@@",
        "-x",
        "+z",
        "*** End of File",
        "*** End Patch",
    )
    assert run_patch(hookcode_env, text).error is None
    assert (hookcode_env.project / "f.txt").read_text() == "x\ny\nz\n"


def test_missing_markers_and_empty_text(hookcode_env):
    outcome = run_patch(hookcode_env, "*** Update File: f.txt\n-a\n+b\n")
    assert outcome.error_text == (
        "apply_patch verification failed: Invalid patch format: missing Begin/End markers"
    )
    assert run_patch(hookcode_env, "").error_text == "patchText is required"


def test_later_hunks_see_earlier_ones(hookcode_env):
    text = patch(
        "*** Begin Patch",
        "*** Add File: new.txt",
        "+one",
        "*** Update File: new.txt",
        "*** Move to: moved.txt",
        "@@",
        "-one",
        "+two",
        "*** End Patch",
    )
    outcome = run_patch(hookcode_env, text)
    assert outcome.error is None, outcome.error_text
    assert snapshot(hookcode_env.project) == {"moved.txt": b"two\n"}
    assert outcome.result.output == summary("A new.txt", "M moved.txt")


def test_rename_without_chunks(hookcode_env):
    (hookcode_env.project / "a.txt").write_text("same\n")
    text = patch("*** Begin Patch", "*** Update File: a.txt", "*** Move to: b.txt", "*** End Patch")
    assert run_patch(hookcode_env, text).error is None
    assert snapshot(hookcode_env.project) == {"b.txt": b"same\n"}


def test_deleting_the_last_file_leaves_its_directory(hookcode_env):
    write_tree(hookcode_env.project, {"d/only.txt": b"x\n", "e/": None})
    text = patch("*** Begin Patch", "*** Delete File: d/only.txt", "*** End Patch")
    assert run_patch(hookcode_env, text).error is None
    assert snapshot(hookcode_env.project) == {"d/": None, "e/": None}


def test_symlinked_file_is_written_through_the_link(hookcode_env):
    project = hookcode_env.project
    (project / "real.txt").write_text("old\n")
    (project / "link.txt").symlink_to("real.txt")
    text = patch(
        "*** Begin Patch", "*** Update File: link.txt", "@@", "-old", "+new", "*** End Patch"
    )
    assert run_patch(hookcode_env, text).error is None
    assert (project / "link.txt").is_symlink()
    assert (project / "real.txt").read_text() == "new\n"


def test_mode_bom_and_encoding_are_kept(hookcode_env):
    project = hookcode_env.project
    script = project / "run.sh"
    script.write_bytes(b"\xef\xbb\xbf#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    text = patch(
        "*** Begin Patch",
        "*** Update File: run.sh",
        "*** Move to: bin/run.sh",
        "@@",
        "-echo hi",
        "+echo bye",
        "*** End Patch",
    )
    assert run_patch(hookcode_env, text).error is None
    moved = project / "bin" / "run.sh"
    assert moved.read_bytes() == b"\xef\xbb\xbf#!/bin/sh\necho bye\n"
    assert stat.S_IMODE(moved.stat().st_mode) == 0o755
    assert not script.exists()


def test_add_under_a_file_fails_verification_and_writes_nothing(hookcode_env):
    project = hookcode_env.project
    (project / "plain").write_text("x\n")
    text = patch(
        "*** Begin Patch",
        "*** Add File: ok.txt",
        "+fine",
        "*** Add File: plain/inner.txt",
        "+boom",
        "*** End Patch",
    )
    outcome = run_patch(hookcode_env, text)
    assert outcome.error_text == (
        f"apply_patch verification failed: Cannot write {project / 'plain' / 'inner.txt'}: "
        f"{project / 'plain'} is not a directory"
    )
    assert snapshot(project) == {"plain": b"x\n"}


# ---------------------------------------------------------------------------------------------
# permissions, metadata, events
# ---------------------------------------------------------------------------------------------


def test_edit_ask_lists_every_path_including_move_targets(hookcode_env):
    project = hookcode_env.project
    (project / "a.txt").write_text("a\n")
    (project / "gone.txt").write_text("bye\n")
    hookcode_env.write_config({"permission": {"edit": "ask"}})
    front = hookcode_env.register(ReplyWith("once"), "front")
    text = patch(
        "*** Begin Patch",
        "*** Update File: a.txt",
        "*** Move to: sub/b.txt",
        "@@",
        "-a",
        "+b",
        "*** Add File: c.txt",
        "+c",
        "*** Delete File: gone.txt",
        "*** End Patch",
    )
    outcome = run_patch(hookcode_env, text)
    assert outcome.error is None, outcome.error_text

    asks = [r for r in front.requests if r.permission == "edit"]
    assert len(asks) == 1
    request = asks[0]
    assert request.patterns == ["a.txt", "sub/b.txt", "c.txt", "gone.txt"]
    assert request.always == ["*"]
    assert request.metadata["filepath"] == "a.txt, sub/b.txt, c.txt, gone.txt"
    files = request.metadata["files"]
    assert [(f["type"], f["relativePath"]) for f in files] == [
        ("move", "sub/b.txt"),
        ("add", "c.txt"),
        ("delete", "gone.txt"),
    ]
    move = files[0]
    assert move["filePath"] == str(project / "a.txt")
    assert move["movePath"] == str(project / "sub" / "b.txt")
    assert (move["before"], move["after"], move["additions"], move["deletions"]) == (
        "a\n",
        "b\n",
        1,
        1,
    )
    assert "-a\n+b\n" in move["diff"]
    assert request.metadata["diff"] == "".join(f["diff"] + "\n" for f in files)
    assert outcome.result.metadata["files"] == files
    assert outcome.result.output == summary("M sub/b.txt", "A c.txt", "D gone.txt")
    assert snapshot(project) == {"sub/b.txt": b"b\n", "c.txt": b"c\n"}


def test_headless_ask_refuses_and_writes_nothing(hookcode_env):
    project = hookcode_env.project
    (project / "a.txt").write_text("a\n")
    hookcode_env.write_config({"permission": {"edit": "ask"}})
    text = patch(
        "*** Begin Patch",
        "*** Add File: new.txt",
        "+new",
        "*** Update File: a.txt",
        "@@",
        "-a",
        "+b",
        "*** End Patch",
    )
    outcome = run_patch(hookcode_env, text)
    assert isinstance(outcome.error, PermissionRejected)
    assert snapshot(project) == {"a.txt": b"a\n"}


def test_edit_rule_on_a_move_target_is_enforced(hookcode_env):
    project = hookcode_env.project
    (project / "a.txt").write_text("a\n")
    hookcode_env.write_config({"permission": {"edit": {"*": "allow", "secret/*": "deny"}}})
    text = patch(
        "*** Begin Patch", "*** Update File: a.txt", "*** Move to: secret/a.txt", "*** End Patch"
    )
    outcome = run_patch(hookcode_env, text)
    assert outcome.error is not None
    assert snapshot(project) == {"a.txt": b"a\n"}


def test_external_directory_asked_for_paths_and_move_targets(hookcode_env):
    project = hookcode_env.project
    outside = hookcode_env.root / "outside"
    outside.mkdir()
    (project / "a.txt").write_text("a\n")
    front = hookcode_env.register(ReplyWith("once"), "front")
    text = patch(
        "*** Begin Patch",
        f"*** Add File: {outside / 'one.txt'}",
        "+one",
        f"*** Add File: {outside / 'two.txt'}",
        "+two",
        "*** Update File: a.txt",
        f"*** Move to: {outside / 'deep' / 'a.txt'}",
        "*** End Patch",
    )
    outcome = run_patch(hookcode_env, text)
    assert outcome.error is None, outcome.error_text
    external = [r.patterns for r in front.requests if r.permission == "external_directory"]
    # one ask per directory
    real = Path(os.path.realpath(outside)).as_posix()
    assert external == [[f"{real}/*"], [f"{real}/deep/*"]]
    assert snapshot(outside) == {"one.txt": b"one\n", "two.txt": b"two\n", "deep/a.txt": b"a\n"}
    assert snapshot(project) == {}


def test_external_directory_refused_headless_writes_nothing(hookcode_env):
    project = hookcode_env.project
    outside = hookcode_env.root / "outside"
    outside.mkdir()
    (project / "a.txt").write_text("a\n")
    text = patch(
        "*** Begin Patch",
        "*** Update File: a.txt",
        f"*** Move to: {outside / 'a.txt'}",
        "*** End Patch",
    )
    outcome = run_patch(hookcode_env, text)
    assert isinstance(outcome.error, PermissionRejected)
    assert snapshot(project) == {"a.txt": b"a\n"}
    assert snapshot(outside) == {}


def test_file_edited_events(hookcode_env):
    project = hookcode_env.project
    (project / "u.txt").write_text("u\n")
    (project / "d.txt").write_text("d\n")
    rt = hookcode_env.runtime()
    events = []
    rt.events.subscribe(lambda e: events.append(e) if e.type == "file.edited" else None)
    text = patch(
        "*** Begin Patch",
        "*** Add File: a.txt",
        "+a",
        "*** Update File: u.txt",
        "@@",
        "-u",
        "+U",
        "*** Delete File: d.txt",
        "*** End Patch",
    )
    outcome = invoke_tool(rt, "apply_patch", {"patchText": text})
    assert outcome.error is None, outcome.error_text
    assert [(e.properties["file"], e.properties["deleted"]) for e in events] == [
        (str(project / "a.txt"), False),
        (str(project / "u.txt"), False),
        (str(project / "d.txt"), True),
    ]
    assert all(e.properties["session_id"] == outcome.call.session_id for e in events)


def test_failed_patch_publishes_nothing(hookcode_env):
    rt = hookcode_env.runtime()
    events = []
    rt.events.subscribe(lambda e: events.append(e) if e.type == "file.edited" else None)
    text = patch("*** Begin Patch", "*** Delete File: nope.txt", "*** End Patch")
    assert invoke_tool(rt, "apply_patch", {"patchText": text}).error is not None
    assert events == []


def test_tool_definition(hookcode_env):
    rt = hookcode_env.runtime()
    outcome = invoke_tool(rt, "apply_patch", {"patch_text": "x"})
    assert outcome.error is not None  # only the model-facing name is accepted
    from hookcode_tool_apply_patch import apply_patch

    assert apply_patch.permission_name == "edit"
    assert apply_patch.asks_permission is True
    assert apply_patch.parameters["required"] == ["patchText"]


# ---------------------------------------------------------------------------------------------
# the parser on its own
# ---------------------------------------------------------------------------------------------


def test_parse_ignores_other_lines_and_reads_move():
    from hookcode_tool_apply_patch.patch import AddFile, DeleteFile, UpdateFile, parse

    hunks = parse(
        patch(
            "noise before",
            "*** Begin Patch",
            "free text outside a section",
            "*** Add File:a.txt",
            "+x",
            "ignored inside an add",
            "+",
            "*** Delete File:  b.txt  ",
            "*** Update File: c.txt",
            "*** Move to: d.txt",
            "@@ ctx  ",
            " keep",
            "",
            "-old",
            "+new",
            "*** End Patch",
            "noise after",
        )
    )
    assert hunks[0] == AddFile("a.txt", "x\n")
    assert hunks[1] == DeleteFile("b.txt")
    assert isinstance(hunks[2], UpdateFile)
    assert hunks[2].move_path == "d.txt"
    (chunk,) = hunks[2].chunks
    assert (chunk.context, chunk.old_lines, chunk.new_lines) == (
        "ctx",
        ["keep", "old"],
        ["keep", "new"],
    )


def test_apply_chunks_keeps_crlf_and_eof():
    from hookcode_tool_apply_patch.patch import UpdateFile, apply_chunks, parse

    (hunk,) = parse(patch("*** Begin Patch", "*** Update File: f", "@@", "+tail", "*** End Patch"))
    assert isinstance(hunk, UpdateFile)
    assert apply_chunks("a\r\nb", hunk.chunks, "f") == "a\r\nb\r\ntail\r\n"
    assert apply_chunks("", hunk.chunks, "f") == "tail\n"


# ---------------------------------------------------------------------------------------------
# through the CLI
# ---------------------------------------------------------------------------------------------


def test_cli_tools_call(hookcode_env):
    project = hookcode_env.project
    (project / "f.txt").write_text("old\n")
    text = patch("*** Begin Patch", "*** Update File: f.txt", "@@", "-old", "+new", "*** End Patch")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "hookcode",
            "-C",
            str(project),
            "tools",
            "call",
            "apply_patch",
            json.dumps({"patchText": text}),
            "--json",
            "--yes",
        ],
        capture_output=True,
        text=True,
        env=hookcode_env.env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["error"] is None
    assert data["output"] == summary("M f.txt")
    assert (project / "f.txt").read_text() == "new\n"


# ---------------------------------------------------------------------------------------------
# protected paths: every file added, updated, deleted, every move source and target
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "lines", "protected"),
    [
        ({}, ["*** Add File: .envrc", "+evil"], {".envrc": ".envrc"}),
        (
            {".git/config": b"[core]\n"},
            ["*** Update File: .git/config", "@@", " [core]", "+\tfsmonitor = touch P"],
            {".git/config": ".git"},
        ),
        ({".gitmodules": b"x\n"}, ["*** Delete File: .gitmodules"], {".gitmodules": ".gitmodules"}),
        (
            {"a.txt": b"[permission]\n"},
            ["*** Update File: a.txt", "*** Move to: .hookcode/config.toml"],
            {".hookcode/config.toml": ".hookcode"},
        ),
        (
            {".claude/settings.json": b"{}\n"},
            ["*** Update File: .claude/settings.json", "*** Move to: old-settings.json"],
            {".claude/settings.json": ".claude/settings"},
        ),
    ],
    ids=["add", "update", "delete", "move-target", "move-source"],
)
def test_protected_paths_are_refused_headless_even_where_edit_allows(
    hookcode_env, given, lines, protected
):
    project = hookcode_env.project
    write_tree(project, {"ok.txt": b"ok\n", **given})
    before = snapshot(project)
    hookcode_env.write_config('[permission]\nedit = "allow"\n', where="global")
    rt = hookcode_env.runtime()
    text = patch("*** Begin Patch", "*** Add File: fine.txt", "+fine", *lines, "*** End Patch")
    outcome = invoke_tool(rt, "apply_patch", {"patchText": text})
    assert isinstance(outcome.error, PermissionRejected), outcome.error_text
    assert snapshot(project) == before  # nothing, not even the ordinary file
    [refused] = rt.refusals
    assert refused.metadata["protected"] == protected
    assert refused.always == refused.patterns  # never `*`


def test_protected_patch_is_approvable_and_a_naming_rule_allows_it(hookcode_env):
    project = hookcode_env.project
    text = patch("*** Begin Patch", "*** Add File: .envrc", "+export A=1", "*** End Patch")
    front = hookcode_env.register(ReplyWith("once"), "front")
    outcome = run_patch(hookcode_env, text)
    assert outcome.error is None, outcome.error_text
    [request] = [r for r in front.requests if r.permission == "edit"]
    assert request.metadata["protected"] == {".envrc": ".envrc"}
    assert (project / ".envrc").read_text() == "export A=1\n"

    hookcode_env.plugins.clear()
    hookcode_env.write_config('[permission]\nedit = { ".envrc" = "allow" }\n', where="global")
    text = patch("*** Begin Patch", "*** Delete File: .envrc", "*** End Patch")
    outcome = run_patch(hookcode_env, text)
    assert outcome.error is None, outcome.error_text
    assert not (project / ".envrc").exists()


# ---------------------------------------------------------------------------------------------
# symlinks: dangling ones resolved before deciding inside/outside
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def outside(hookcode_env):
    hookcode_env.write_config('[permission]\nexternal_directory = "deny"\n', where="global")
    directory = hookcode_env.root / "outside"
    directory.mkdir()
    return directory


@pytest.mark.parametrize(
    "lines",
    [
        ["*** Add File: dl", "+x"],
        ["*** Add File: dd/new.txt", "+x"],
        ["*** Add File: chain", "+x"],
        ["*** Update File: a.txt", "*** Move to: dl"],
        ["*** Update File: a.txt", "*** Move to: dd/a.txt"],
        ["*** Update File: a.txt", "*** Move to: chain"],
    ],
    ids=["add-file-link", "add-under-dir-link", "add-chain", "move-to-file-link",
         "move-under-dir-link", "move-to-chain"],
)  # fmt: skip
def test_dangling_links_to_outside_are_outside(hookcode_env, outside, lines):
    project = hookcode_env.project
    (project / "a.txt").write_text("a\n")
    (project / "dl").symlink_to(outside / "file")
    (project / "dd").symlink_to(outside / "missing-dir")
    (project / "chain").symlink_to("dl")
    outcome = run_patch(hookcode_env, patch("*** Begin Patch", *lines, "*** End Patch"))
    assert type(outcome.error).__name__ == "PermissionDenied", outcome.error_text
    assert list(outside.iterdir()) == []
    assert (project / "a.txt").read_text() == "a\n"
    assert all((project / name).is_symlink() for name in ("dl", "dd", "chain"))


def test_a_dangling_inside_directory_link_fails_verification(hookcode_env):
    project = hookcode_env.project
    (project / "a.txt").write_text("a\n")
    (project / "dd").symlink_to("missing-dir")
    for lines in (
        ["*** Add File: dd/new.txt", "+x"],
        ["*** Update File: a.txt", "*** Move to: dd/a.txt"],
    ):
        outcome = run_patch(hookcode_env, patch("*** Begin Patch", *lines, "*** End Patch"))
        assert outcome.error_text.startswith(
            f"apply_patch verification failed: Cannot write {project / 'dd'}/"
        ), outcome.error_text
        assert f"{project / 'dd'} is a symbolic link to {project / 'missing-dir'}, which" in (
            outcome.error_text
        )
    assert sorted(os.listdir(project)) == ["a.txt", "dd"]
    assert (project / "a.txt").read_text() == "a\n"


def test_add_and_move_write_through_an_inside_link(hookcode_env):
    project = hookcode_env.project
    (project / "a.txt").write_text("a\n")
    (project / "to-new").symlink_to("new.txt")  # dangling, inside: the write creates new.txt
    (project / "to-moved").symlink_to("moved.txt")
    text = patch(
        "*** Begin Patch",
        "*** Add File: to-new",
        "+new",
        "*** Update File: a.txt",
        "*** Move to: to-moved",
        "@@",
        "-a",
        "+b",
        "*** End Patch",
    )
    outcome = run_patch(hookcode_env, text)
    assert outcome.error is None, outcome.error_text
    assert (project / "to-new").is_symlink() and (project / "new.txt").read_text() == "new\n"
    assert (project / "to-moved").is_symlink() and (project / "moved.txt").read_text() == "b\n"
    assert not (project / "a.txt").exists()


def test_two_spellings_of_one_file_in_one_patch_apply_in_turn(hookcode_env):
    project = hookcode_env.project
    (project / "real.txt").write_text("one\ntwo\n")
    (project / "link.txt").symlink_to("real.txt")
    text = patch(
        "*** Begin Patch",
        "*** Update File: link.txt",
        "@@",
        "-one",
        "+ONE",
        "*** Update File: real.txt",
        "@@",
        "-two",
        "+TWO",
        "*** End Patch",
    )
    outcome = run_patch(hookcode_env, text)
    assert outcome.error is None, outcome.error_text
    assert (project / "real.txt").read_text() == "ONE\nTWO\n"  # neither change lost
    assert (project / "link.txt").is_symlink()


def test_deleting_a_link_then_adding_it_replaces_the_link(hookcode_env):
    project = hookcode_env.project
    (project / "real.txt").write_text("keep\n")
    (project / "link.txt").symlink_to("real.txt")
    text = patch(
        "*** Begin Patch",
        "*** Delete File: link.txt",
        "*** Add File: link.txt",
        "+own",
        "*** End Patch",
    )
    outcome = run_patch(hookcode_env, text)
    assert outcome.error is None, outcome.error_text
    assert not (project / "link.txt").is_symlink()
    assert (project / "link.txt").read_text() == "own\n"
    assert (project / "real.txt").read_text() == "keep\n"


def test_edit_patterns_name_the_path_as_spelled_and_resolved(hookcode_env):
    project = hookcode_env.project
    (project / "secret").mkdir()
    (project / "secret" / "k.txt").write_text("k\n")
    (project / "alias.txt").symlink_to("secret/k.txt")
    hookcode_env.write_config('[permission]\nedit = { "*" = "allow", "secret/*" = "deny" }\n')
    text = patch("*** Begin Patch", "*** Update File: alias.txt", "@@", "-k", "+K", "*** End Patch")
    outcome = run_patch(hookcode_env, text)
    assert type(outcome.error).__name__ == "PermissionDenied", outcome.error_text
    assert (project / "secret" / "k.txt").read_text() == "k\n"


def test_a_link_changed_while_the_permission_is_asked_stops_the_patch(hookcode_env):
    from hookcode import Reply, hookimpl

    project = hookcode_env.project
    (project / "sub").mkdir()
    (project / "a.txt").write_text("a\n")
    elsewhere = hookcode_env.root / "elsewhere"
    elsewhere.mkdir()

    class SwapThenApprove:
        @hookimpl
        def permission_prompt(self, request):
            (project / "sub").rename(project / "moved-away")
            (project / "sub").symlink_to(elsewhere)
            return Reply("once")

    hookcode_env.write_config('[permission]\nedit = "ask"\n', where="global")
    hookcode_env.register(SwapThenApprove(), "front")
    text = patch(
        "*** Begin Patch",
        "*** Update File: a.txt",
        "@@",
        "-a",
        "+b",
        "*** Add File: sub/new.txt",
        "+new",
        "*** End Patch",
    )
    outcome = run_patch(hookcode_env, text)
    assert outcome.error_text.startswith(f"Not written: {project / 'sub/new.txt'} now leads to")
    assert list(elsewhere.iterdir()) == []
    assert (project / "a.txt").read_text() == "a\n"  # nothing at all
