"""The write tool (reference/tools.md §4)."""

from __future__ import annotations

import asyncio
import codecs
import json
import os
import subprocess
import sys
import time

import pytest
from hookcode import Reply, hookimpl
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
    # the diff, as edit's: every line of a new file is an addition
    assert "+x" in result.metadata["diff"]
    assert "+y" in result.metadata["diff"]
    assert "a/b/new.txt" in result.metadata["diff"]
    filediff = result.metadata["filediff"]
    assert (filediff["file"], filediff["before"], filediff["after"]) == (
        str(target),
        "",
        "x\r\ny\n",
    )
    assert (filediff["additions"], filediff["deletions"]) == (2, 0)


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
    assert "-old" in result.metadata["diff"]
    assert "+new" in result.metadata["diff"]
    filediff = result.metadata["filediff"]
    assert (filediff["before"], filediff["after"]) == ("old\n", "new\n")
    assert (filediff["additions"], filediff["deletions"]) == (1, 1)


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


# ---------------------------------------------------------------------------------------------
# protected paths (hookcode.protected): asked even where `edit` allows, refused headless
# ---------------------------------------------------------------------------------------------

PROTECTED_NEW = [
    ("hookcode.toml", "hookcode.toml"),
    (".hookcode/tools/evil.py", ".hookcode"),
    (".git/hooks/pre-commit", ".git"),
    (".git/config", ".git"),
    (".claude/settings.local.json", ".claude/settings"),
    (".gitmodules", ".gitmodules"),
    (".envrc", ".envrc"),
    ("sub/.ENVRC", ".envrc"),  # any depth, any case
]


@pytest.mark.parametrize(("name", "entry"), PROTECTED_NEW)
def test_protected_paths_are_refused_headless_even_where_edit_allows(hookcode_env, name, entry):
    hookcode_env.write_config('[permission]\nedit = "allow"\n', where="global")
    rt = hookcode_env.runtime()
    out = invoke_tool(rt, "write", {"filePath": name, "content": "[permission]\n"})
    assert isinstance(out.error, PermissionRejected), out.error_text
    assert not (hookcode_env.project / name).exists()
    [refused] = rt.refusals
    assert refused.metadata["protected"] == {name: entry}
    assert "core" in refused.votes and refused.votes["core"].action == "ask"


def test_protected_user_config_and_data_directories(hookcode_env):
    user_config = hookcode_env.config_dir / "hookcode" / "config.toml"
    credentials = hookcode_env.data_dir / "auth.json"
    hookcode_env.write_config(
        '[permission]\nedit = "allow"\nexternal_directory = "allow"\n', where="global"
    )
    rt = hookcode_env.runtime()
    for target in (user_config.with_name("agents.toml"), credentials):
        out = invoke_tool(rt, "write", {"filePath": str(target), "content": "x"})
        assert isinstance(out.error, PermissionRejected), out.error_text
        assert not target.exists()
    protected = [r.metadata["protected"] for r in rt.refusals]
    assert [list(p.values()) for p in protected] == [["config/hookcode"], ["hookcode/data"]]


def test_a_rule_naming_the_protected_path_allows_it(hookcode_env):
    hookcode_env.write_config(
        '[permission]\nedit = { "*" = "allow", ".envrc" = "allow", ".git/hooks/*" = "allow" }\n',
        where="global",
    )
    rt = hookcode_env.runtime()
    ok(invoke_tool(rt, "write", {"filePath": ".envrc", "content": "export A=1\n"}))
    assert (hookcode_env.project / ".envrc").read_text() == "export A=1\n"
    ok(invoke_tool(rt, "write", {"filePath": ".git/hooks/pre-push", "content": "#!/bin/sh\n"}))
    # the rule names .envrc and .git/hooks, not hookcode.toml or .git/config
    for name in ("hookcode.toml", ".git/config"):
        out = invoke_tool(rt, "write", {"filePath": name, "content": "x"})
        assert isinstance(out.error, PermissionRejected), name
        assert not (hookcode_env.project / name).exists()


def test_a_configured_deny_of_a_protected_path_stays_a_deny(hookcode_env):
    hookcode_env.write_config('[permission]\nedit = { "*" = "allow", "*.toml" = "deny" }\n')
    front = hookcode_env.register(ReplyWith("once"), "front")
    rt = hookcode_env.runtime()
    sid = rt.create_session().id
    rt.file_times(sid).record(hookcode_env.project / "hookcode.toml")
    out = invoke_tool(rt, "write", {"filePath": "hookcode.toml", "content": "x"}, session_id=sid)
    assert isinstance(out.error, PermissionDenied)
    assert front.requests == []


def test_protected_write_is_asked_and_approvable_with_a_front_end(hookcode_env):
    config = hookcode_env.write_config('[permission]\nedit = "allow"\n')
    front = hookcode_env.register(ReplyWith("once"), "front")
    rt = hookcode_env.runtime()
    sid = rt.create_session().id
    rt.file_times(sid).record(config)
    content = '[permission]\nedit = "allow"\nbash = "allow"\n'
    args = {"filePath": "hookcode.toml", "content": content}
    ok(invoke_tool(rt, "write", args, session_id=sid))
    assert config.read_text() == content
    [request] = front.requests
    assert request.patterns == ["hookcode.toml"]
    assert request.metadata["protected"] == {"hookcode.toml": "hookcode.toml"}
    # "always" remembers the exact path, never `*`
    assert request.always == ["hookcode.toml"]
    assert '+bash = "allow"' in request.metadata["diff"]


def test_an_always_reply_to_a_protected_write_is_a_rule_naming_it(hookcode_env):
    hookcode_env.register(ReplyWith("always", scope="project"), "front")
    rt = hookcode_env.runtime()
    ok(invoke_tool(rt, "write", {"filePath": ".envrc", "content": "1\n"}))
    hookcode_env.plugins.clear()  # headless from now on
    rt = hookcode_env.runtime()
    sid = rt.create_session().id
    rt.file_times(sid).record(hookcode_env.project / ".envrc")
    ok(invoke_tool(rt, "write", {"filePath": ".envrc", "content": "2\n"}, session_id=sid))
    assert (hookcode_env.project / ".envrc").read_text() == "2\n"
    # it names .envrc only
    out = invoke_tool(rt, "write", {"filePath": ".gitmodules", "content": "x"})
    assert isinstance(out.error, PermissionRejected)


def test_a_symlink_to_a_protected_path_is_protected(hookcode_env):
    project = hookcode_env.project
    (project / ".git").mkdir()
    (project / "notes.txt").symlink_to(".envrc")  # dangling: the write would create .envrc
    (project / "cfg").symlink_to(".git")
    hookcode_env.write_config('[permission]\nedit = { "notes.txt" = "allow" }\n', where="global")
    rt = hookcode_env.runtime()
    out = invoke_tool(rt, "write", {"filePath": "notes.txt", "content": "x"})
    assert isinstance(out.error, PermissionRejected)
    assert rt.refusals[-1].patterns == ["notes.txt", ".envrc"]
    assert rt.refusals[-1].metadata["protected"] == {".envrc": ".envrc"}
    out = invoke_tool(rt, "write", {"filePath": "cfg/config", "content": "x"})
    assert isinstance(out.error, PermissionRejected)
    assert rt.refusals[-1].metadata["protected"] == {".git/config": ".git"}
    assert not (project / ".envrc").exists() and not (project / ".git" / "config").exists()


def _cli(env, *args):
    return subprocess.run(
        [sys.executable, "-m", "hookcode", *args],
        env=env.env,
        cwd=env.project,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cli_protected_write_headless_with_and_without_yes(hookcode_env):
    hookcode_env.write_config('[permission]\nedit = "allow"\n', where="global")
    args = json.dumps({"filePath": ".git/hooks/post-checkout", "content": "#!/bin/sh\ntouch P\n"})
    hook = hookcode_env.project / ".git" / "hooks" / "post-checkout"
    for extra in ([], ["--yes"]):
        proc = _cli(hookcode_env, "tools", "call", "write", args, *extra)
        assert proc.returncode == 1, proc.stderr
        assert "a protected path needs a person in a terminal or a rule naming it" in proc.stderr
        assert "--yes does not approve it" in proc.stderr
        assert not hook.exists()

    hookcode_env.write_config(
        '[permission]\nedit = { "*" = "allow", ".git/hooks/post-checkout" = "allow" }\n',
        where="global",
    )
    proc = _cli(hookcode_env, "tools", "call", "write", args)
    assert proc.returncode == 0, proc.stderr
    assert hook.read_text() == "#!/bin/sh\ntouch P\n"


# ---------------------------------------------------------------------------------------------
# symlinks: resolved as the OS will, dangling ones included; writes go through them
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def outside(hookcode_env):
    """A directory outside the project, and `external_directory = "deny"` in the user config."""
    hookcode_env.write_config('[permission]\nexternal_directory = "deny"\n', where="global")
    directory = hookcode_env.root / "outside"
    directory.mkdir()
    return directory


def test_a_dangling_link_to_outside_is_an_outside_write(hookcode_env, outside):
    project = hookcode_env.project
    (project / "dl").symlink_to(outside / "file")
    (project / "chain").symlink_to("dl")  # a chain ends outside too
    (project / "dd").symlink_to(outside / "missing-dir")
    (project / "rel").symlink_to("../outside/rel-file")
    rt = hookcode_env.runtime()
    for name in ("dl", "chain", "dd/file", "rel", "dd/../dl"):
        out = invoke_tool(rt, "write", {"filePath": name, "content": "x"})
        assert isinstance(out.error, PermissionDenied), (name, out.error_text)
    assert list(outside.iterdir()) == []
    assert os.readlink(project / "dl") == str(outside / "file")  # the links are untouched


def test_a_write_through_an_inside_link_writes_its_target(hookcode_env, outside):
    project = hookcode_env.project
    (project / "real.txt").write_text("old\n")
    (project / "link.txt").symlink_to("real.txt")
    (project / "new-link").symlink_to("made.txt")  # dangling, inside
    rt = hookcode_env.runtime()
    sid = rt.create_session().id
    out = invoke_tool(rt, "write", {"filePath": "link.txt", "content": "new\n"}, session_id=sid)
    assert "You must read file" in out.error_text  # the target's read time counts
    rt.file_times(sid).record(project / "real.txt")
    ok(invoke_tool(rt, "write", {"filePath": "link.txt", "content": "new\n"}, session_id=sid))
    assert (project / "link.txt").is_symlink() and (project / "real.txt").read_text() == "new\n"
    ok(invoke_tool(rt, "write", {"filePath": "new-link", "content": "made\n"}, session_id=sid))
    assert (project / "new-link").is_symlink() and (project / "made.txt").read_text() == "made\n"


def test_a_write_under_a_dangling_directory_link_is_one_clear_error(hookcode_env):
    project = hookcode_env.project
    (project / "dd").symlink_to("missing-dir")
    (project / "loop").symlink_to("loop")
    (project / "nodir").symlink_to("gone/file.txt")  # a file link whose directory is missing
    rt = hookcode_env.runtime()
    before = sorted(os.listdir(project))
    out = invoke_tool(rt, "write", {"filePath": "dd/sub/file.txt", "content": "x"})
    assert out.error_text == (
        f"Cannot write {project / 'dd/sub/file.txt'}: {project / 'dd'} is a symbolic link to "
        f"{project / 'missing-dir'}, which does not exist, so it cannot hold a file. Create "
        "that directory first or write to a real path."
    )
    out = invoke_tool(rt, "write", {"filePath": "loop/file.txt", "content": "x"})
    assert out.error_text.startswith(
        f"Cannot write {project / 'loop/file.txt'}: {project / 'loop'}"
    )
    out = invoke_tool(rt, "write", {"filePath": "loop", "content": "x"})
    assert out.error_text.startswith(f"Cannot write {project / 'loop'}: it is a symbolic link that")
    out = invoke_tool(rt, "write", {"filePath": "nodir", "content": "x"})
    assert out.error_text == (
        f"Cannot write {project / 'nodir'}: it is a symbolic link to {project / 'gone/file.txt'}, "
        f"whose directory {project / 'gone'} does not exist"
    )
    assert sorted(os.listdir(project)) == before  # nothing created, no link replaced


def test_cli_write_under_a_dangling_directory_link(hookcode_env):
    (hookcode_env.project / "dd").symlink_to("missing-dir")
    args = json.dumps({"filePath": "dd/file", "content": "x"})
    proc = _cli(hookcode_env, "tools", "call", "write", args, "--yes")
    assert proc.returncode == 1
    [line] = proc.stderr.strip().splitlines()
    assert f"is a symbolic link to {hookcode_env.project / 'missing-dir'}, which does not" in line
    assert not (hookcode_env.project / "missing-dir").exists()


class SwapThenApprove:
    """A front end that, while the person "thinks", turns ``directory`` into a link to
    ``elsewhere`` (what a command running in parallel could do), then approves."""

    def __init__(self, directory, elsewhere):
        self.directory, self.elsewhere = directory, elsewhere

    @hookimpl
    def permission_prompt(self, request):
        self.directory.rename(self.directory.with_name("moved-away"))
        self.directory.symlink_to(self.elsewhere)
        return Reply("once")


@pytest.mark.parametrize("tool", ["write", "edit"])
def test_a_link_changed_while_the_permission_is_asked_stops_the_write(hookcode_env, tool):
    project = hookcode_env.project
    (project / "sub").mkdir()
    elsewhere = hookcode_env.root / "elsewhere"
    elsewhere.mkdir()
    hookcode_env.write_config('[permission]\nedit = "ask"\n', where="global")
    hookcode_env.register(SwapThenApprove(project / "sub", elsewhere), "front")
    rt = hookcode_env.runtime()
    if tool == "write":
        args = {"filePath": "sub/notes.txt", "content": "x"}
    else:
        args = {"filePath": "sub/notes.txt", "oldString": "", "newString": "x"}
    out = invoke_tool(rt, tool, args)
    assert out.error_text == (
        f"Not written: {project / 'sub/notes.txt'} now leads to {elsewhere / 'notes.txt'}, not "
        f"{project / 'sub/notes.txt'} as when the permission was asked (a symbolic link on the "
        "way changed). Try again."
    )
    assert list(elsewhere.iterdir()) == []


def test_the_plan_agent_still_writes_its_plan_file_without_asking(hookcode_env):
    # .hookcode/ is protected; the plan agent's own rule names it (.hookcode/plans/*.md)
    rt = hookcode_env.runtime()
    args = {"filePath": ".hookcode/plans/s1.md", "content": "# plan\n"}
    ok(invoke_tool(rt, "write", args, agent="plan"))
    assert (hookcode_env.project / ".hookcode/plans/s1.md").read_text() == "# plan\n"
    (hookcode_env.project / ".hookcode/agents").mkdir()
    (hookcode_env.project / ".hookcode/plans/evil.md").symlink_to("../agents/evil.md")
    for name in (".hookcode/plans/evil.md", ".hookcode/plans/../tools/x.py"):
        out = invoke_tool(rt, "write", {"filePath": name, "content": "x"}, agent="plan")
        assert isinstance(out.error, PermissionDenied), name
    assert list((hookcode_env.project / ".hookcode/agents").iterdir()) == []
    assert not (hookcode_env.project / ".hookcode/tools").exists()
